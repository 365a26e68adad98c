"""The live fabric's paths (docs/design-notes.md "Test beds" 2): the network model of :mod:`uet.net` applied
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
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

from ..cms.csig import CSIG_ETHERTYPE, DELAY, NQD, TYPE_BY_NAME, Scale, ahead, neutral, tpid_bytes
from ..net import CE, TRIMMED, NetConfig, flip
from ..net import COUNTERS as NET_COUNTERS
from ..net import Link as NetLink
from ..net.csig import stamp_on, trim_on, utilisation
from ..net.link import REORDERED
from ..net.route import Route, build_routes, switched_routes
from ..net.topology import parse_topology
from ..wire.build import DSCP_CONTROL, DSCP_TRIMMED

FWD, REV = 0, 1
DIRECTIONS = ("fwd", "rev")
ETH_LEN, UDP_LEN = 14, 8
INF = math.inf
CSIG_INTERVAL_US = 1000.0   # L1: the utilisation's time constant (see the module docstring)


@dataclass
class FabricConfig(NetConfig):
    """The live fabric: the network (:class:`uet.net.NetConfig`, the simulator's names and
    meanings; a 1 MiB queue per link, a reorder delay of at least 2 ms) and the relay's own."""

    queue_bytes: int | None = 1 << 20           # per link (the sim sizes it from the window)
    reorder_floor_us: float = 2000.0            # trio's timers resolve to about 1 ms
    slack_us: float = 1000.0                    # release what is due this soon (timer resolution)
    max_flows: int = 4096                       # sender (addr, port) pairs mapped at once
    rcvbuf: int = 4 << 20                       # SO_RCVBUF(FORCE) of the relay's sockets
    preserve_entropy: bool = False              # no effect: the relay always keeps the EVs (A.1)
    back_host: str | None = None                # where the receiver's answers come (None: listen's)
    verify_crc: bool = True                     # False: rewrite the trailer incrementally, no check
    degrade_paths: list[tuple[int, float]] = field(default_factory=list)  # (path, fraction of rate)
    csig: str | None = None                     # L1-L4: a name of uet.cms.csig.TYPE_BY_NAME; None off
    csig_interval_us: float = CSIG_INTERVAL_US  # L1: the utilisation's time constant
    csig_delay_unit_us: float | None = None     # L3: None: a full queue at the rate / 31
    csig_ethertype: int = CSIG_ETHERTYPE        # the tag's TPID (E.4: not fixed)
    # A.1 (DF, no IP fragments): the payload bytes per packet the paths carry; a datagram longer
    # than the largest one of such a payload (uet.mtu.packet_overhead with TSS and a CSIG tag) is
    # dropped and counted too_big, as a switch drops a frame above its MTU. None: no limit
    mtu: int | None = None
    # uet.net.route NET-T1 to NET-T4: None (or paths:N) parallel paths; "leafspine:H,T,S" or "fattree:K"
    # (uet sim --topology's spec): the routes between the topology's first and last host
    topology: str | None = None

    def validate(self) -> None:
        if self.topology is not None:
            kind, nums = parse_topology(self.topology)  # TopologyError: a ValueError
            if kind == "paths":
                self.paths, self.topology = nums[0], None
            else:
                self.paths = len(switched_routes(self.topology))
                if self.csig is not None:
                    raise ValueError("csig: the relay stamps tags on parallel paths only, not on "
                                     f"--topology {self.topology}")
        super().validate()
        if self.mtu is not None and self.mtu < 1:
            raise ValueError("mtu must be at least 1 payload byte per packet")
        self.degrade_paths = [(int(i), float(f)) for i, f in self.degrade_paths]
        for i, f in self.degrade_paths:
            if not 0 <= i < self.paths:
                raise ValueError(f"degrade_paths: there is no path {i} (paths 0 to {self.paths - 1})")
            if not 0.0 < f <= 1.0:
                raise ValueError(f"degrade_paths: path {i}: a fraction of the rate, above 0 and at "
                                 f"most 1, not {f}")
        if self.csig is not None and self.csig_type is None:
            raise ValueError(f"unknown CSIG signal {self.csig!r} ({', '.join(TYPE_BY_NAME)})")
        if not self.csig_interval_us > 0 or not (self.csig_delay_unit_us is None
                                                 or self.csig_delay_unit_us > 0):
            raise ValueError("csig_interval_us and csig_delay_unit_us must be positive")
        if not 0x0600 <= self.csig_ethertype <= 0xFFFF:
            raise ValueError("csig_ethertype is an EtherType (0x0600 to 0xffff)")

    @property
    def csig_type(self) -> int | None:
        """CMS-C1: the signal type ``csig`` names (None: off)."""
        return None if self.csig is None else TYPE_BY_NAME.get(str(self.csig).lower())

    def path_rate_gbps(self, path: int) -> float:
        """The rate of ``path`` (``rate_gbps``, or its ``degrade_paths`` fraction of it)."""
        f = 1.0
        for i, x in self.degrade_paths:
            if i == path:
                f = x
        return self.rate_gbps * f

    def csig_scale(self) -> Scale:
        """L3: the fabric's one scale."""
        unit = self.csig_delay_unit_us
        if unit is None:
            q = self.queue_bytes or (1 << 20)
            return Scale(abw_full_gbps=self.rate_gbps, delay_unit_s=q * 8 / (self.rate_gbps * 1e9) / 31)
        return Scale(abw_full_gbps=self.rate_gbps, delay_unit_s=unit * 1e-6)

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
        d["degrade_paths"] = [list(x) for x in self.degrade_paths]
        return d


def flow_rng(seed: int, direction: int, index: int) -> random.Random:
    """The generator of the ``index``-th flow (in order of first arrival), one direction (string
    seeds hash the same in every run)."""
    return random.Random(f"uet-fabric/{seed}/{DIRECTIONS[direction]}/{index}")


#: What a fabric link reports: the model's counters and what the relay did with each datagram.
COUNTERS = NET_COUNTERS + ("forwarded", "bytes", "send_errors", "dup_forwarded", "crc_rewritten",
                           "crc_bad", "crc_skipped")
#: What a link with CSIG on counts (L4), apart: only such a link reports them.
CSIG_COUNTERS = ("csig_stamped", "csig_replaced", "csig_d_set", "csig_neutral", "csig_bucket_sum")
#: Snapshot figures that are not counts (a fabric's totals leave them out).
NOT_SUMMED = frozenset({"max_queue_bytes", "mean_queue_bytes", "csig_mean_bucket", "rate_gbps"})


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
        self.Bps = cfg.path_rate_gbps(path) * 1e9 / 8       # degrade_paths
        # queue figures: the integral of the model's queue over time, and its peak
        self.t0 = 0.0                   # when the fabric started (the mean's start)
        self.q_area = 0.0               # bytes x seconds, up to q_t
        self.q_t = 0.0
        self.max_queue_bytes = 0
        # CSIG (L1-L4)
        self.csig = cfg.csig_type
        for c in CSIG_COUNTERS:
            setattr(self, c, 0)
        if self.csig is not None:
            self.scale = cfg.csig_scale()
            self.tau = cfg.csig_interval_us * 1e-6
            self.tpid = tpid_bytes(cfg.csig_ethertype)
            self.neutral = neutral(self.csig)
            self.lm = path & 127
            self.util = 0.0             # L1: the averaged busy fraction, as of u_t
            self.u_t = 0.0

    def start(self, t0: float) -> None:
        """The fabric starts at ``t0``: the queue figures and the utilisation begin there."""
        self.t0 = self.q_t = t0
        if self.csig is not None:
            self.u_t = t0

    def forward(self, now: float, data: bytes, tos: int, hop: Any, rng: random.Random,
                rewrite: Callable[[bytes, "Link"], bytes] | None, tag: int | None = None) -> None:
        """Run one arriving datagram through the model; schedule what leaves on ``releases``.
        ``rewrite(data, link)`` returns the datagram with its trailer fixed for the next hop (it
        counts ``crc_*`` on the link). With CSIG on, what leaves starts with the four tag bytes
        (L4); ``tag``: the 16 bits of a tag the datagram arrived with (None: neutral)."""
        busy = self.busy
        if busy > self.q_t:  # the queue's area since the last datagram (it drains at Bps)
            end = busy if busy < now else now
            self.q_area += self.Bps * ((busy - self.q_t) ** 2 - (busy - end) ** 2) / 2
        self.q_t = now
        csig = self.csig
        if csig is not None:
            self._measure(now, busy)
        control = (tos >> 2) == DSCP_CONTROL
        at, flags, corrupt, dup_at = self.offer(now, len(data), control, (tos & 3) in (1, 2),
                                                rng, self.ecn_rng)
        if at is None:
            return
        depth = (self.busy - now) * self.Bps
        if depth > self.max_queue_bytes:
            self.max_queue_bytes = int(depth)
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
        if csig is not None:
            data = self._tagged(now, busy, data, control, flags & TRIMMED, tag)
        self.queued += 1
        push = self.releases.push
        push(at, hop, data, tos, self, True)
        if dup_at is not None:
            push(dup_at, hop, data, tos, self, False)

    def _measure(self, now: float, busy: float) -> None:
        """L1: the busy-fraction average brought up to ``now``: busy until ``busy`` (the model's
        end of the last datagram admitted), idle after it (uet.net.csig NET-G1)."""
        if now > self.u_t:
            self.util = utilisation(self.util, self.u_t, busy, now, self.tau)
            self.u_t = now

    def bucket(self, now: float, busy: float) -> int:
        """L1-L3: this link's bucket (CMS-C2) for a datagram offered at ``now``, the link busy until
        ``busy`` before it."""
        t, scale = self.csig, self.scale
        wait = busy - now if busy > now else 0.0
        if t == DELAY:
            return scale.bucket(t, delay_s=wait)
        if t == NQD:
            return scale.bucket(t, depth_fraction=wait * self.Bps / self.qcap)
        cap = self.Bps * 8e-9
        return scale.bucket(t, abw_gbps=cap * (1.0 - self.util), capacity_gbps=cap)

    def _tagged(self, now: float, busy: float, data: bytes, control: bool, trimmed: int,
                tag: int | None) -> bytes:
        """L4: ``data`` behind its tag."""
        bits = self.neutral if tag is None or tag >> 14 != self.csig else tag
        if trimmed:
            bits = trim_on(self, bits)  # uet.net.csig NET-G3
        elif control:
            self.csig_neutral += 1  # an answer: not reported on (the tag it came with, or neutral)
        else:
            b = self.bucket(now, busy)
            bits = stamp_on(self, bits, b, self.lm)  # uet.net.csig NET-G2
            self.csig_bucket_sum += b
        return ahead(bits, data, self.tpid)

    def mean_queue(self, now: float) -> float:
        """The time-averaged bytes the link held from ``t0`` to ``now``."""
        area, busy, t = self.q_area, self.busy, self.q_t
        if busy > t and now > t:
            end = busy if busy < now else now
            area += self.Bps * ((busy - t) ** 2 - (busy - end) ** 2) / 2
        span = now - self.t0
        return area / span if span > 0 else 0.0

    def snapshot(self, now: float) -> dict[str, Any]:
        d = {c: getattr(self, c) for c in COUNTERS}
        d["queued"] = self.queued
        d["queue_bytes"] = int(self.depth(now))
        d["max_queue_bytes"] = self.max_queue_bytes
        d["mean_queue_bytes"] = round(self.mean_queue(now), 1)
        d["rate_gbps"] = self.Bps * 8e-9
        if self.csig is not None:
            for c in CSIG_COUNTERS:
                d[c] = getattr(self, c)
            n = self.csig_stamped
            d["csig_mean_bucket"] = round(self.csig_bucket_sum / n, 3) if n else None
        return d


class RouteLink(Link):
    """One direction of one path that is a route through a switched topology (uet.net.route
    NET-T1 to NET-T4): the model's verdict is the route's; this link counts it as the path's (its queue
    figures are those of the route's first link, which every datagram of the direction crosses)."""

    def __init__(self, cfg: FabricConfig, path: int, direction: int, releases: "Releases",
                 route: Route, overhead: int):
        super().__init__(cfg, path, direction, releases, overhead=overhead)
        self.route = route
        self.Bps = route.hops[0].Bps

    def fail_now(self, t: float) -> None:
        super().fail_now(t)
        self.route.own.fail_now(t)

    def offer(self, now: float, n: int, control: bool, ect: bool, rng: random.Random,
              ecn_rng: random.Random | None = None) -> Any:
        self.received += 1
        self.rx_bytes += n
        hops = self.route.hops
        before = [(h.fail_drops, h.loss_drops) for h in hops]
        fate, where = self.route.offer(now, n, control, ect, rng, ecn_rng)
        self.busy = hops[0].busy
        at, flags, corrupt, dup_at = fate
        if at is None:
            self.dropped += 1
            f0, l0 = before[hops.index(where)]
            if where.fail_drops != f0:
                self.fail_drops += 1
            elif where.loss_drops != l0:
                self.loss_drops += 1
            else:
                self.overflow_drops += 1
            return fate
        self.trimmed += bool(flags & TRIMMED)
        self.ce_marked += bool(flags & CE)
        self.reordered += bool(flags & REORDERED)
        self.corrupted += corrupt is not None
        self.duplicated += dup_at is not None
        return fate


def route_links(cfg: FabricConfig, releases: "Releases", direction: int,
                overhead: int) -> list[Link]:
    """The paths of one direction of a relay over ``cfg.topology`` (uet.net.route)."""
    fails = cfg.fail_times()
    rs = build_routes(cfg, cfg.topology or "", direction, queue_bytes=cfg.queue_bytes or (1 << 20),
                      overhead=overhead, rate_gbps=[cfg.path_rate_gbps(i) for i in range(cfg.paths)],
                      fail_at=fails)
    return [RouteLink(cfg, i, direction, releases, r, overhead) for i, r in enumerate(rs)]


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
