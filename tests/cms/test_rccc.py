"""RCCC (uet/cms/rccc.py) against docs/facts.md E.2 (the wire elements: B.6 credit_target, B.8 ACK_CC
cc_type 1 credit, B.12 CONTROL CREDIT / CREDIT_REQ) and the project's rules CMS-R1 to CMS-R4 (sender) and
CMS-S1 to CMS-S5 (receiver scheduler). Numbers worked by hand. The reference receiver: 100 Gb/s, base RTT
10 us, MTU 4096 B: BDP 125000 B, so the share (CMS-S1) is 125000 B for one sender, 62500 B for two and
125000 // 16 = 7812 B for sixteen; the CMS-S4 expiry E is 4 base RTTs = 40 us."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from uet.cms.base import CongestionControl
from uet.cms.fixed import FixedWindow
from uet.cms.rccc import (CREDIT_MAX, CREDIT_UNIT, CreditScheduler, Rccc, to_bytes,
                          to_units)

MTU = 4096
US = 1e-6
BDP = 125_000
E = 40 * US


def sched(**kw) -> CreditScheduler:
    kw.setdefault("max_grant", 1 << 40)  # these tests look at shares: grants unpaced (CMS-S3)
    return CreditScheduler(rate_gbps=100, base_rtt=10 * US, mtu=MTU, **kw)


# -- units (H.2 choice; B.6, B.8, B.12 fields are 24 bits) ----------------------------------------
def test_units_b6_b8_round_up_and_saturate_at_24_bits():
    assert CREDIT_UNIT == 64 and CREDIT_MAX == 0xFFFFFF
    assert [to_units(n) for n in (-5, 0, 1, 63, 64, 65, 4096, 5904)] == [0, 0, 1, 1, 1, 2, 64, 93]
    assert to_units(CREDIT_MAX * 64) == CREDIT_MAX
    assert to_units(CREDIT_MAX * 64 + 1) == CREDIT_MAX       # saturates, never wraps
    assert to_units(1 << 40) == CREDIT_MAX
    assert [to_bytes(u) for u in (0, 1, 93, -1)] == [0, 64, 5952, 0]
    assert to_bytes(CREDIT_MAX) == 1_073_741_760
    assert to_bytes(1 << 30) == to_bytes(CREDIT_MAX)


# -- the interface (base.py) ----------------------------------------------------------------------
def test_e2_only_rccc_wants_credit_and_the_base_hooks_are_no_ops():
    assert Rccc.wants_credit is True and Rccc(mtu=MTU).wants_credit
    assert CongestionControl.wants_credit is False
    f = FixedWindow()
    assert f.wants_credit is False
    assert f.credit_target(1 << 20) == 0
    assert f.on_credit(now=0.0, size=4096) is None
    assert f.on_signal(now=0.0, ev=7, bits=0x1234) is None
    assert f.can_send(0, 4096)      # unchanged


def test_constructors_reject_nonsense():
    with pytest.raises(ValueError):
        Rccc(mtu=0)
    with pytest.raises(ValueError):
        Rccc(mtu=MTU, initial_credit=-1)
    for bad in ({"rate_gbps": 0}, {"base_rtt": 0}, {"mtu": 0}, {"overcommit": 0},
                {"expiry_rtts": 0}, {"unit": 0}):
        kw = {"rate_gbps": 100, "base_rtt": 10 * US, "mtu": MTU, **bad}
        with pytest.raises(ValueError):
            CreditScheduler(**kw)


# -- the sender (CMS-R1 to CMS-R4) ---------------------------------------------------------------------------
def test_r1_starts_with_one_mtu_and_credit_is_the_only_gate():
    cc = Rccc(mtu=MTU)
    assert cc.credit == MTU and cc.cwnd_bytes == MTU and cc.counters["initial"] == MTU
    assert cc.can_send(0, MTU) and cc.can_send(10**9, MTU)      # in flight does not matter
    assert not cc.can_send(0, MTU + 1)                           # no "one packet always" rule
    assert cc.counters["blocked"] == 1
    cc.on_send(now=0.0, size=4000, retx=False)
    assert cc.credit == 96
    assert not cc.can_send(0, 97) and cc.can_send(0, 96)
    assert Rccc(mtu=MTU, initial_credit=0).credit == 0
    assert not Rccc(mtu=MTU, initial_credit=0).can_send(0, 1)


def test_r2_retransmissions_consume_credit_too():
    cc = Rccc(mtu=MTU, initial_credit=3 * MTU)
    cc.on_send(now=0.0, size=MTU, retx=False)
    cc.on_send(now=1 * US, size=MTU, retx=True)
    assert cc.credit == MTU
    assert cc.counters["used"] == 2 * MTU and cc.counters["resent"] == MTU


def test_r2_an_overdraft_stops_at_zero_and_is_counted():
    cc = Rccc(mtu=MTU)
    cc.on_send(now=0.0, size=MTU + 100, retx=False)       # the PDS ignored can_send
    assert cc.credit == 0
    assert cc.counters["overdrawn"] == 1 and cc.counters["overdrawn_bytes"] == 100


def test_r3_b6_credit_target_is_the_backlog_not_covered():
    cc = Rccc(mtu=MTU)
    assert cc.credit_target(10_000) == 10_000 - MTU == 5904
    assert cc.credit_target(MTU) == 0 and cc.credit_target(0) == 0
    assert cc.counters["requests"] == 3
    assert cc.asked == to_bytes(to_units(5904)) == 5952      # CMS-R4: as the wire carried it


def test_r4_b8_b12_a_grant_beyond_the_demand_is_clamped():
    cc = Rccc(mtu=MTU)
    cc.credit_target(10_000)                # states 5904 B = 93 units = 5952 B
    cc.on_credit(now=0.0, size=10_000)
    assert cc.credit == MTU + 5952
    assert cc.counters["clamped"] == 1 and cc.counters["clamped_bytes"] == 10_000 - 5952
    assert cc.counters["granted"] == 5952 and cc.counters["offered"] == 10_000
    assert cc.asked == 0
    cc.on_credit(now=1 * US, size=64)                # nothing asked any more: unasked, dropped
    assert cc.credit == MTU + 5952 and cc.counters["unasked"] == 1
    assert cc.counters["unasked_bytes"] == 64 and cc.counters["clamped"] == 1


def test_r4_a_grant_when_no_demand_was_stated_is_unasked_and_gives_nothing():
    cc = Rccc(mtu=MTU)
    cc.on_credit(now=0.0, size=8192)
    assert cc.credit == MTU and cc.counters["unasked"] == 1 and cc.counters["granted"] == 0
    cc.credit_target(MTU)                   # covered: states 0, still nothing asked
    cc.on_credit(now=1 * US, size=8192)
    assert cc.credit == MTU and cc.counters["unasked"] == 2
    cc.on_credit(now=2 * US, size=0)                 # a zero grant is no grant
    assert cc.counters["unasked"] == 2


def test_r4_partial_grants_fill_one_demand_and_the_largest_statement_stands():
    cc = Rccc(mtu=MTU, initial_credit=0)
    assert cc.credit_target(64_000) == 64_000
    cc.on_credit(now=0.0, size=24_000)
    assert cc.asked == 40_000 and cc.counters["unasked"] == 0
    assert cc.credit_target(64_000) == 40_000    # a restatement after the grant: the same need
    assert cc.credit_target(50_000) == 26_000    # smaller: the larger statement stands
    assert cc.asked == 40_000
    cc.on_credit(now=1 * US, size=40_000)
    assert cc.credit == 64_000 and cc.asked == 0 and cc.counters["clamped"] == 0
    assert cc.credit_target(64_000) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3 * MTU),
       st.lists(st.tuples(st.sampled_from(["send", "resend", "credit", "target"]),
                          st.integers(-100, 200_000)), max_size=60))
def test_r1_r4_the_sender_never_sends_beyond_its_credit(initial, ops):
    """E.2: whatever the order of can_send / on_send / on_credit / credit_target, the bytes sent
    with the gate's consent never exceed the initial credit plus the grants (accepted, and so
    offered), nothing raises, credit never goes negative, and the credit is exactly the
    initial credit plus the accepted grants minus the bytes used."""
    cc = Rccc(mtu=MTU, initial_credit=initial)
    sent = offered = 0
    for i, (op, n) in enumerate(ops):
        now = i * US
        if op in ("send", "resend"):
            if cc.can_send(0, n):
                cc.on_send(now=now, size=n, retx=op == "resend")
                sent += max(0, n)
        elif op == "credit":
            cc.on_credit(now=now, size=n)
            offered += max(0, n)
        else:
            d = cc.credit_target(n)
            assert d == max(0, n - (cc.credit))
        c = cc.counters
        assert cc.credit >= 0 and cc.asked >= 0
        assert sent <= initial + c["granted"] <= initial + offered
        assert cc.credit == initial + c["granted"] - c["used"]
        assert c["overdrawn"] == 0


# -- the scheduler (CMS-S1 to CMS-S5) ------------------------------------------------------------------------
def test_s1_bdp_and_the_share_at_100g_10us():
    s = sched()
    assert s.bdp == BDP and s.active == 0 and s.share == BDP
    assert sched(overcommit=1.5).share == 187_500
    assert CreditScheduler(rate_gbps=1, base_rtt=1 * US, mtu=MTU).share == MTU   # floor: one MTU


@pytest.mark.parametrize("n, share", [(1, 125_000), (2, 62_500), (16, 7_812)])
def test_s1_e2_each_of_n_senders_gets_bdp_over_n(n, share):
    s = sched()
    for k in range(n):
        s.demand(k, 0.0, 1 << 20)
    assert s.active == n and s.share == share
    assert [s.grant(k, 0.0) for k in range(n)] == [share] * n
    assert [s.grant(k, 1 * US) for k in range(n)] == [0] * n     # topped up: nothing more
    assert sum(s.outstanding(k) for k in range(n)) == n * share <= BDP
    assert s.counters["granted"] == n * share and s.counters["grants"] == n


def test_s3_never_grants_beyond_the_demand():
    s = sched()
    s.demand("a", 0.0, 10_000)
    assert s.grant("a", 0.0) == 10_000
    assert s.remaining("a") == 0 and s.active == 0
    s.arrived("a", 1 * US, 10_000)
    assert s.grant("a", 2 * US) == 0 and s.outstanding("a") == 0
    assert s.grant("nobody", 0.0) == 0 and s.waiting(0.0) == []


def test_s3_regrants_as_data_arrives():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    assert s.grant("a", 0.0) == BDP
    s.arrived("a", 1 * US, MTU)
    assert s.outstanding("a") == BDP - MTU
    assert s.grant("a", 1 * US) == MTU
    s.arrived("a", 2 * US, 10_000)
    assert s.grant("a", 2 * US) == 10_000
    assert s.remaining("a") == (1 << 20) - BDP - MTU - 10_000


def test_s2_a_restatement_replaces_the_remaining_demand():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    s.grant("a", 0.0)
    s.demand("a", 1 * US, 3000)             # B.12 CREDIT_REQ / B.6: what is still uncovered
    assert s.remaining("a") == 3000
    s.arrived("a", 2 * US, BDP)
    assert s.grant("a", 2 * US) == 3000 and s.active == 0
    s.demand("a", 3 * US, 0)
    assert s.active == 0 and s.counters["demands"] == 3


def test_s1_a_newcomer_shrinks_the_share_and_the_old_sender_waits_for_arrivals():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    assert s.grant("a", 0.0) == BDP
    s.demand("b", 1 * US, 1 << 20)
    assert s.grant("b", 1 * US) == 0        # CMS-S3: the budget (one BDP) is all out at a
    s.arrived("a", 2 * US, 50_000)          # a still holds 75000 > 62500
    assert s.grant("a", 2 * US) == 0
    assert s.grant("b", 2 * US) == 50_000   # what came back, not yet its whole share
    s.arrived("a", 3 * US, 20_000)          # 55000: topped up to 62500
    assert s.grant("a", 3 * US) == 7_500
    assert s.grant("b", 3 * US) == 12_500   # both at their share, the budget all out
    assert s.total_outstanding == BDP


def test_s5_done_returns_the_share_to_the_others():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    s.demand("b", 0.0, 1 << 20)
    assert s.grant("a", 0.0) == s.grant("b", 0.0) == 62_500
    s.done("a")
    assert s.active == 1 and s.share == BDP and s.outstanding("a") == 0
    assert s.waiting(1 * US) == [("b", 62_500)]
    assert s.outstanding("b") == BDP and s.counters["done"] == 1
    s.done("a")                             # twice: nothing
    assert s.counters["done"] == 1


def test_s3_waiting_lists_the_senders_that_can_grow_after_another_finishes():
    s = sched()
    for k in "abc":
        s.demand(k, 0.0, 1 << 20)
    s.demand("a", 0.0, 41_666)              # a needs exactly one share
    assert [s.grant(k, 0.0) for k in "bca"] == [41_666] * 3
    assert s.active == 2                    # a's demand is all granted (CMS-S3: it stops counting)
    # the shares grew to 62500, but the budget (one BDP) has 2 bytes left (CMS-S3)
    assert s.waiting(1 * US) == [("b", 2)]
    assert s.waiting(2 * US) == []          # granted as listed: nothing twice
    s.arrived("b", 3 * US, 10_000)
    assert s.waiting(3 * US) == [("b", 10_000)]
    s.arrived("a", 4 * US, 41_666)          # a's credit came back: c can grow now
    assert s.waiting(4 * US) == [("b", 62_500 - 41_668), ("c", 62_500 - 41_666)]
    assert s.total_outstanding == BDP


def test_s3_unit_makes_grants_whole_credit_units():
    s = sched(unit=CREDIT_UNIT)
    for k in range(16):
        s.demand(k, 0.0, 1 << 20)
    assert s.share == 7_812
    assert s.grant(0, 0.0) == 7_808 == to_bytes(to_units(7_808))
    s.demand(1, 0.0, 100)                   # the last piece of a demand is granted whole
    assert s.grant(1, 0.0) == 100


def test_s4_credit_of_lost_data_returns_after_the_expiry():
    """A granted packet that never arrives: its 4096 B stay outstanding while younger than E
    (40 us) and return once unmatched for E to 2 E (at the sender's next call)."""
    s = sched()
    s.demand("a", 0.0, 8192)
    assert s.grant("a", 0.0) == 8192
    s.arrived("a", 5 * US, MTU)             # the other packet is lost
    s.demand("a", 39 * US, MTU)             # its retransmission needs credit (B.12 CREDIT_REQ)
    assert s.grant("a", 39 * US) == MTU
    assert s.outstanding("a") == 2 * MTU
    s.arrived("a", 42 * US, MTU)            # the retransmission arrives; the lost credit stays
    assert s.outstanding("a") == MTU and s.counters["expired_bytes"] == 0
    s.grant("a", 81 * US)                   # < E since the last rotation (42 us): kept
    assert s.outstanding("a") == MTU
    s.grant("a", 83 * US)                   # E passed again: the lost packet's credit returns
    assert s.outstanding("a") == 0
    assert s.counters["expired_bytes"] == MTU and s.counters["expiries"] == 1


def test_s4_credit_younger_than_the_expiry_is_never_returned():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    assert s.grant("a", 0.0) == BDP
    s.arrived("a", 39 * US, 1000)
    assert s.outstanding("a") == BDP - 1000
    s.arrived("a", 41 * US, 0)              # E passed: a rotation, everything so far is old
    assert s.outstanding("a") == BDP - 1000 and s.counters["expired_bytes"] == 0
    assert s.grant("a", 41 * US) == 1000    # young credit
    s.arrived("a", 80 * US, 0)              # < E since the rotation: nothing returns
    assert s.outstanding("a") == BDP
    s.arrived("a", 82 * US, 0)              # E since the rotation: only the old bucket returns
    assert s.outstanding("a") == 1000 and s.counters["expired_bytes"] == BDP - 1000


def test_s4_a_quiet_sender_returns_everything_after_two_expiries():
    s = sched()
    s.demand("a", 0.0, 1 << 20)
    s.grant("a", 0.0)
    assert s.waiting(2 * E) == [("a", BDP)]     # all of it expired and granted afresh
    assert s.counters["expired_bytes"] == BDP and s.outstanding("a") == BDP


def test_s5_bytes_beyond_the_outstanding_credit_are_uncredited():
    s = sched()
    s.arrived("a", 0.0, MTU)                # the sender's initial credit (CMS-R1)
    assert s.outstanding("a") == 0 and s.counters["uncredited"] == MTU
    s.demand("a", 0.0, 1000)
    s.grant("a", 0.0)
    s.arrived("a", 1 * US, 1500)
    assert s.outstanding("a") == 0 and s.counters["uncredited"] == MTU + 500


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["demand", "arrived", "grant", "waiting", "done"]),
                          st.integers(0, 5), st.integers(0, 300_000), st.integers(0, 30)),
                max_size=80))
def test_s1_s5_credit_is_conserved_and_never_beyond_demand(ops):
    """Every granted byte is, at any time, outstanding, matched by an arrival, expired, or
    forgotten with its sender (done); a grant never exceeds the remaining demand, never tops a
    sender above its share, and ``active`` counts exactly the senders with demand left."""
    s = sched()
    now = 0.0
    forgotten = 0
    for op, k, n, dt in ops:
        now += dt * US
        if op == "demand":
            s.demand(k, now, n)
        elif op == "arrived":
            s.arrived(k, now, n)
        elif op == "grant":
            before = s.remaining(k)
            g = s.grant(k, now)
            assert 0 <= g <= before
            assert g == 0 or s.outstanding(k) <= s.share or s.outstanding(k) <= MTU
        elif op == "waiting":
            for sender, g in s.waiting(now):
                assert g > 0
        else:
            forgotten += s.outstanding(k)
            s.done(k)
        c = s.counters
        outstanding = sum(s.outstanding(j) for j in range(6))
        assert c["granted"] == (outstanding + c["arrived"] - c["uncredited"]
                                + c["expired_bytes"] + forgotten)
        assert s.active == sum(1 for j in range(6) if s.remaining(j) > 0)


def test_e2_b6_b8_a_credit_loop_delivers_everything_within_the_receivers_budget():
    """Four senders of 300 KB each behind one receiver, the wire in credit units both ways
    (B.6 demand, B.8 / B.12 grants): everything arrives, no sender ever exceeds its credit,
    and the receiver's outstanding credit stays within the BDP plus one share (CMS-S3)."""
    s = sched(unit=CREDIT_UNIT)
    total = 300_000
    senders = {k: Rccc(mtu=MTU) for k in range(4)}
    backlog = dict.fromkeys(senders, total)
    delivered = dict.fromkeys(senders, 0)
    for k, cc in senders.items():           # each first request states its demand (B.6)
        s.demand(k, 0.0, to_bytes(to_units(cc.credit_target(backlog[k]))))
    for step in range(1, 400):
        now = step * US
        for k, cc in senders.items():
            while backlog[k] and cc.can_send(0, min(MTU, backlog[k])):
                n = min(MTU, backlog[k])
                cc.on_send(now=now, size=n, retx=False)
                backlog[k] -= n
                s.arrived(k, now, n)
                delivered[k] += n
                s.demand(k, now, to_bytes(to_units(cc.credit_target(backlog[k]))))
                g = s.grant(k, now)         # ACK_CC cc_type 1 (B.8)
                if g:
                    cc.on_credit(now=now, size=to_bytes(to_units(g)))
        for k, g in s.waiting(now):         # CONTROL CREDIT (B.12)
            senders[k].on_credit(now=now, size=to_bytes(to_units(g)))
        assert sum(s.outstanding(k) for k in senders) <= BDP + s.share
        if not any(backlog.values()):
            break
    assert delivered == dict.fromkeys(senders, total)
    for cc in senders.values():
        assert cc.counters["used"] <= MTU + cc.counters["granted"]
        assert cc.counters["overdrawn"] == 0 and cc.counters["unasked"] == 0
