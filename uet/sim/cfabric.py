"""The many-host simulator on the C fabric engine (``FabricSimConfig.fabric_engine="c"``, issue 29
item 1): uet.sim.fabric builds the topology, the routes and the ports as always (uet.net is the
reference model), then this module hands them to :class:`uet.native.fabric.FabricEngine` as flat
arrays and runs the events there. The hosts stay in Python: they inject packets in batches (a
host's datagrams of one flush) and learn of deliveries in batches (:func:`run`), so Python and C
cross per batch, not per hop. Frames stay in Python (``sim._inflight``, by packet id); a delivery
says whether the packet was trimmed or CE-marked and the simulator applies that to the bytes
exactly as for the Python engine.

  SIM-E1  same run: both engines make the same decisions in the same order, the Python events
      (timers, flow starts, samplers) sharing the engine's heap and its sequence numbers, and all
      random draws coming from one uet.net.rng generator seeded with the run's seed.
  SIM-E2  the default engine is "c" when the C extension is in use, else "python" (the reference);
      asking for "c" where it cannot run is an :class:`EngineError` naming the reason.
"""

from __future__ import annotations

from typing import Any

from ..native import fabric as native_fabric
from ..net.ecn import TRIM_VICTIM

FabricSimulator = Any  # uet.sim.fabric's, which imports this module

ENGINES = ("python", "c")
_BIG = 1 << 62


class EngineError(ValueError):
    """SIM-E2: an engine that cannot run this fabric (``uet sim --fabric-engine``: exit 2)."""


def resolve(engine: str | None) -> str:
    """SIM-E2: the engine a run uses."""
    if engine is None:
        return "c" if native_fabric.AVAILABLE else "python"
    if engine not in ENGINES:
        raise EngineError(f"fabric_engine is {' or '.join(ENGINES)}, not {engine!r}")
    if engine == "c" and not native_fabric.AVAILABLE:
        raise EngineError("fabric_engine 'c' needs the C extension (not built, or UET_NATIVE=0)")
    return engine


def all_ports(sim: FabricSimulator) -> list[Any]:
    """Every port in the engines' one numbering: the switch ports, then each host's NIC."""
    return list(sim.ports) + [h.nic for h in sim.hosts]


def build(sim: FabricSimulator) -> native_fabric.FabricEngine:
    """The C fabric of ``sim``'s topology, ports and switches, its generator seeded as ``sim.rng``."""
    ports = all_ports(sim)
    host_nodes = {id(h) for h in sim.hosts}
    index = {id(p): i for i, p in enumerate(ports)}
    names = list(sim.switches)
    sw_index = {n: i for i, n in enumerate(names)}
    eng = native_fabric.FabricEngine(hosts=len(sim.hosts), switches=len(names), ports=len(ports),
                                     seed=sim.cfg.seed)
    for i, p in enumerate(ports):
        host = id(p.peer) in host_nodes
        eng.port(i, Bps=p.Bps, delay=p.delay, cap=min(p.cap, _BIG), kmin=min(p.kmin, _BIG),
                 kmax=min(p.kmin + p.kspan, _BIG + 1), keep_frame=p.keep_frame,
                 trimming=p.trimming, fail_at=p.fail_at, mark_in=p.ecn_point == "enqueue",
                 victim_either=p.trim_victim == TRIM_VICTIM, peer_is_host=host,
                 peer=p.peer.idx if host else sw_index[p.peer.name])
        if p.csig is not None:  # NET-S5, NET-S6
            eng.port_csig(i, t=p.csig, abw_full_gbps=p.csig_scale.abw_full_gbps,
                          delay_unit_s=p.csig_scale.delay_unit_s, lm=p.csig_lm,
                          interval=p.csig_interval)
    for n, sw in sim.switches.items():
        down = [-1] * len(sim.hosts)
        for h, p in sw.down.items():
            if p is not None:
                down[h] = index[id(p)]
        eng.switch(sw_index[n], salt=sw.salt, down=down, up=[index[id(p)] for p in sw.up])
    for h in sim.hosts:
        eng.nic(h.idx, index[id(h.nic)])
    return eng


def sync_ports(sim: FabricSimulator) -> None:
    """Copy the C ports' counters and queue figures onto the Python Port objects, which the
    summary and :meth:`FabricSimulator.port_view` read."""
    eng = sim._engine
    for i, p in enumerate(all_ports(sim)):
        s = eng.port_stats(i)
        for k in ("tx_packets", "tx_bytes", "trimmed", "dropped", "ce_marked", "max_qbytes",
                  "qbytes", "q_area", "q_since", "csig_stamped", "csig_replaced", "csig_d_set"):
            setattr(p, k, s[k])


def run(sim: FabricSimulator) -> None:
    """The run loop of :meth:`FabricSimulator.run` on the C engine (SIM-E1): what the engine
    reports, in order, until every flow is done, the time limit or the end of the events."""
    eng, pyev, inflight, log = sim._engine, sim._pyev, sim._inflight, sim.event_log
    out, hosts, at_host, limit = eng.out, sim.hosts, sim._at_host, sim.cfg.time_limit_s
    event_done = sim.event_done
    deliver = native_fabric.DELIVER
    trimmed_f, ce_f = native_fabric.F_TRIMMED, native_fabric.F_CE
    calls = 0
    while True:
        n = eng.run(limit)
        if log is not None:
            log.extend(eng.log())
        calls += 1
        if not calls & 255 or not n:  # the frames of dropped packets, now and then
            for pid in eng.dropped():
                del inflight[pid]
        if not n:
            sim.now = eng.now
            if eng.pending:
                sim.failures.append(f"time limit {limit}s reached")
            elif sim.open_flows > 0:
                sim.failures.append(f"stalled at {sim.now:.6f}s with {sim.open_flows} flow(s) "
                                    "not complete")
            return
        for i in range(n):
            r = out[i]
            t = r.t
            sim.now = t
            if r.kind == deliver:
                pkt = inflight.pop(r.id)
                flags = r.flags
                if flags & trimmed_f:
                    pkt.trimmed = True
                if flags & ce_f:
                    pkt.ce = True
                if pkt.csig is not None:  # NET-S6: the tag as the last switch left it
                    pkt.csig = r.csig
                at_host(t, hosts[r.node], pkt)
            else:
                action, a, b = pyev.pop(r.id)
                action(t, a, b)
            if event_done():
                return
