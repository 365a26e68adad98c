"""The public view of the many-host simulator (uet.sim.fabric): ``sample_every`` runs on the run's own
heap at exact virtual times and stops with the flows, ``port_view`` and ``open_flow_count`` read the
fabric without changing the run."""

from __future__ import annotations

import pytest

from uet.sim.fabric import FabricSimConfig, FabricSimulator, PortView

CFG = dict(topology="leafspine:5,1,1", traffic=("incast", 4), flow_bytes=128 << 10)


def test_samples_at_exact_times_until_the_flows_are_done():
    sim = FabricSimulator(FabricSimConfig(**CFG))
    assert sim.open_flow_count == 4
    seen: list[tuple[float, int, list[PortView]]] = []
    sim.sample_every(2e-6, lambda now, s: seen.append((now, s.open_flow_count, s.port_view())))
    summary = sim.run()
    assert summary["ok"] and sim.open_flow_count == 0
    times = [t for t, _, _ in seen]
    assert times[0] == 0.0 and times == pytest.approx([i * 2e-6 for i in range(len(times))])
    assert seen[0][1] == 4 and all(n > 0 for _, n, _ in seen[:-1])   # none after the last flow
    assert times[-1] <= sim.now < times[-1] + 2e-6 * 2
    names = [p.name for p in seen[0][2]]
    assert names == [p.name for p in sim.port_view()] and len(set(names)) == len(names)
    assert any(p.qbytes > 0 for _, _, view in seen for p in view)          # the incast queues
    to_host = [p for p in seen[-1][2] if p.to_host]
    assert to_host and all(p.name.split("->")[1].startswith("h") for p in to_host)
    assert all(p.max_qbytes >= p.qbytes for p in seen[-1][2])
    tx = [sum(p.tx_bytes for p in view if p.to_host) for _, _, view in seen]
    assert tx == sorted(tx) and tx[-1] > 4 * (128 << 10)                    # only ever grows


def test_sampling_does_not_change_the_run():
    plain = FabricSimulator(FabricSimConfig(**CFG)).run()
    sim = FabricSimulator(FabricSimConfig(**CFG))
    sim.sample_every(1e-6, lambda now, s: s.port_view())
    sampled = sim.run()
    for k in ("ok", "fct", "last_fct_s", "retransmissions", "trimmed", "ecn_marked", "sim_time_s",
              "max_queue_bytes"):
        if k in plain:
            assert sampled[k] == plain[k], k


def test_the_interval_is_positive():
    sim = FabricSimulator(FabricSimConfig(**CFG))
    with pytest.raises(ValueError):
        sim.sample_every(0.0, lambda now, s: None)



def test_two_samplers_run_side_by_side():
    sim = FabricSimulator(FabricSimConfig(**CFG))
    a: list[float] = []
    b: list[float] = []
    sim.sample_every(2e-6, lambda now, s: a.append(now))
    sim.sample_every(3e-6, lambda now, s: b.append(now))
    assert sim.run()["ok"]
    assert a == pytest.approx([i * 2e-6 for i in range(len(a))])
    assert b == pytest.approx([i * 3e-6 for i in range(len(b))])
    assert a[-1] <= sim.now < a[-1] + 4e-6 and b[-1] <= sim.now < b[-1] + 6e-6
