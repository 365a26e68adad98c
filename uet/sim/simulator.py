"""The in-process simulated fabric (docs/design-notes.md "Test beds" 1): virtual time, deterministic from a
seed, links that carry encoded Ethernet/IPv4/UDP frames.

Topology: host A (initiator, 10.0.0.1) and host B (target, 10.0.0.2) joined by ``paths`` parallel
paths. What a path does to a frame - rate, delay, queue, ECN, trimming, loss, corruption,
reordering, duplication, failure - is the network model of :mod:`uet.net` (one :class:`Link` per
path and direction, ECMP by :class:`Ecmp` on each frame's entropy, the UDP source port of a
request and of its answers alike (A.1), so the EV chooses the path both ways); this module drives it in
virtual time and applies its verdicts to the frames (trim and DSCP 11, CE, a flipped bit).

Capture (``pcap``): every frame a host puts on a link, at its send time, exactly as sent; and
every frame the fabric changed (trimmed, CE-marked, corrupted, duplicated), again at its arrival
time with the changed bytes.

Trimming (docs/design-notes.md "Defaults"): only data packets (DSCP not 46) with more than 256 bytes of UDP
payload; the first 256 bytes are kept and the DSCP becomes 11.

The event loop is a heap of (time, seq, host, header, payload, flags): a frame in flight as its 42
header bytes and its UDP payload, so that the bytes a host sent reach the other unjoined and
uncopied when nothing changes them; a timer is an entry without a frame.
Ground truth for the summary: the simulator records which (PDC, PSN) requests reached B intact, so
a retransmission that arrives when an earlier copy already had is counted as spurious.

Hosts: each is a :class:`uet.host.Host` (PDS, RUDI, UUD and the SES); A runs the workload of
:mod:`uet.sim.workloads` (``messages`` SENDs, or operations of kind ``op``) against B, the run
ends when they are complete and every PDC is closed, and ``ok`` is the workload's check (messages,
target memory, read data or tagged receives by hash; atomics against a model).

Cost (docs/design-notes.md "Performance"): the payload to send and its expected digests are made when the
simulator is built; ``run`` (and ``wall_time_s``) covers the transfer and the check of what arrived.
The 42 header bytes of a frame are cached per (addresses, ports, DSCP, ECN, length), and the
metadata of an arriving frame per its 42 header bytes (the same parse, memoized); a
delivered SEND is checked by its digest (CRC-32C and CRC-32 of every byte, uet.native.digest):
B's SES hashes it as it lines up and keeps no copy (SES-M8), so B holds the window, not the
message.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Callable, TextIO

from ..native.digest import Digest
from ..payload import seeded_bytes
from ..cms.choice import pds_overrides
from ..host import Host
from ..net import CE, COUNTERS, TRIMMED, Ecmp, Link, NetConfig, flip
from ..pds import DatagramMeta, PdsConfig
from ..pds import events as ev
from ..pds.datagram import DSCP_CONTROL, ECT0, ECT1
from ..ses import SesConfig
from ..wire.enums import CTL_TYPE, PDS_TYPE, REQUEST_TYPES, nack_name
from .frames import HDRS, FrameCache, PcapWriter, set_ce, trim
from .progress import EVERY_EVENTS
from .summary import goodput_gbps, merge_nacks, transfer_summary
from .workloads import Workload

A_ADDR, B_ADDR = "10.0.0.1", "10.0.0.2"
INF = float("inf")
# flags of a frame in flight
DAMAGED, ORIG, MODIFIED = 1, 2, 4


@dataclass
class SimConfig(NetConfig):
    """One ``uet sim`` run: the network (:class:`uet.net.NetConfig`, its names and meanings) and
    the transfer over it. ``queue_bytes`` None: twice the window (a lossless run stays lossless)."""

    bytes: int = 4 << 20
    messages: int = 1
    mtu: int = 4096
    mode: str = "rud"
    op: str = "send"                         # the workload (uet.sim.workloads): SEND or another op
    spray: str = "rr"
    entropy_values: int = 64
    cc: str = "fixed"                        # fixed (the window) | nscc (E.1: the paths' BDP)
    window_bytes: int | None = None          # None: 1.5 x BDP of all paths, at least 64 KiB
    ack_loss: float = 0.0                    # extra loss applied only to B->A packets
    drop_psns: tuple[int, ...] = ()          # drop the first copy of these data packets (by index)
    time_limit_s: float = 10.0
    pds: dict[str, Any] = field(default_factory=dict)  # PdsConfig overrides
    security: Any = None  # a uet.tss.SecurityConfig: both hosts protect every datagram (HOST-H5)
    ses_header: str = "auto"  # SesConfig.ses_header: "standard" for the reference provider (A.1)


class _Host:
    __slots__ = ("name", "addr", "ep", "sched", "idx")

    def __init__(self, name: str, addr: str, ep: Host, idx: int):
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
    def __init__(self, cfg: SimConfig, *, trace: TextIO | None = None, pcap: Any = None,
                 progress: Callable[[dict], None] | None = None):
        """``progress(snapshot)``: called every ``EVERY_EVENTS`` events of the run and once at
        its end (``final`` True) with the virtual time, the data packets A sent and the messages
        delivered (uet.sim.progress words it and keeps to the wall clock)."""
        self.cfg = cfg
        self.progress = progress
        self.rng = random.Random(cfg.seed)
        self.trace = trace
        self.pcap = PcapWriter(pcap) if pcap is not None else None
        window = cfg.window_bytes or max(64 * 1024, int(1.5 * cfg.bdp_bytes()))
        qcap = cfg.queue_bytes or max(2 * window, 256 * 1024)
        pc: dict[str, Any] = dict(mtu=cfg.mtu, spray=cfg.spray,
                                  entropy_values=cfg.entropy_values, window_bytes=window)
        # one PDC sprays over every path: its BDP is all of theirs
        pc.update(pds_overrides(cfg.cc, rate_gbps=cfg.paths * cfg.rate_gbps,
                                base_rtt=cfg.rtt_us * 1e-6, window_bytes=window,
                                trimming=cfg.trim_on_overflow))
        pc.update(cfg.pds)
        self.window = window
        self.a = _Host("A", A_ADDR, self._host(A_ADDR, PdsConfig(**pc), 1), 0)
        self.b = _Host("B", B_ADDR, self._host(B_ADDR, PdsConfig(**pc), 2), 1)
        fail_at = cfg.fail_times()
        # the network (uet.net): per direction, one link per path; answers (B->A) also lose
        # ack_loss more
        self.links = [[Link(cfg, i, d, queue_bytes=qcap, fail_at=fail_at[i],
                            extra_loss=cfg.ack_loss if d else 0.0) for i in range(cfg.paths)]
                      for d in range(2)]
        self.ecmp = Ecmp(cfg)
        self.frames = FrameCache(self._facts)
        self.heap: list = []
        self.seq = count(1)  # ties in time break by the order of scheduling
        self.now = 0.0
        self.had: set[bytes] = set()
        self.counters = {"spurious": 0, "packets_a": 0, "packets_b": 0}
        self.paths_used: set[int] = set()
        self.data_pkts = 0
        self._drop_idx = set(cfg.drop_psns)
        self.scripted_drops = 0
        # the workload: messages and the digests they must arrive with
        data = seeded_bytes(cfg.seed ^ 0x5EED, cfg.bytes)
        n = max(1, cfg.messages)
        if cfg.mode in ("rudi", "uud"):  # single-packet requests only (C.8)
            n = max(n, -(-cfg.bytes // cfg.mtu))
        bounds = [cfg.bytes * i // n for i in range(n + 1)]
        # SENDs over RUD/ROD: views of the one stream (the SES keeps them as they are:
        # uet.ses.initiator.frozen), not a copy of each message beside it
        whole = memoryview(data) if cfg.op == "send" and cfg.mode in ("rud", "rod") else data
        self.msgs = [whole[bounds[i]:bounds[i + 1]] for i in range(n)]
        self.want = [Digest.of(m) for m in self.msgs]

    def _host(self, addr: str, pc: PdsConfig, k: int) -> Host:
        seed = self.cfg.seed * 2 + k
        # SES-M7 of uet/ses/target.py: plain SENDs land in receives posted for them
        # SES-M8: B's SENDs arrive as their digests (uet.sim.workloads checks them), not kept
        ses = SesConfig(mtu=min(self.cfg.mtu, pc.mtu), seed=seed & 0xFFFFFFFF, auto_receive=True,
                        rx_digest=self.cfg.op == "send",
                        ses_header=self.cfg.ses_header)
        security = self.cfg.security
        if security is not None and k == 2:  # B serves: F's server mode keys by the client, A
            from ..tss.options import with_role

            security = with_role(security, "server")
        return Host(addr, pds=pc, ses=ses, seed=seed, security=security)

    # --- fabric ---------------------------------------------------------------------------
    def _log(self, msg: str) -> None:
        if self.trace is not None:
            self.trace.write(f"{self.now * 1e6:12.3f}us {msg}\n")

    def _facts(self, meta: DatagramMeta, header: bytes) -> tuple:
        """What a datagram of ``meta`` meets: its link (the direction by its source), path and
        class (uet.sim.frames.FrameCache keeps it per metadata object)."""
        path = self.ecmp.path(meta.src, meta.dst, meta.sport, meta.dport)
        return (self.links[0 if meta.src == A_ADDR else 1][path], path,
                meta.dscp == DSCP_CONTROL, meta.ecn in (ECT1, ECT0))

    def _send(self, host: _Host, out: list) -> None:
        """Put ``out`` on the links: each datagram framed, offered to its path's link (uet.net)
        and, unless dropped, scheduled for arrival with what the link did to it. A frame travels
        as its header and its payload (uet.sim.frames.FrameCache), joined only for the capture
        and for trimming (which rewrites the header's lengths and cuts the payload)."""
        now, rng, c = self.now, self.rng, self.counters
        fwd = host.idx == 0
        dst = self.b if fwd else self.a
        heap, seq, push = self.heap, self.seq, heapq.heappush
        headers_of, pcap, tr = self.frames.headers, self.pcap, self.trace is not None
        c["packets_a" if fwd else "packets_b"] += len(out)
        for data, meta in out:
            if type(data) is not bytes:  # a buffer the host may reuse: the link carries a copy
                data = bytes(data)
            header, (link, path, control, ect) = headers_of(data, meta)
            if pcap is not None:
                pcap.write(now, header + data)
            if tr:
                self._log(f"{host.name}->{'B' if fwd else 'A'} path{path} {describe(data)}")
            if fwd and not control:
                self.paths_used.add(path)
                self.data_pkts += 1
                if self._drop_idx and self.data_pkts in self._drop_idx:
                    self.scripted_drops += 1
                    if tr:
                        self._log(f"  drop (scripted) path{path}")
                    continue
            at, flags, corrupt, dup_at = link.offer(now, len(data), control, ect, rng)
            if at is None:
                if tr:
                    self._log(f"  drop path{path}")
                continue
            mark = ORIG
            if flags & TRIMMED:
                frame = trim(header + data, self.cfg.trim_bytes)
                header, data = frame[:HDRS], frame[HDRS:]
                mark |= MODIFIED | DAMAGED
                if tr:
                    self._log(f"  trimmed path{path}")
            if flags & CE:
                marked = set_ce(header)  # only the IP header changes
                if marked is not header:
                    header = marked
                    mark |= MODIFIED
            if corrupt is not None:
                data = flip(data, corrupt)
                mark |= DAMAGED | MODIFIED
            push(heap, (at, next(seq), dst, header, data, mark))
            if dup_at is not None:
                push(heap, (dup_at, next(seq), dst, header, data, (mark & DAMAGED) | MODIFIED))

    def _snapshot(self, wl: Workload) -> dict[str, Any]:
        return {"sim_time_s": self.now, "data_packets": self.data_pkts,
                "delivered": wl.delivered, "sent": len(self.msgs)}

    def network_counters(self) -> dict[str, int]:
        """The links' counters summed over paths and directions."""
        tot = {k: 0 for k in COUNTERS}
        for side in self.links:
            for link in side:
                for k in COUNTERS:
                    tot[k] += getattr(link, k)
        return tot

    def _flush(self, host: _Host) -> None:
        ep = host.ep
        now = self.now
        out = ep.datagrams_to_send(now)
        if out:
            self._send(host, out)
        t = ep.get_timer()
        if t is not None and t < host.sched:
            if t < now:
                t = now
            host.sched = t
            heapq.heappush(self.heap, (t, next(self.seq), host, None, None, 0))

    # --- run ------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        wall0 = time.perf_counter()
        a, b = self.a, self.b
        wl = Workload(cfg.op, self.msgs, a.ep, b.ep, mode=cfg.mode, digests=self.want)
        n = len(self.msgs)
        failures: list[str] = []
        close_sent = False
        last_delivery = 0.0
        self._flush(a)
        heap, pop, limit = self.heap, heapq.heappop, cfg.time_limit_s
        had, counters, rx_meta, flush = self.had, self.counters, self.frames.meta, self._flush
        trace, pcap = self.trace, self.pcap
        closed_t = ev.PdcClosed
        a_closed = b_closed = False
        next_a, next_b = a.ep.pds.next_event, b.ep.pds.next_event
        # the event queues (deques, read-only here): looked at before anything is called
        pds_events = {a: a.ep.pds.events, b: b.ep.pds.events}
        ses_events = (a.ep.ses.event_queue, b.ep.ses.event_queue)
        progress = self.progress
        tick = EVERY_EVENTS
        while heap:
            t, _, host, header, payload, flags = pop(heap)
            if t > limit:
                failures.append(f"time limit {limit}s reached")
                break
            self.now = t
            if progress is not None:
                tick -= 1
                if not tick:
                    tick = EVERY_EVENTS
                    progress(self._snapshot(wl))
            if header is not None:
                if flags & MODIFIED and pcap is not None:
                    pcap.write(t, header + payload)
                meta = rx_meta(header)
                if host is b:
                    if (not flags & DAMAGED and len(payload) >= 12
                            and (payload[0] >> 3) in REQUEST_TYPES):
                        key = payload[4:10]  # PSN and SPDCID: one (PDC, PSN)
                        if key in had:
                            if flags & ORIG and payload[1] & 0x10:
                                counters["spurious"] += 1
                        else:
                            had.add(key)
                    b.ep.receive_datagram(payload, meta, t)
                else:
                    host.ep.receive_datagram(payload, meta, t)
            else:
                if t != host.sched:
                    continue
                host.sched = INF
                host.ep.handle_timer(t)
            next_event = next_b if host is b else next_a
            while pds_events[host] and (e := next_event()) is not None:  # PDCs opening, closing
                if type(e) is closed_t:
                    if host is a:
                        a_closed = True
                    else:
                        b_closed = True
                    if e.error:
                        failures.append(f"{host.name} PDC {e.pdcid} closed in error: {e.reason}")
                if trace is not None:
                    self._log(f"{host.name} event {e!r:.200}")
            if ses_events[0] or ses_events[1]:
                if wl.poll():
                    last_delivery = t
                if not close_sent and wl.idle():  # only an event can make it idle
                    close_sent = True
                    a.ep.close()
                    b.ep.close()  # its reverse PDCs (read data)
                    flush(a)
                    flush(b)
            flush(host)
            if a_closed and b_closed and close_sent:
                break
            if failures and wl.idle():
                break
        if wl.pending and not failures and not wl.failures:
            failures.append(f"stalled at {self.now:.6f}s with {len(wl.pending)} operation(s) "
                            "not complete")
        failures.extend(wl.check())
        if progress is not None:
            progress({**self._snapshot(wl), "final": True})
        wall = time.perf_counter() - wall0
        sim_time = last_delivery or self.now
        ok = not failures
        nbytes = wl.bytes
        c = self.counters
        net = self.network_counters()
        sa, sb = a.ep.stats, b.ep.stats
        summary = transfer_summary(
            ok=ok, bytes=nbytes, sim_time_s=sim_time, wall_time_s=round(wall, 6),
            goodput_gbps=goodput_gbps(nbytes, sim_time), packets_sent=c["packets_a"],
            retransmissions=sa["retransmissions"], spurious_retransmissions=c["spurious"],
            trimmed=net["trimmed"], dropped=net["dropped"] + self.scripted_drops,
            ecn_marked=net["ce_marked"], nacks=merge_nacks((b.ep.nacks_sent, a.ep.nacks_sent)),
            paths_used=len(self.paths_used), seed=cfg.seed, op=cfg.op, mode=cfg.mode, sent=n,
            # delivered (docs/design-notes.md): messages (sends), operations completed (SES), or datagrams
            # handed up, duplicates included (UUD: ok means what arrived is intact)
            delivered=wl.delivered,
            target_retransmissions=sb["retransmissions"],  # B also sends: read data, reverse PDCs
            messages=n, mtu=cfg.mtu, ses_header=cfg.ses_header,
            packets_total=c["packets_a"] + c["packets_b"], data_packets=self.data_pkts,
            corrupted=net["corrupted"], duplicated=net["duplicated"], reordered=net["reordered"],
            bad_crc=sa["bad_crc"] + sb["bad_crc"], rto=sa["rto"], tlp=sa["tlp"],
            ack_req=sa["ack_req_tx"], paths=cfg.paths, window_bytes=self.window,
            internal_errors=sa["internal_errors"] + sb["internal_errors"],
            failures=failures[:5])
        if cfg.security is not None:
            # the frames are encrypted: which request was a needless copy cannot be read off them
            summary["spurious_retransmissions"] = None
            summary["tss"] = {k: sa[k] + sb[k] for k in sorted(sa) if k.startswith("tss_")}
        if cfg.op == "send" and cfg.mode == "uud":
            summary["duplicates"] = wl.duplicates
            # UUD loses datagrams by design (C.8), so its goodput is what arrived, each
            # datagram once; what was sent, over the same time, is the offered rate
            summary["goodput_gbps"] = goodput_gbps(wl.delivered_bytes, sim_time)
            summary["offered_gbps"] = goodput_gbps(nbytes, sim_time)
            summary["delivered_bytes"] = wl.delivered_bytes
        return summary


def run(cfg: SimConfig, **kw: Any) -> dict[str, Any]:
    return Simulator(cfg, **kw).run()
