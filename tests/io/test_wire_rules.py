"""Issue 6, item 3: the rules of docs/facts.md as another implementation sees them on the wire.

A plain Python UDP socket (tests/io/peer.py) builds its packets by hand from the schema codecs and
the CRC-32C trailer and talks to `uet recv` running as a subprocess; every answer is decoded with
uet.wire.packet.decode_uet and its trailer verified (A.3) by ``Peer.recv``.
"""

from __future__ import annotations

import hashlib
import random

import pytest

from .peer import Peer, fresh_spdcid, trim

START = 0x20000  # a start PSN in RP-PDS's range [2^16, 2^31) (C.1)
ACK_TOS = 46 << 2  # A.2 / docs/design-notes.md Defaults: ACK, NACK, control: DSCP 46 (EF), Not-ECT
TRIMMED_TOS = 11 << 2  # docs/design-notes.md Defaults: DSCP 11 = trimmed


@pytest.fixture
def peer(uet_recv):
    p = Peer(uet_recv.addr)
    try:
        yield p
    finally:
        p.close()


def establish(peer: Peer, payload: bytes = b"hello uet", start: int = START) -> tuple[int, int, Peer]:
    """SYN request for the start PSN; returns (our SPDCID, the target's PDCID, peer)."""
    sp = fresh_spdcid()
    peer.send(Peer.request(start, spdcid=sp, start=start, payload=payload))
    ack = peer.expect("ACK_CC", dpdcid=sp)
    return sp, ack.pds["spdcid"], peer


def check_answer_envelope(a, peer: Peer, server) -> None:
    """A.1, H.1 #19: answers go to our UET port (the server's) from the request's EV, with DSCP
    46 and Not-ECT."""
    assert a.src == (server[0], peer.sport) and a.dst_port == server[1]
    assert a.tos == ACK_TOS


def test_c1_syn_acked_with_initiator_pdcid_and_cack_start_psn(peer, uet_recv):
    sp = fresh_spdcid()
    data = b"first message over a hand-built SYN " * 3
    peer.send(Peer.request(START, spdcid=sp, start=START, payload=data))
    a = peer.expect("ACK_CC", dpdcid=sp)
    check_answer_envelope(a, peer, uet_recv.addr)
    assert a.pds["dpdcid"] == sp                  # C.1: DPDCID := initiator's SPDCID
    assert a.pds["spdcid"] != 0                   # C.1: the target's own PDCID (0 reserved)
    assert a.pds["cack_psn"] == START             # CACK = start PSN (everything up to it arrived)
    assert a.pds["ack_psn"] == START              # B.7: ACK_PSN = the PSN that triggered it
    assert a.pds["cc_type"] == 0                  # docs/design-notes.md: ACK_CC with NSCC state
    # delivered to the sink, with the right bytes
    uet_recv.wait_line(f"sha256 {hashlib.sha256(data).hexdigest()}")


def test_c4_gap_sack_then_fill_moves_cack(peer):
    sp, tp, _ = establish(peer)
    total = 3 * 100
    body = random.Random(4).randbytes(total)
    mid = 7
    # a 3-packet message at START+1..START+3; send +1 and +3 first, leaving +2 out
    peer.send(Peer.request(START + 1, spdcid=sp, dpdcid=tp, payload=body[:100], message_id=mid,
                           total=total))
    a = peer.expect("ACK_CC", ack_psn=START + 1)
    assert a.pds["cack_psn"] == START + 1
    peer.send(Peer.request(START + 3, spdcid=sp, dpdcid=tp, payload=body[200:], message_id=mid,
                           offset=200, total=total))
    a = peer.expect("ACK_CC", ack_psn=START + 3)
    # C.2/C.4: CACK stays at the last in-order PSN; the SACK bitmap names what arrived beyond it
    assert a.pds["cack_psn"] == START + 1
    base = a.pds["sack_base_psn"]
    sacked = {base + i for i in range(64) if a.pds["sack_bitmap"] >> i & 1}
    assert START + 3 in sacked and START + 2 not in sacked
    assert a.pds["dpdcid"] == sp and a.pds["spdcid"] == tp
    # filling the gap moves CACK over the whole run
    peer.send(Peer.request(START + 2, spdcid=sp, dpdcid=tp, payload=body[100:200], message_id=mid,
                           offset=100, total=total))
    a = peer.expect("ACK_CC", ack_psn=START + 2)
    assert a.pds["cack_psn"] == START + 3


def test_c6_trimmed_packet_nacked_and_retransmission_acked(peer):
    sp, tp, _ = establish(peer)
    payload = random.Random(6).randbytes(2000)
    full = peer.seal(Peer.request(START + 1, spdcid=sp, dpdcid=tp, payload=payload, message_id=2))
    # a trimming switch: first 256 bytes of UDP payload, DSCP rewritten to 11 (C.6)
    peer.send_raw(trim(full, 256), tos=TRIMMED_TOS | 2)
    n = peer.expect("NACK", nack_psn=START + 1)
    assert n.pds["nack_code_name"] == "TRIMMED"   # B.11 0x01
    assert n.pds["nack_code"] == 0x01
    assert n.pds["dpdcid"] == sp and n.pds["spdcid"] == tp
    assert n.tos == ACK_TOS
    # the retransmission (RETX + AR, C.5) is ACKed and moves CACK
    peer.send(Peer.request(START + 1, spdcid=sp, dpdcid=tp, payload=payload, message_id=2, retx=True))
    a = peer.expect("ACK_CC", ack_psn=START + 1)
    assert a.pds["cack_psn"] == START + 1
    assert a.pds["retx"] is True                   # B.7: ACK of a retransmitted packet


def test_c5_duplicate_of_delivered_psn_answered_with_ack(peer):
    sp, tp, _ = establish(peer)
    again = Peer.request(START, spdcid=sp, start=START, payload=b"hello uet")
    peer.send(again)
    a = peer.expect("ACK_CC", dpdcid=sp)
    assert a.pds["ack_psn"] == START and a.pds["cack_psn"] == START
    # also without SYN, naming the PDC
    peer.send(Peer.request(START, spdcid=sp, dpdcid=tp, payload=b"hello uet"))
    a = peer.expect("ACK_CC", dpdcid=sp)
    assert a.pds["ack_psn"] == START


def test_c5_psn_far_beyond_window_gets_psn_oor_window(peer):
    sp, tp, _ = establish(peer)
    far = START + 1_000_000
    peer.send(Peer.request(far, spdcid=sp, dpdcid=tp))
    n = peer.expect("NACK", nack_psn=far)
    assert n.pds["nack_code_name"] == "PSN_OOR_WINDOW"  # B.11 0x0B
    assert n.pds["dpdcid"] == sp


def test_c5_unknown_dpdcid_without_syn_gets_inv_dpdcid(peer):
    sp = fresh_spdcid()
    peer.send(Peer.request(START + 5, spdcid=sp, dpdcid=0xBEEF))
    n = peer.expect("NACK", nack_psn=START + 5)
    assert n.pds["nack_code_name"] == "INV_DPDCID"      # B.11 0x0E
    assert n.pds["spdcid"] == 0                          # RP-PR #125: no valid PDC -> 0
    assert n.pds["dpdcid"] == sp


def test_c7_close_acked_with_ack_psn_of_close(peer):
    sp, tp, _ = establish(peer)
    close_psn = START + 1
    peer.send(Peer.control(4, close_psn, spdcid=sp, dpdcid=tp), tos=ACK_TOS)
    a = peer.expect("ACK_CC", dpdcid=sp)
    assert a.pds["ack_psn"] == close_psn
    assert a.pds["cack_psn"] == close_psn
    # C.7 / C2: after close the PDC still answers for one MSL; a repeated CLOSE is ACKed again
    peer.send(Peer.control(4, close_psn, spdcid=sp, dpdcid=tp), tos=ACK_TOS)
    a = peer.expect("ACK_CC", dpdcid=sp)
    assert a.pds["ack_psn"] == close_psn


def test_a3_every_answer_carries_a_valid_trailer(peer, uet_recv):
    """A mix of requests: every datagram that comes back verifies (Peer.recv asserts it)."""
    sp, tp, _ = establish(peer)
    rng = random.Random(9)
    for i in range(1, 9):
        peer.send(Peer.request(START + i, spdcid=sp, dpdcid=tp, payload=rng.randbytes(rng.randrange(1, 3000)),
                               message_id=10 + i))
    peer.send(Peer.request(START + 3, spdcid=sp, dpdcid=tp))       # duplicate
    peer.send(Peer.request(START + 999_999, spdcid=sp, dpdcid=tp))  # out of window
    peer.send(Peer.request(1, spdcid=sp, dpdcid=0xFFF1))            # unknown PDC
    answers = peer.recv_all(0.4)
    assert answers, "no answers"
    kinds = {a.type_name for a in answers}
    assert "ACK_CC" in kinds and "NACK" in kinds
    for a in answers:
        check_answer_envelope(a, peer, uet_recv.addr)
        assert a.layer["crc"]["ok"] is True


def test_bad_crc_is_dropped_silently(peer):
    """R2 / A.3: a request with a wrong trailer is not answered (and not delivered)."""
    sp = fresh_spdcid()
    pkt = bytearray(peer.seal(Peer.request(START, spdcid=sp, start=START)))
    pkt[-1] ^= 0xFF
    peer.send_raw(bytes(pkt))
    assert peer.recv_all(0.3) == []


def test_a2_ce_mark_is_read_and_echoed_in_the_ack(peer):
    """ECN is read per datagram (IP_RECVTOS): a CE-marked request without AR is still ACKed
    (C.3 ACK_ON_ECN) and the ACK has M set (B.7); an ECT(0) one of the same kind is not M."""
    sp, tp, _ = establish(peer)
    peer.send(Peer.request(START + 1, spdcid=sp, dpdcid=tp, ar=False, message_id=3), tos=0 << 2 | 3)
    a = peer.expect("ACK_CC", ack_psn=START + 1)
    assert a.pds["m"] is True
    peer.send(Peer.request(START + 2, spdcid=sp, dpdcid=tp, ar=True, message_id=4), tos=0 << 2 | 2)
    a = peer.expect("ACK_CC", ack_psn=START + 2)
    assert a.pds["m"] is False


def test_c8_rud_request_on_rod_pdc_gets_mode_mismatch(peer):
    """C.5 / C.8: the PDC's delivery mode is its SYN's; a RUD request on a ROD PDC is NACKed."""
    sp = fresh_spdcid()
    peer.send(Peer.request(START, spdcid=sp, start=START, rod=True))
    tp = peer.expect("ACK_CC", dpdcid=sp).pds["spdcid"]
    peer.send(Peer.request(START + 1, spdcid=sp, dpdcid=tp, rod=False))
    n = peer.expect("NACK", nack_psn=START + 1)
    assert n.pds["nack_code_name"] == "PDC_MODE_MISMATCH"  # B.11 0x16
