"""The output port of the RoCE fabric (``uet compare``'s ``roce`` and ``adaptive`` designs), as pure
code, and the two ways a switch picks an up port. The UET design runs on uet.net.switch's port
(trimming, its ECN ramp) inside uet.sim.fabric; this one has what RoCE switches have instead:
a lossless priority that PFC can pause, and DCQCN's RED-style marking.

Rules (numbered; tests name them):

  COMPARE-R1  two queues served strict-priority: control (CNPs, and ACKs and NAKs when they have a class
      of their own: DSCP 48, not ECN-capable) ahead of data (the lossless priority when PFC is
      on; ACKs and NAKs in the QP's class, uet.compare.rocefabric COMPARE-F6, share it). Only the data
      queue is ever paused (uet.roce.pfc ROCE-P5) and only what is in it counts against PFC (ROCE-P1).
  COMPARE-R2  a data packet that does not fit ``buffer_bytes`` is dropped (no trimming: RoCE switches do
      not trim); with PFC on the driver gives the port a buffer that the XOFF thresholds never
      let fill (ROCE-P6), so a drop there would be a bug, and is counted like any other.
  COMPARE-R3  ECN on dequeue, RED as DCQCN's switches configure it (G.7): an ECN-capable data packet
      leaving a queue of q bytes (itself included) is CE-marked with probability 0 below
      ``kmin``, rising linearly to ``pmax`` at ``kmax``, and 1 above ``kmax``
      (G.7's example set: Kmin 10 KB, Kmax 100 KB, Pmax 1%).
  COMPARE-R4  store and forward: a packet holds the link for its frame length / rate and arrives
      ``delay`` later (as uet.net.switch NET-S4); a degraded link has a fraction of the rate.
  COMPARE-R5  ECMP (the ``roce`` design): the up port is a hash of the 5-tuple bytes (IPv4 addresses, UDP
      ports) salted per switch: a QP's fixed source port (uet.roce.qp ROCE-Q3) pins it to one path.
  COMPARE-R6  adaptive routing (the ``adaptive`` design, a generic model: no vendor's algorithm is
      public): per packet, the up port with the fewest bytes queued for the data class, a
      paused port counting as full; ties go to a seeded random draw.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from ..net.ecmp import pick
from ..net.ecn import ecn_mark
from ..roce.pfc import PauseGate


class Pkt:
    """A frame in the RoCE fabric and what the switches need of it (read once at the sender)."""

    __slots__ = ("frame", "dst", "key", "control", "ect", "ce", "flow", "ingress", "size")

    def __init__(self, frame: bytes, dst: int, key: int, control: bool, ect: bool, flow: int):
        self.frame = frame
        self.dst = dst
        self.key = key
        self.control = control
        self.ect = ect
        self.ce = False
        self.flow = flow
        self.ingress: Any = None  # the PfcIngress holding it (P1)
        self.size = len(frame)


class CPort:
    """One output port (COMPARE-R1 to COMPARE-R4). ``peer`` is the node it delivers to; ``peer_ingress`` is the
    PfcIngress of the peer switch for this link (None: the peer is a host, or PFC is off)."""

    __slots__ = ("name", "peer", "Bps", "delay", "cap", "kmin", "kmax", "pmax", "rng", "data",
                 "prio", "qbytes", "busy", "gate", "peer_ingress", "tx_packets", "tx_bytes",
                 "dropped", "ce_marked", "max_qbytes", "wake", "to_host", "flows_paused")

    def __init__(self, name: str, peer: Any, *, rate_bps: float, delay: float, buffer_bytes: int,
                 kmin: int, kmax: int, pmax: float, rng: random.Random, to_host: bool = False):
        if kmax <= kmin or not 0 <= pmax <= 1:
            raise ValueError("RED: kmin < kmax and 0 <= pmax <= 1")
        self.name = name
        self.peer = peer
        self.Bps = rate_bps / 8
        self.delay = delay
        self.cap = buffer_bytes
        self.kmin, self.kmax, self.pmax = kmin, kmax, pmax
        self.rng = rng
        self.data: deque[Pkt] = deque()
        self.prio: deque[Pkt] = deque()
        self.qbytes = 0
        self.busy = False
        self.gate = PauseGate()
        self.peer_ingress: Any = None
        self.tx_packets = self.tx_bytes = self.dropped = self.ce_marked = self.max_qbytes = 0
        self.wake = float("inf")      # a wake-up scheduled for the end of a pause
        self.to_host = to_host
        self.flows_paused: set[int] = set()

    @property
    def rate_bps(self) -> float:
        return self.Bps * 8

    def enqueue(self, pkt: Pkt) -> bool:
        """COMPARE-R1, COMPARE-R2: False when dropped."""
        if pkt.control:
            self.prio.append(pkt)
            return True
        if self.qbytes + pkt.size > self.cap:
            self.dropped += 1
            return False
        self.data.append(pkt)
        self.qbytes += pkt.size
        if self.qbytes > self.max_qbytes:
            self.max_qbytes = self.qbytes
        return True

    def start(self, now: float) -> tuple[Pkt, float] | None:
        """COMPARE-R1, COMPARE-R3, COMPARE-R4: the next packet and when the link is done with it; None when there is
        nothing to send or only paused data (the caller wakes the port at ``gate.until``)."""
        if self.prio:
            pkt = self.prio.popleft()
        elif self.data and not self.gate.paused(now):
            pkt = self.data.popleft()
            depth = self.qbytes
            self.qbytes -= pkt.size
            ecn_mark(self, pkt, depth, self.kmax, self.pmax)
        else:
            self.busy = False
            return None
        self.busy = True
        self.tx_packets += 1
        self.tx_bytes += pkt.size
        return pkt, now + pkt.size / self.Bps


def ecmp_port(up: list[CPort], key: int, salt: int) -> CPort:
    """COMPARE-R5: the ECMP of every switch (uet.net.ecmp NET-M2)."""
    return pick(up, key, salt)


def adaptive_port(up: list[CPort], now: float, rng: random.Random) -> CPort:
    """COMPARE-R6: the up port with the shortest data queue (a paused one counts as full)."""
    best: list[CPort] = []
    low = None
    for p in up:
        q = p.cap if p.gate.paused(now) else p.qbytes
        if low is None or q < low:
            low, best = q, [p]
        elif q == low:
            best.append(p)
    return best[0] if len(best) == 1 else best[rng.randrange(len(best))]
