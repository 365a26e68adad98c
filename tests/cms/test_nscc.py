"""NSCC (uet/cms/nscc.py) against docs/facts.md E.1 (one test per table row) and E.6, with numbers
worked by hand. The reference network unless a test says otherwise: MTU 4096 B, 100 Gb/s, base RTT
12 us, trimming: BDP 150000 B, MaxWnd 225000 B, target 9 us, scaling_a 1, scaling_b 0.75, so
fair increase 20480 B, eta 614.4 B, alpha x (target - delay) = 8192 at 3 us of delay and 12288 at
0, QuickAdapt period 21 us and gate 225000 / 8 = 28125 B, adjust after more than 32768 B."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from uet.cms import Nscc, NsccParams, csig
from uet.cms.nscc import NACK_RCVR_INFER_LOSS, NACK_TRIMMED
from uet.wire.enums import NACK_BY_NAME

MTU = 4096
US = 1e-6
BASE = 12 * US


def make(rate: float = 100, base: float = BASE, **kw) -> Nscc:
    return Nscc(mtu=MTU, rate_gbps=rate, base_rtt=base, params=NsccParams(**kw))


def state(rcvd: int, pend: int = 0, restore: int = 0, m: int = 0) -> SimpleNamespace:
    """An ACK_CC as the PDS reads it, NSCC state (B.8, cc_type 0)."""
    return SimpleNamespace(m=m, cc_type=0, service_time=0, restore_cwnd=restore,
                           rcv_cwnd_pend=pend, rcvd_bytes=rcvd, ooo_count=0)


def ack(cc: Nscc, now: float, rtt: float | None = None, ce: bool = False, nbytes: int = MTU,
        inflight: int = 100_000, a=None) -> None:
    """One ACK, hooks in the PDS's order: RTT sample, CE, then the ACK."""
    if rtt is not None:
        cc.on_rtt_sample(now=now, rtt=rtt)
    if ce:
        cc.on_ce(now=now, size=nbytes)
    cc.on_ack(now=now, size=nbytes, inflight=inflight, ack=a)


# -- scaling and start (E.1 parameter table, E.6) ---------------------------------------------

def test_e1_scaling_reference_network_with_trimming():
    cc = make()
    assert cc.scaling_a == pytest.approx(1.0)
    assert cc.scaling_b == pytest.approx(0.75)      # target 9 us / 12 us
    assert cc.target == pytest.approx(9 * US)
    assert cc.max_wnd == pytest.approx(225_000)     # 1.5 x 150000
    assert cc.cwnd == cc.max_wnd and cc.cwnd_bytes == 225_000   # E.1: starts at MaxWnd
    assert cc.qa_threshold == 0                     # E.1: 0 with trimming


def test_e6_scaling_reference_network_without_trimming():
    cc = make(target_qdelay=1.0, trimming=False)
    assert (cc.scaling_a, cc.scaling_b) == (pytest.approx(1.0), pytest.approx(1.0))
    assert cc.target == pytest.approx(12 * US)
    assert cc.qa_threshold == pytest.approx(48 * US)    # 4 x target


def test_e1_scaling_a_at_400g():
    cc = make(rate=400)
    assert cc.scaling_a == pytest.approx(4.0)
    assert cc.max_wnd == pytest.approx(900_000)


def test_constructor_rejects_nonsense():
    with pytest.raises(ValueError):
        Nscc(mtu=0, rate_gbps=100, base_rtt=BASE)
    with pytest.raises(ValueError):
        Nscc(mtu=MTU, rate_gbps=100, base_rtt=0)


def test_e6_lower_base_rtt_recomputes_max_wnd():
    cc = make()
    cc.on_rtt_sample(now=0, rtt=8 * US)
    assert cc.base_rtt == 8 * US
    assert cc.max_wnd == pytest.approx(150_000)     # 1.5 x 12.5e9 B/s x 8 us
    assert cc.cwnd == pytest.approx(150_000)
    assert cc.target == pytest.approx(9 * US)       # E.6: from the configured RTT
    cc.on_rtt_sample(now=0, rtt=20 * US)                    # a larger sample changes nothing
    assert cc.base_rtt == 8 * US


# -- E.1 rows ------------------------------------------------------------------------------

def test_e1_not_ce_below_target_proportional_increase():
    cc = make()
    cc.cwnd = 100_000
    for _ in range(8):                              # 32768 B: not yet more than 8 MTUs
        ack(cc, 0, rtt=15 * US)                     # delay 3 us
    assert cc.cwnd == 100_000
    ack(cc, 0, rtt=15 * US)
    assert cc.cwnd == pytest.approx(100_000 + 9 * 4096 * 8192 / 100_000)
    assert cc.counters["proportional_increase"] == 9


def test_e1_not_ce_near_zero_delay_fast_increase():
    cc = make()
    cc.cwnd = 20_000
    for _ in range(4):                              # 16384 B at ~0 delay: not yet a window
        ack(cc, 0, rtt=BASE)
    assert cc.cwnd == 20_000
    ack(cc, 0, rtt=BASE)                            # 20480 > 20000: cwnd += 0.25 x 4096
    assert cc.cwnd == 21_024
    ack(cc, 0, rtt=BASE)                            # stays in fast increase
    assert cc.cwnd == 22_048
    assert (cc.counters["fast_increase"], cc.counters["proportional_increase"]) == (2, 4)
    ack(cc, 0, rtt=14 * US)                         # 2 us of delay: back to proportional
    assert cc.cwnd == 22_048 and cc.counters["proportional_increase"] == 5


def test_e1_not_ce_at_or_above_target_fair_increase():
    cc = make()
    cc.cwnd = 100_000
    for _ in range(9):
        ack(cc, 0, rtt=22 * US)                     # delay 10 us >= 9 us
    assert cc.cwnd == pytest.approx(100_000 + 9 * 4096 * 20480 / 100_000)
    assert cc.counters["fair_increase"] == 9


def test_e6_unmarked_sample_above_target_averaged_as_quarter_base_rtt():
    cc = make()
    ack(cc, 0, rtt=22 * US)                         # unmarked, 10 us > target: counts as 3 us
    assert cc.avg_delay == pytest.approx(0.0125 * 3 * US)
    cc2 = make()
    ack(cc2, 0, rtt=22 * US, ce=True)               # marked: the 10 us itself
    assert cc2.avg_delay == pytest.approx(0.0125 * 10 * US)


def test_e1_ce_above_target_multiplicative_decrease():
    cc = make()
    cc.cwnd = 100_000
    cc.avg_delay = 18 * US
    ack(cc, 0, rtt=30 * US, ce=True)                # delay 18 us, average stays 18 us
    assert cc.cwnd == pytest.approx(60_000)         # x (1 - 0.8 x 9/18)
    assert cc.counters["md"] == 1


def test_e1_ce_above_target_md_factor_floored_by_max_md_jump_and_mtu():
    cc = make()
    cc.cwnd = 100_000
    cc.avg_delay = 90 * US
    ack(cc, 0, rtt=102 * US, ce=True)               # 1 - 0.8 x 81/90 = 0.28 < 0.5
    assert cc.cwnd == pytest.approx(50_000)
    cc = make()
    cc.cwnd = 5_000
    cc.avg_delay = 90 * US
    ack(cc, 0, rtt=102 * US, ce=True)
    assert cc.cwnd == MTU                           # floor 1 MTU


def test_e6_md_only_when_average_above_target():
    cc = make()
    cc.cwnd = 100_000
    ack(cc, 0, rtt=30 * US, ce=True)                # sample 18 us but average 0.225 us
    assert cc.cwnd == 100_000 and cc.counters["md"] == 0


def test_e1_md_at_most_once_per_base_rtt():
    cc = make(adjust_period=1000)                   # no eta in the way
    cc.cwnd = 100_000
    cc.avg_delay = 18 * US
    ack(cc, 0, rtt=30 * US, ce=True)
    ack(cc, 6 * US, rtt=30 * US, ce=True)
    assert cc.cwnd == pytest.approx(60_000)
    ack(cc, 13 * US, rtt=30 * US, ce=True)
    assert cc.cwnd == pytest.approx(36_000)
    assert cc.counters["md"] == 2


def test_e1_ce_below_target_no_change():
    cc = make()
    cc.cwnd = 100_000
    for _ in range(9):                              # the adjustment runs, with nothing to add
        ack(cc, 0, rtt=15 * US, ce=True)
    assert cc.cwnd == 100_000
    assert sum(cc.counters[k] for k in ("md", "fair_increase", "proportional_increase")) == 0


def test_e1_adjust_period_applies_increase_and_eta():
    cc = make()
    cc.cwnd = 100_000
    ack(cc, 0, rtt=15 * US)
    ack(cc, 13 * US, rtt=15 * US)                   # a base RTT since the first: 2 x 4096 x 8192
    assert cc.cwnd == pytest.approx(100_000 + 2 * 4096 * 8192 / 100_000 + 614.4)


def test_e1_trim_shrinks_by_packet_when_quick_adapt_does_not_fire():
    cc = make(adjust_period=1000)
    cc.cwnd = 100_000
    cc.on_nack(now=0, size=4096, code=NACK_TRIMMED)
    assert cc.cwnd == 95_904
    assert cc.avg_delay == pytest.approx(0.0125 * BASE)     # E.6: a sample of the network RTT
    for i in range(8):                              # 32768 B delivered in the period
        ack(cc, (i + 1) * US, rtt=BASE, ce=True)
    ack(cc, 22 * US, rtt=BASE, ce=True)             # period over: 36864 >= 28125, no QA
    assert cc.cwnd == 95_904
    assert (cc.counters["trims"], cc.counters["quick_adapt"]) == (1, 0)


def test_e1_trim_quick_adapt_fires_then_ce_ignored_for_that_flight():
    cc = make(adjust_period=1000)
    cc.cwnd = 100_000
    cc.on_nack(now=0, size=4096, code=NACK_TRIMMED)  # arms QuickAdapt; period ends at 21 us
    ack(cc, 10 * US, rtt=BASE, ce=True)
    ack(cc, 22 * US, rtt=BASE, ce=True, nbytes=8192, inflight=40_000)
    assert cc.cwnd == 12_288                        # 4096 + 8192 < 28125: cwnd = bytes acked
    assert cc.counters["quick_adapt"] == 1
    cc.avg_delay = 18 * US                          # a mark that would cut by 0.6
    ack(cc, 23 * US, rtt=30 * US, ce=True)          # 4096 of the 40000 in flight
    ack(cc, 24 * US, rtt=30 * US, ce=True, nbytes=35_904)   # the rest of that flight
    assert cc.cwnd == 12_288 and cc.counters["ce_ignored"] == 2
    ack(cc, 25 * US, rtt=30 * US, ce=True)          # a new flight: marks count again
    assert cc.cwnd == pytest.approx(12_288 * 0.6)


@pytest.mark.parametrize("delay_us, fires", [(50, True), (40, False)])
def test_e6_quick_adapt_delay_trigger_without_trimming(delay_us, fires):
    cc = make(target_qdelay=1.0, trimming=False, adjust_period=1000)
    ack(cc, 0, rtt=BASE + delay_us * US, ce=True)   # threshold 48 us; average stays low: no MD
    ack(cc, 25 * US, rtt=BASE, ce=True)             # period (24 us) over, 8192 B delivered
    assert cc.cwnd == (8192 if fires else 225_000)


def test_e1_loss_and_timeout_shrink():
    cc = make()
    cc.cwnd = 100_000
    cc.on_loss(now=0, size=4096)
    assert cc.cwnd == 95_904
    cc.on_timeout(now=0)                                # unknown bytes: one MTU
    assert cc.cwnd == 91_808
    cc.on_nack(now=0, size=1000, code=NACK_RCVR_INFER_LOSS)  # B.11 0x1A: a loss the receiver saw
    assert cc.cwnd == 90_808
    assert (cc.counters["losses"], cc.counters["timeouts"]) == (2, 1)


def test_resource_nack_leaves_window():
    cc = make()
    cc.cwnd = 100_000
    cc.on_nack(now=0, size=4096, code=NACK_BY_NAME["NO_PKT_BUFFER"])
    assert cc.cwnd == 100_000 and cc.counters["nacks_other"] == 1


# -- receiver hints (E.1 row rcv_cwnd_pend, B.8) -------------------------------------------

def test_e1_rcv_cwnd_pend_worked_example_nwk():
    cc = make()
    ack(cc, 0, nbytes=0, a=state(1000))             # the first ACK_CC sets the count
    ack(cc, 0, a=state(1000 + 4096, pend=64))
    assert cc.cwnd == 100_000 - 2048                # min(cwnd, inflight) - 4096 x 64 / 128
    assert cc.counters["rcv_pend"] == 1


def test_restore_cwnd_returns_window_before_penalties():
    cc = make()
    ack(cc, 0, nbytes=0, a=state(1000, restore=1))  # nothing saved: nothing to restore
    assert cc.cwnd == 225_000 and cc.counters["restores"] == 0
    ack(cc, 0, a=state(5096, pend=64))
    ack(cc, 0, a=state(9192, pend=127))             # 97952 - 4096 x 127 / 128
    assert cc.cwnd == 93_888
    ack(cc, 0, nbytes=0, a=state(9192, restore=1))
    assert cc.cwnd == 225_000 and cc.counters["restores"] == 1


def test_rcvd_bytes_delta_wraps_at_24_bits():
    cc = make()
    ack(cc, 0, nbytes=0, a=state((1 << 24) - 1024))
    ack(cc, 0, a=state(3072, pend=64))              # 4096 received across the wrap
    assert cc.cwnd == 100_000 - 2048


def test_bad_cc_state_counted_and_ignored():
    cc = make()
    ack(cc, 0, nbytes=0, a=state(0))
    ack(cc, 0, a=state(1_000_000, pend=64))         # > 4 x MaxWnd (900000) in one ACK
    ack(cc, 0, a=state(999_000, pend=64))           # backwards: an older ACK, overtaken
    ack(cc, 0, a=state(999_000, pend=200))          # not a 7-bit value
    ack(cc, 0, a=SimpleNamespace(m=0, cc_type=0))   # state fields missing
    assert cc.counters["bad_cc_state"] == 3 and cc.counters["stale_cc_state"] == 1
    assert cc.cwnd == 225_000
    ack(cc, 0, a=SimpleNamespace(m=0, cc_type=1, credit=5))    # credit state: not ours
    ack(cc, 0, a=object())                          # no cc_type at all: no state
    assert cc.counters["bad_cc_state"] == 3
    ack(cc, 0, a=state(1_000_000 + 4096, pend=64))  # resynchronised on the bad count
    assert cc.cwnd == 100_000 - 2048


def test_can_send_base_semantics_and_mtu_floor():
    cc = make()
    cc.cwnd = 20_000
    assert cc.cwnd_bytes == 20_000
    assert cc.can_send(0, 1 << 20)                  # one packet may always go
    assert cc.can_send(20_000 - 4096, 4096)
    assert not cc.can_send(20_000 - 4095, 4096)
    cc.cwnd = 1
    assert cc.cwnd_bytes == MTU


# -- arbitrary input (principle 6) ---------------------------------------------------------

nbytes_st = st.integers(-100, 1 << 22)
state_st = st.one_of(
    st.none(),
    st.builds(SimpleNamespace, m=st.integers(0, 1), cc_type=st.sampled_from([None, 0, 1, 7]),
              service_time=st.integers(0, 0xFFFF), restore_cwnd=st.integers(0, 1),
              rcv_cwnd_pend=st.integers(-5, 300), rcvd_bytes=st.integers(-10, 1 << 26),
              ooo_count=st.integers(0, 0xFFFF)))
rtt_st = st.one_of(st.floats(1 * US, 200 * US), st.floats())
op_st = st.one_of(
    st.tuples(st.just("send"), nbytes_st, st.booleans()),
    st.tuples(st.just("rtt"), rtt_st),
    st.tuples(st.just("ce"), nbytes_st),
    st.tuples(st.just("ack"), nbytes_st, nbytes_st, state_st),
    st.tuples(st.just("nack"), st.sampled_from([1, 2, 3, 7, 0x1A, 0xFF]), nbytes_st),
    st.tuples(st.just("loss"), nbytes_st),
    st.tuples(st.just("timeout")),
)


@settings(max_examples=150, deadline=None)
@given(rate=st.sampled_from([25, 100, 400, 800]), base=st.floats(1 * US, 1000 * US),
       trimming=st.booleans(),
       steps=st.lists(st.tuples(st.floats(0, 50 * US), op_st), max_size=60))
def test_random_hook_sequences_keep_window_in_bounds(rate, base, trimming, steps):
    cc = make(rate=rate, base=base, trimming=trimming)
    now = 0.0
    for dt, (kind, *args) in steps:
        now += dt
        if kind == "send":
            cc.on_send(now=now, size=args[0], retx=args[1])
        elif kind == "rtt":
            cc.on_rtt_sample(now=now, rtt=args[0])
        elif kind == "ce":
            cc.on_ce(now=now, size=args[0])
        elif kind == "ack":
            cc.on_ack(now=now, size=args[0], inflight=args[1], ack=args[2])
        elif kind == "nack":
            cc.on_nack(now=now, size=args[1], code=args[0])
        elif kind == "loss":
            cc.on_loss(now=now, size=args[0])
        else:
            cc.on_timeout(now=now)
        assert isinstance(cc.cwnd_bytes, int)
        assert MTU <= cc.cwnd_bytes <= cc.max_wnd
        assert cc.can_send(0, MTU)


# -- the CSIG variant (CMS-V1 to CMS-V3; uet.cms.csig CMS-C1, CMS-C2) ------------------------------------------------

EV = 50001


def sig_ack(cc: Nscc, now: float, *tags: int, rtt: float) -> None:
    """One ACK_CCX as the PDS gives it (PDS-I16): its reflected tags first, its own EV's first."""
    for k, bits in enumerate(tags):
        cc.on_signal(now=now, ev=EV + k, bits=bits)
    ack(cc, now, rtt=rtt)


@pytest.mark.parametrize("t", [csig.ABW, csig.ABW_C])
def test_v1_no_proportional_increase_while_the_path_is_full(t):
    cc = make(csig=True)
    cc.cwnd = 100_000
    for _ in range(9):
        sig_ack(cc, 0, csig.pack(t, 1), rtt=15 * US)    # delay 3 us, bucket 1: held
    assert cc.cwnd == 100_000                            # nothing accumulated, applied
    assert cc.counters["csig_held"] == 9 and cc.counters["proportional_increase"] == 0
    sig_ack(cc, 0, csig.pack(t, 2), rtt=15 * US)        # bucket 2: some room, it grows
    assert cc.counters["proportional_increase"] == 1


def test_v1_no_fast_increase_while_the_path_is_full():
    cc = make(csig=True)
    cc.cwnd = 20_000
    for _ in range(6):
        sig_ack(cc, 0, csig.pack(csig.ABW, 0), rtt=BASE)
    assert cc.cwnd == 20_000 and cc.counters["fast_increase"] == 0
    assert cc.counters["csig_held"] == 6


def test_v1_the_fair_increase_still_applies():
    cc = make(csig=True)
    cc.cwnd = 100_000
    for _ in range(9):
        sig_ack(cc, 0, csig.pack(csig.ABW, 0), rtt=22 * US)   # 10 us >= target
    assert cc.counters["fair_increase"] == 9 and cc.counters["csig_held"] == 0


def test_v1_only_the_acks_own_path_counts():
    cc = make(csig=True)
    cc.cwnd = 100_000
    sig_ack(cc, 0, csig.pack(csig.ABW, 20), csig.pack(csig.ABW, 0), rtt=15 * US)
    assert cc.counters["proportional_increase"] == 1 and cc.counters["csig_held"] == 0
    ack(cc, 0, rtt=15 * US)   # an ACK without a tag: the last ACK's signal is not reused
    assert cc.counters["proportional_increase"] == 2


def test_v2_a_larger_reflected_hop_delay_is_the_delay_input():
    cc = make(csig=True)
    cc.cwnd = 100_000
    hop = csig.pack(csig.DELAY, 20)                     # 20 x 0.5 us = 10 us >= target 9 us
    sig_ack(cc, 0, hop, rtt=13 * US)                    # the RTT says only 1 us
    assert cc.counters["fair_increase"] == 1 and cc.counters["csig_delay"] == 1
    # averaged like an RTT sample (E.6): unmarked above target counts as base RTT / 4
    assert cc.avg_delay == pytest.approx(0.0125 * 3 * US)
    sig_ack(cc, 0, csig.pack(csig.DELAY, 1), rtt=13 * US)   # 0.5 us: the RTT's 1 us stands
    assert cc.counters["csig_delay"] == 1 and cc.counters["proportional_increase"] == 1


def test_v3_d_r_nqd_and_the_variant_off_change_nothing():
    for params, bits in (({"csig": True}, csig.pack(csig.ABW, 0, d=1)),
                         ({"csig": True}, csig.pack(csig.ABW, 0, r=1)),
                         ({"csig": True}, csig.pack(csig.NQD, 31)),
                         ({}, csig.pack(csig.ABW, 0)),
                         ({}, csig.pack(csig.DELAY, 31))):
        cc = make(**params)
        cc.cwnd = 100_000
        sig_ack(cc, 0, bits, rtt=15 * US)
        assert cc.counters["proportional_increase"] == 1, (params, bits)
        assert cc.counters["csig_held"] == cc.counters["csig_delay"] == 0
