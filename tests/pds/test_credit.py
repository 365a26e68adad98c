"""RCCC in the PDS (facts E.2, B.6, B.8, B.12; PDS-Q1 to PDS-Q8 of uet.pds.credit): the CC request form
and its credit_target, credit on ACKs and in CONTROL CREDIT, CREDIT_REQ, and bad credit."""

from __future__ import annotations

from uet.cms.rccc import CREDIT_UNIT, CreditScheduler, Rccc, to_units
from uet.pds.datagram import seal
from uet.pds.packets import AckEncoder, control_bytes
from uet.wire.build import uet_bytes
from uet.wire.enums import CTL_CREDIT, CTL_CREDIT_REQ

from .helpers import B, EV, PORT, S, ack_to, control, initiator, meta_in, out, request, send, target

MTU = 4096


def _rccc_initiator(**cfg):
    return initiator(cc_factory=lambda pc: Rccc(mtu=pc.mtu), rto_initial=1e-3, **cfg)


def _credit_ack(pdcid, cack, units, *, ack_psn=None):
    enc = AckEncoder("ack_cc", 99, pdcid, 8)
    off = 0 if ack_psn is None else ack_psn - cack
    data = enc.pack(cack, off, False, False, 0, 0, 0, 0, 0, credit=units)
    _, meta = ack_to(pdcid, cack)
    return seal((data,), meta), meta


def _credit_control(pdcid, units, ctl=CTL_CREDIT):
    _, meta = ack_to(pdcid, 0)
    return seal((control_bytes(ctl, 0, 99, dpdcid=pdcid, ar=False, payload=units),), meta), meta


def _first(ep, nbytes):
    send(ep, B, bytes(nbytes))
    sent = out(ep)
    return sent, sent[0][0]["pds"]


def test_q1_b6_requests_use_the_cc_form_with_the_demand_and_one_mtu_of_credit():
    ep = _rccc_initiator()
    sent, p = _first(ep, 10 * MTU)
    assert len(sent) == 1  # PDS-R1: one MTU of credit before any grant
    assert p["type"] == 13 and p["syn"] and p["ccc_id"] == 0
    assert p["credit_target"] == to_units(9 * MTU)  # the backlog not covered by credit


def test_q2_b8_a_credit_ack_lets_exactly_that_much_more_go():
    ep = _rccc_initiator()
    _, p = _first(ep, 10 * MTU)
    ep.receive_datagram(*_credit_ack(p["spdcid"], p["psn"], to_units(3 * MTU)), 1e-5)
    sent = out(ep, 1e-5)
    assert [s["pds"]["psn"] for s, _ in sent] == [p["psn"] + 1, p["psn"] + 2, p["psn"] + 3]
    assert all(s["pds"]["type"] == 13 for s, _ in sent)
    assert sent[-1][0]["pds"]["credit_target"] == to_units(6 * MTU)


def test_q2_b12_control_credit_after_establishment():
    ep = _rccc_initiator()
    _, p = _first(ep, 4 * MTU)
    ep.receive_datagram(*_credit_ack(p["spdcid"], p["psn"], 0), 1e-5)  # established, no credit
    assert out(ep, 1e-5)[0][0]["pds"]["ctl_type"] == CTL_CREDIT_REQ  # PDS-Q3: stuck: asks at once
    ep.receive_datagram(*_credit_control(p["spdcid"], to_units(2 * MTU)), 2e-5)
    assert [s["pds"]["psn"] for s, _ in out(ep, 2e-5)] == [p["psn"] + 1, p["psn"] + 2]


def test_q3_credit_req_repeats_every_rto_while_stuck():
    ep = _rccc_initiator()
    _, p = _first(ep, 4 * MTU)
    ep.receive_datagram(*_credit_ack(p["spdcid"], p["psn"], 0), 1e-5)
    (req, _), = out(ep, 1e-5)
    assert req["pds"]["ctl_type"] == CTL_CREDIT_REQ
    assert req["pds"]["payload"] == to_units(3 * MTU)
    t = ep.get_timer()
    assert t is not None and t > 1e-5
    ep.handle_timer(t)
    (again, _), = out(ep, t)
    assert again["pds"]["ctl_type"] == CTL_CREDIT_REQ


def test_r4_a_credit_larger_than_asked_is_clamped_and_counted():
    ep = _rccc_initiator()
    _, p = _first(ep, 2 * MTU)  # asked for one MTU more
    ep.receive_datagram(*_credit_ack(p["spdcid"], p["psn"], to_units(64 * MTU)), 1e-5)
    assert len(out(ep, 1e-5)) == 1
    (pdc,) = ep._inits.values()
    assert pdc.cc.credit == 0 and pdc.cc.counters["clamped"] == 1


def test_b12_credit_for_a_pdc_that_does_not_exist_is_counted():
    ep = _rccc_initiator()
    _first(ep, 2 * MTU)
    ep.receive_datagram(*_credit_control(4242, 100), 1e-5)
    assert ep.stats["stale_control"] == 1 and out(ep, 1e-5) == []


def _credit_target(**cfg):
    return target(credit_scheduler_factory=lambda pc: CreditScheduler(
        rate_gbps=100, base_rtt=10e-6, mtu=pc.mtu, unit=CREDIT_UNIT), **cfg)


def test_q5_q7_a_cc_form_request_gets_a_credit_ack():
    ep = _credit_target()
    pds = {"type": 13, "next_hdr": 3, "ar": True, "syn": True, "psn": S, "spdcid": 7,
           "psn_offset": 0, "credit_target": to_units(40 * MTU)}
    ses = {"opcode": 5, "message_id": 1, "request_length": 64, "som": True, "eom": True}
    m = meta_in()
    ep.receive_datagram(seal((uet_bytes(pds, ses, None, b"x" * 64),), m), m, 0.0)
    (ack, _), = out(ep)
    assert ack["pds"]["type"] == 8 and ack["pds"]["cc_type"] == 1
    # S3: at most two MTUs per grant (the share would allow the whole BDP)
    assert ack["pds"]["credit"] == to_units(2 * MTU)


def test_q8_credit_req_is_answered_with_control_credit():
    ep = _credit_target()
    ep.receive_datagram(*request(S, syn=True, ar=True), 0.0)
    (ack, _), = out(ep)
    pdcid = ack["pds"]["spdcid"]
    ep.receive_datagram(*control(CTL_CREDIT_REQ, S + 1, dpdcid=pdcid, payload=to_units(MTU)),
                        1e-6)
    (credit, meta), = out(ep, 1e-6)
    assert credit["pds"]["ctl_type"] == CTL_CREDIT and credit["pds"]["payload"] == to_units(MTU)
    assert (meta.sport, meta.dport) == (EV, PORT)  # PDS-A4: to the UET port, from the request's EV
