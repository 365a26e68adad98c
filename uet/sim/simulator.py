"""The in-process simulated fabric (design.md "Test beds" 1): virtual time, deterministic from a
seed, links that carry encoded Ethernet/IPv4/UDP frames.

Topology: host A (initiator, 10.0.0.1) and host B (target, 10.0.0.2) joined by ``paths`` parallel
paths; each path is a link in each direction with a rate, a propagation delay (rtt / 2) and a FIFO
queue (modelled by the time the link is busy until). ECMP picks the path by hashing the 5-tuple,
so the entropy (UDP source port) of the initiator, echoed as the destination port of ACKs,
chooses it.

Per packet and per path, in this order: a failed path drops everything (``fail``); random loss;
random trimming of data packets (``trim``); queue admission (overflow trims an eligible data
packet, else drops; ECN CE is marked by queue depth between ``kmin`` and ``kmax``, RED-style);
corruption of one UDP-payload byte (the CRC-32C trailer must catch it); duplication; reordering
(an extra delay uniform in [0, ``reorder_delay``], default one base RTT).

Capture (``pcap``): every frame a host puts on a link, at its send time, exactly as sent; and
every frame the fabric changed (trimmed, CE-marked, corrupted, duplicated), again at its arrival
time with the changed bytes.

Trimming (design.md "Defaults"): only data packets (DSCP not 46) with more than 256 bytes of UDP
payload; the first 256 bytes are kept and the DSCP becomes 11.

The event loop is a heap of (time, seq, kind, ...). Ground truth for the summary: the simulator
records which (PDC, PSN) requests reached B intact, so a retransmission that arrives when an
earlier copy already had is counted as spurious.
"""

from __future__ import annotations

import hashlib
import heapq
import random
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..pds import DatagramMeta, Endpoint, PdsConfig
from ..pds import events as ev
from ..pds.endpoint import nack_name
from ..wire.enums import CTL_TYPE, PDS_TYPE
from .frames import HDRS, Framer, PcapWriter, set_ce, trim

A_ADDR, B_ADDR = "10.0.0.1", "10.0.0.2"
ARRIVE, TIMER = 0, 1
INF = float("inf")


@dataclass
class SimConfig:
    bytes: int = 4 << 20
    messages: int = 1
    mtu: int = 4096
    paths: int = 4
    rate_gbps: float = 100.0
    rtt_us: float = 10.0
    loss: float = 0.0
    trim: float = 0.0
    reorder: float = 0.0
    reorder_delay_us: float | None = None   # None: one base RTT
    dup: float = 0.0
    corrupt: float = 0.0
    fail: list[tuple[int, float]] = field(default_factory=list)  # (path, time in us)
    mode: str = "rud"
    spray: str = "rr"
    entropy_values: int = 64
    window_bytes: int | None = None          # None: 1.5 x BDP of all paths, at least 64 KiB
    queue_bytes: int | None = None           # None: 2 x window (so a lossless run stays lossless)
    kmin_bytes: int = 64 * 1024
    kmax_bytes: int = 512 * 1024
    trim_on_overflow: bool = True
    ack_loss: float = 0.0                    # extra loss applied only to B->A packets
    drop_psns: tuple[int, ...] = ()          # drop the first copy of these data packets (by index)
    seed: int = 1
    time_limit_s: float = 10.0
    pds: dict[str, Any] = field(default_factory=dict)  # PdsConfig overrides

    def bdp_bytes(self) -> int:
        return int(self.paths * self.rate_gbps * 1e9 / 8 * self.rtt_us * 1e-6)


class _Link:
    __slots__ = ("Bps", "delay", "busy", "qcap")

    def __init__(self, Bps: float, delay: float, qcap: int):
        self.Bps = Bps
        self.delay = delay
        self.busy = 0.0
        self.qcap = qcap


class _Host:
    __slots__ = ("name", "addr", "ep", "sched", "idx")

    def __init__(self, name: str, addr: str, ep: Endpoint, idx: int):
        self.name = name
        self.addr = addr
        self.ep = ep
        self.sched = INF
        self.idx = idx


def describe(payload: bytes) -> str:
    """A short readable description of UET bytes for the trace."""
    if len(payload) < 4:
        return "runt"
    t = payload[0] >> 3
    name = PDS_TYPE.table.get(t, str(t))
    fl = payload[1] & 0x7F
    try:
        if t in (2, 3, 13, 14):
            psn = int.from_bytes(payload[4:8], "big")
            flags = "".join(s for s, m in (("RETX ", 0x10), ("AR ", 0x08), ("SYN ", 0x04)) if fl & m)
            return f"{name} psn={psn} {flags}len={len(payload)}"
        if t in (7, 8, 9):
            cack = int.from_bytes(payload[4:8], "big")
            off = int.from_bytes(payload[2:4], "big", signed=True)
            return f"{name} cack={cack} ack_psn={(cack + off) & 0xFFFFFFFF}"
        if t in (10, 12):
            return f"{name} {nack_name(payload[2])} psn={int.from_bytes(payload[4:8], 'big')}"
        if t == 11:
            ctl = (int.from_bytes(payload[0:2], "big") >> 7) & 0xF
            return f"CONTROL {CTL_TYPE.table.get(ctl, ctl)} psn={int.from_bytes(payload[4:8], 'big')}"
    except Exception:
        pass
    return name


class Simulator:
    def __init__(self, cfg: SimConfig, *, trace: TextIO | None = None, pcap: Any = None):
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.trace = trace
        self.pcap = PcapWriter(pcap) if pcap is not None else None
        window = cfg.window_bytes or max(64 * 1024, int(1.5 * cfg.bdp_bytes()))
        qcap = cfg.queue_bytes or max(2 * window, 256 * 1024)
        pc = dict(mtu=cfg.mtu, spray=cfg.spray, entropy_values=cfg.entropy_values,
                  window_bytes=window)
        pc.update(cfg.pds)
        self.window = window
        self.a = _Host("A", A_ADDR, Endpoint(A_ADDR, PdsConfig(**pc), seed=cfg.seed * 2 + 1), 0)
        self.b = _Host("B", B_ADDR, Endpoint(B_ADDR, PdsConfig(**pc), seed=cfg.seed * 2 + 2), 1)
        Bps = cfg.rate_gbps * 1e9 / 8
        delay = cfg.rtt_us * 1e-6 / 2
        self.links = [[_Link(Bps, delay, qcap) for _ in range(cfg.paths)] for _ in range(2)]
        self.fail_at = [INF] * cfg.paths
        for i, t in cfg.fail:
            if 0 <= i < cfg.paths:
                self.fail_at[i] = min(self.fail_at[i], t * 1e-6)
        self.reorder_delay = (cfg.reorder_delay_us if cfg.reorder_delay_us is not None
                              else cfg.rtt_us) * 1e-6
        self.framer = Framer()
        self.heap: list = []
        self.seq = 0
        self.now = 0.0
        self._ecmp: dict[tuple, int] = {}
        self._salt = zlib.crc32(cfg.seed.to_bytes(8, "big", signed=True))
        self.had: set[tuple[int, int]] = set()
        self.counters = {"trimmed": 0, "dropped": 0, "ecn_marked": 0, "corrupted": 0,
                         "duplicated": 0, "reordered": 0, "spurious": 0, "packets_a": 0,
                         "packets_b": 0, "failed_path_drops": 0, "overflow_drops": 0}
        self.paths_used: set[int] = set()
        self.data_pkts = 0
        self._drop_idx = set(cfg.drop_psns)

    # --- fabric ---------------------------------------------------------------------------
    def _path(self, src: str, dst: str, sport: int, dport: int) -> int:
        k = (src, dst, sport, dport)
        p = self._ecmp.get(k)
        if p is None:
            lo, hi = (src, dst) if src < dst else (dst, src)
            h = zlib.crc32(f"{src}|{dst}|17|{sport}|{dport}".encode(), self._salt)
            h ^= h >> 16
            p = self._ecmp[k] = (h * 0x9E3779B1 & 0xFFFFFFFF) % self.cfg.paths
        return p

    def _log(self, msg: str) -> None:
        if self.trace is not None:
            self.trace.write(f"{self.now * 1e6:12.3f}us {msg}\n")

    def _send(self, host: _Host, data: bytes, meta: DatagramMeta) -> None:
        cfg = self.cfg
        rng = self.rng
        now = self.now
        frame = self.framer.frame(data, meta.src, meta.dst, meta.sport, meta.dport, meta.dscp,
                                  meta.ecn)
        if self.pcap is not None:
            self.pcap.write(now, frame)
        orig_frame = frame
        c = self.counters
        fwd = host.idx == 0
        c["packets_a" if fwd else "packets_b"] += 1
        path = self._path(meta.src, meta.dst, meta.sport, meta.dport)
        is_data = meta.dscp != 46
        tr = self.trace is not None
        if tr:
            self._log(f"{host.name}->{'B' if fwd else 'A'} path{path} {describe(data)}")
        if fwd and is_data:
            self.paths_used.add(path)
            self.data_pkts += 1
            if self.data_pkts in self._drop_idx:
                c["dropped"] += 1
                if tr:
                    self._log(f"  drop (scripted) path{path}")
                return
        if now >= self.fail_at[path]:
            c["dropped"] += 1
            c["failed_path_drops"] += 1
            if tr:
                self._log(f"  drop (path{path} failed)")
            return
        loss = cfg.loss if fwd else cfg.loss + cfg.ack_loss
        if loss and rng.random() < loss:
            c["dropped"] += 1
            if tr:
                self._log(f"  drop (loss) path{path}")
            return
        eligible = is_data and len(data) > 256
        trimmed = False
        if cfg.trim and eligible and rng.random() < cfg.trim:
            frame = trim(frame)
            trimmed = True
        link = self.links[0 if fwd else 1][path]
        size = len(frame)
        busy = link.busy
        depth = (busy - now) * link.Bps if busy > now else 0.0
        if depth + size > link.qcap:
            if eligible and not trimmed and cfg.trim_on_overflow:
                frame = trim(frame)
                trimmed = True
                size = len(frame)
            else:
                c["dropped"] += 1
                c["overflow_drops"] += 1
                if tr:
                    self._log(f"  drop (queue overflow) path{path}")
                return
        if trimmed:
            c["trimmed"] += 1
            if tr:
                self._log(f"  trimmed path{path}")
        if meta.ecn in (1, 2) and depth > cfg.kmin_bytes:
            if depth >= cfg.kmax_bytes or rng.random() < (depth - cfg.kmin_bytes) / (
                    cfg.kmax_bytes - cfg.kmin_bytes):
                frame = set_ce(frame)
                c["ecn_marked"] += 1
        start = busy if busy > now else now
        depart = start + size / link.Bps
        link.busy = depart
        arrive = depart + link.delay
        modified = trimmed or frame is not orig_frame
        corrupted = False
        if cfg.corrupt and rng.random() < cfg.corrupt:
            b = bytearray(frame)
            i = rng.randrange(HDRS, len(b))
            b[i] ^= 1 << rng.randrange(8)
            frame = bytes(b)
            corrupted = True
            modified = True
            c["corrupted"] += 1
        dst = self.b if fwd else self.a
        if cfg.reorder and rng.random() < cfg.reorder:
            arrive += rng.random() * self.reorder_delay
            c["reordered"] += 1
        self.seq += 1
        heapq.heappush(self.heap, (arrive, self.seq, ARRIVE, dst, frame, trimmed or corrupted, True,
                                   modified))
        if cfg.dup and rng.random() < cfg.dup:
            c["duplicated"] += 1
            self.seq += 1
            heapq.heappush(self.heap, (arrive + rng.random() * self.reorder_delay, self.seq,
                                       ARRIVE, dst, frame, trimmed or corrupted, False, True))

    def _flush(self, host: _Host) -> None:
        ep = host.ep
        for data, meta in ep.datagrams_to_send(self.now):
            self._send(host, data, meta)
        t = ep.get_timer()
        if t is not None and t < host.sched:
            if t < self.now:
                t = self.now
            host.sched = t
            self.seq += 1
            heapq.heappush(self.heap, (t, self.seq, TIMER, host, None, False, False, False))

    # --- run ------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        wall0 = time.perf_counter()
        data = random.Random(cfg.seed ^ 0x5EED).randbytes(cfg.bytes)
        n = max(1, cfg.messages)
        bounds = [cfg.bytes * i // n for i in range(n + 1)]
        msgs = [data[bounds[i]:bounds[i + 1]] for i in range(n)]
        want = [hashlib.sha256(m).digest() for m in msgs]
        a, b = self.a, self.b
        handles = {a.ep.send_message(B_ADDR, m, mode=cfg.mode): i for i, m in enumerate(msgs)}
        pending = set(handles)
        got: list[bytes] = []
        failures: list[str] = []
        closed = {"A": False, "B": False}
        close_sent = False
        last_delivery = 0.0
        self._flush(a)
        heap = self.heap
        framer = self.framer
        pop = heapq.heappop
        limit = cfg.time_limit_s
        had = self.had
        while heap:
            t, _, kind, host, frame, damaged, orig, modified = pop(heap)
            if t > limit:
                failures.append(f"time limit {limit}s reached")
                break
            self.now = t
            ep = host.ep
            if kind == ARRIVE:
                if modified and self.pcap is not None:
                    self.pcap.write(t, frame)
                src, dst, sport, dport, dscp, ecn, payload = framer.parse(frame)
                if host is b and not damaged and len(payload) >= 12 and (payload[0] >> 3) in (2, 3, 13, 14):
                    key = (int.from_bytes(payload[8:10], "big"), int.from_bytes(payload[4:8], "big"))
                    if key in had:
                        if orig and payload[1] & 0x10:
                            self.counters["spurious"] += 1
                    else:
                        had.add(key)
                ep.receive_datagram(payload, DatagramMeta(src, dst, sport, dport, ecn, dscp), t)
            else:
                if t != host.sched:
                    continue
                host.sched = INF
                ep.handle_timer(t)
            while True:
                e = ep.next_event()
                if e is None:
                    break
                if isinstance(e, ev.MessageDelivered):
                    got.append(hashlib.sha256(e.data).digest())
                    last_delivery = t
                elif isinstance(e, ev.SendComplete):
                    pending.discard(e.handle)
                elif isinstance(e, ev.MessageFailed):
                    failures.append(f"message {e.message_id} failed: {e.reason}")
                    pending.discard(e.handle)
                elif isinstance(e, ev.PdcClosed):
                    closed[host.name] = True
                    if e.error:
                        failures.append(f"{host.name} PDC {e.pdcid} closed in error: {e.reason}")
                if self.trace is not None:
                    self._log(f"{host.name} event {e!r:.200}")
            if not pending and not close_sent:
                close_sent = True
                a.ep.close()
                self._flush(a)
            self._flush(host)
            if closed["A"] and closed["B"]:
                break
            if failures and not pending:
                break
        if pending and not failures:
            failures.append(f"stalled at {self.now:.6f}s with {len(pending)} message(s) unacknowledged")
        wall = time.perf_counter() - wall0
        sim_time = last_delivery or self.now
        if cfg.mode == "rod":
            order_ok = got == want
        else:
            order_ok = sorted(got) == sorted(want)
        ok = order_ok and not failures and not pending and len(got) == len(want)
        c = self.counters
        sa = a.ep.stats
        nacks: dict[str, int] = dict(sorted(b.ep.nacks_sent.items()))
        for k, v in a.ep.nacks_sent.items():
            nacks[k] = nacks.get(k, 0) + v
        return {
            "ok": ok,
            "bytes": cfg.bytes,
            "messages": n,
            "mode": cfg.mode,
            "sim_time_s": sim_time,
            "wall_time_s": round(wall, 6),
            "goodput_gbps": (cfg.bytes * 8 / sim_time / 1e9) if sim_time > 0 else 0.0,
            "packets_sent": c["packets_a"],
            "packets_total": c["packets_a"] + c["packets_b"],
            "data_packets": self.data_pkts,
            "retransmissions": sa["retransmissions"],
            "spurious_retransmissions": c["spurious"],
            "trimmed": c["trimmed"],
            "dropped": c["dropped"],
            "ecn_marked": c["ecn_marked"],
            "corrupted": c["corrupted"],
            "duplicated": c["duplicated"],
            "reordered": c["reordered"],
            "bad_crc": a.ep.stats["bad_crc"] + b.ep.stats["bad_crc"],
            "nacks": nacks,
            "rto": sa["rto"],
            "tlp": sa["tlp"],
            "ack_req": sa["ack_req_tx"],
            "paths_used": len(self.paths_used),
            "paths": cfg.paths,
            "window_bytes": self.window,
            "internal_errors": a.ep.stats["internal_error"] + b.ep.stats["internal_error"],
            "failures": failures[:5],
            "seed": cfg.seed,
        }


def run(cfg: SimConfig, **kw: Any) -> dict[str, Any]:
    return Simulator(cfg, **kw).run()
