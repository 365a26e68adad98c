"""Each scenario of ``uet compare`` runs small with every design, and the structural facts hold
(issue 19): flows share an uplink under ECMP, the PFC victim is paused with PFC and not without,
PFC never drops. Mechanisms, not which design wins."""

from __future__ import annotations

import pytest

from uet.compare import scenarios
from uet.compare.rocefabric import RoceFabric
from uet.compare.run import Options, compare, table
from uet.roce.pfc import PfcParams

SMALL = 128 << 10


def run(name, seed=1, designs=("roce", "adaptive", "uet"), pfc=True, **kw):
    sc = scenarios.make(name, flow_bytes=kw.pop("flow_bytes", SMALL), seed=seed, **kw)
    rows, raws = compare(sc, Options(designs=designs, seed=seed, pfc=pfc))
    return sc, rows, raws


def replay(name, seed, pfc=True):
    return f"replay: uet compare {name} --seed {seed}{'' if pfc else ' --no-pfc'}"


@pytest.mark.parametrize("name", ["elephants", "incast", "degraded-link", "pfc-victim"])
def test_every_scenario_completes_small(name):
    sc, rows, _ = run(name)
    assert set(rows) == {"roce", "adaptive", "uet"}
    for d, r in rows.items():
        assert r["status"] == "ok" and r["completed"] == len(sc.flows), (d, replay(name, 1))
        assert r["drops"] == 0, (d, replay(name, 1))          # PFC (roce) or trimming (uet)
        assert r.get("bad_icrc", 0) == 0
        assert r["throughput_gbps"] > 0 and 0 < r["jain_fct"] <= 1
    assert rows["roce"]["trims"] == 0 and rows["uet"]["pause_frames"] == 0
    text = table(rows)
    assert text.count("\n") == 4 and "roce" in text and "uet" in text


def test_elephants_ecmp_puts_two_flows_on_one_uplink():
    seed = 1
    _, rows, _ = run("elephants", seed=seed, designs=("roce",))
    assert rows["roce"]["shared_uplinks"], replay("elephants", seed)


def test_elephants_adaptive_spreads_each_flow_over_several_uplinks():
    _, _, raws = run("elephants", designs=("roce", "adaptive"))
    assert all(len(u) == 1 for u in raws["roce"]["flow_uplinks"])       # pinned (Q3, COMPARE-R5)
    assert any(len(u) > 1 for u in raws["adaptive"]["flow_uplinks"])    # per packet (COMPARE-R6)


@pytest.mark.parametrize("seed", [1, 2])
def test_pfc_victim_is_paused_with_pfc_and_not_without(seed):
    _, rows, _ = run("pfc-victim", seed=seed, designs=("roce",), flow_bytes=512 << 10)
    assert rows["roce"]["victim_paused"] > 0, replay("pfc-victim", seed)
    assert rows["roce"]["pause_frames"] > 0 and rows["roce"]["paused_time_s"] > 0
    _, rows, _ = run("pfc-victim", seed=seed, designs=("roce",), flow_bytes=512 << 10, pfc=False)
    assert rows["roce"]["victim_paused"] == 0, replay("pfc-victim", seed, pfc=False)
    assert rows["roce"]["pause_frames"] == 0 and rows["roce"]["paused_time_s"] == 0


def test_without_pfc_incast_drops_and_go_back_n_resends():
    _, rows, _ = run("incast", designs=("roce",), pfc=False, flow_bytes=512 << 10)
    r = rows["roce"]
    assert r["status"] == "ok" and r["drops"] > 0 and r["retx_bytes"] > 0, replay("incast", 1,
                                                                                 False)
    assert r["naks"] > 0 or r["timeouts"] > 0
    assert r["cnps"] > 0 and r["ecn_marked"] > 0                        # DCQCN at work (ROCE-D1, ROCE-D2)


def test_pfc_holds_what_is_in_flight_within_the_headroom():
    sc = scenarios.make("incast", topology="leafspine:4,2,2", flow_bytes=512 << 10)
    params = PfcParams(xoff_bytes=20_000, xon_bytes=12_000)
    r = RoceFabric(topology=sc.topology, flows=sc.flows, buffer_bytes=100_000,
                   pfc_params=params).run()
    assert r["status"] == "ok" and r["drops"] == 0 and r["pause_frames"] > 0
    assert r["xon_frames"] > 0
    assert r["max_ingress_bytes"] <= params.xoff_bytes + r["pfc_headroom_bytes"]


def test_degraded_link_is_the_first_uplink_of_host_0s_tor():
    sc = scenarios.make("degraded-link")
    assert sc.degrade == [("t0", "s0", scenarios.DEGRADE)]


def test_a_design_that_cannot_finish_says_when_it_stopped():
    sc = scenarios.make("incast", flow_bytes=SMALL)
    rows, _ = compare(sc, Options(designs=("roce", "uet"), time_limit_s=20e-6))
    for d, r in rows.items():
        assert r["status"] == "time-limit" and r["completed"] < len(sc.flows), d
        assert r["stopped_at_s"] <= 20e-6 + 1e-9
    assert "time-limit@" in table(rows)


def test_same_seed_same_result():
    a = run("elephants", designs=("roce", "adaptive"))[1]
    b = run("elephants", designs=("roce", "adaptive"))[1]
    for d in a:
        a[d].pop("wall_time_s"), b[d].pop("wall_time_s")
    assert a == b


@pytest.mark.parametrize("name, topo, words", [
    ("elephants", "leafspine:4,1,1", "at least 2 ToRs"),
    ("pfc-victim", "leafspine:2,2,2", "at least 3 hosts per ToR"),
    ("elephants", "fattree:4", "leaf-spine"),
])
def test_a_topology_too_small_is_refused(name, topo, words):
    with pytest.raises(scenarios.ScenarioError, match=words):
        scenarios.make(name, topology=topo)


def test_r4_a_link_carries_one_packet_at_a_time(monkeypatch):
    """Pauses, wake-ups and XONs never start a packet on a busy link."""
    from uet.compare.ports import CPort

    last: dict[int, float] = {}
    overlaps = []
    real = CPort.start

    def start(self, now):
        r = real(self, now)
        if r is not None:
            if now < last.get(id(self), 0.0) - 1e-12:
                overlaps.append((self.name, now))
            last[id(self)] = r[1]
        return r

    monkeypatch.setattr(CPort, "start", start)
    _, rows, _ = run("pfc-victim", designs=("roce", "adaptive"), flow_bytes=512 << 10)
    assert rows["roce"]["pause_frames"] > 0 and not overlaps
