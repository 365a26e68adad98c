"""An in-memory, seeded, lossy fabric for SES endpoints (tests, examples; no sockets, no clock).

Three transports, picked by ``mode``:

* ``"rud"``: stands in for the PDS guarantees (C.8 RUD): each SES request is delivered exactly once
  to the target SES, in a random order; a lost or trimmed packet is retransmitted (counted) and
  never delivered twice; the response rides back like an ACK (lost ACKs are resent from the
  target's stored copy, so the SES never executes a request twice). Separate response packets
  (read data beyond MAX_ACK_DATA_SIZE, C.3) travel the same way.
* ``"rudi"``: real :class:`uet.pds.rudi.RudiEndpoint` cores exchanging encoded datagrams over a
  virtual-time channel that loses, trims, duplicates and reorders; the target SES sees repeated
  requests (retransmissions, duplicates) and must stay idempotent.
* ``"uud"``: :class:`uet.pds.uud.UudEndpoint` cores over the same channel; nothing is resent.

What happens on the way - loss, trimming, corruption, duplication, reordering - is the network
model of :mod:`uet.net` (one link, fast enough never to queue, a latency of ``latency`` and a
reorder delay of up to four latencies; trimmed datagrams keep 64 bytes). Every random choice comes
from ``seed`` (docs/design-notes.md principle 5).
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from typing import Any

from ..net import CE, TRIMMED, Link, NetConfig, flip
from ..pds.datagram import DatagramMeta
from ..pds.rudi import DSCP_TRIMMED, RudiConfig, RudiEndpoint, RudiRequest, RudiRequestFailed, RudiResponse
from ..pds.uud import UudDatagram, UudEndpoint
from ..wire.enums import DSCP_CONTROL
from .endpoint import SesEndpoint, SesPacket


class Loopback:
    def __init__(self, endpoints: dict[str, SesEndpoint], *, mode: str = "rud", loss: float = 0.0,
                 trim: float = 0.0, dup: float = 0.0, reorder: float = 0.5, corrupt: float = 0.0,
                 seed: int = 0, latency: float = 10e-6, rudi: RudiConfig | None = None):
        if mode not in ("rud", "rudi", "uud"):
            raise ValueError("mode is rud, rudi or uud")
        self.eps = endpoints
        self.mode = mode
        self.loss, self.trim, self.dup, self.reorder, self.corrupt = loss, trim, dup, reorder, corrupt
        self.rng = random.Random(seed)
        self.latency = latency
        net = NetConfig(paths=1, rate_gbps=1e9, rtt_us=2 * latency * 1e6, loss=loss, trim=trim,
                        reorder=reorder, reorder_delay_us=4 * latency * 1e6, dup=dup,
                        corrupt=corrupt, trim_bytes=64, seed=seed)
        self.link = Link(net, 0, 0, queue_bytes=1 << 40)
        self.now = 0.0
        self.stats: Counter[str] = Counter()
        names = sorted(endpoints)
        self.addr = {n: f"10.0.0.{i + 1}" for i, n in enumerate(names)}
        self.name = {a: n for n, a in self.addr.items()}
        self._seq = 0
        self._q: list[tuple[float, int, Any]] = []
        self._ref = 0
        self.rudi = {n: RudiEndpoint(self.addr[n], rudi or RudiConfig(seed=seed + i))
                     for i, n in enumerate(names)} if mode == "rudi" else {}
        self.uud = {n: UudEndpoint(self.addr[n]) for n in names} if mode == "uud" else {}

    # --- queueing ---------------------------------------------------------------------------

    def _push(self, item: Any, delay: float = 0.0, at: float | None = None) -> None:
        if at is None:
            at = self.now + delay
        self._seq += 1
        heapq.heappush(self._q, (at, self._seq, item))

    def _collect(self) -> None:
        for n, ep in self.eps.items():
            for p in ep.packets_to_send():
                self._submit(n, p)
        for n, r in self.rudi.items():
            for data, meta in r.datagrams_to_send(self.now):
                self._wire(data, meta)
        for n, u in self.uud.items():
            for data, meta in u.datagrams_to_send(self.now):
                self._wire(data, meta)

    def _submit(self, src: str, p: SesPacket) -> None:
        if self.mode == "rud":
            self._send_rud("rud", src, p)
        elif self.mode == "rudi":
            if not p.is_request:
                self.stats["rudi_stray_response"] += 1
                return
            if not (p.ses.get("som") and p.ses.get("eom")):
                # RUDI requests are single packets (each one answered alone, C.8)
                self.stats["rudi_multi_packet"] += 1
                self.eps[src].transport_failed(p.message_id, "RUDI carries single-packet requests")
                return
            self.rudi[src].send_request(self.addr[p.peer], p.next_hdr, p.to_bytes(), self.now,
                                        tag=p.message_id)
        else:
            self.uud[src].send_datagram(self.addr[p.peer], p.to_bytes(), next_hdr=p.next_hdr)

    def _wire(self, data: bytes, meta: DatagramMeta) -> None:
        """The lossy channel for encoded datagrams (RUDI, UUD): the link's verdict applied."""
        self.stats["datagrams"] += 1
        at, flags, corrupt, dup_at = self.link.offer(self.now, len(data), meta.dscp == DSCP_CONTROL,
                                                     meta.ecn in (1, 2), self.rng)
        if at is None:
            self.stats["dropped"] += 1
            return
        if flags & (TRIMMED | CE):
            if flags & TRIMMED:
                self.stats["trimmed"] += 1
                data = data[:64]
            meta = DatagramMeta(meta.src, meta.dst, meta.sport, meta.dport,
                                3 if flags & CE else meta.ecn,
                                DSCP_TRIMMED if flags & TRIMMED else meta.dscp)
        if corrupt is not None:
            self.stats["corrupted"] += 1
            data = flip(data, corrupt)
        self._push(("dgram", data, meta), at=at)
        if dup_at is not None:
            self.stats["duplicated"] += 1
            self._push(("dgram", data, meta), at=dup_at)

    # --- delivery -----------------------------------------------------------------------------

    def _send_rud(self, kind: str, src: str, p: SesPacket) -> None:
        """A request (``kind`` "rud") or a response ("rud_rsp") through the link; the PDS that
        this mode stands in for resends what was lost or trimmed, so the SES sees it once."""
        at, flags, _, _ = self.link.offer(self.now, 44 + len(p.payload), kind == "rud_rsp",
                                          kind == "rud", self.rng)
        if at is None or flags & TRIMMED:
            self.stats["retransmissions"] += 1
            self._push(("resend", kind, src, p), self.latency * 3)
            return
        self._push((kind, src, p), at=at)

    def _deliver_rud(self, src: str, p: SesPacket) -> None:
        dst = self.eps[p.peer]
        if p.is_request:
            self._ref += 1
            rsp = dst.receive(p.next_hdr, p.ses, p.ext, p.payload, peer=src, request_ref=self._ref)
            if rsp is not None:  # rides on the ACK
                rsp.peer = src
                rsp.message_id = p.message_id
                self._send_rud("rud_rsp", p.peer, rsp)
        else:
            dst.receive(p.next_hdr, p.ses, None, p.payload, peer=src)

    def _deliver_rsp(self, src: str, p: SesPacket) -> None:
        self.eps[p.peer].receive(p.next_hdr, p.ses, None, p.payload, peer=src, message_id=p.message_id)

    def _deliver_dgram(self, data: bytes, meta: DatagramMeta) -> None:
        n = self.name.get(meta.dst)
        if n is None:
            return
        src = self.name.get(meta.src)
        if self.mode == "rudi":
            r = self.rudi[n]
            r.receive_datagram(data, meta, self.now)
            while (e := r.next_event()) is not None:
                if isinstance(e, RudiRequest):
                    rsp = self.eps[n].receive_bytes(e.next_hdr, e.ses, peer=src, request_ref=e.pkt_id,
                                                    mode="rudi", inline_limit=self.eps[n].config.mtu)
                    if rsp is not None:
                        r.respond(e, rsp.next_hdr, rsp.to_bytes())
                    else:  # U2: every request gets one response
                        self.stats["rudi_no_response"] += 1
                elif isinstance(e, RudiResponse):
                    self.eps[n].receive_bytes(e.next_hdr, e.ses, peer=src, message_id=e.tag)
                elif isinstance(e, RudiRequestFailed):
                    self.eps[n].transport_failed(e.tag, e.reason)
        else:
            u = self.uud[n]
            u.receive_datagram(data, meta, self.now)
            while (e := u.next_event()) is not None:
                if isinstance(e, UudDatagram):
                    self.eps[n].receive_bytes(e.next_hdr, e.ses, peer=src, mode="uud")

    def _timers(self) -> float | None:
        ts = [t for r in self.rudi.values() if (t := r.get_timer()) is not None]
        return min(ts) if ts else None

    def run(self, max_steps: int = 1_000_000, until: float = 10.0) -> int:
        """Pump until nothing is in flight and no timer is pending; returns steps taken."""
        steps = 0
        self._collect()
        while steps < max_steps:
            tq = self._q[0][0] if self._q else None
            tt = self._timers()
            if tq is None and tt is None:
                break
            if tq is not None and (tt is None or tq <= tt):
                self.now, _, item = heapq.heappop(self._q)
                if item[0] == "resend":
                    self._send_rud(item[1], item[2], item[3])
                elif item[0] == "rud":
                    self._deliver_rud(item[1], item[2])
                elif item[0] == "rud_rsp":
                    self._deliver_rsp(item[1], item[2])
                else:
                    self._deliver_dgram(item[1], item[2])
            else:
                self.now = tt  # type: ignore[assignment]
                for r in self.rudi.values():
                    r.handle_timer(self.now)
            if self.now > until:
                break
            self._collect()
            steps += 1
        return steps
