"""Many-host topologies as data: which nodes exist, which links join them, and how a switch routes
(the ports that lead towards a destination host; ECMP picks among them). Pure description: the
simulator (:mod:`uet.sim.fabric`) builds ports from it.

Specs (``uet sim --topology``):

* ``leafspine:H,T,S``: T top-of-rack switches (``t0`` ...) with H hosts each (host i on ToR
  i // H) and S spines (``s0`` ...), every ToR linked to every spine.
* ``fattree:K``: the 3-tier fat tree of K-port switches (K even): K pods of K/2 edge (``e``) and
  K/2 aggregation (``a``) switches, (K/2)^2 cores (``c``), K^3/4 hosts, K/2 per edge switch.
  Aggregation switch j of a pod links to cores j*K/2 ... j*K/2 + K/2 - 1.
* ``paths:N`` is the two-host, N-path fabric of :mod:`uet.sim.simulator`; it is not described here.

Hosts are ``h0`` ...; a link is named by its two ends (``a0-c1``), in either order.
Routing is up-down: a switch that has the destination below it sends it down the one port that
leads there; otherwise it may use any of its up ports (ECMP on the entropy, facts E.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_HOSTS = 1 << 16  # hosts are numbered into 10.x.y.z addresses; far beyond what a run can carry


class TopologyError(ValueError):
    """A topology spec that cannot be built; ``str()`` is one readable line."""


class LinkError(TopologyError):
    """A link named (``--degrade-link``, ``--fail-link``) that the topology does not have."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


@dataclass
class Topology:
    kind: str
    hosts: int
    switches: list[str]
    #: per switch name: (down ports by destination host: {host: neighbour}, up neighbours)
    down: dict[str, dict[int, str]] = field(default_factory=dict)
    up: dict[str, list[str]] = field(default_factory=dict)
    #: host index -> the switch it is attached to
    attach: list[str] = field(default_factory=list)
    #: links as (a, b) name pairs, each once
    links: list[tuple[str, str]] = field(default_factory=list)
    #: the most links a packet crosses between two hosts
    diameter: int = 2

    def neighbours(self, node: str) -> list[str]:
        if node.startswith("h"):
            return [self.attach[int(node[1:])]]
        return sorted(set(self.down[node].values()) | set(self.up[node]), key=_order)

    def has_link(self, a: str, b: str) -> bool:
        return (a, b) in self._linkset or (b, a) in self._linkset

    @property
    def _linkset(self) -> set[tuple[str, str]]:
        s = self.__dict__.get("_ls")
        if s is None:
            s = self.__dict__["_ls"] = set(self.links)
        return s

    def hops(self, src: int, dst: int) -> int:
        """Links a packet from ``src`` to ``dst`` crosses (up-down routing: climb until a switch
        has ``dst`` below it, then as many levels down)."""
        if src == dst:
            return 0
        sw, level = self.attach[src], 0
        while dst not in self.down[sw]:
            sw, level = self.up[sw][0], level + 1
        return 2 + 2 * level


def _order(name: str) -> tuple[str, int]:
    return name[0], int(name[1:])


def parse_topology(spec: str) -> tuple[str, tuple[int, ...]]:
    """``"paths:4"`` -> ("paths", (4,)), ``"leafspine:16,8,4"``, ``"fattree:8"``; raises
    :class:`TopologyError` with an example otherwise."""
    kind, _, rest = spec.partition(":")
    want = {"paths": 1, "leafspine": 3, "fattree": 1}
    example = {"paths": "paths:4", "leafspine": "leafspine:16,8,4", "fattree": "fattree:8"}
    if kind not in want:
        raise TopologyError(f"{spec!r}: a topology is paths:N, leafspine:HOSTS_PER_TOR,TORS,SPINES "
                            "or fattree:K")
    try:
        nums = tuple(int(x) for x in rest.split(","))
    except ValueError:
        raise TopologyError(f"{spec!r}: expected {kind} numbers, e.g. {example[kind]}") from None
    if len(nums) != want[kind] or any(n < 1 for n in nums):
        raise TopologyError(f"{spec!r}: expected {want[kind]} positive number(s), "
                            f"e.g. {example[kind]}")
    if kind == "fattree" and (nums[0] < 2 or nums[0] % 2):
        raise TopologyError(f"{spec!r}: K is an even number of switch ports, at least 2, e.g. "
                            "fattree:8")
    hosts = {"paths": 2, "leafspine": nums[0] * nums[1] if kind == "leafspine" else 0,
             "fattree": nums[0] ** 3 // 4}[kind]
    if hosts > MAX_HOSTS:
        raise TopologyError(f"{spec!r}: {hosts} hosts; at most {MAX_HOSTS}")
    return kind, nums


def build(kind: str, nums: tuple[int, ...]) -> Topology:
    if kind == "leafspine":
        return leaf_spine(*nums)
    if kind == "fattree":
        return fat_tree(nums[0])
    raise TopologyError(f"{kind} is not a switched topology")


def leaf_spine(hosts_per_tor: int, tors: int, spines: int) -> Topology:
    hosts = hosts_per_tor * tors
    tor = [f"t{i}" for i in range(tors)]
    spine = [f"s{i}" for i in range(spines)]
    t = Topology("leafspine", hosts, tor + spine, diameter=2 if tors == 1 else 4)
    t.attach = [tor[h // hosts_per_tor] for h in range(hosts)]
    for i, name in enumerate(tor):
        t.down[name] = {h: f"h{h}" for h in range(i * hosts_per_tor, (i + 1) * hosts_per_tor)}
        t.up[name] = list(spine) if tors > 1 else []
    for name in spine:
        t.down[name] = {h: t.attach[h] for h in range(hosts)} if tors > 1 else {}
        t.up[name] = []
    t.links = [(f"h{h}", t.attach[h]) for h in range(hosts)]
    if tors > 1:
        t.links += [(a, b) for a in tor for b in spine]
    else:  # one ToR: the spines have nothing to do, and no links
        t.switches = tor
    return t


def fat_tree(k: int) -> Topology:
    half = k // 2
    hosts = k ** 3 // 4
    edge = [f"e{i}" for i in range(k * half)]
    agg = [f"a{i}" for i in range(k * half)]
    core = [f"c{i}" for i in range(half * half)]
    t = Topology("fattree", hosts, edge + agg + core, diameter=6)  # K >= 2: at least 2 pods
    t.attach = [edge[h // half] for h in range(hosts)]
    per_pod = half * half  # hosts per pod
    for e, name in enumerate(edge):
        pod = e // half
        t.down[name] = {h: f"h{h}" for h in range(e * half, (e + 1) * half)}
        t.up[name] = [agg[pod * half + j] for j in range(half)]
    for a, name in enumerate(agg):
        pod, j = divmod(a, half)
        t.down[name] = {h: t.attach[h] for h in range(pod * per_pod, (pod + 1) * per_pod)}
        t.up[name] = [core[j * half + i] for i in range(half)]
    for c, name in enumerate(core):
        j = c // half
        t.down[name] = {h: agg[(h // per_pod) * half + j] for h in range(hosts)}
        t.up[name] = []
    t.links = [(f"h{h}", t.attach[h]) for h in range(hosts)]
    t.links += [(e, a) for e in edge for a in t.up[e]]
    t.links += [(a, c) for a in agg for c in t.up[a]]
    return t
