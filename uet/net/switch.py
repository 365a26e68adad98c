"""One output port of a switch (or of a host's NIC), as pure code: what enters its queues, what it
sends next and when that is done. The many-host simulator (:mod:`uet.sim.fabric`) drives ports in
virtual time; nothing here reads a clock or schedules an event.

Per port (facts E.6, the switch of the UEC's htsim experiments; docs/design-notes.md "Defaults"):

  NET-S1  two queues, served strict-priority: the priority queue holds control packets (DSCP 46:
      ACK, NACK, CONTROL) and trimmed headers; the data queue holds everything else. Each has
      a capacity in bytes (the data queue ``buffer_bytes``, the priority queue as much again).
  NET-S2  a data packet that does not fit the data queue is trimmed when it is trimmable (uet.net.ecn
      NET-N3) and trimming is on: its first ``trim_bytes`` UDP payload bytes are kept, the DSCP
      becomes 11, and the header joins the priority queue. Otherwise, or when the priority queue
      is full too, it is dropped. Which packet is trimmed is NET-N4 (``trim_victim``; default, as in
      htsim, E.6: the arriving one or the last one queued, with equal chance, drawn from ``rng``).
  NET-S3  ECN is NET-N1 of uet.net.ecn (RED from ``kmin_bytes`` to ``kmax_bytes``, the draw from the
      port's ``rng``) at the point NET-N2 (``ecn_point``) names: on dequeue by default (E.6), an
      ECN-capable data packet leaving the data queue, the depth counting it; or on enqueue, the
      depth the arriving data packet joins.
  NET-S4  store and forward: a packet occupies the link for its frame length / rate, then arrives at
      the peer ``delay`` seconds later. A failed port (``fail_at``) drops what it would send from
      then on; a degraded one runs at a fraction of its rate (the driver builds it so).

CSIG (facts E.4; the tag, its buckets and compare-and-replace are rules CMS-C1 to CMS-C4 of
:mod:`uet.cms.csig`), on a port built with ``csig`` (a signal type; None, the default, is off):

  NET-S5  choice (E.4 names the signals, not how a switch measures them), what the port measures:
      ABW = capacity x (1 - utilisation) and ABW/C = 1 - utilisation, where the capacity is the
      port's own (possibly degraded) rate and the utilisation an exponentially weighted average
      of the link's busy fraction with time constant ``csig_interval`` (default 8 us), brought
      up to date whenever a packet starts (it knows when the last one finished). SAI's default
      measurement interval is 256 us (E.4), far longer than the flows these simulations run
      (a 2 MB flow lasts about 170 us at 100 Gb/s): a switch averaging that slowly would report
      most of a flow's life as an idle fabric, so the default is of the order of one RTT.
      DELAY = the time the departing packet waited in the data queue (``Packet.enq`` to its
      dequeue); nQD = the data queue's depth left behind the departing packet over the buffer
      (an idle port says 0).
  NET-S6  a tagged packet (``Packet.csig``, the 16 tag bits) leaving the data queue is stamped on
      dequeue, as ECN is marked (NET-S3): CMS-C3 compare and replace with the port's bucket (CMS-C2, the
      port's ``csig_scale``) and its locator ``csig_lm``; a tag with d set stays as it is (CMS-C3).
      A tagged packet this port trims (NET-S2) gets d set (CMS-C3, C.6) and is not stamped. Counted:
      ``csig_stamped`` (tags compared), ``csig_replaced`` (changed), ``csig_d_set``.

The queue is measured in frame bytes (Ethernet + IPv4 + UDP + UET), as the wire carries them.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..cms.csig import DELAY, NQD, Scale
from .csig import stamp_on, trim_on, utilisation
from .ecn import ECN_POINT, TRIM_VICTIM, check, ecn_mark, trimmable, victim_is_last

#: What a port counts.
PORT_COUNTERS = ("tx_packets", "tx_bytes", "trimmed", "dropped", "ce_marked", "max_qbytes")
#: What a port counts of CSIG (NET-S6), apart: only a port with ``csig`` on moves them.
CSIG_COUNTERS = ("csig_stamped", "csig_replaced", "csig_d_set")
CSIG_INTERVAL = 8e-6  # NET-S5: the utilisation's time constant (choice; SAI's default is 256 us, E.4)


@dataclass(slots=True)
class Packet:
    """A frame in the fabric and what the switches need to know of it (read once, at the sending
    host, from the frame's own bytes): ``dst`` the index of the destination host, ``key`` the
    hash of its 5-tuple (the ECMP input), ``control`` (DSCP 46), ``ect`` (ECN-capable); and
    what the switches did to it (trimmed, CE-marked), applied to the bytes at the host.
    ``csig``: the 16 bits of its CSIG tag (NET-S6; None: untagged), ``enq``: when it last joined a
    data queue (NET-S5), ``pid``: the driver's id for it."""

    frame: bytes
    dst: int
    key: int
    control: bool
    ect: bool
    trimmed: bool = False
    ce: bool = False
    csig: int | None = None
    enq: float = 0.0
    pid: int = 0  # an id the driver may give it (uet.sim.fabric's event log, its C engine)



class Port:
    """An output port: see the module docstring (NET-S1 to NET-S6). ``peer`` is whatever the driver wants
    to deliver to (a switch or a host). ``csig`` (a signal type of uet.cms.csig CMS-C1, None: off),
    ``csig_scale``, ``csig_lm`` and ``csig_interval`` configure NET-S5, NET-S6; they may be changed
    between packets."""

    __slots__ = PORT_COUNTERS + CSIG_COUNTERS + (
        "name", "peer", "Bps", "delay", "cap", "pcap", "kmin", "kspan", "trim_bytes", "trimming",
        "rng", "data", "prio", "qbytes", "pbytes", "busy", "fail_at", "q_area", "q_since",
        "_keep_frame", "csig", "csig_scale", "csig_lm", "csig_interval", "util", "u_since",
        "tx_end", "ecn_point", "trim_victim", "_mark_in")

    def __init__(self, name: str, peer: Any, *, rate_bps: float, delay: float, buffer_bytes: int,
                 kmin_bytes: int, kmax_bytes: int, trim_bytes: int, trimming: bool,
                 rng: random.Random, fail_at: float = float("inf"), header_bytes: int = 42,
                 csig: int | None = None, csig_scale: Scale | None = None, csig_lm: int = 0,
                 csig_interval: float = CSIG_INTERVAL, ecn_point: str = ECN_POINT,
                 trim_victim: str = TRIM_VICTIM):
        check(ecn_point, trim_victim)
        if not 0 <= csig_lm <= 127:
            raise ValueError("csig_lm is a 7-bit locator (0..127)")
        if not csig_interval > 0:
            raise ValueError("csig_interval must be positive")
        if kmax_bytes <= kmin_bytes:
            raise ValueError("kmax_bytes must exceed kmin_bytes")
        for c in PORT_COUNTERS + CSIG_COUNTERS:
            setattr(self, c, 0)
        self.name = name
        self.peer = peer
        self.Bps = rate_bps / 8
        self.delay = delay
        self.cap = buffer_bytes
        self.pcap = buffer_bytes  # NET-S1
        self.kmin = kmin_bytes
        self.kspan = kmax_bytes - kmin_bytes
        self.trim_bytes = trim_bytes
        self._keep_frame = header_bytes + trim_bytes
        self.trimming = trimming
        self.rng = rng
        self.data: deque[Packet] = deque()
        self.prio: deque[Packet] = deque()
        self.qbytes = 0
        self.pbytes = 0
        self.busy = False
        self.fail_at = fail_at
        self.q_area = 0.0  # integral of the data queue depth over time (bytes x s)
        self.q_since = 0.0
        self.csig = csig
        self.csig_scale = csig_scale or Scale()
        self.csig_lm = csig_lm
        self.csig_interval = csig_interval
        self.util = 0.0  # NET-S5: the averaged busy fraction, as of u_since
        self.u_since = 0.0
        self.tx_end = 0.0  # when the link finishes (finished) its last packet
        self.ecn_point = ecn_point      # uet.net.ecn NET-N2
        self._mark_in = ecn_point == "enqueue"
        self.trim_victim = trim_victim  # uet.net.ecn NET-N4

    @property
    def keep_frame(self) -> int:
        """NET-S2: the frame bytes a trimmed packet keeps (and takes in the priority queue)."""
        return self._keep_frame

    def _account(self, now: float) -> None:
        self.q_area += self.qbytes * (now - self.q_since)
        self.q_since = now

    def enqueue(self, pkt: Packet, now: float) -> bool:
        """NET-S1, NET-S2: queue ``pkt`` (trimming it when the data queue is full); False when dropped."""
        if pkt.trimmed:  # trimmed upstream: its frame is cut only at the host, it takes less
            n = self._keep_frame
        else:
            n = len(pkt.frame)
        if pkt.control or pkt.trimmed:
            if self.pbytes + n > self.pcap:
                self.dropped += 1
                return False
            self.prio.append(pkt)
            self.pbytes += n
            return True
        if self.qbytes + n <= self.cap:
            self._account(now)
            if self._mark_in:  # NET-N2 "enqueue": the depth it joins
                ecn_mark(self, pkt, self.qbytes, self.kmin + self.kspan)
            pkt.enq = now
            self.data.append(pkt)
            self.qbytes += n
            if self.qbytes > self.max_qbytes:
                self.max_qbytes = self.qbytes
            return True
        keep = self._keep_frame
        if self.trimming and trimmable(n, False, keep) and self.pbytes + keep <= self.pcap:
            data = self.data
            if data and victim_is_last(self.trim_victim, self.rng):  # NET-N4
                last = data[-1]
                m = len(last.frame)
                if m > keep and self.qbytes - m + n <= self.cap:  # E.6: trim the last queued
                    self._account(now)
                    if self._mark_in:
                        ecn_mark(self, pkt, self.qbytes - m, self.kmin + self.kspan)
                    pkt.enq = now
                    data[-1] = pkt
                    self.qbytes += n - m
                    if self.qbytes > self.max_qbytes:
                        self.max_qbytes = self.qbytes
                    pkt = last
            pkt.trimmed = True
            self.trimmed += 1
            if pkt.csig is not None and self.csig is not None:
                pkt.csig = trim_on(self, pkt.csig)  # NET-S6: uet.net.csig NET-G3
            self.prio.append(pkt)
            self.pbytes += keep
            return True
        self.dropped += 1
        return False

    def start(self, now: float) -> tuple[Packet, float] | None:
        """NET-S1, NET-S3, NET-S4: the next packet to send and when the link is done with it (None: the
        queues are empty). The caller delivers it ``delay`` after that and calls again then."""
        while True:
            if self.prio:
                pkt = self.prio.popleft()
                n = self._keep_frame if pkt.trimmed else len(pkt.frame)
                self.pbytes -= n
                if now >= self.fail_at:
                    self.dropped += 1
                    continue
            elif self.data:
                pkt = self.data.popleft()
                n = len(pkt.frame)
                self._account(now)
                depth = self.qbytes
                self.qbytes -= n
                if now >= self.fail_at:
                    self.dropped += 1
                    continue
                if not self._mark_in:  # NET-N2 "dequeue" (E.6): the departing packet included
                    ecn_mark(self, pkt, depth, self.kmin + self.kspan)
            else:
                self.busy = False
                return None
            self.busy = True
            self.tx_packets += 1
            self.tx_bytes += n
            done = now + n / self.Bps
            if self.csig is not None:
                self._measure(now)
                self.tx_end = done
                if pkt.csig is not None and not pkt.trimmed:  # tagged, from the data queue
                    self._stamp(pkt, now)
            return pkt, done

    def _measure(self, now: float) -> None:
        """NET-S5: the busy-fraction average brought up to ``now`` (uet.net.csig NET-G1)."""
        if now > self.u_since:
            self.util = utilisation(self.util, self.u_since, self.tx_end, now, self.csig_interval)
            self.u_since = now

    def csig_bucket(self, now: float, pkt: Packet | None = None) -> int:
        """NET-S5: this port's bucket (CMS-C2) of its signal type, for ``pkt`` departing at ``now``."""
        t, scale = self.csig, self.csig_scale
        if t == DELAY:
            return scale.bucket(t, delay_s=now - pkt.enq if pkt is not None else 0.0)
        if t == NQD:
            return scale.bucket(t, depth_fraction=self.qbytes / self.cap)
        self._measure(now)
        cap = self.Bps * 8e-9
        return scale.bucket(t, abw_gbps=cap * (1.0 - self.util), capacity_gbps=cap)

    def _stamp(self, pkt: Packet, now: float) -> None:
        """NET-S6: CMS-C3 compare and replace with this port's bucket (uet.net.csig NET-G2)."""
        pkt.csig = stamp_on(self, pkt.csig, self.csig_bucket(now, pkt),  # type: ignore[arg-type]
                            self.csig_lm)

    def mean_queue(self, now: float) -> float:
        """The data queue's time-averaged depth in bytes from 0 to ``now``."""
        self._account(now)
        return self.q_area / now if now > 0 else 0.0

    def counters(self) -> dict[str, int]:
        return {c: getattr(self, c) for c in PORT_COUNTERS}
