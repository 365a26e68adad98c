"""The live fabric's paths (design.md "Test beds" 2): the network model of :mod:`uet.net` applied
to real datagrams in real time. No sockets here.

Each path has a link in each direction (``FWD``: sender -> receiver, ``REV``: answers back); what
a link does to a datagram - failure, loss, trimming, queueing with ECN marking, corruption,
reordering, duplication, in that order - is :meth:`uet.net.Link.offer`. This module applies the
verdict to the UDP payload and its TOS byte and schedules the release: a trimmed datagram keeps
its first ``trim_bytes`` (256) bytes and gets DSCP 11 (its trailer is gone); any other one gets its
CRC-32C trailer rewritten for the next hop (the caller's ``rewrite``) before a corruption, so the
receiver's check catches that; CE sets the ECN bits.

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
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

from ..net import CE, TRIMMED, NetConfig, flip
from ..net import COUNTERS as NET_COUNTERS
from ..net import Link as NetLink
from ..wire.build import DSCP_CONTROL, DSCP_TRIMMED

FWD, REV = 0, 1
DIRECTIONS = ("fwd", "rev")
ETH_LEN, UDP_LEN = 14, 8
INF = math.inf


@dataclass
class FabricConfig(NetConfig):
    """The live fabric: the network (:class:`uet.net.NetConfig`, the simulator's names and
    meanings; a 1 MiB queue per link, a reorder delay of at least 2 ms) and the relay's own."""

    queue_bytes: int | None = 1 << 20           # per link (the sim sizes it from the window)
    reorder_floor_us: float = 2000.0            # trio's timers resolve to about 1 ms
    slack_us: float = 1000.0                    # release what is due this soon (timer resolution)
    max_flows: int = 4096                       # sender (addr, port) pairs mapped at once
    rcvbuf: int = 4 << 20                       # SO_RCVBUF(FORCE) of the relay's sockets
    preserve_entropy: bool = False              # bind relay-side sockets to the sender's port number
    back_host: str | None = None                # relay-side source address (None: route to `to`)
    verify_crc: bool = True                     # False: rewrite the trailer incrementally, no check

    @classmethod
    def from_net(cls, net: NetConfig, **overrides: Any) -> "FabricConfig":
        """The fabric a network description gives (``uet demo``): the fields both have."""
        names = {f.name for f in fields(cls)}
        kw = {f.name: getattr(net, f.name) for f in fields(net)
              if f.name in names and (getattr(net, f.name) is not None or f.name == "reorder_delay_us")}
        kw.update(overrides)
        return cls(**kw)

    from_sim = from_net

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fail"] = [list(x) for x in self.fail]
        return d


def flow_rng(seed: int, direction: int, index: int) -> random.Random:
    """The generator of the ``index``-th flow (in order of first arrival), one direction (string
    seeds hash the same in every run)."""
    return random.Random(f"uet-fabric/{seed}/{DIRECTIONS[direction]}/{index}")


#: What a fabric link reports: the model's counters and what the relay did with each datagram.
COUNTERS = NET_COUNTERS + ("forwarded", "bytes", "send_errors", "dup_forwarded", "crc_rewritten",
                           "crc_bad", "crc_skipped")


class Link(NetLink):
    """One direction of one path of the live fabric.

    ``received`` counts datagrams offered to the link, ``forwarded`` originals sent on, ``dropped``
    the rest (by cause in ``*_drops``); copies made by duplication are ``dup_forwarded``, not
    ``forwarded``, so ``received == forwarded + dropped + queued`` (``queued`` the originals still
    waiting, 0 when the fabric is idle). ``bytes`` counts UDP payload bytes of everything sent.
    """

    def __init__(self, cfg: FabricConfig, path: int, direction: int, releases: "Releases",
                 fail_at: float = INF, overhead: int = ETH_LEN + 20 + UDP_LEN):
        fails = cfg.fail_times()
        super().__init__(cfg, path, direction, queue_bytes=cfg.queue_bytes or (1 << 20),
                         fail_at=min(fail_at, fails[path] if path < len(fails) else INF),
                         overhead=overhead)
        for c in COUNTERS[len(NET_COUNTERS):]:
            setattr(self, c, 0)
        self.queued = 0
        self.releases = releases
        self.keep = cfg.trim_bytes
        self.ecn_rng = random.Random(f"uet-fabric/{cfg.seed}/ecn/{DIRECTIONS[direction]}/{path}")

    def forward(self, now: float, data: bytes, tos: int, hop: Any, rng: random.Random,
                rewrite: Callable[[bytes, "Link"], bytes] | None) -> None:
        """Run one arriving datagram through the model; schedule what leaves on ``releases``.
        ``rewrite(data, link)`` returns the datagram with its trailer fixed for the next hop (it
        counts ``crc_*`` on the link)."""
        at, flags, corrupt, dup_at = self.offer(now, len(data), (tos >> 2) == DSCP_CONTROL,
                                                (tos & 3) in (1, 2), rng, self.ecn_rng)
        if at is None:
            return
        if flags & TRIMMED:
            data = data[:self.keep]
            tos = (DSCP_TRIMMED << 2) | (tos & 3)
        elif rewrite is not None:
            data = rewrite(data, self)
        else:
            self.crc_skipped += 1
        if flags & CE:
            tos |= 3
        if corrupt is not None:
            data = flip(data, corrupt)
        self.queued += 1
        push = self.releases.push
        push(at, hop, data, tos, self, True)
        if dup_at is not None:
            push(dup_at, hop, data, tos, self, False)

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
