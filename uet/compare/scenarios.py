"""The scenarios of ``uet compare``: one topology and one set of flows that every design runs, with
the same seed. Each is the shape of an argument people make about AI fabrics (issue 19):

  elephants      on a leaf-spine, every host of ToR k sends ``bytes`` to the host in the same
                 position on ToR k+1 (a ring step of a synchronous AllReduce): as many flows
                 cross the spines as there are spines per ToR, so a perfect spread has no
                 collision and a flow hash (ECMP) usually puts two on one uplink.
  incast         every other host sends ``bytes`` to host 0.
  degraded-link  the elephants' flows with the first uplink of host 0's ToR at ``degrade`` of its
                 rate (a link that lost lanes): ECMP keeps the flows hashed onto it there.
  pfc-victim     the hosts of ToR 0 but the last, and the hosts of ToR 1 but the first two, send
                 ``bytes`` to host H (the first host of ToR 1: the congested receiver); the last
                 host of ToR 0 sends to host H+1, which nobody congests: the victim ([DC] of
                 uet.roce.pfc). With PFC its packets share the spine links that the incast
                 pauses.
  matrix FILE    the flows of an htsim connection matrix (uet.sim.traffic), on ``topology``.

Defaults are chosen so that one ``uet compare SCENARIO`` runs its three designs in well under 30 s
on a 2-core machine (the issue's bound). A topology too small for a scenario is a
:class:`ScenarioError` (one line; the command exits 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..net.topology import Topology, TopologyError, build, parse_topology
from ..sim.traffic import Flow, TrafficError, make_flows

SCENARIOS = ("elephants", "incast", "degraded-link", "pfc-victim", "matrix")

#: per scenario: (default topology, default bytes per flow)
DEFAULTS: dict[str, tuple[str, int]] = {
    "elephants": ("leafspine:8,2,8", 4 << 20),
    "incast": ("leafspine:8,2,2", 2 << 20),
    "degraded-link": ("leafspine:4,2,2", 4 << 20),
    "pfc-victim": ("leafspine:4,2,2", 2 << 20),
    "matrix": ("leafspine:4,4,2", 1 << 20),
}
DEGRADE = 0.25  # degraded-link: the fraction of its rate the link keeps (a 4-lane link on 1 lane)


class ScenarioError(ValueError):
    """A scenario that cannot run on the topology given; ``str()`` is one line."""


@dataclass
class Scenario:
    name: str
    topology: str
    flows: list[Flow]
    degrade: list[tuple[str, str, float]] = field(default_factory=list)
    victim: int | None = None  # pfc-victim: the index of the victim flow
    matrix: str | None = None

    @property
    def hosts(self) -> int:
        return build(*parse_topology(self.topology)).hosts


def _leafspine(name: str, topo: Topology, spec: str) -> tuple[int, int]:
    """(hosts per ToR, ToRs) of a leaf-spine that has what ``name`` needs."""
    if topo.kind != "leafspine":
        raise ScenarioError(f"{name} runs on a leaf-spine (leafspine:H,T,S), not {spec}")
    tors = sum(1 for s in topo.switches if s.startswith("t"))
    per = topo.hosts // tors
    if tors < 2:
        raise ScenarioError(f"{name} needs at least 2 ToRs, so that flows cross the spines; "
                            f"{spec} has {tors}")
    return per, tors


def make(name: str, *, topology: str | None = None, flow_bytes: int | None = None,
         seed: int = 1, matrix: str | None = None) -> Scenario:
    """The scenario ``name`` (one of :data:`SCENARIOS`); raises ScenarioError, TopologyError or
    TrafficError, each one readable line."""
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    spec = topology or DEFAULTS[name][0]
    nbytes = flow_bytes or DEFAULTS[name][1]
    topo = build(*parse_topology(spec))  # TopologyError for a bad spec or paths:N
    if name == "matrix":
        if matrix is None:
            raise ScenarioError("matrix needs a connection-matrix FILE: uet compare matrix FILE")
        flows = make_flows(("matrix", matrix), hosts=topo.hosts, flow_bytes=nbytes, seed=seed)
        return Scenario(name, spec, flows, matrix=matrix)
    if matrix is not None:
        raise ScenarioError(f"{name} takes no FILE (only matrix does)")
    if name == "incast":
        if topo.hosts < 2:
            raise ScenarioError(f"incast needs at least 2 hosts; {spec} has {topo.hosts}")
        flows = make_flows(("incast", topo.hosts - 1), hosts=topo.hosts, flow_bytes=nbytes,
                           seed=seed)
        return Scenario(name, spec, flows)
    per, tors = _leafspine(name, topo, spec)
    if name in ("elephants", "degraded-link"):
        pairs = [(t * per + i, ((t + 1) % tors) * per + i) for t in range(tors) for i in range(per)]
        flows = [Flow(s, d, nbytes, 0.0, k) for k, (s, d) in enumerate(pairs)]
        degrade = []
        if name == "degraded-link":
            tor = topo.attach[0]
            if not topo.up[tor]:
                raise ScenarioError(f"degraded-link needs a ToR with an uplink; {spec} has none")
            degrade = [(tor, topo.up[tor][0], DEGRADE)]
        return Scenario(name, spec, flows, degrade=degrade)
    # pfc-victim
    if per < 3:
        raise ScenarioError(f"pfc-victim needs at least 3 hosts per ToR (incast senders, the "
                            f"victim and its receiver); {spec} has {per}")
    r = per  # the congested receiver: the first host of ToR 1
    senders = list(range(per - 1)) + list(range(per + 2, 2 * per))
    flows = [Flow(s, r, nbytes, 0.0, k) for k, s in enumerate(senders)]
    victim = len(flows)
    flows.append(Flow(per - 1, per + 1, nbytes, 0.0, victim))
    return Scenario(name, spec, flows, victim=victim)


__all__ = ["DEFAULTS", "SCENARIOS", "Scenario", "ScenarioError", "TopologyError", "TrafficError",
           "make"]
