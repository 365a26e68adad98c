"""One direction of one path, as pure code: a datagram and ``now`` in, what happens to it and when
out. The simulator calls it in virtual time, the live relay in wall time; neither copies a rule.

Per datagram, in this order (docs/design-notes.md "Test beds"):

1. a failed path drops everything from its fail time on;
2. random loss;
3. random trimming of a trimmable data packet (NET-N3 of :mod:`uet.net.ecn`);
4. queue admission: the queue is modelled by the time the link is busy until; a datagram that does
   not fit in ``queue_bytes`` is trimmed when trimmable (``trim_on_overflow``; the arriving one:
   the link keeps no packets to choose from, uet.net.ecn NET-N4), else dropped;
5. ECN: NET-N1 of :mod:`uet.net.ecn` (RED from ``kmin_bytes`` to ``kmax_bytes``, facts A.2) on
   the depth the datagram joins (NET-N2: a busy-time queue decides on enqueue);
6. corruption of one bit of the UDP payload;
7. reordering: an extra delay uniform in [0, reorder delay];
8. duplication: a second copy up to one reorder delay after the first.

Random draws come from the ``rng`` the caller passes (the simulator: one per run; the relay: one
per flow and direction), the CE draws from ``ecn_rng`` (default: the same one), so each driver
keeps its own reproducibility. The link counts what it did.
"""

from __future__ import annotations

import random
from typing import Any

from .config import NetConfig
from .ecn import red_mark

#: Flags of a :class:`Fate`.
TRIMMED, CE, REORDERED = 1, 2, 4
ETH_IP4_UDP = 14 + 20 + 8  # bytes a datagram takes on the link beyond its UDP payload (IPv4)

#: What every link counts (a driver adds its own: what it actually sent, for example).
COUNTERS = ("received", "rx_bytes", "dropped", "loss_drops", "fail_drops", "overflow_drops",
            "trimmed", "ce_marked", "duplicated", "reordered", "corrupted")


#: What the link does with one datagram: ``(at, flags, corrupt, dup_at)``. ``at`` is None when
#: it is dropped (the link's counters say why); ``corrupt`` is (payload byte, bit) or None;
#: ``dup_at`` the arrival of a duplicate or None. A plain tuple: one is made per datagram.
Fate = tuple[float | None, int, tuple[int, int] | None, float | None]


class Link:
    """One direction of one path: rate, one-way delay, a FIFO queue, failure, counters."""

    __slots__ = COUNTERS + ("path", "direction", "Bps", "delay", "busy", "fail_at", "qcap",
                            "overhead", "_kmin", "_kmax", "_keep", "_loss", "_trim", "_corrupt",
                            "_reorder", "_dup", "_rd", "_tail", "_overflow_trim")

    def __init__(self, cfg: NetConfig, path: int, direction: int, *, queue_bytes: int,
                 fail_at: float = float("inf"), overhead: int = ETH_IP4_UDP,
                 extra_loss: float = 0.0):
        for c in COUNTERS:
            setattr(self, c, 0)
        self.path = path
        self.direction = direction
        self.Bps = cfg.rate_gbps * 1e9 / 8
        self.delay = cfg.rtt_us * 1e-6 / 2 + path * cfg.skew_us * 1e-6
        self.busy = 0.0
        self.fail_at = fail_at
        self.qcap = queue_bytes
        self.overhead = overhead
        self._kmin = cfg.kmin_bytes
        self._kmax = cfg.kmax_bytes
        self._keep = cfg.trim_bytes
        self._loss = cfg.loss + extra_loss
        self._trim = cfg.trim
        self._corrupt, self._reorder, self._dup = cfg.corrupt, cfg.reorder, cfg.dup
        self._rd = cfg.reorder_delay_s
        self._tail = bool(cfg.corrupt or cfg.reorder or cfg.dup)
        self._overflow_trim = cfg.trim_on_overflow

    def fail_now(self, t: float) -> None:
        self.fail_at = min(self.fail_at, t)

    def depth(self, now: float) -> float:
        """Bytes in the queue at ``now`` (what the model still has to serialise)."""
        return (self.busy - now) * self.Bps if self.busy > now else 0.0

    def offer(self, now: float, n: int, control: bool, ect: bool, rng: random.Random,
              ecn_rng: random.Random | None = None) -> Fate:
        """The fate of a datagram of ``n`` UDP payload bytes offered at ``now``: ``control``
        for DSCP 46 (never trimmed), ``ect`` for an ECN-capable one."""
        self.received += 1
        self.rx_bytes += n
        if now >= self.fail_at:
            self.dropped += 1
            self.fail_drops += 1
            return _DROPPED
        if self._loss and rng.random() < self._loss:
            self.dropped += 1
            self.loss_drops += 1
            return _DROPPED
        keep = self._keep
        can_trim = not control and n > keep  # NET-N3: uet.net.ecn.trimmable, inlined (per datagram)
        flags = 0
        if can_trim and self._trim and rng.random() < self._trim:
            flags = TRIMMED
        size = (keep if flags else n) + self.overhead
        busy = self.busy
        depth = (busy - now) * self.Bps if busy > now else 0.0
        if depth + size > self.qcap:
            if can_trim and not flags and self._overflow_trim:  # NET-N4: the arriving one
                flags = TRIMMED
                size = keep + self.overhead
            else:
                self.dropped += 1
                self.overflow_drops += 1
                return _DROPPED
        if flags:
            self.trimmed += 1
        if ect and depth > self._kmin and (depth >= self._kmax or red_mark(  # NET-N1, NET-N2 "enqueue"
                depth, self._kmin, self._kmax, ecn_rng or rng)):
            flags |= CE
            self.ce_marked += 1
        depart = (busy if busy > now else now) + size / self.Bps
        self.busy = depart
        at = depart + self.delay
        if not self._tail:
            return at, flags, None, None
        corrupt = dup_at = None
        if self._corrupt and rng.random() < self._corrupt:
            corrupt = (rng.randrange((keep if flags & TRIMMED else n) or 1), rng.randrange(8))
            self.corrupted += 1
        if self._reorder and rng.random() < self._reorder:
            at += rng.random() * self._rd
            flags |= REORDERED
            self.reordered += 1
        if self._dup and rng.random() < self._dup:
            dup_at = at + rng.random() * self._rd
            self.duplicated += 1
        return at, flags, corrupt, dup_at

    def counters(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in COUNTERS}


_DROPPED: Fate = (None, 0, None, None)


def flip(data: bytes, corrupt: tuple[int, int]) -> bytes:
    """``data`` with the bit a :class:`Fate` names flipped (the index is taken modulo the length,
    so it fits what the caller carries)."""
    if not data:
        return data
    i, bit = corrupt
    i %= len(data)
    return b"".join((data[:i], bytes((data[i] ^ (1 << bit),)), data[i + 1:]))
