"""DCQCN (uet.roce.dcqcn ROCE-D1 to ROCE-D4, facts G.7) against hand-computed cases."""

from __future__ import annotations

import pytest

from uet.roce.dcqcn import INF, CnpGate, DcqcnParams, DcqcnRp

LINE = 100e9


def test_defaults_are_the_cited_values():
    p = DcqcnParams()
    assert p.g == 1 / 256 and p.alpha0 == 1.0
    assert p.alpha_period_s == 55e-6 and p.timer_s == 55e-6
    assert p.byte_counter == 10_000_000 and p.fast_recovery_steps == 5
    assert p.cnp_interval_s == 50e-6 and p.min_rate_bps == 100e6
    rp = DcqcnRp(LINE)
    assert rp.r_ai == LINE / 20 and rp.r_hai == LINE / 10


def test_d2_one_cnp_with_alpha_one_halves_the_rate():
    rp = DcqcnRp(LINE)
    assert rp.rate == LINE and rp.next_timer() == INF  # off before the first CNP
    rp.on_cnp(0.0)
    assert rp.rate == LINE / 2
    assert rp.rt == LINE
    assert rp.alpha == pytest.approx((1 - 1 / 256) * 1 + 1 / 256)  # = 1
    assert rp.next_timer() == pytest.approx(55e-6)


def test_d2_cut_uses_alpha_and_floors_at_min_rate():
    rp = DcqcnRp(LINE, DcqcnParams(alpha0=0.5))
    rp.on_cnp(0.0)
    assert rp.rate == pytest.approx(LINE * 0.75)
    assert rp.alpha == pytest.approx(0.5 * 255 / 256 + 1 / 256)
    rp = DcqcnRp(1e9, DcqcnParams(min_rate_bps=600e6))
    rp.on_cnp(0.0)
    assert rp.rate == 600e6


def test_d3_alpha_decays_by_one_minus_g_per_period():
    p = DcqcnParams(timer_s=1.0)  # keep the rate timer out of the way
    rp = DcqcnRp(LINE, p)
    rp.on_cnp(0.0)
    a = rp.alpha
    rp.on_timer(55e-6)
    assert rp.alpha == pytest.approx(a * 255 / 256)
    rp.on_timer(3 * 55e-6)
    assert rp.alpha == pytest.approx(a * (255 / 256) ** 3)


def test_d4_fast_recovery_halves_the_gap_to_the_target():
    rp = DcqcnRp(LINE)
    rp.on_cnp(0.0)
    rp.on_timer(55e-6)
    assert rp.t_stage == 1
    assert rp.rate == pytest.approx((LINE + LINE / 2) / 2)  # 75 Gb/s
    assert rp.rt == LINE


def test_d4_additive_increase_adds_r_ai_to_the_target():
    rp = DcqcnRp(LINE, DcqcnParams(fast_recovery_steps=1, alpha_period_s=1.0, timer_s=10e-6))
    rp.on_cnp(0.0)      # R_T 100, R_C 50, alpha 1
    rp.on_cnp(1e-6)     # R_T 50, R_C 25, stages reset, timer at 11 us
    assert (rp.rt, rp.rate) == (LINE / 2, LINE / 4)
    rp.on_timer(12e-6)  # T = 1 = F, BC = 0: additive
    assert rp.rt == pytest.approx(LINE / 2 + LINE / 20)            # 55 Gb/s
    assert rp.rate == pytest.approx((LINE / 2 + LINE / 20 + LINE / 4) / 2)  # 40 Gb/s


def test_d4_hyper_increase_when_both_stages_pass_f():
    p = DcqcnParams(fast_recovery_steps=1, byte_counter=1000, alpha_period_s=1.0, timer_s=10e-6,
                    rate_ai_bps=1e9, rate_hai_bps=10e9)
    rp = DcqcnRp(LINE, p)
    rp.on_cnp(0.0)
    rp.on_cnp(0.0)                  # R_T 50, R_C 25
    rp.on_sent(2000, 0.0)           # BC 1: additive (T 0) -> R_T 51, BC 2: additive -> R_T 52
    assert rp.bc_stage == 2 and rp.rt == pytest.approx(52e9)
    rc = rp.rate
    rp.on_timer(10e-6)              # T 1: min(T, BC) = 1 = F: additive -> 53
    assert rp.rt == pytest.approx(53e9)
    rp.on_timer(20e-6)              # T 2, BC 2: min 2 > F: hyper, i = 1 -> R_T 63
    assert rp.rt == pytest.approx(63e9)
    assert rp.rate > rc


def test_d4_back_at_line_rate_the_rp_turns_off():
    rp = DcqcnRp(LINE)
    rp.on_cnp(0.0)
    t = 0.0
    for _ in range(200):
        t += 55e-6
        rp.on_timer(t)
        if not rp.active:
            break
    assert rp.rate == LINE and rp.next_timer() == INF


def test_d1_at_most_one_cnp_per_interval():
    g = CnpGate(50e-6)
    assert g.on_ce(0.0) is True
    assert g.on_ce(10e-6) is False
    assert g.on_ce(49.9e-6) is False
    assert g.on_ce(50e-6) is True
    assert (g.marked, g.sent) == (4, 2)


def test_bad_params_are_refused():
    with pytest.raises(ValueError):
        DcqcnParams(g=0)
    with pytest.raises(ValueError):
        DcqcnParams(byte_counter=0)
