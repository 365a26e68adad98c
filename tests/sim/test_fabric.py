"""The many-host simulator (uet.sim.fabric): real hosts, real frames, switches in between. Each
scenario is seeded; the simulator itself checks every delivered message by CRC-32C and then byte
for byte against what its flow sent (``ok``), and a failure prints the seed to replay with."""

from __future__ import annotations

import json

import pytest

from uet.sim.fabric import (FabricSimConfig, FabricSimulator, data_frame_bytes, unloaded_rtt,
                            wire_bytes)
from uet.net.topology import TopologyError
from uet.sim.traffic import TrafficError


def _run(**kw):
    cfg = FabricSimConfig(**kw)
    summary = FabricSimulator(cfg).run()
    assert summary["internal_errors"] == 0, summary
    return summary


def _replay(summary) -> str:
    return f"replay: uet sim --topology {summary['topology']} --seed {summary['seed']}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_e1_incast_completes_with_every_byte_and_trims_only(seed):
    s = _run(topology="leafspine:5,1,1", traffic=("incast", 4), flow_bytes=256 << 10, seed=seed)
    assert s["ok"], _replay(s)
    assert s["completed"] == 4 and s["unfinished"] == 0
    assert [(f["src"], f["dst"], f["bytes"]) for f in s["flows"]] == [
        (1, 0, 256 << 10), (2, 0, 256 << 10), (3, 0, 256 << 10), (4, 0, 256 << 10)]
    assert s["dropped"] == 0  # C.6: a full queue trims; nothing is lost
    assert s["retransmissions"] >= s["trimmed"] > 0  # every trim is NACKed and resent
    assert s["busiest_port"] == "t0->h0"


def test_e6_ideal_fct_of_an_incast_is_the_last_hop():
    """Four 256 KiB flows into one host: the ideal is their wire bytes over the last link plus
    the unloaded RTT of two hops."""
    cfg = FabricSimConfig(topology="leafspine:5,1,1", traffic=("incast", 4), flow_bytes=256 << 10)
    sim = FabricSimulator(cfg)
    expected = 4 * wire_bytes(256 << 10, 4096) / 12.5e9 + unloaded_rtt(2, cfg)
    assert sim.ideal_fct() == pytest.approx(expected, rel=1e-12)
    # 64 packets of 4096 bytes, each with 42 + 12 + 44 + 4 bytes of headers and trailer
    assert wire_bytes(256 << 10, 4096) == (256 << 10) + 64 * 102
    assert data_frame_bytes(4096) == 4096 + 102


@pytest.mark.parametrize("seed", [1, 2])
def test_e5_permutation_on_a_fat_tree(seed):
    s = _run(topology="fattree:4", traffic=("permutation", None), flow_bytes=64 << 10, seed=seed)
    assert s["ok"], _replay(s)
    flows = s["flows"]
    assert len(flows) == 16
    assert sorted(f["src"] for f in flows) == sorted(f["dst"] for f in flows) == list(range(16))
    assert all(f["src"] != f["dst"] and f["fct_s"] > 0 for f in flows)


@pytest.mark.parametrize("spray", ["reps", "oblivious", "rr", "single"])
def test_every_spraying_policy_delivers(spray):
    s = _run(topology="leafspine:2,2,2", traffic=("all-to-all", None), flow_bytes=32 << 10,
             spray=spray, seed=5)
    assert s["ok"], _replay(s)
    assert s["completed"] == 12


def test_e5_a_failed_core_link_is_routed_around():
    """A link that fails at the start: packets sprayed onto it are lost; the entropy selector's
    path health (MULTIPATH-H1 to MULTIPATH-H3 of uet.multipath) and recovery still complete every flow."""
    s = _run(topology="fattree:4", traffic=("permutation", None), flow_bytes=64 << 10, seed=3,
             fail=[("a0", "c0", 0.0), ("a2", "c1", 0.0)])
    assert s["ok"], _replay(s)
    assert s["dropped"] > 0 and s["retransmissions"] > 0  # drops include ACKs: not resent


def test_a_degraded_link_slows_but_delivers():
    healthy = _run(topology="leafspine:1,2,1", traffic=("permutation", None), flow_bytes=512 << 10)
    slow = _run(topology="leafspine:1,2,1", traffic=("permutation", None), flow_bytes=512 << 10,
                degrade=[("t0", "s0", 0.25), ("t1", "s0", 0.25)])
    assert healthy["ok"] and slow["ok"]
    # one spine: every byte crosses the quarter-rate links, so the flows take about 4x longer
    assert slow["last_fct_s"] > 3 * healthy["last_fct_s"]


def test_c6_without_trimming_a_full_queue_drops():
    s = _run(topology="leafspine:5,1,1", traffic=("incast", 4), flow_bytes=256 << 10,
             trimming=False, cc="fixed")
    assert s["ok"], _replay(s)
    assert s["trimmed"] == 0 and s["dropped"] > 0


def test_the_same_seed_gives_the_same_run():
    a = _run(topology="leafspine:3,2,2", traffic=("permutation", None), flow_bytes=64 << 10,
             seed=11)
    b = _run(topology="leafspine:3,2,2", traffic=("permutation", None), flow_bytes=64 << 10,
             seed=11)
    a.pop("wall_time_s"), b.pop("wall_time_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_ack_every_packet_and_rod_deliver():
    s = _run(topology="leafspine:3,1,1", traffic=("incast", 2), flow_bytes=64 << 10, mode="rod",
             ack_per_packet=True)
    assert s["ok"], _replay(s)


@pytest.mark.parametrize("kw, words", [
    (dict(traffic=("incast", 8), topology="leafspine:4,1,1"), "needs 9 hosts"),
    (dict(degrade=[("t0", "s9", 0.5)], topology="leafspine:2,2,2", traffic=("incast", 3)),
     "no link t0-s9"),
])
def test_traffic_or_links_that_do_not_fit_are_refused(kw, words):
    with pytest.raises((TrafficError, TopologyError), match=words):
        FabricSimulator(FabricSimConfig(**kw))


@pytest.mark.parametrize("seed", [1, 2])
def test_e2_rccc_incast_completes_and_keeps_the_last_hop_queue_short(seed):
    """RCCC (E.2): the receiver's credit paces its senders; every byte arrives."""
    s = _run(topology="leafspine:9,1,1", traffic=("incast", 8), flow_bytes=256 << 10,
             cc="rccc", seed=seed)
    assert s["ok"], _replay(s)
    assert s["dropped"] == 0 and s["completed"] == 8
    assert s["max_queue_bytes"] <= s["buffer_bytes"]
