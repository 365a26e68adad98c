"""The CSIG reflection (facts E.4; the project's ACK_CCX extension, uet.cms.csig CMS-C4): what a
target keeps (PDS-G1 to PDS-G3 of uet.pds.signals) and reflects, and what an initiator does with it (PDS-I16)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from uet.cms import csig
from uet.pds import PdsConfig
from uet.pds.datagram import seal
from uet.pds.packets import AckEncoder
from uet.multipath import RoundRobinSpray
from uet.pds.signals import MAX_TAGS, Reflector

from .helpers import EV, S, ack_to, established_target, initiator, out, request, send


def _ccx(ep, psn, pdcid, *, bits, sport=EV):
    data, meta = request(psn, dpdcid=pdcid, ar=True, sport=sport)
    ep.receive_datagram(data, meta, 0.0, csig=bits)
    (ack, _), = out(ep)
    return ack["pds"]


def test_c4_g2_the_ack_reflects_the_tag_of_its_request_first():
    ep, pdcid = established_target(csig=csig.ABW)
    tag = csig.pack(csig.ABW, 7, lm=3)
    ack = _ccx(ep, S + 1, pdcid, bits=tag)
    assert ack["type"] == 9 and ack["ccx_type"] == csig.CSIG_CCX_TYPE
    assert csig.reflected(ack["ack_ccx_state"]) == [(EV, tag)]


def test_c4_g2_other_changed_evs_ride_along_oldest_first_once():
    ep, pdcid = established_target(csig=csig.ABW)
    tags = {EV + k: csig.pack(csig.ABW, 10 + k) for k in range(5)}
    for k in range(1, 5):  # four requests on other EVs, without AR: no ACK yet
        ep.receive_datagram(*request(S + k, dpdcid=pdcid, sport=EV + k), 0.0, csig=tags[EV + k])
    out(ep)
    ack = _ccx(ep, S + 5, pdcid, bits=tags[EV])
    assert csig.reflected(ack["ack_ccx_state"]) == [
        (EV, tags[EV]), (EV + 1, tags[EV + 1]), (EV + 2, tags[EV + 2]), (EV + 3, tags[EV + 3])]
    ack = _ccx(ep, S + 6, pdcid, bits=tags[EV])  # unchanged: only EV + 4 is still to reflect
    assert csig.reflected(ack["ack_ccx_state"]) == [(EV, tags[EV]), (EV + 4, tags[EV + 4])]


def test_g1_a_reserved_bit_or_another_type_is_counted_and_ignored():
    ep, pdcid = established_target(csig=csig.ABW)
    ack = _ccx(ep, S + 1, pdcid, bits=csig.pack(csig.ABW, 5, r=1))
    assert ack["type"] == 8  # nothing to reflect: the usual ACK_CC
    ack = _ccx(ep, S + 2, pdcid, bits=csig.pack(csig.DELAY, 5))
    assert ack["type"] == 8
    assert ep.stats["csig_reserved"] == 1 and ep.stats["csig_other_type"] == 1


def test_g1_csig_off_counts_tags_and_answers_ack_cc():
    ep, pdcid = established_target()
    ack = _ccx(ep, S + 1, pdcid, bits=csig.pack(csig.ABW, 5))
    assert ack["type"] == 8 and ep.stats["csig_unasked"] == 1


def test_g3_the_table_is_bounded():
    stats: Counter = Counter()
    r = Reflector(csig.ABW, stats)
    for k in range(MAX_TAGS + 10):
        r.record(f"10.0.{k >> 8 & 255}.{k & 255}", 50000 + k % 64, csig.pack(csig.ABW, 3))
    assert len(r._tags) <= MAX_TAGS


def _initiator_with_recording_selector(**cfg):
    seen = []

    class Sel(RoundRobinSpray):
        def on_signal(self, *, now, ev, bits):
            seen.append((ev, bits))

    ep = initiator(entropy_factory=lambda c, rng: Sel([EV]), **cfg)
    return ep, seen


def _ccx_ack(pdcid, cack, state):
    enc = AckEncoder("ack_cc", 99, pdcid, 8)
    data = enc.pack(cack, 0, False, False, 0, 0, 0, 0, 0, ccx_state=state)
    _, meta = ack_to(pdcid, cack)
    return seal((data,), meta), meta


def test_i16_reflected_tags_reach_the_selector_ev_by_ev():
    ep, seen = _initiator_with_recording_selector(csig=csig.ABW)
    send(ep, "10.0.0.2", bytes(4096))
    (req, _), = out(ep)
    psn, pdcid = req["pds"]["psn"], req["pds"]["spdcid"]
    entries = [(EV, csig.pack(csig.ABW, 9)), (EV + 1, csig.pack(csig.ABW, 2))]
    ep.receive_datagram(*_ccx_ack(pdcid, psn, csig.reflect(entries)), 1e-5)
    assert seen == entries


def test_i16_an_unasked_reflection_is_counted_and_ignored():
    ep, seen = _initiator_with_recording_selector()
    send(ep, "10.0.0.2", bytes(4096))
    (req, _), = out(ep)
    psn, pdcid = req["pds"]["psn"], req["pds"]["spdcid"]
    ep.receive_datagram(*_ccx_ack(pdcid, psn, csig.reflect([(EV, 5)])), 1e-5)
    assert seen == [] and ep.stats["csig_unasked"] == 1


@given(st.lists(st.tuples(st.integers(1, 0xFFFF), st.integers(1, 0xFFFF)), max_size=4))
def test_c4_reflection_round_trip(entries):
    assert csig.reflected(csig.reflect(entries)) == entries


@given(st.integers(0, 3), st.integers(0, 31), st.integers(0, 127), st.integers(0, 1),
       st.integers(0, 1))
def test_c1_tag_bits_round_trip(t, s, lm, d, r):
    tag = csig.unpack(csig.pack(t, s, lm, d, r))
    assert (tag.t, tag.s, tag.lm, tag.d, tag.r) == (t, s, lm, d, r) and tag.pack() < 1 << 16


def test_c3_compare_and_replace_and_do_not_update():
    bits = csig.neutral(csig.ABW)
    bits = csig.stamp(bits, 20, 1)
    bits = csig.stamp(bits, 25, 2)   # better than 20: the minimum stays
    bits = csig.stamp(bits, 4, 3)
    assert (csig.unpack(bits).s, csig.unpack(bits).lm) == (4, 3)
    held = csig.set_d(bits)
    assert csig.stamp(held, 0, 9) == held
    dbits = csig.stamp(csig.stamp(csig.neutral(csig.DELAY), 3, 1), 2, 2)  # maximum types
    assert (csig.unpack(dbits).s, csig.unpack(dbits).lm) == (3, 1)
    assert PdsConfig(csig=csig.DELAY).csig == csig.DELAY
