"""REPS and oblivious spraying (uet/multipath/reps.py; facts E.5, E.6): the rules MULTIPATH-R1 to MULTIPATH-R6 and
MULTIPATH-O1 with exact values under a seeded rng (a replica ``random.Random`` with the same seed gives the
expected explorations), the health rules MULTIPATH-H1 to MULTIPATH-H4 of base.py still around them, make_selector's new
names, and a property test: any sequence of hook calls leaves ``next`` returning one of the
values."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from uet.multipath import (SELECTOR_KINDS, ObliviousSpray, RandomSpray, Reps, RoundRobinSpray,
                           SingleEntropy, make_selector)
from uet.wire.enums import NACK_BY_NAME

VALS = list(range(100, 108))  # the N = 8 EVs of "--entropies 8"
TRIMMED = NACK_BY_NAME["TRIMMED"]
LASTHOP = NACK_BY_NAME["TRIMMED_LASTHOP"]
NO_PDC = NACK_BY_NAME["NO_PDC_AVAIL"]
SEED = 7


def reps(values=VALS, **kw) -> Reps:
    return Reps(values, random.Random(SEED), **kw)


def explorations(k: int, values=VALS, seed: int = SEED) -> list[int]:
    """The first ``k`` explorations (MULTIPATH-R4) of a Reps seeded with ``seed``."""
    r = random.Random(seed)
    return [values[r.randrange(len(values))] for _ in range(k)]


# --- MULTIPATH-R1, MULTIPATH-R2: recycling ----------------------------------------------------------------------------

def test_e6_reps_recycles_ev_of_ack_without_ce_once():
    sel = reps()
    sel.on_ack(now=0.0, ev=103, ce=False)
    assert sel.ring[0] == (103, True)
    assert sel.next(0.0) == 103
    assert sel.ring[0] == (103, False)  # MULTIPATH-R2: used once per recycling
    assert sel.next(0.0) == explorations(1)[0]  # then nothing valid: explore (MULTIPATH-R4)
    assert sel.counters["recycled"] == 1 and sel.counters["explored"] == 1


def test_e6_reps_reuses_the_oldest_recycled_ev_first():
    sel = reps()
    for ev in (101, 105, 102, 105):
        sel.on_ack(now=0.0, ev=ev, ce=False)
    assert [sel.next(0.0) for _ in range(4)] == [101, 105, 102, 105]  # one reuse per ACK
    assert sel.counters["explored"] == 0


def test_e6_reps_ring_overwrites_the_oldest_when_more_than_8_are_recycled():
    vals = list(range(200, 216))
    sel = reps(vals)
    for ev in vals[:10]:
        sel.on_ack(now=0.0, ev=ev, ce=False)
    assert sel.ring == [(208, True), (209, True)] + [(ev, True) for ev in vals[2:8]]
    assert [sel.next(0.0) for _ in range(8)] == vals[2:10]  # 200, 201 overwritten
    assert sel.next(0.0) == explorations(1, vals)[0]


def test_r1_an_echo_of_an_ev_outside_values_is_not_recycled():
    sel = reps()
    sel.on_ack(now=0.0, ev=0x4242, ce=False)  # RP's fixed control EV (E.5)
    assert sel.counters["recycled"] == 0
    assert sel.next(0.0) == explorations(1)[0]


def ack_group(sel: Reps, evs, *, ce: bool = False) -> None:
    """One coalesced ACK: the packets sent on ``evs`` delivered (CACK/SACK), in order, then the
    ACK itself, echoing the EV of the last one (the request that made it)."""
    for ev in evs:
        sel.on_delivered(now=0.0, ev=ev)
    sel.on_ack(now=0.0, ev=evs[-1], ce=ce)


def test_e6_reps_recycles_the_ev_of_every_packet_a_coalesced_ack_acknowledges():
    sel = reps()  # recycle="acked", the default
    ack_group(sel, [101, 104, 102, 106])  # a 16 KiB ACK over four 4 KiB packets
    assert sel.ring[:4] == [(101, True), (104, True), (102, True), (106, True)]
    assert sel.counters["recycled"] == 4  # the echo (106) is among them: not twice
    assert [sel.next(0.0) for _ in range(5)] == [101, 104, 102, 106, explorations(1)[0]]


def test_e6_reps_echoed_recycles_only_the_ev_the_ack_echoes_as_htsim():
    sel = reps(recycle="echoed")
    ack_group(sel, [101, 104, 102, 106])
    assert sel.ring[:2] == [(106, True), (None, False)]  # one EV in four comes back (E.6)
    assert sel.counters["recycled"] == 1
    assert [sel.next(0.0) for _ in range(3)] == [106, *explorations(2)]


def test_r1_a_ce_ack_recycles_the_unmarked_packets_and_forgets_the_marked_ones_ev():
    sel = reps()
    sel.on_ack(now=0.0, ev=105, ce=False)  # 105 stored and valid before
    ack_group(sel, [103, 105, 101, 105], ce=True)  # ACK_ON_ECN: the last packet was marked
    # 103, 105 (its unmarked copy) and 101 recycled, then CE forgets every valid 105
    assert sel.ring[:4] == [(105, False), (103, True), (105, False), (101, True)]
    assert sel.counters["forgotten"] == 2
    assert [sel.next(0.0) for _ in range(3)] == [103, 101, explorations(1)[0]]


def test_r1_an_ack_that_acknowledges_nothing_new_recycles_its_echo():
    sel = reps()
    ack_group(sel, [101, 102])
    sel.on_ack(now=0.0, ev=107, ce=False)  # a duplicate ACK or a probe's answer
    assert [ev for ev, valid in sel.ring if valid] == [101, 102, 107]


def test_r1_recycle_is_checked_and_acked_evs_outside_values_are_not_recycled():
    with pytest.raises(ValueError, match="acked, echoed"):
        reps(recycle="all")
    sel = reps()
    ack_group(sel, [0x4242, 103, 0x4242])  # foreign EVs (E.5's 0x4242) among the acked
    assert [ev for ev, valid in sel.ring if valid] == [103]


def _slow_share(recycle: str, packets: int = 2000) -> tuple[int, int]:
    """A seeded two-path model of ``uet compare degraded-link``: odd EVs hash onto a slow path
    whose queue CE-marks every packet, even EVs onto a clean one; the receiver ACKs every 4
    packets (16 KiB of 4 KiB) and at once for a CE-marked one (C.3 ACK_ON_ECN). Returns
    (packets REPS put on the slow path, of which in the second half)."""
    vals = list(range(200, 264))  # --entropies 64
    sel = Reps(vals, random.Random(SEED), recycle=recycle)
    slow = late = 0
    group: list[int] = []
    for i in range(packets):
        ev = sel.next(0.0)
        marked = ev % 2 == 1
        slow += marked
        late += marked and i >= packets // 2
        group.append(ev)
        if marked or len(group) == 4:
            ack_group(sel, group, ce=marked)
            group = []
    return slow, late


def test_e6_reps_stops_choosing_ce_marked_paths_when_every_acked_packet_recycles():
    acked, acked_late = _slow_share("acked")
    echoed, echoed_late = _slow_share("echoed")
    # "acked": a clean ACK gives back its four EVs, a marked one is forgotten, so once the
    # first explorations found the clean path the ring never runs dry and nothing is sent on
    # the slow path again; "echoed": a clean ACK gives back one EV in four, a marked one none,
    # so almost every packet is a fresh exploration and half go on the slow path (seeded: exact)
    assert (acked, acked_late) == (3, 0)
    assert (echoed, echoed_late) == (1018, 505)


# --- MULTIPATH-R3: forgetting -------------------------------------------------------------------------------

def test_e6_reps_forgets_ev_on_ce():
    sel = reps()
    sel.on_ack(now=0.0, ev=101, ce=False)
    sel.on_ack(now=0.0, ev=102, ce=False)
    sel.on_ack(now=0.0, ev=101, ce=False)
    sel.on_ack(now=0.0, ev=101, ce=True)  # CE: both stored copies of 101 go
    assert sel.ring[:3] == [(101, False), (102, True), (101, False)]
    assert sel.counters["forgotten"] == 2 and sel.counters["recycled"] == 3
    assert [sel.next(0.0) for _ in range(2)] == [102, explorations(1)[0]]


@pytest.mark.parametrize("code", [TRIMMED, NO_PDC])
def test_e6_reps_forgets_ev_on_nack(code):
    sel = reps()
    sel.on_ack(now=0.0, ev=104, ce=False)
    sel.on_ack(now=0.0, ev=106, ce=False)
    sel.on_nack(now=0.0, ev=104, code=code)
    assert sel.counters["forgotten"] == 1
    assert sel.next(0.0) == 106
    assert sel.known(104)  # MULTIPATH-H3 still hears the NACK's round trip


def test_e6_reps_keeps_ev_on_trimmed_nack_without_forget_on_trim():
    sel = reps(forget_on_trim=False)
    sel.on_ack(now=0.0, ev=104, ce=False)
    sel.on_nack(now=0.0, ev=104, code=TRIMMED)  # taken as a last-hop trim: the path is good
    assert sel.ring[0] == (104, True)
    sel.on_nack(now=0.0, ev=104, code=NO_PDC)  # any other NACK still forgets
    assert sel.ring[0] == (104, False)


def test_e6_reps_a_lasthop_trim_never_forgets():
    sel = reps()  # forget_on_trim=True
    sel.on_ack(now=0.0, ev=104, ce=False)
    sel.on_nack(now=0.0, ev=104, code=LASTHOP)
    assert sel.next(0.0) == 104


def test_r3_a_nack_never_recycles():
    sel = reps(forget_on_trim=False)
    sel.on_nack(now=0.0, ev=105, code=TRIMMED)
    assert sel.counters["recycled"] == 0 and sel.ring[0] == (None, False)
    assert sel.next(0.0) == explorations(1)[0]


# --- MULTIPATH-R4: exploring --------------------------------------------------------------------------------

def test_e5_reps_explores_a_random_ev_of_values_when_the_ring_is_empty():
    sel = reps()
    picks = [sel.next(0.0) for _ in range(20)]
    assert picks == explorations(20)
    assert set(picks) <= set(VALS)
    assert sel.counters["explored"] == 20


# --- MULTIPATH-R5, MULTIPATH-R6: freezing -----------------------------------------------------------------------------

def test_e6_reps_freezes_on_timeout_cycling_the_stored_evs_then_explores_16():
    sel = reps()
    for ev in (101, 102, 103):
        sel.on_ack(now=0.0, ev=ev, ce=False)
    assert sel.next(0.5) == 101  # slot 0 now invalid: still cycled over while frozen
    sel.on_timeout(now=1.0)
    assert sel.frozen and sel.counters["freezes"] == 1
    assert [sel.next(1.0 + k * 1e-3) for k in range(4)] == [101, 102, 103, 101]
    sel.on_ack(now=1.005, ev=106, ce=False)  # recycling goes on while frozen: slot 3
    assert [sel.next(1.009) for _ in range(5)] == [102, 103, 106, 101, 102]
    assert sel.counters["frozen_picks"] == 9 and sel.counters["explored"] == 0
    # 10 ms after the timeout: the ring is cleared, the next 16 choices are explorations
    sel.on_ack(now=1.0095, ev=107, ce=False)  # still frozen: recycled, then cleared at the thaw
    first = sel.next(1.0 + 10e-3)
    assert not sel.frozen and sel.ring == [(None, False)] * 8
    sel.on_ack(now=1.02, ev=105, ce=False)  # after the thaw: kept, but used only after the 16
    rest = [sel.next(1.02) for _ in range(15)]
    assert [first] + rest == explorations(16)
    assert sel.next(1.02) == 105
    assert sel.next(1.02) == explorations(17)[16]
    assert sel.counters["explored"] == 17


def test_r5_a_frozen_sender_with_an_empty_ring_explores():
    sel = reps()
    sel.on_timeout(now=0.0)
    assert [sel.next(1e-3) for _ in range(3)] == explorations(3)
    assert sel.counters["frozen_picks"] == 0


def test_r5_a_timeout_while_frozen_extends_the_freeze():
    sel = reps(freeze_time=1.0)
    sel.on_ack(now=0.0, ev=102, ce=False)
    sel.on_timeout(now=0.0)
    sel.on_timeout(now=0.5)
    assert sel.next(1.2) == 102  # still frozen until 1.5
    assert sel.next(1.5) == explorations(1)[0]
    assert sel.counters["freezes"] == 2


def test_r5_options_are_keyword_only_and_checked():
    with pytest.raises(TypeError):
        Reps(VALS, random.Random(0), 4)  # type: ignore[misc]
    with pytest.raises(ValueError):
        reps(ring_size=0)
    sel = reps(ring_size=2, explore_after_freeze=1)
    for ev in (100, 101, 102):
        sel.on_ack(now=0.0, ev=ev, ce=False)
    assert sel.ring == [(102, True), (101, True)]
    sel.on_timeout(now=0.0)
    assert sel.next(10e-3) == explorations(1)[0]  # one exploration after the freeze
    sel.on_ack(now=0.02, ev=103, ce=False)
    assert sel.next(0.02) == 103


# --- MULTIPATH-O1: oblivious spraying -----------------------------------------------------------------------

def test_e6_oblivious_uses_each_ev_once_per_round_xor_order_for_n_8():
    sel = ObliviousSpray(VALS, random.Random(SEED))
    rounds = [[sel.next(0.0) for _ in range(8)] for _ in range(6)]
    r = random.Random(SEED)
    expected = []
    for _ in range(6):
        x = r.randrange(8)
        expected.append([VALS[(i ^ x) % 8] for i in range(8)])  # htsim: (i XOR x) mod N
    assert rounds == expected
    assert all(sorted(rnd) == VALS for rnd in rounds)
    assert len({tuple(rnd) for rnd in rounds}) > 1  # a new order per round
    assert sel.rounds == 6


def test_e6_oblivious_uses_each_ev_once_per_round_shuffled_for_n_5():
    vals = VALS[:5]  # not a power of two: XOR would skip and repeat EVs
    sel = ObliviousSpray(vals, random.Random(SEED))
    rounds = [[sel.next(0.0) for _ in range(5)] for _ in range(6)]
    r = random.Random(SEED)
    expected = []
    for _ in range(6):
        order = list(range(5))
        r.shuffle(order)
        expected.append([vals[i] for i in order])
    assert rounds == expected
    assert all(sorted(rnd) == vals for rnd in rounds)
    assert len({tuple(rnd) for rnd in rounds}) > 1


def test_e6_oblivious_one_value_is_always_that_value():
    sel = ObliviousSpray([4242], random.Random(0))
    assert [sel.next(0.0) for _ in range(3)] == [4242] * 3


# --- MULTIPATH-H1 to MULTIPATH-H4 still apply ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["reps", "oblivious"])
def test_h1_an_ev_failed_by_two_losses_is_skipped_by_next(kind):
    vals = [1, 2, 3, 4]
    sel = (Reps(vals, random.Random(3)) if kind == "reps"
           else ObliviousSpray(vals, random.Random(3)))
    sel.on_loss(now=0.0, ev=2)
    sel.on_loss(now=0.0, ev=2)
    assert sel.failed == {2}
    if kind == "reps":
        sel.on_ack(now=0.0, ev=2, ce=False)  # recycled, but failed: next asks REPS again
        sel.on_ack(now=0.0, ev=3, ce=False)
    picks = [sel.next(0.0) for _ in range(12)]  # fewer than the 16 before an MULTIPATH-H2 probe
    assert 2 not in picks and set(picks) <= {1, 3, 4}
    if kind == "reps":
        assert picks[0] == 3
    sel.on_delivered(now=0.0, ev=2)
    assert sel.failed == frozenset()


# --- make_selector --------------------------------------------------------------------------------

def test_make_selector_builds_every_kind_over_n_seeded_values():
    assert SELECTOR_KINDS == ("rr", "random", "single", "reps", "oblivious")
    types = {"rr": RoundRobinSpray, "random": RandomSpray, "single": SingleEntropy,
             "reps": Reps, "oblivious": ObliviousSpray}
    for kind, cls in types.items():
        sel = make_selector(kind, 8, 5)
        assert type(sel) is cls
        assert len(sel.values) == (1 if kind == "single" else 8)
        again = make_selector(kind, 8, 5)
        assert [sel.next(0.0) for _ in range(20)] == [again.next(0.0) for _ in range(20)]
    rr = make_selector("rr", 4, 1)
    assert [rr.next(0.0) for _ in range(5)] == rr.values + rr.values[:1]  # unchanged
    with pytest.raises(ValueError, match="reps, oblivious"):
        make_selector("ecmp")


# --- property: no hook sequence breaks next() -----------------------------------------------------

EVS = st.one_of(st.sampled_from(VALS), st.integers(0, 70000))  # foreign echoes too
HOOKS = st.one_of(
    st.tuples(st.just("ack"), EVS, st.booleans()),
    st.tuples(st.just("nack"), EVS, st.integers(0, 255)),
    st.tuples(st.just("loss"), EVS),
    st.tuples(st.just("delivered"), EVS),
    st.tuples(st.just("timeout")),
    st.tuples(st.just("next")),
    st.tuples(st.just("retransmit")),
    st.tuples(st.just("wait"), st.floats(0.0, 0.02)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(HOOKS, max_size=60), st.integers(0, 2 ** 16), st.integers(1, 8),
       st.integers(1, 8), st.booleans(), st.booleans(), st.sampled_from(["acked", "echoed"]))
def test_any_hook_sequence_never_raises_and_next_stays_in_values(ops, seed, n, ring, trim, obl,
                                                                 recycle):
    vals = VALS[:n]
    sel = (ObliviousSpray(vals, random.Random(seed)) if obl else
           Reps(vals, random.Random(seed), ring_size=ring, freeze_time=5e-3,
                explore_after_freeze=3, forget_on_trim=trim, recycle=recycle))
    now = 0.0
    for op in ops:
        kind = op[0]
        if kind == "ack":
            sel.on_ack(now=now, ev=op[1], ce=op[2])
        elif kind == "nack":
            sel.on_nack(now=now, ev=op[1], code=op[2])
        elif kind == "loss":
            sel.on_loss(now=now, ev=op[1])
        elif kind == "delivered":
            sel.on_delivered(now=now, ev=op[1])
        elif kind == "timeout":
            sel.on_timeout(now=now)
        elif kind == "retransmit":
            sel.next_retransmit(now)
        elif kind == "wait":
            now += op[1]
        assert sel.next(now) in vals
        if not obl:
            assert len(sel.ring) == ring
            assert all(ev in vals for ev, valid in sel.ring if valid)
