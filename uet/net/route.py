"""A route through a switched topology as one path of the live relay (``uet fabric --topology
leafspine:...``): the topology of :mod:`uet.net.topology` (the ``uet sim --topology`` spec), its
links as :class:`uet.net.link.Link` s (ECN NET-N1, trimming NET-N3 of :mod:`uet.net.ecn`), pure code with
no clock and no sockets.

  NET-T1  the relay stands between two endpoints: the sender is host ``h0`` of the topology, the
      receiver its last host (on another ToR, pod, when there is one). Its paths are the up-down
      routes between them (:func:`routes`, in the order the switches list their up ports), and the
      answers of path i take route i backwards (up-down routes are symmetric).
  NET-T2  ECMP is NET-M1 of :mod:`uet.net.ecmp` over those routes: the route is a function of the EV, the
      same in both directions, as on the relay's parallel paths.
  NET-T3  every link of the topology is a queue of its own, shared by the routes that cross it (the
      sender's and the receiver's host links carry every route); a datagram crosses its route's
      links in turn, each offered it at the time it arrives there (store and forward), so it can
      be queued, CE-marked (its flags add up) or trimmed (it is smaller from there on) at any hop.
  NET-T4  the impairments (loss, trim, reorder, dup, corrupt, failure, degradation and skew of path
      i) belong to the route's own link, the one into its top switch (the spine or core that
      names the route); the other links only queue. A link's one-way delay is ``rtt / 2`` over
      the route's hop count, so a route's base RTT is ``rtt`` as on parallel paths.

Approximation (of a model that decides a datagram's fate when it arrives): a link downstream of a
merge is offered datagrams in the order they entered the relay, not always in the order they reach
it, so one that arrives a little earlier than another admitted before it sees that one's bytes.
"""

from __future__ import annotations

import random
from dataclasses import fields

from .config import NetConfig
from .link import _DROPPED, REORDERED, TRIMMED, Fate, Link
from .topology import Topology, TopologyError, build, parse_topology

Hop = tuple[str, str]


def routes(topo: Topology, src: int, dst: int) -> list[list[Hop]]:
    """NET-T1: every up-down route from host ``src`` to host ``dst`` as (node, node) hops."""
    out: list[list[Hop]] = []

    def climb(sw: str, path: list[Hop]) -> None:
        if dst in topo.down[sw]:
            node = sw
            while node[0] != "h":
                nxt = topo.down[node][dst]
                path = [*path, (node, nxt)]
                node = nxt
            out.append(path)
            return
        for up in topo.up[sw]:
            climb(up, [*path, (sw, up)])

    first = topo.attach[src]
    climb(first, [(f"h{src}", first)])
    return out


def own_hop(route: list[Hop]) -> int:
    """NET-T4: the index of the route's link into its top switch."""
    return len(route) // 2 - 1


def switched_routes(spec: str) -> list[list[Hop]]:
    """NET-T1: the forward routes of a ``leafspine:...`` or ``fattree:...`` spec (TopologyError for
    ``paths:N`` or a bad spec)."""
    kind, nums = parse_topology(spec)
    topo = build(kind, nums)  # TopologyError for paths:N
    if topo.hosts < 2:
        raise TopologyError(f"{spec!r}: the relay needs two hosts, a sender and a receiver")
    return routes(topo, 0, topo.hosts - 1)


class Route:
    """One direction of one route (NET-T3): its links in order and its own one (NET-T4)."""

    __slots__ = ("hops", "own", "keep")

    def __init__(self, hops: list[Link], own: int, keep: int):
        self.hops = hops
        self.own = hops[own]
        self.keep = keep

    def offer(self, now: float, n: int, control: bool, ect: bool, rng: random.Random,
              ecn_rng: random.Random | None = None) -> tuple[Fate, Link | None]:
        """NET-T3: the fate of a datagram across the route, and the link that dropped it (None)."""
        at, flags, corrupt, dup_gap = now, 0, None, None
        keep = self.keep
        for ln in self.hops:
            a, f, c, d = ln.offer(at, keep if flags & TRIMMED and n > keep else n, control, ect,
                                  rng, ecn_rng)
            if a is None:
                return _DROPPED, ln
            flags |= f
            if c is not None:
                corrupt = c
            if d is not None:
                dup_gap = d - a
            at = a
        return (at, flags, corrupt, None if dup_gap is None else at + dup_gap), None


def build_routes(cfg: NetConfig, spec: str, direction: int, *, queue_bytes: int, overhead: int,
                 rate_gbps: list[float], fail_at: list[float]) -> list[Route]:
    """The routes of one direction (0: sender to receiver, 1: back): every link built once (NET-T3),
    the own links of route i with ``cfg``'s impairments, ``rate_gbps[i]`` and ``fail_at[i]``."""
    fwd = switched_routes(spec)
    plain = NetConfig(**{f.name: getattr(cfg, f.name) for f in fields(NetConfig)})
    for name in ("loss", "trim", "reorder", "dup", "corrupt"):
        setattr(plain, name, 0.0)
    plain.fail = []
    links: dict[Hop, Link] = {}
    out = []
    for i, r in enumerate(fwd):
        hops = r if direction == 0 else [(b, a) for a, b in reversed(r)]
        own = own_hop(hops)
        chain = []
        for k, hop in enumerate(hops):
            ln = links.get(hop)
            if ln is None:
                mine = k == own
                ln = Link(cfg if mine else plain, i if mine else 0, direction,
                          queue_bytes=queue_bytes, overhead=overhead,
                          fail_at=fail_at[i] if mine else float("inf"))
                ln.delay = cfg.rtt_us * 1e-6 / 2 / len(hops) + (i * cfg.skew_us * 1e-6 if mine else 0.0)
                if mine:
                    ln.Bps = rate_gbps[i] * 1e9 / 8
                links[hop] = ln
            chain.append(ln)
        out.append(Route(chain, own, cfg.trim_bytes))
    return out


__all__ = ["REORDERED", "Route", "build_routes", "own_hop", "routes", "switched_routes"]
