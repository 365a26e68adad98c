"""The path model of the live fabric (design.md "Test beds" 2): the simulator's per-path model
(:mod:`uet.sim.simulator`) applied to real datagrams, in real time. No sockets here.

Each path has a link in each direction (``FWD``: sender -> receiver, ``REV``: answers back) with a
rate, a one-way delay (``rtt_us / 2``, plus ``i * skew_us`` for path ``i``) and a FIFO queue,
modelled as in the simulator by the time the link is busy until. Per datagram and per path, in the
simulator's order:

1. a failed path drops everything from its fail time on (``fail``, microseconds after the fabric
   opened, or :meth:`Link.fail_now`);
2. random loss (``loss``);
3. random trimming of data packets (``trim``);
4. queue admission: a datagram that does not fit in ``queue_bytes`` is trimmed when eligible
   (``trim_on_overflow``), else dropped; CE is marked by queue depth, always above ``kmax_bytes``
   and with a linearly growing probability between ``kmin_bytes`` and ``kmax_bytes`` (RED-style),
   only on an ECT(0)/ECT(1) datagram;
5. a datagram that was not trimmed gets its CRC-32C trailer rewritten for the next hop (the
   caller's ``rewrite``; a trimmed one has lost its trailer);
6. corruption of one bit of the UDP payload (after the rewrite, so the receiver's check catches it);
7. reordering: an extra delay uniform in [0, ``reorder_delay_us``];
8. duplication: a second copy, released up to ``reorder_delay_us`` after the first.

Trimming (design.md "Defaults", uet-facts C.6): only data packets (DSCP not 46) with more than
``trim_bytes`` (256) bytes of UDP payload; the first 256 bytes are kept and the DSCP becomes 11,
the ECN bits are kept.

A datagram's size on the link counts Ethernet, IP and UDP headers, as the simulator's frames do.

Randomness: every draw comes from a seeded :class:`random.Random`. The loss/trim/corrupt/reorder/
dup draws use one generator per flow and direction, seeded from ``seed``, the direction and the
flow's number (flows are numbered in the order their first datagram arrives, which for one sender
is its send order): the fate of the k-th flow's n-th datagram depends only on the seed, k and n,
not on how flows interleave or which ports the kernel handed out. The CE draws, which depend on
queue depth and therefore on timing, use one generator per link.

Timing: releases are kept in one heap (:class:`Releases`), never one task per datagram. trio's
timers resolve to about 1 ms on Linux (epoll), so a release due within ``slack_us`` of now goes out
at once. Rate, queue depth and CE marking are computed exactly from the model's clock; only the
moment a datagram leaves is early by at most ``slack_us`` or late by about one timer tick. For
that reason the default reorder delay is one base RTT but at least 2 ms, and one-way delays far
below 1 ms are effectively the relay's own forwarding time.
"""

from __future__ import annotations

import heapq
import math
import random
import zlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

from ..sim.simulator import SimConfig
from ..wire.build import DSCP_CONTROL, DSCP_TRIMMED

FWD, REV = 0, 1
DIRECTIONS = ("fwd", "rev")
TRIM_KEEP = 256  # design.md "Defaults": keep the first 256 bytes of UDP payload
ETH_LEN, UDP_LEN = 14, 8
_SIM = SimConfig()  # defaults shared with the simulator (kmin/kmax, rate, rtt, paths)
INF = math.inf


@dataclass
class FabricConfig:
    """Per-path model of the live fabric; names and defaults follow :class:`uet.sim.SimConfig`."""

    paths: int = _SIM.paths
    rate_gbps: float = _SIM.rate_gbps           # per path, per direction
    rtt_us: float = _SIM.rtt_us                 # base RTT; one-way delay is rtt_us / 2
    loss: float = 0.0
    trim: float = 0.0                           # fraction of eligible data packets trimmed
    reorder: float = 0.0
    reorder_delay_us: float | None = None       # None: max(rtt_us, 2000)
    dup: float = 0.0
    corrupt: float = 0.0
    fail: list[tuple[int, float]] = field(default_factory=list)  # (path, us after open)
    skew_us: float = 0.0                        # path i gets i * skew_us extra one-way delay
    queue_bytes: int = 1 << 20                  # per link (the sim sizes it from the window)
    kmin_bytes: int = _SIM.kmin_bytes
    kmax_bytes: int = _SIM.kmax_bytes
    trim_on_overflow: bool = _SIM.trim_on_overflow
    trim_bytes: int = TRIM_KEEP
    ecmp: str = "hash"                          # "hash": salted hash of the entropy; "mod": entropy % paths
    seed: int = 1
    slack_us: float = 1000.0                    # release what is due this soon (timer resolution)
    max_flows: int = 4096                       # sender (addr, port) pairs mapped at once
    rcvbuf: int = 4 << 20                       # SO_RCVBUF(FORCE) of the relay's sockets
    preserve_entropy: bool = False              # bind relay-side sockets to the sender's port number
    back_host: str | None = None                # relay-side source address (None: route to `to`)
    verify_crc: bool = True                     # False: rewrite the trailer incrementally, no check

    def __post_init__(self) -> None:
        self.fail = [(int(i), float(t)) for i, t in self.fail]
        self.validate()

    def validate(self) -> None:
        if self.paths < 1:
            raise ValueError("paths must be at least 1")
        if not self.rate_gbps > 0 or self.rtt_us < 0 or self.skew_us < 0:
            raise ValueError("rate must be positive; rtt and skew not negative")
        for name in ("loss", "trim", "reorder", "dup", "corrupt"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} is a fraction from 0 to 1, not {v}")
        if self.kmax_bytes <= self.kmin_bytes:
            raise ValueError("kmax_bytes must exceed kmin_bytes")
        if self.queue_bytes < 1 or self.trim_bytes < 1:
            raise ValueError("queue_bytes and trim_bytes must be positive")
        if self.ecmp not in ("hash", "mod"):
            raise ValueError("ecmp is 'hash' or 'mod'")

    @property
    def reorder_delay_s(self) -> float:
        d = self.reorder_delay_us if self.reorder_delay_us is not None else max(self.rtt_us, 2000.0)
        return d * 1e-6

    @classmethod
    def from_sim(cls, sim: SimConfig, **overrides: Any) -> "FabricConfig":
        """The fabric a :class:`SimConfig` describes (for ``uet demo``): shared fields copied."""
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in asdict(sim).items()
              if k in names and (v is not None or k == "reorder_delay_us")}
        kw.update(overrides)
        return cls(**kw)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fail"] = [list(x) for x in self.fail]
        return d


def path_hasher(cfg: FabricConfig) -> Callable[[int], int]:
    """entropy -> path. ``hash`` (default) mixes the entropy with a salt from the seed, as the
    simulator's ECMP does with the 5-tuple; ``mod`` is ``entropy % paths`` (consecutive entropy
    values on consecutive paths)."""
    n = cfg.paths
    if cfg.ecmp == "mod":
        return lambda ev: ev % n
    salt = zlib.crc32(cfg.seed.to_bytes(8, "big", signed=True))

    def h(ev: int) -> int:
        x = zlib.crc32(ev.to_bytes(4, "big"), salt)
        x ^= x >> 16
        return ((x * 0x9E3779B1) & 0xFFFFFFFF) % n

    return h


def flow_rng(seed: int, direction: int, index: int) -> random.Random:
    """The generator of the ``index``-th flow (in order of first arrival), one direction (string
    seeds hash the same in every run)."""
    return random.Random(f"uet-fabric/{seed}/{DIRECTIONS[direction]}/{index}")


COUNTERS = ("received", "rx_bytes", "forwarded", "bytes", "dropped", "loss_drops", "fail_drops",
            "overflow_drops", "send_errors", "trimmed", "ce_marked", "duplicated", "dup_forwarded",
            "reordered", "corrupted", "crc_rewritten", "crc_bad", "crc_skipped")


class Link:
    """One direction of one path: model state and live counters.

    ``received`` counts datagrams offered to the link, ``forwarded`` originals sent on, ``dropped``
    the rest (by cause in ``*_drops``); copies made by duplication are ``dup_forwarded``, not
    ``forwarded``, so ``received == forwarded + dropped + queued`` (``queued`` the originals still
    waiting, 0 when the fabric is idle). ``bytes`` counts UDP payload bytes of everything sent.
    """

    __slots__ = COUNTERS + ("path", "direction", "Bps", "delay", "busy", "fail_at", "queued",
                            "ecn_rng", "cfg", "releases", "_kmin", "_kspan", "_qcap", "_keep",
                            "_overhead", "_loss", "_trim", "_corrupt", "_reorder", "_dup", "_rd",
                            "_tail")

    def __init__(self, cfg: FabricConfig, path: int, direction: int, releases: "Releases",
                 fail_at: float = INF, overhead: int = ETH_LEN + 20 + UDP_LEN):
        for c in COUNTERS:
            setattr(self, c, 0)
        self.cfg = cfg
        self.path = path
        self.direction = direction
        self.Bps = cfg.rate_gbps * 1e9 / 8
        self.delay = cfg.rtt_us * 1e-6 / 2 + path * cfg.skew_us * 1e-6
        self.busy = 0.0
        self.fail_at = fail_at
        self.queued = 0
        self.releases = releases
        self.ecn_rng = random.Random(f"uet-fabric/{cfg.seed}/ecn/{DIRECTIONS[direction]}/{path}")
        self._kmin = cfg.kmin_bytes
        self._kspan = cfg.kmax_bytes - cfg.kmin_bytes
        self._qcap = cfg.queue_bytes
        self._keep = cfg.trim_bytes
        self._overhead = overhead
        self._loss, self._trim, self._corrupt = cfg.loss, cfg.trim, cfg.corrupt
        self._reorder, self._dup, self._rd = cfg.reorder, cfg.dup, cfg.reorder_delay_s
        self._tail = bool(cfg.corrupt or cfg.reorder or cfg.dup)

    def fail_now(self, t: float) -> None:
        self.fail_at = min(self.fail_at, t)

    def depth(self, now: float) -> float:
        """Bytes in the queue at ``now`` (what the model would still have to serialise)."""
        return (self.busy - now) * self.Bps if self.busy > now else 0.0

    def offer(self, now: float, data: bytes, tos: int, hop: Any, rng: random.Random,
              rewrite: Callable[[bytes, "Link"], bytes] | None) -> None:
        """Run one arriving datagram through the model; schedule what leaves on ``releases``.
        ``rewrite(data, link)`` returns the datagram with its trailer fixed for the next hop (it
        counts ``crc_*`` on the link)."""
        n = len(data)
        self.received += 1
        self.rx_bytes += n
        if now >= self.fail_at:
            self.dropped += 1
            self.fail_drops += 1
            return
        if self._loss and rng.random() < self._loss:
            self.dropped += 1
            self.loss_drops += 1
            return
        keep = self._keep
        eligible = n > keep and (tos >> 2) != DSCP_CONTROL
        trimmed = eligible and self._trim and rng.random() < self._trim
        size = (keep if trimmed else n) + self._overhead
        busy = self.busy
        depth = (busy - now) * self.Bps if busy > now else 0.0
        if depth + size > self._qcap:
            if eligible and not trimmed and self.cfg.trim_on_overflow:
                trimmed = True
                size = keep + self._overhead
            else:
                self.dropped += 1
                self.overflow_drops += 1
                return
        if trimmed:
            data = data[:keep]
            tos = (DSCP_TRIMMED << 2) | (tos & 3)
            self.trimmed += 1
        elif rewrite is not None:
            data = rewrite(data, self)
        else:
            self.crc_skipped += 1
        if depth > self._kmin and (tos & 3) in (1, 2):
            if depth >= self._kmin + self._kspan or self.ecn_rng.random() < (depth - self._kmin) / self._kspan:
                tos |= 3
                self.ce_marked += 1
        depart = (busy if busy > now else now) + size / self.Bps
        self.busy = depart
        at = depart + self.delay
        self.queued += 1
        if not self._tail:
            self.releases.push(at, hop, data, tos, self, True)
            return
        if self._corrupt and rng.random() < self._corrupt:
            b = bytearray(data)
            if b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            data = bytes(b)
            self.corrupted += 1
        if self._reorder and rng.random() < self._reorder:
            at += rng.random() * self._rd
            self.reordered += 1
        push = self.releases.push
        push(at, hop, data, tos, self, True)
        if self._dup and rng.random() < self._dup:
            self.duplicated += 1
            push(at + rng.random() * self._rd, hop, data, tos, self, False)

    def snapshot(self, now: float) -> dict[str, Any]:
        d = {c: getattr(self, c) for c in COUNTERS}
        d["queued"] = self.queued
        d["queue_bytes"] = int(self.depth(now))
        return d


class Releases:
    """The one heap of scheduled releases: ``(time, seq, hop, data, tos, link, original)``.

    ``wake`` is called with the earliest time a newly pushed entry needs attention (time - slack)
    when that is earlier than the last time it was told, so a sleeping scheduler can move its
    deadline forward without one task or one event per datagram."""

    __slots__ = ("heap", "seq", "slack", "wake_at", "wake")

    def __init__(self, slack_s: float, wake: Callable[[float], None] | None = None):
        self.heap: list = []
        self.seq = 0
        self.slack = slack_s
        self.wake_at = INF
        self.wake = wake

    def push(self, at: float, hop: Any, data: bytes, tos: int, link: Link, original: bool) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, hop, data, tos, link, original))
        w = at - self.slack
        if w < self.wake_at:
            self.wake_at = w
            if self.wake is not None:
                self.wake(w)

    def next_wake(self) -> float:
        """When the scheduler should look again (recomputes ``wake_at``)."""
        self.wake_at = self.heap[0][0] - self.slack if self.heap else INF
        return self.wake_at

    def __len__(self) -> int:
        return len(self.heap)
