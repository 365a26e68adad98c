"""Unit tests of the PDS core, one group per docs/facts.md section, driven with hand-built datagrams;
the upper layer records (tests/pds/helpers.py Recorder), except where the SES's part is tested."""

from __future__ import annotations

import pytest

from uet.pds import DatagramMeta, PdcClosed, PdcEstablished
from uet.ses import events as sev
from uet.wire.enums import NACK_CODE

from .helpers import (A, B, EV, PORT, S, SPDCID, ack_to, control, decode, established_target, events,
                      host_initiator, initiator, nack_to, out, request, send, target)

NC = {name: code for code, name in NACK_CODE.table.items()}


def only(xs):
    assert len(xs) == 1, xs
    return xs[0]


# --- C.1 establishment ----------------------------------------------------------------------------

def test_c1_syn_creates_pdc_and_acks_with_our_pdcid():
    ep = target()
    ep.receive_datagram(*request(S, syn=True, ar=True), 0.0)
    layer, meta = only(out(ep))
    ack = layer["pds"]
    assert ack["type_name"] == "ACK_CC" and ack["cc_type"] == 0
    assert ack["dpdcid"] == SPDCID and ack["spdcid"] != 0
    assert ack["cack_psn"] == S and ack["ack_psn"] == S
    assert ack["mpr"] == 8
    # PDS-A4 (A.1, H.1 #19): back to the request's address at the UET port, from its EV, DSCP 46
    assert (meta.src, meta.dst, meta.sport, meta.dport, meta.dscp) == (B, A, EV, PORT, 46)
    ev = [e for e in events(ep) if isinstance(e, PdcEstablished)]
    assert ev and ev[0].role == "target" and ev[0].peer_pdcid == SPDCID


def test_c1_start_psn_is_psn_minus_psn_offset():
    ep = target()
    ep.receive_datagram(*request(S + 5, syn=True, ar=True), 0.0)
    ack = only(out(ep))[0]["pds"]
    assert ack["cack_psn"] == S - 1
    assert ack["ack_psn"] == S + 5
    base = ack["sack_base_psn"]
    assert ack["sack_bitmap"] >> ((S + 5 - base) & 0xFFFFFFFF) & 1


def test_c1_initiator_syn_random_start_then_learns_dpdcid():
    ep = initiator()
    send(ep, B, b"a" * 10000)
    pkts = out(ep)
    assert len(pkts) == 3
    first = pkts[0][0]["pds"]
    assert first["syn"] and first["psn_offset"] == 0
    assert (1 << 16) <= first["start_psn"] < (1 << 31)
    assert [p[0]["pds"]["psn"] for p in pkts] == [first["psn"] + i for i in range(3)]
    assert [p[0]["pds"]["ar"] for p in pkts] == [False, False, True]  # C.3: AR on EOM
    assert all(p[1].dscp == 0 and p[1].ecn == 2 and p[1].dport == PORT for p in pkts)
    pdcid = first["spdcid"]
    assert pdcid != 0
    ep.receive_datagram(*ack_to(pdcid, first["psn"], spdcid=4321, ack_psn=first["psn"]), 1e-5)
    assert any(isinstance(e, PdcEstablished) and e.peer_pdcid == 4321 for e in events(ep))
    send(ep, B, b"b" * 100)
    nxt = only(out(ep, 2e-5))[0]["pds"]
    assert not nxt["syn"] and nxt["dpdcid"] == 4321


def test_c1_at_most_4096_psns_before_first_ack():
    ep = initiator(window_bytes=1 << 30, mtu=256, tx_range=1 << 14, mpr=64)
    send(ep, B, bytes(256 * 5000))
    assert len(ep.datagrams_to_send(0.0)) == 4096


def test_c1_pdcid_zero_is_never_allocated():
    ep = target()
    for i in range(1, 40):
        ep.receive_datagram(*request(S, syn=True, spdcid=i), 0.0)
    acks = [l["pds"] for l, _ in out(ep)]
    assert len(acks) == 39 and all(a["spdcid"] != 0 for a in acks)
    assert len({a["spdcid"] for a in acks}) == 39


# --- C.2 PSN / CACK / CLEAR_PSN / MPR ---------------------------------------------------------------

def test_c2_clear_psn_is_send_base_minus_one():
    ep = initiator()
    send(ep, B, bytes(4096 * 4))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    assert p0["clear_psn"] == (p0["start_psn"] - 1) & 0xFFFFFFFF
    ep.receive_datagram(*ack_to(p0["spdcid"], p0["psn"] + 1, ack_psn=p0["psn"] + 1), 1e-5)
    send(ep, B, bytes(100))
    nxt = only(out(ep, 2e-5))[0]["pds"]
    assert nxt["clear_psn"] == p0["psn"] + 1


def test_c2_mpr_limits_psns_beyond_cack():
    ep = initiator(window_bytes=1 << 30, mtu=256)
    send(ep, B, bytes(256 * 10))
    p0 = out(ep)[0][0]["pds"]
    ep.receive_datagram(*ack_to(p0["spdcid"], p0["psn"], ack_psn=p0["psn"], mpr=1), 1e-5)
    send(ep, B, bytes(256 * 1000))
    sent = out(ep, 2e-5)
    top = max(p[0]["pds"]["psn"] for p in sent)
    assert top - p0["psn"] == 128  # CACK + 1 * 128


def test_c2_cack_completes_messages_sack_does_not():
    ep = initiator()
    h = send(ep, B, bytes(4096 * 2))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    pdcid = p0["spdcid"]
    # SACK of both, CACK of neither: not complete (C.4)
    ep.receive_datagram(*ack_to(pdcid, p0["psn"] - 1, ack_psn=p0["psn"] + 1, sack_base=p0["psn"],
                                bitmap=0b11), 1e-5)
    assert ep.upper.completed == []
    ep.receive_datagram(*ack_to(pdcid, p0["psn"] + 1, ack_psn=p0["psn"] + 1), 2e-5)
    assert ep.upper.completed == [h]


# --- C.3 ACK generation -----------------------------------------------------------------------------

@pytest.mark.parametrize("size, every", [(1024, 16), (4096, 4), (100, 16)])
def test_c3_ack_gen_trigger_and_min_pkt_add(size, every):
    ep, pdcid = established_target()
    acks_at = []
    for i in range(1, 3 * every + 1):
        ep.receive_datagram(*request(S + i, dpdcid=pdcid, payload=b"p" * size, message_id=2 + i), 0.0)
        if out(ep):
            acks_at.append(i)
    assert acks_at == [every, 2 * every, 3 * every]


def test_c3_ack_on_ar_and_on_ce():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, ar=True, message_id=5), 0.0)
    assert only(out(ep))[0]["pds"]["ack_psn"] == S + 1
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid, ecn=3, message_id=6), 0.0)
    ack = only(out(ep))[0]["pds"]
    assert ack["m"] and ack["ack_psn"] == S + 2
    ep.receive_datagram(*request(S + 3, dpdcid=pdcid, retx=True, ar=True, message_id=7), 0.0)
    assert only(out(ep))[0]["pds"]["retx"]


def test_c3_plain_ack_type_configurable():
    ep = target(ack_type="ack")
    ep.receive_datagram(*request(S, syn=True, ar=True), 0.0)
    ack = only(out(ep))[0]["pds"]
    assert ack["type_name"] == "ACK" and ack["cack_psn"] == S


def test_c3_initiator_sets_ar_on_eom_and_retransmissions_only():
    ep = initiator()
    send(ep, B, bytes(4096 * 3))
    send(ep, B, bytes(10))
    ars = [p[0]["pds"]["ar"] for p in out(ep)]
    assert ars == [False, False, True, True]


# --- C.4 SACK ---------------------------------------------------------------------------------------

def test_c4_sack_bitmap_bits_and_base_tracker():
    ep, pdcid = established_target()
    for i in (2, 3, 5):
        ep.receive_datagram(*request(S + i, dpdcid=pdcid, ar=True, message_id=10 + i), 0.0)
    ack = out(ep)[-1][0]["pds"]
    assert ack["cack_psn"] == S
    base = ack["sack_base_psn"]
    assert base == S  # tracker starts at CACK
    assert ack["sack_bitmap"] == 0b101101  # bit i: base + i; PSNs <= CACK count as received
    # jump by 64 once the highest PSN passes base + 63
    ep.receive_datagram(*request(S + 70, dpdcid=pdcid, ar=True, message_id=99), 0.0)
    ack = out(ep)[-1][0]["pds"]
    assert ack["sack_base_psn"] == S + 64
    assert ack["sack_bitmap"] == 1 << 6


def test_c4_rto_on_sacked_only_sends_ack_req():
    ep = initiator()
    send(ep, B, bytes(4096 * 2))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    ep.receive_datagram(*ack_to(p0["spdcid"], p0["psn"] - 1, ack_psn=p0["psn"] + 1,
                                sack_base=p0["psn"], bitmap=0b11), 1e-5)
    t = ep.get_timer()
    assert t is not None
    ep.handle_timer(t)
    sent = out(ep, t)
    ctls = [p["pds"] for p, _ in sent]
    assert all(c["type_name"] == "CONTROL" for c in ctls) and all(m.dscp == 46 for _, m in sent)
    (ack_req,) = [c for c in ctls if c["ctl_type_name"] == "ACK_REQ"]  # no data resent
    assert ack_req["psn"] == p0["psn"]
    # PDS-I8: the first timeout also probes 2 EVs (CONTROL PROBE, payload the base PSN)
    probes = [c for c in ctls if c["ctl_type_name"] == "PROBE"]
    assert len(probes) == 2 and len(ctls) == 3


# --- C.5 retransmission and receiver checks ---------------------------------------------------------

def test_c5_duplicate_resends_ack_and_is_not_delivered_twice():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, ar=True, message_id=3), 0.0)
    out(ep)
    assert ep.upper.psns == [S, S + 1]
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, retx=True, ar=True, message_id=3), 0.0)
    ack = only(out(ep))[0]["pds"]
    assert ack["ack_psn"] == S + 1 and ack["cack_psn"] == S + 1 and ack["retx"]
    assert ep.upper.psns == [S, S + 1]
    assert ep.stats["dup_rx"] == 1


def test_c5_unknown_dpdcid_without_syn_nack_inv_dpdcid_spdcid_0():
    ep = target()
    ep.receive_datagram(*request(S, dpdcid=555), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["type_name"] == "NACK" and n["nack_code"] == NC["INV_DPDCID"]
    assert n["spdcid"] == 0 and n["dpdcid"] == SPDCID and n["nack_psn"] == S


def test_c5_spdcid_mismatch_nack_pdc_hdr_mismatch():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, spdcid=SPDCID + 1), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["nack_code"] == NC["PDC_HDR_MISMATCH"] and n["spdcid"] == pdcid


def test_c5_wrong_request_type_nack_pdc_mode_mismatch():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, rod=True), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["nack_code"] == NC["PDC_MODE_MISMATCH"]


def test_c5_psn_beyond_window_nack_psn_oor_window_or_invalid_syn():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 2000, dpdcid=pdcid), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["nack_code"] == NC["PSN_OOR_WINDOW"] and n["nack_psn"] == S + 2000
    assert n["payload"] == S + 1
    ep.receive_datagram(*request(S + 2000, syn=True, start=S), 0.0)
    assert only(out(ep))[0]["pds"]["nack_code"] == NC["INVALID_SYN"]


def test_c5_syn_with_other_start_psn_is_invalid_syn():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 5, syn=True, start=S + 3), 0.0)
    assert only(out(ep))[0]["pds"]["nack_code"] == NC["INVALID_SYN"]


def test_c5_rto_backoff_then_failure():
    ep = initiator(max_rto_retx=3, rto_initial=1e-3)
    h = send(ep, B, bytes(100))
    first = only(out(ep))[0]["pds"]
    times = []
    for _ in range(10):
        t = ep.get_timer()
        if t is None:
            break
        ep.handle_timer(t)
        sent = out(ep, t)
        retx = [p for p, _ in sent if p["pds"].get("retx")]
        if retx:
            times.append(t)
            assert retx[0]["pds"]["psn"] == first["psn"] and retx[0]["pds"]["ar"]
    evs = events(ep)
    assert [t for t, _ in ep.upper.failures] == [h]
    assert any(isinstance(e, PdcClosed) and e.error for e in evs)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(times) == 3 and all(g2 > g1 * 1.5 for g1, g2 in zip(gaps, gaps[1:]))


def test_c5_tail_loss_probe_is_ack_req_for_newest():
    ep = initiator(rto_initial=10e-3, tail_loss_time=1e-3)
    send(ep, B, bytes(4096 * 3))
    pkts = out(ep)
    t = ep.get_timer()
    assert t == pytest.approx(1e-3)
    ep.handle_timer(t)
    probe = only(out(ep, t))[0]["pds"]
    assert probe["ctl_type_name"] == "ACK_REQ" and probe["psn"] == pkts[-1][0]["pds"]["psn"]


def test_c5_ack_req_answered_with_ack_or_pkt_not_rcvd():
    ep, pdcid = established_target()
    ep.receive_datagram(*control(1, S, dpdcid=pdcid), 0.0)
    assert only(out(ep))[0]["pds"]["type_name"] == "ACK_CC"
    ep.receive_datagram(*control(1, S + 3, dpdcid=pdcid), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["nack_code"] == NC["PKT_NOT_RCVD"] and n["nack_psn"] == S + 3


def test_c5_sack_hole_fast_retransmit():
    ep = initiator()
    send(ep, B, bytes(4096 * 8))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    base = p0["psn"]
    ep.receive_datagram(*ack_to(p0["spdcid"], base, ack_psn=base), 10e-6)  # RTT sample 10 us
    # PSN base+1 missing, later ones SACKed: after the reorder window it is resent
    ep.receive_datagram(*ack_to(p0["spdcid"], base, ack_psn=base + 7, sack_base=base,
                                bitmap=0b11111101), 11e-6)
    assert not [p for p, _ in out(ep, 11e-6) if p["pds"].get("retx")]
    t = ep.get_timer()
    ep.handle_timer(t)
    retx = [p["pds"] for p, _ in out(ep, t) if p["pds"].get("retx")]
    assert [r["psn"] for r in retx] == [base + 1] and retx[0]["ar"]


# --- B.11 NACK codes and the sender's reaction ------------------------------------------------------

def test_b11_trimmed_nack_whatever_the_crc():
    ep, pdcid = established_target()
    data, meta = request(S + 1, dpdcid=pdcid, payload=bytes(1000))
    trimmed = DatagramMeta(meta.src, meta.dst, meta.sport, meta.dport, meta.ecn, 11)
    ep.receive_datagram(data[:256], trimmed, 0.0)
    n, m = only(out(ep))
    n = n["pds"]
    assert n["nack_code"] == NC["TRIMMED"] == 1 and n["nack_psn"] == S + 1
    assert n["spdcid"] == pdcid and n["dpdcid"] == SPDCID and (m.sport, m.dport) == (EV, PORT)
    # the trimmed PSN was not recorded: the full copy is accepted
    ep.receive_datagram(data, meta, 0.0)
    assert ep.upper.psns[-1] == S + 1


RETX_NOW = ["TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK", "ROD_OOO", "PKT_NOT_RCVD", "ACK_WITH_DATA",
            "RCVR_INFER_LOSS", "EXP_NACK_NORMAL", "EXP_NACK_ERR"]
RETX_LATER = ["NO_PDC_AVAIL", "NO_CCC_AVAIL", "NO_BITMAP", "NO_PKT_BUFFER", "NO_GTD_DEL_AVAIL",
              "NO_SES_MSG_AVAIL", "NO_RESOURCE", "PSN_OOR_WINDOW"]
CLOSE = ["INV_DPDCID", "PDC_HDR_MISMATCH", "CLOSING", "CLOSING_IN_ERR", "GTD_RESP_UNAVAIL",
         "INVALID_SYN", "PDC_MODE_MISMATCH", "UNEXP_EVENT", "EXP_NACK_FATAL"]


def _one_outstanding():
    ep = initiator(rto_initial=50e-3)
    h = send(ep, B, bytes(4096 * 2))
    pkts = out(ep)
    return ep, h, pkts[0][0]["pds"]


@pytest.mark.parametrize("name", RETX_NOW)
def test_b11_retransmit_now(name):
    ep, h, p0 = _one_outstanding()
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC[name], spdcid=0), 1e-5)
    (layer, _), = out(ep, 1e-5)
    r = layer["pds"]
    assert r["psn"] == p0["psn"] and r["retx"] and r["ar"]
    assert ep.nacks_rcvd[name] == 1


@pytest.mark.parametrize("name", RETX_LATER)
def test_b11_retransmit_after_nack_retx_time(name):
    ep, h, p0 = _one_outstanding()
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC[name], spdcid=0), 1e-5)
    assert out(ep, 1e-5) == []
    t = ep.get_timer()
    assert t == pytest.approx(1e-5 + 1e-3)
    ep.handle_timer(t)
    r = only(out(ep, t))[0]["pds"]
    assert r["psn"] == p0["psn"] and r["retx"]


@pytest.mark.parametrize("name", CLOSE)
def test_b11_close_pdc(name):
    ep, h, p0 = _one_outstanding()
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC[name], spdcid=0), 1e-5)
    evs = events(ep)
    assert [t for t, _ in ep.upper.failures] == [h]
    assert any(isinstance(e, PdcClosed) and e.error and name in e.reason for e in evs)
    assert out(ep, 1e-5) == []


def test_b11_rcvd_ses_procg_changes_nothing():
    ep, h, p0 = _one_outstanding()
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC["RCVD_SES_PROCG"]), 1e-5)
    assert out(ep, 1e-5) == [] and not events(ep) and not ep.upper.failures


def test_b11_new_start_psn_rebases_and_resends():
    ep, h, p0 = _one_outstanding()
    new = 5_000_000
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC["NEW_START_PSN"], payload=new), 1e-5)
    sent = [p["pds"] for p, _ in out(ep, 1e-5)]
    assert [s["psn"] for s in sent] == [new, new + 1]
    assert all(s["syn"] and s["start_psn"] == new and s["retx"] for s in sent)


def test_c5_nack_outside_send_window_is_ignored():
    ep, h, p0 = _one_outstanding()
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"] + 50, NC["INV_DPDCID"]), 1e-5)
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"] - 1, NC["TRIMMED"]), 1e-5)
    assert not events(ep) and out(ep, 1e-5) == []
    assert ep.stats["stale_nack"] == 2


def _nack_repeatedly(ep, p0, code, times):
    for i in range(times):
        ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], code), 1e-5 * (i + 1))
        out(ep, 1e-5 * (i + 1))
    return [e for e in events(ep) if isinstance(e, PdcClosed) and e.error]


def test_b11_nack_retry_limit_closes():
    """C.9 MAX_NACK_RETX_CNT 5: the sixth NACK-driven resend of one PSN closes the PDC."""
    ep, h, p0 = _one_outstanding()
    assert not _nack_repeatedly(ep, p0, NC["PKT_NOT_RCVD"], 5)
    closed = _nack_repeatedly(ep, p0, NC["PKT_NOT_RCVD"], 1)
    assert len(closed) == 1 and "PKT_NOT_RCVD retry limit" in closed[0].reason


@pytest.mark.parametrize("name", ["TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK"])
def test_i10_trims_count_against_their_own_limit(name):
    """PDS-I10 choice: a trim is congestion; trims of one PSN count against max_trim_retx, not C.9's
    MAX_NACK_RETX_CNT."""
    ep = initiator(rto_initial=50e-3, max_trim_retx=8)
    send(ep, B, bytes(4096 * 2))
    p0 = out(ep)[0][0]["pds"]
    assert not _nack_repeatedly(ep, p0, NC[name], 8)  # more than max_nack_retx (5): still open
    closed = _nack_repeatedly(ep, p0, NC[name], 1)
    assert len(closed) == 1 and f"{name} retry limit" in closed[0].reason


# --- C.7 close --------------------------------------------------------------------------------------

def test_c7_close_then_closing_nack_beyond_close_psn():
    ep, pdcid = established_target()
    ep.receive_datagram(*control(4, S + 1, dpdcid=pdcid), 0.0)
    ack = only(out(ep))[0]["pds"]
    assert ack["ack_psn"] == S + 1 and ack["cack_psn"] == S + 1
    assert any(isinstance(e, PdcClosed) and not e.error for e in events(ep))
    # repeated CLOSE (ACK lost): ACKed again; a PSN beyond the CLOSE: NACK CLOSING
    ep.receive_datagram(*control(4, S + 1, dpdcid=pdcid), 1e-3)
    assert only(out(ep))[0]["pds"]["cack_psn"] == S + 1
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid), 1e-3)
    assert only(out(ep))[0]["pds"]["nack_code"] == NC["CLOSING"]
    # after the MSL the PDCID is unknown
    ep.handle_timer(1.0)
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid), 1.0)
    assert only(out(ep))[0]["pds"]["nack_code"] == NC["INV_DPDCID"]


def test_c7_initiator_closes_only_when_all_acked():
    ep = initiator()
    send(ep, B, bytes(100))
    p0 = only(out(ep))[0]["pds"]
    ep.close()
    assert out(ep) == []
    ep.receive_datagram(*ack_to(p0["spdcid"], p0["psn"], ack_psn=p0["psn"]), 1e-5)
    c = only(out(ep, 1e-5))[0]["pds"]
    assert c["ctl_type_name"] == "CLOSE" and c["ar"] and c["psn"] == p0["psn"] + 1 and c["dpdcid"] == 99
    ep.receive_datagram(*ack_to(p0["spdcid"], c["psn"], ack_psn=c["psn"]), 2e-5)
    assert any(isinstance(e, PdcClosed) and not e.error for e in events(ep))
    assert ep.pdcs() == []


# --- C.8 delivery modes -----------------------------------------------------------------------------

def test_c8_rod_delivers_in_psn_order():
    ep = target()
    ep.receive_datagram(*request(S, syn=True, rod=True, ar=True, message_id=1), 0.0)
    out(ep)
    pdcid = [e for e in events(ep) if isinstance(e, PdcEstablished)][0].pdcid
    for i in (3, 2, 5, 1, 4):
        ep.receive_datagram(*request(S + i, dpdcid=pdcid, rod=True, message_id=1 + i), 0.0)
    assert ep.upper.psns == [S, S + 1, S + 2, S + 3, S + 4, S + 5]


def test_c8_rud_delivers_as_packets_arrive():
    ep = target()
    ep.receive_datagram(*request(S, syn=True, ar=True, message_id=1), 0.0)
    out(ep)
    pdcid = [e for e in events(ep) if isinstance(e, PdcEstablished)][0].pdcid
    for i in (3, 2, 1):
        ep.receive_datagram(*request(S + i, dpdcid=pdcid, message_id=1 + i), 0.0)
    assert ep.upper.psns == [S, S + 3, S + 2, S + 1]


def test_x3_a_response_rides_the_ack_of_its_psn_and_its_repeats():
    """PDS-X3, PDS-A1: the upper layer's response goes at once on an ACK of its PSN (no AR needed), and
    again on the ACK that answers a duplicate of that PSN."""
    ep, pdcid = established_target()
    ep.upper.respond[S + 1] = (4, b"R" * 12)
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, message_id=2), 0.0)
    (d, m), = ep.datagrams_to_send(0.0)
    ack = decode(d, m)
    assert ack["pds"]["ack_psn"] == S + 1 and ack["pds"]["next_hdr"] == 4
    assert d[-16:-4] == b"R" * 12
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, retx=True, message_id=2), 0.0)
    (d2, _), = ep.datagrams_to_send(0.0)
    assert d2[-16:-4] == b"R" * 12


def test_w5_a_refused_request_stays_unreceived():
    ep, pdcid = established_target()
    ep.upper.admit_code = NC["NO_PKT_BUFFER"]
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, ar=True, message_id=2), 0.0)
    n = only(out(ep))[0]["pds"]
    assert n["nack_code"] == NC["NO_PKT_BUFFER"] and n["nack_psn"] == S + 1
    assert ep.upper.psns == [S]
    ep.upper.admit_code = 0
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, retx=True, ar=True, message_id=2), 0.0)
    assert ep.upper.psns == [S, S + 1] and only(out(ep))[0]["pds"]["cack_psn"] == S + 1


def test_c8_rod_without_buffer_nacks_rod_ooo():
    ep, pdcid = established_target(rod=True, rod_buffer=False)
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid, rod=True), 0.0)
    assert only(out(ep))[0]["pds"]["nack_code"] == NC["ROD_OOO"]


# --- with the SES above (uet/host.py) ----------------------------------------------------------------

def test_message_reassembly_out_of_order():
    ep, pdcid = established_target(host=True)
    msg = bytes(range(256)) * 40
    parts = [(0, msg[:4096]), (4096, msg[4096:8192]), (8192, msg[8192:])]
    for i, (off, chunk) in reversed(list(enumerate(parts))):
        ep.receive_datagram(*request(S + 1 + i, dpdcid=pdcid, payload=chunk, offset=off,
                                     total=len(msg), message_id=9), 0.0)
    d = [e for e in events(ep) if isinstance(e, sev.MessageReceived)]
    assert len(d) == 1 and d[0].data == msg and d[0].message_id == 9


def test_ses_error_is_answered_with_a_response_in_the_ack():
    ep, pdcid = established_target(host=True, max_message_bytes=1000)
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, payload=bytes(100), total=5000), 0.0)
    layer = only(out(ep))[0]
    assert layer["pds"]["next_hdr"] == 4
    assert layer["ses"]["return_code_name"] == "TOO_LONG"


def test_ses_resource_shortage_is_a_nack_and_psn_stays_unreceived():
    ep, pdcid = established_target(host=True, max_rx_messages=1)
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, payload=bytes(10), total=100, message_id=1), 0.0)
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid, payload=bytes(10), total=100, message_id=2), 0.0)
    n = out(ep)[-1][0]["pds"]
    assert n["nack_code"] == NC["NO_SES_MSG_AVAIL"] and n["nack_psn"] == S + 2


def test_small_header_for_single_packet_messages():
    ep = host_initiator()
    ep.send(B, b"hello")
    layer = only(out(ep))[0]
    assert layer["pds"]["next_hdr"] == 1 and layer["ses"]["request_length"] == 5
    assert layer["payload_len"] == 5
