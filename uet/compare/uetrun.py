"""The UET design of ``uet compare``: uet.sim.fabric's many-host simulator as it is (NSCC and REPS,
trimming, real UET frames; optional CSIG), given the scenario's topology, flows, degraded links
and seed, observed through its public view (``sample_every``, ``port_view``) for the plot.

Rules (numbered):

  COMPARE-U1  the flows reach the simulator as an htsim connection matrix (uet.sim.traffic.write_matrix,
      a temporary file; a ``matrix`` scenario's own file as it is): the format the simulator
      already reads, so the UET side needs no new entry point.
  COMPARE-U2  the sampler (the RoCE fabric's COMPARE-F5): every ``bin_s``, the bytes the switch ports sent to
      hosts and each switch port's data queue, through FabricSimulator.sample_every (an event of
      the simulator's own heap, so it sees the queues at exact virtual times), and once more at
      the end of the run.
  COMPARE-U3  the UET rows: trims, drops, ECN marks from the switch ports; retransmitted bytes =
      retransmitted packets x MTU (the PDS counts packets: an upper bound, a tail packet is
      shorter); pause frames and paused time 0 (UET runs without PFC: trimming and selective
      recovery replace the lossless class); max queue over every switch port.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from ..sim.fabric import FabricSimConfig, FabricSimulator
from ..sim.traffic import write_matrix
from .scenarios import Scenario


class Series:
    """COMPARE-U2: the samples of one run (``t``, ``bytes`` to hosts, ``queues`` by switch port)."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.bytes: list[int] = []
        self.queues: dict[str, list[int]] = {}

    def __call__(self, now: float, sim: FabricSimulator) -> None:
        self.t.append(now)
        delivered = 0
        for p in sim.port_view():
            self.queues.setdefault(p.name, []).append(p.qbytes)
            if p.to_host:
                delivered += p.tx_bytes
        self.bytes.append(delivered)

    def as_dict(self) -> dict[str, Any]:
        return {"t": self.t, "bytes": self.bytes, "queues": self.queues}


def run_uet(sc: Scenario, *, seed: int, rate_gbps: float, link_delay_us: float, mtu: int,
            time_limit_s: float, bin_s: float, csig: str | None = None,
            pcap: Any = None) -> dict[str, Any]:
    """One run of the UET design; the result has the keys of uet.compare.rocefabric's."""
    tmp = None
    path = sc.matrix
    if path is None:  # COMPARE-U1
        fd, tmp = tempfile.mkstemp(prefix="uet-compare-", suffix=".cm")
        os.close(fd)
        write_matrix(tmp, sc.hosts, sc.flows)
        path = tmp
    try:
        cfg = FabricSimConfig(topology=sc.topology, traffic=("matrix", path),
                              flow_bytes=max(f.bytes for f in sc.flows), mtu=mtu,
                              rate_gbps=rate_gbps, link_delay_us=link_delay_us,
                              degrade=list(sc.degrade), seed=seed, time_limit_s=time_limit_s,
                              csig=csig)
        wall0 = time.perf_counter()
        sim = FabricSimulator(cfg, pcap=pcap)
        series = Series()
        sim.sample_every(bin_s, series)
        summary = sim.run()
        if sim.pcap is not None:
            sim.pcap.flush()
        wall = time.perf_counter() - wall0
    finally:
        if tmp is not None:
            os.unlink(tmp)
    series(sim.now, sim)
    fails = summary["failures"]
    status = ("ok" if summary["ok"] else
              "time-limit" if any("time limit" in f for f in fails) else
              "stalled" if any(f.startswith("stalled") for f in fails) else "failed")
    ports = sim.port_view()
    busiest = max(ports, key=lambda p: p.max_qbytes) if ports else None
    return {
        "design": "uet", "status": status, "stopped_at_s": sim.now, "pfc": False,
        "fct": list(zip(sim.flows, sim.fct)),
        "drops": summary["dropped"],
        "trims": summary["trimmed"],
        "retx_bytes": summary["retransmissions"] * mtu,  # COMPARE-U3
        "pause_frames": 0, "xon_frames": 0, "paused_time_s": 0.0,
        "max_queue_bytes": busiest.max_qbytes if busiest else 0,
        "max_queue_port": busiest.name if busiest else None,
        "ecn_marked": summary["ecn_marked"],
        "rto": summary["rto"],
        "failures": fails,
        "buffer_bytes": sim.buffer,
        "series": series.as_dict(),
        "sim_time_s": sim.now, "wall_time_s": wall,
    }


def uet_buffer(sc: Scenario, *, rate_gbps: float, link_delay_us: float, mtu: int) -> int:
    """The per-port buffer the UET design gets (uet.sim.fabric: one BDP of the longest unloaded
    RTT, at least two full frames), so the RoCE designs get the same (COMPARE-F2)."""
    from ..net.topology import build, parse_topology
    from ..sim.fabric import data_frame_bytes, unloaded_rtt

    cfg = FabricSimConfig(topology=sc.topology, mtu=mtu, rate_gbps=rate_gbps,
                          link_delay_us=link_delay_us)
    topo = build(*parse_topology(sc.topology))
    bdp = int(rate_gbps * 1e9 / 8 * unloaded_rtt(topo.diameter, cfg))
    return max(bdp, 2 * data_frame_bytes(mtu))
