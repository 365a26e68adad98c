"""The flow-completion summary of many-host ``uet sim`` runs (uet/sim/metrics.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from uet.sim.metrics import fct_summary, ideal_fct, jain
from uet.sim.traffic import Flow

KEYS = {"flows", "last_fct_s", "ideal_fct_s", "last_over_ideal", "avg_fct_s", "max_over_avg_fct",
        "jain_fct", "completed", "unfinished"}


@pytest.mark.parametrize("values, index", [([1, 1, 1], 1.0), ([1, 0], 0.5), ([2, 1], 0.9),
                                           ([], 1.0), ([0, 0, 0], 1.0), ([5], 1.0),
                                           ([1, 0, 0, 0], 0.25)])
def test_jain(values, index):
    assert jain(values) == pytest.approx(index, rel=1e-15)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50))
@example([3e-161] * 2)  # squares that underflow: 1.0014 before the values were scaled
def test_jain_is_from_1_over_n_to_1(values):
    j = jain(values)
    assert 1 / len(values) - 1e-12 <= j <= 1.0 + 1e-12


def test_fct_summary_of_a_hand_example():
    flows = [(Flow(1, 0, 1000, 0.0, 0), 2.0), (Flow(2, 0, 2000, 0.0, 1), 4.0),
             (Flow(3, 0, 3000, 0.5, 2), None)]
    s = fct_summary(flows, ideal_fct_s=3.2)
    assert set(s) == KEYS
    assert s == {
        "flows": [{"src": 1, "dst": 0, "bytes": 1000, "fct_s": 2.0},
                  {"src": 2, "dst": 0, "bytes": 2000, "fct_s": 4.0},
                  {"src": 3, "dst": 0, "bytes": 3000, "fct_s": None}],
        "last_fct_s": 4.0,
        "ideal_fct_s": 3.2,
        "last_over_ideal": 4.0 / 3.2,
        "avg_fct_s": 3.0,
        "max_over_avg_fct": 4.0 / 3.0,
        "jain_fct": 0.9,  # (2 + 4)^2 / (2 * (4 + 16)) = 36 / 40
        "completed": 2,
        "unfinished": 1,
    }


def test_fct_summary_rounds_nothing():
    s = fct_summary([(Flow(0, 1, 1), 1 / 3)], ideal_fct_s=0.1)
    assert s["last_fct_s"] == s["avg_fct_s"] == 1 / 3 and s["last_over_ideal"] == (1 / 3) / 0.1


def test_fct_summary_when_no_flow_finished():
    s = fct_summary([(Flow(1, 0, 10), None), (Flow(2, 0, 10), None)], ideal_fct_s=1e-5)
    assert set(s) == KEYS
    assert s["completed"] == 0 and s["unfinished"] == 2
    assert [r["fct_s"] for r in s["flows"]] == [None, None]
    assert s["last_fct_s"] is s["avg_fct_s"] is s["last_over_ideal"] is None
    assert s["max_over_avg_fct"] is s["jain_fct"] is None
    assert s["ideal_fct_s"] == 1e-5


def test_fct_summary_of_no_flows_and_zero_times():
    s = fct_summary([], ideal_fct_s=0.0)
    assert s["flows"] == [] and s["completed"] == s["unfinished"] == 0
    z = fct_summary([(Flow(0, 1, 1), 0.0)], ideal_fct_s=0.0)
    assert z["last_fct_s"] == 0.0 and z["last_over_ideal"] is None and z["max_over_avg_fct"] is None
    assert z["jain_fct"] == 1.0


@pytest.mark.parametrize("fct", [-1.0, math.nan, math.inf])
def test_fct_summary_refuses_impossible_times(fct):
    with pytest.raises(ValueError, match="FCT"):
        fct_summary([(Flow(0, 1, 1), fct)], ideal_fct_s=1.0)


def test_ideal_fct_is_the_busiest_link_by_time_plus_the_rtt():
    rates = {"fast": 400e9, "slow": 100e9}
    link_bytes = {"fast": 3_000_000, "slow": 1_000_000}  # more bytes, but 4x the rate
    t = ideal_fct(link_bytes, rates.__getitem__, 10e-6)
    assert t == pytest.approx(1_000_000 * 8 / 100e9 + 10e-6, rel=1e-15)
    assert ideal_fct({}, rates.__getitem__, 10e-6) == 10e-6


@pytest.mark.parametrize("rate", [0.0, -1.0, math.nan])
def test_ideal_fct_refuses_a_link_without_a_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        ideal_fct({"l": 1}, lambda link: rate, 0.0)
