"""Issue 11 item 10: with 3 of 4 paths failed, spraying used to keep choosing dead paths until the
retransmission limit (22 of 33 seeds of the issue's replay line failed). Path health in the
entropy selector (MULTIPATH-H1 to MULTIPATH-H4 of uet/multipath/base.py) and the RTO's EV probes (PDS-I8 of
uet/pds/endpoint.py) now find the paths that work, whatever the spraying policy and mode. Each
failure prints its replay line."""

from __future__ import annotations

import pytest

from uet.multipath import RandomSpray, RoundRobinSpray
from uet.sim.simulator import SimConfig, Simulator

THREE_DEAD = [(0, 0.0), (1, 20.0), (2, 40.0)]


def _check(cfg: SimConfig) -> dict:
    r = Simulator(cfg).run()
    fails = " ".join(f"--fail-path {i}@{t:g}" for i, t in cfg.fail)
    assert r["ok"], (f"{r['failures']}; replay: uet sim --bytes {cfg.bytes} --messages "
                     f"{cfg.messages} {fails} --mode {cfg.mode} --op {cfg.op} --spray "
                     f"{cfg.spray} --loss {cfg.loss} --seed {cfg.seed}")
    return r


@pytest.mark.parametrize("seed", range(1, 34))
def test_issue_replay_line_every_seed(seed):
    _check(SimConfig(bytes=4097, messages=3, fail=THREE_DEAD, seed=seed))


@pytest.mark.parametrize("seed", range(1, 9))
@pytest.mark.parametrize("spray", ["rr", "random"])
def test_three_paths_dead_from_the_start(seed, spray):
    _check(SimConfig(bytes=1 << 20, fail=[(0, 0.0), (1, 0.0), (2, 0.0)], spray=spray, seed=seed))


@pytest.mark.parametrize("seed", range(1, 6))
@pytest.mark.parametrize("mode,op", [("rud", "write"), ("rudi", "read")])
def test_three_paths_dead_ses_and_rudi(seed, mode, op):
    _check(SimConfig(bytes=64 << 10, messages=8, fail=[(0, 0.0), (1, 0.0), (2, 0.0)], mode=mode,
                     op=op, seed=seed))


def test_h1_an_ev_that_keeps_losing_is_skipped_and_h2_probed_again_later():
    sel = RoundRobinSpray([1, 2, 3, 4])
    sel.on_loss(now=0.0, ev=2)
    assert 2 not in sel.failed  # one loss is not a failed path
    sel.on_loss(now=0.0, ev=2)
    assert sel.failed == {2}
    picks = [sel.next(0.0) for _ in range(16)]
    assert 2 not in picks
    picks = [sel.next(0.0) for _ in range(8)]
    assert picks.count(2) == 1  # H2: one probe after 4 x 4 selections
    sel.on_delivered(now=0.0, ev=2)
    assert sel.failed == frozenset() and [sel.next(0.0) for _ in range(4)].count(2) == 1


def test_h3_resends_follow_the_last_echoed_ev_and_probes_explore_untried_ones():
    sel = RandomSpray(list(range(10, 20)), __import__("random").Random(1))
    sel.on_ack(now=0.0, ev=13, ce=False)
    sel.on_nack(now=0.0, ev=17, code=1)
    assert sel.known(13) and sel.known(17)
    assert sel.next_retransmit(0.0) == 17
    probes = [sel.next_probe(0.0) for _ in range(10)]
    assert sorted(probes) == list(range(10, 20))  # each EV once before any repeats
    sel.on_loss(now=0.0, ev=17)
    assert not sel.known(17) and sel.next_retransmit(0.0) == 13


def test_h4_when_every_ev_failed_the_policy_still_answers():
    sel = RoundRobinSpray([1, 2])
    for ev in (1, 2, 1, 2):
        sel.on_loss(now=0.0, ev=ev)
    assert sel.failed == {1, 2}
    assert sel.next(0.0) in (1, 2) and sel.next_retransmit(0.0) in (1, 2)


def test_lossless_runs_are_unchanged_by_path_health():
    r = _check(SimConfig(bytes=4 << 20, paths=8, seed=3))
    assert r["retransmissions"] == 0 and r["rto"] == 0
