"""The C fabric engine against the Python model (uet.sim.cfabric SIM-E1, issue 29 item 1): seeded
scenarios run on both give the same event log (every port's sends, every refused packet, every
delivery, with its trimmed and CE bits) and the same summary; the one generator (uet.net.rng
NET-R1, NET-R2) is the same in both languages; malformed input to the C engine is a typed error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from uet.native import fabric as nf
from uet.net.rng import Rng
from uet.sim.fabric import FabricSimConfig, FabricSimulator

needs_c = pytest.mark.skipif(not nf.AVAILABLE, reason="the C extension is not in use")

SCENARIOS = {
    # an incast that fills the last hop's queue: ECN marks and trims (NET-N1 to NET-N4)
    "incast": dict(topology="leafspine:9,1,1", traffic=("incast", 8), flow_bytes=300_000),
    "incast_enqueue_arriving": dict(topology="leafspine:9,1,1", traffic=("incast", 8),
                                    flow_bytes=200_000, ecn_point="enqueue",
                                    trim_victim="arriving"),
    "permutation": dict(topology="fattree:4", traffic=("permutation", None), flow_bytes=400_000),
    "failed_link": dict(topology="fattree:4", traffic=("permutation", None), flow_bytes=200_000,
                        fail=[("a0", "c0", 5.0), ("e1", "a1", 0.0)], time_limit_s=0.05),
    "degraded_link": dict(topology="fattree:4", traffic=("permutation", None), flow_bytes=300_000,
                          degrade=[("a0", "c0", 0.25)]),
    # CSIG (NET-S5, NET-S6) of each signal type, one link degraded so that the tags differ
    **{f"csig_{t}": dict(topology="fattree:4", traffic=("permutation", None), flow_bytes=200_000,
                         csig=t, degrade=[("a0", "c0", 0.25)], buffer_bytes=40_000)
       for t in ("abw", "abw/c", "delay", "nqd")},
    "small_buffer_fixed": dict(topology="leafspine:5,2,2", traffic=("all-to-all", None),
                               flow_bytes=40_000, buffer_bytes=20_000, cc="fixed",
                               spray="oblivious"),
}


def _run(engine: str, seed: int, kw: dict) -> tuple[list, dict]:
    sim = FabricSimulator(FabricSimConfig(seed=seed, fabric_engine=engine, **kw))
    assert sim.engine == engine
    sim.log_events()
    summary = sim.run()
    summary.pop("wall_time_s")
    return sim.event_log, summary


@needs_c
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_log_and_summary_sim_e1(name):
    kw = SCENARIOS[name]
    log_py, sum_py = _run("python", 3, kw)
    log_c, sum_c = _run("c", 3, kw)
    assert len(log_py) > 100
    assert log_c == log_py
    assert sum_c == sum_py


@needs_c
def test_scenarios_exercise_the_rules():
    """The scenarios above are not all quiet: marks, trims, refusals and failed links occur."""
    _, s = _run("c", 3, SCENARIOS["incast"])
    assert s["trimmed"] > 0 and s["ecn_marked"] > 0 and s["ok"]
    log, s = _run("c", 3, SCENARIOS["failed_link"])
    assert s["dropped"] > 0
    _, s = _run("c", 3, SCENARIOS["small_buffer_fixed"])
    assert s["trimmed"] > 0
    for t in ("abw", "delay"):
        _, s = _run("c", 3, SCENARIOS[f"csig_{t}"])
        assert s["csig_replaced"] > 0 and s["csig_d_set"] > 0


@needs_c
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32),
       topology=st.sampled_from(["fattree:4", "leafspine:3,2,2", "leafspine:4,3,1",
                                 "leafspine:2,2,3"]),
       traffic=st.sampled_from([("permutation", None), ("incast", 3), ("all-to-all", None)]),
       rules=st.sampled_from([{}, {"ecn_point": "enqueue"}, {"trim_victim": "arriving"},
                              {"csig": "abw/c"}, {"csig": "nqd"}, {"trimming": False}]),
       buffer=st.sampled_from([12_000, 30_000]))
def test_same_run_over_seeds_and_fabrics_sim_e1(seed, topology, traffic, rules, buffer):
    kw = dict(topology=topology, traffic=traffic, flow_bytes=40_000, buffer_bytes=buffer, **rules)
    assert _run("c", seed, kw) == _run("python", seed, kw)


@needs_c
@settings(max_examples=50, deadline=None)
@given(seed=st.integers(-(2**70), 2**70), n=st.integers(0, 40))
def test_one_generator_in_both_languages_net_r1(seed, n):
    r = Rng(seed)
    assert nf.rng_words(seed, n) == [r.next_u64() for _ in range(n)]


def test_generator_known_words_net_r1():
    """xoshiro256** seeded by splitmix64 (NET-R1); NET-R2's float is the top 53 bits."""
    r = Rng(0)
    assert [r.next_u64() for _ in range(3)] == [0x99EC5F36CB75F2B4, 0xBF6E1F784956452A,
                                               0x1A5F849D4933E6E0]
    r = Rng(7)
    w = Rng(7).next_u64()
    assert r.random() == (w >> 11) / 2**53
    assert Rng(7).getrandbits(32) == w >> 32
    with pytest.raises(ValueError):
        r.getrandbits(0)


def test_engine_choice_sim_e2(monkeypatch):
    with pytest.raises(ValueError, match="fabric_engine"):
        FabricSimulator(FabricSimConfig(fabric_engine="fortran"))
    sim = FabricSimulator(FabricSimConfig(fabric_engine="python"))
    assert sim.engine == "python"
    assert FabricSimulator(FabricSimConfig()).engine == ("c" if nf.AVAILABLE else "python")
    monkeypatch.setattr(nf, "AVAILABLE", False)
    with pytest.raises(ValueError, match="C extension"):
        FabricSimulator(FabricSimConfig(fabric_engine="c"))


def _tiny() -> nf.FabricEngine:
    """Two hosts on one switch."""
    e = nf.FabricEngine(hosts=2, switches=1, ports=4, seed=1)
    for i, (host, peer) in enumerate([(True, 0), (True, 1), (False, 0), (False, 0)]):
        e.port(i, Bps=12.5e9, delay=1e-6, cap=10_000, kmin=2_000, kmax=8_000, keep_frame=300,
               trimming=True, fail_at=float("inf"), mark_in=False, victim_either=True,
               peer_is_host=host, peer=peer)
    e.switch(0, salt=5, down=[0, 1], up=[])
    e.nic(0, 2)
    e.nic(1, 3)
    return e


@needs_c
def test_engine_delivers_and_reports():
    e = _tiny()
    e.inject(0.0, 0, [(7, 1000, 1, 123, nf.F_ECT, -1), (8, 64, 1, 9, nf.F_CONTROL, -1)])
    e.push_py(1.0, 99)
    got = []
    while n := e.run(10.0):
        got += [(r.kind, r.id, r.node) for r in e.out[0:n]]
    # NET-S1: the control packet, queued second, leaves first (strict priority)
    assert got == [(nf.DELIVER, 8, 1), (nf.DELIVER, 7, 1), (nf.PY, 99, -1)]
    assert e.port_stats(2)["tx_packets"] == 2 and e.port_stats(1)["tx_bytes"] == 1064
    assert e.port_stats(0)["tx_packets"] == 0 and not e.busy(1)
    assert e.pending == 0 and e.now == 1.0


@needs_c
@pytest.mark.parametrize("call", [
    lambda e: e.inject(0.0, 5, [(1, 100, 1, 0, 0, -1)]),       # unknown host
    lambda e: e.inject(0.0, 0, [(1, 100, 9, 0, 0, -1)]),       # unknown destination
    lambda e: e.inject(0.0, 0, [(1, 0, 1, 0, 0, -1)]),         # zero-length packet
    lambda e: e.inject(0.0, 0, [(1, -5, 1, 0, 0, -1)]),        # negative length
    lambda e: e.inject(0.0, 0, [(1, 100, 1, 0, 1 << 8, -1)]),  # unknown flag
    lambda e: e.inject(0.0, 0, [(1, 1 << 40, 1, 0, 0, -1)]),   # length beyond 32 bits
    lambda e: e.inject(0.0, 0, [(1, 100, 1, 0, 0, 1 << 16)]),  # a tag beyond 16 bits
    lambda e: e.inject(0.0, 0, [(1, 100, 1, 0)]),              # a short record
    lambda e: e.port_csig(0, t=4, abw_full_gbps=100.0, delay_unit_s=1e-6, lm=0, interval=1e-6),
    lambda e: e.port_csig(0, t=0, abw_full_gbps=100.0, delay_unit_s=1e-6, lm=128, interval=1e-6),
    lambda e: e.push_py(float("nan"), 1),
    lambda e: e.port(9, Bps=1.0, delay=0.0, cap=1, kmin=0, kmax=1, keep_frame=1, trimming=False,
                     fail_at=0.0, mark_in=False, victim_either=False, peer_is_host=True, peer=0),
    lambda e: e.switch(0, salt=0, down=[0, 7], up=[]),
    lambda e: e.switch(0, salt=0, down=[0], up=[]),
    lambda e: e.port_stats(-1),
])
def test_malformed_input_is_a_typed_error(call):
    e = _tiny()
    with pytest.raises(nf.FabricEngineError, match="fabric engine"):
        call(e)
    e.inject(0.0, 0, [(1, 100, 1, 0, 0, -1)])  # and the engine still works
    assert e.run(1.0) == 1 and e.out[0].id == 1


@needs_c
def test_full_heap_is_a_typed_error():
    e = nf.FabricEngine(hosts=1, switches=0, ports=1, seed=0, max_events=2)
    e.push_py(0.0, 1)
    e.push_py(0.0, 2)
    with pytest.raises(nf.FabricEngineError, match="full"):
        e.push_py(0.0, 3)
    with pytest.raises(nf.FabricEngineError, match="max_events"):
        nf.FabricEngine(hosts=1, switches=0, ports=1, seed=0, max_events=0)


def _cli(argv: str, capsys) -> tuple[int, str, str]:
    from uet.sim.command import main

    rc = main(argv.split())
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@needs_c
def test_cli_fabric_engine_same_json_sim_e2(capsys):
    base = "--topology fattree:4 --traffic permutation --bytes 100000 --seed 2 --json"
    got = {}
    for engine in ("python", "c"):
        rc, out, _ = _cli(f"{base} --fabric-engine {engine}", capsys)
        assert rc == 0
        got[engine] = {k: v for k, v in json.loads(out).items() if k != "wall_time_s"}
    assert got["c"] == got["python"] and got["c"]["ok"]


def test_cli_fabric_engine_refused_sim_e2(capsys, monkeypatch):
    rc, _, err = _cli("--topology fattree:4 --fabric-engine fortran", capsys)
    assert rc == 2 and "--fabric-engine" in err
    rc, _, err = _cli("--paths 2 --fabric-engine c", capsys)  # the two-host simulator has none
    assert rc == 2 and "--fabric-engine" in err
    monkeypatch.setattr(nf, "AVAILABLE", False)
    rc, _, err = _cli("--topology fattree:4 --fabric-engine c", capsys)
    assert rc == 2
    assert err == ("uet sim: argument --fabric-engine: fabric_engine 'c' needs the C "
                   "extension (not built, or UET_NATIVE=0)\n")


@needs_c
def test_undescribed_switch_is_a_typed_error():
    """A port that leads to a switch never described: the run refuses, it does not crash."""
    e = nf.FabricEngine(hosts=2, switches=1, ports=1, seed=0)
    e.port(0, Bps=1e9, delay=0.0, cap=100, kmin=0, kmax=1, keep_frame=10, trimming=False,
           fail_at=float("inf"), mark_in=False, victim_either=False, peer_is_host=False, peer=0)
    e.nic(0, 0)
    e.inject(0.0, 0, [(1, 100, 1, 0, 0, -1)])
    with pytest.raises(nf.FabricEngineError, match="run"):
        e.run(1.0)
