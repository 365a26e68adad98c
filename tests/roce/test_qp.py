"""The RC queue pair (uet.roce.qp ROCE-Q1 to ROCE-Q9): real frames, go-back-N, out-of-order placement, CNPs."""

from __future__ import annotations

import pytest

from uet.capture.frame import decode_frame
from uet.roce.qp import (CE, OP_ACK, OP_CNP, SYN_NAK_PSN, Framer, QpReceiver, QpSender, icrc_ok,
                         parse, timeout_for)
from uet.sim.frames import set_ce

MTU = 1024
A, B = "10.0.0.1", "10.0.0.2"


def pair(nbytes=5 * MTU, ooo=False, psn0=0xFFFFFE, op="write", **kw):
    payload = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
    tx = QpSender(qpn=0x11, dest_qpn=0x22, src=A, dst=B, sport=50000, payload=payload, mtu=MTU,
                  psn0=psn0, framer=Framer(A), line_rate_bps=100e9,
                  timeout_s=timeout_for(8), op=op, **kw)
    rx = QpReceiver(qpn=0x22, peer_qpn=0x11, src=B, dst=A, sport=50000, psn0=psn0,
                    nbytes=nbytes, mtu=MTU, framer=Framer(B), ooo=ooo, ack_every=100, op=op)
    return tx, rx


def send_all(tx, now=0.0):
    out = []
    while tx.wants():
        out.append(tx.next_frame(now))
    return out


def answer(tx, frames, now):
    for f in frames:
        op, qpn, psn, _, syn = parse(f)
        assert qpn == tx.qpn
        if op == OP_ACK:
            (tx.on_nak if syn == SYN_NAK_PSN else tx.on_ack)(psn, now)
        elif op == OP_CNP:
            tx.on_cnp(now)


def test_q1_q2_q3_frames_decode_with_opcodes_reth_and_icrc():
    tx, _ = pair(nbytes=3 * MTU + 10)
    frames = send_all(tx)
    objs = [decode_frame(1, f, i + 1).obj for i, f in enumerate(frames)]
    ops = [o["roce"]["bth"]["opcode"] for o in objs]
    assert ops == [0x06, 0x07, 0x07, 0x08]
    assert objs[0]["roce"]["reth"]["dma_length"] == 3 * MTU + 10
    assert "reth" not in objs[1]["roce"]
    assert all(o["roce"]["icrc"]["ok"] for o in objs) and all(not o["problems"] for o in objs)
    assert [o["roce"]["bth"]["psn"] for o in objs] == [0xFFFFFE, 0xFFFFFF, 0, 1]  # mod 2^24
    assert objs[-1]["roce"]["bth"]["ack_req"] and not objs[0]["roce"]["bth"]["ack_req"]
    assert objs[-1]["roce"]["bth"]["pad_cnt"] == 2                                   # 10 -> 12
    assert {o["udp"]["sport"] for o in objs} == {50000}
    assert {o["udp"]["dport"] for o in objs} == {4791}
    assert {o["ip"]["ecn"] for o in objs} == {2}
    one, _ = pair(nbytes=100)
    assert decode_frame(1, send_all(one)[0], 1).obj["roce"]["bth"]["opcode"] == 0x0A


def test_q4_q7_go_back_n_from_the_nakd_psn():
    tx, rx = pair()
    frames = send_all(tx)
    back = []
    for i, f in enumerate(frames):
        if i != 2:  # packet 2 is lost
            back += rx.on_data(f, 1e-6)
    # one NAK (PSN sequence error) for the expected PSN; packet 4 is dropped silently
    assert len(back) == 1 and parse(back[0])[4] == SYN_NAK_PSN
    assert parse(back[0])[2] == (0xFFFFFE + 2) % (1 << 24)
    assert (rx.naks, rx.dropped_ooo, rx.epsn) == (1, 2, 2)
    answer(tx, back, 2e-6)
    assert (tx.snd_una, tx.snd_nxt, tx.naks) == (2, 2, 1)
    again = send_all(tx, 3e-6)
    assert len(again) == 3 and tx.retx_bytes == 3 * MTU and tx.retx_packets == 3
    back = [a for f in again for a in rx.on_data(f, 4e-6)]
    answer(tx, back, 5e-6)
    assert tx.done_at == 5e-6 and rx.complete_at == 4e-6 and rx.placed_bytes == 5 * MTU


def test_q5_out_of_order_placement_without_nak():
    tx, rx = pair(ooo=True)
    frames = send_all(tx)
    back = []
    for i in (0, 3, 1, 4, 2):
        back += rx.on_data(frames[i], 1e-6)
    assert rx.naks == 0 and rx.epsn == 5 and rx.placed_bytes == 5 * MTU
    answer(tx, back, 2e-6)
    assert tx.done_at == 2e-6 and tx.retx_bytes == 0


def test_q6_ack_every_n_in_order_packets():
    tx, rx = pair(nbytes=10 * MTU)
    rx.ack_every = 4
    back = [a for f in send_all(tx) for a in rx.on_data(f, 0.0)]
    assert [parse(a)[2] for a in back] == [(0xFFFFFE + i) % (1 << 24) for i in (3, 7, 9)]


def test_q8_timeout_restarts_at_the_first_unacknowledged():
    tx, _ = pair()
    send_all(tx, 0.0)
    t = tx.next_timer()
    assert t == pytest.approx(timeout_for(8)) == pytest.approx(4.096e-6 * 256)
    tx.on_timer(t)
    assert (tx.snd_nxt, tx.timeouts) == (0, 1)
    send_all(tx, t)
    assert tx.retx_bytes == 5 * MTU


def test_q9_ce_sends_one_cnp_per_interval_and_it_cuts_the_rate():
    tx, rx = pair(nbytes=4 * MTU)
    frames = [set_ce(f) for f in send_all(tx)]
    assert all(f[15] & 3 == CE and icrc_ok(f) for f in frames)  # the ICRC masks the TOS (G.6)
    back = rx.on_data(frames[0], 0.0) + rx.on_data(frames[1], 1e-6)
    cnps = [b for b in back if parse(b)[0] == OP_CNP]
    assert len(cnps) == 1
    o = decode_frame(1, cnps[0], 1).obj["roce"]
    assert o["bth"]["opcode"] == 0x81 and o["bth"]["becn"] and o["bth"]["dest_qp"] == 0x11
    assert o["icrc"]["ok"] and len(cnps[0]) == 42 + 12 + 16 + 4
    answer(tx, cnps, 2e-6)
    assert tx.rp.rate == 50e9
    back = rx.on_data(frames[2], 51e-6)
    assert [parse(b)[0] for b in back] == [OP_CNP]


def test_q9_pacing_follows_the_rate():
    tx, _ = pair()
    f1 = tx.next_frame(0.0)
    assert tx.next_time == pytest.approx(len(f1) * 8 / 100e9)
    tx.on_cnp(0.0)
    f2 = tx.next_frame(tx.next_time)
    assert tx.next_time == pytest.approx(len(f1) * 8 / 100e9 + len(f2) * 8 / 50e9)


def test_q2_a_bad_icrc_is_dropped():
    tx, rx = pair()
    f = bytearray(send_all(tx)[0])
    f[-10] ^= 1
    assert rx.on_data(bytes(f), 0.0) == [] and rx.bad_icrc == 1 and rx.epsn == 0


# --- SEND (ROCE-Q1 with op="send"), decoded by ``uet decode --json`` ---------------------------------

def test_q1_send_of_three_packets_opcodes_psn_and_no_reth(decode_json):
    n = 2 * MTU + 102                     # 3 packets, the last of 102 bytes: pad 2
    tx, rx = pair(nbytes=n, psn0=0xFFFFFF, op="send")
    frames = send_all(tx)
    objs = decode_json(frames * 4)  # the fast reader compiles a kind at its 3rd
    for k in (3, 6, 9):
        assert objs[:3] == [dict(o, frame=o["frame"] - k) for o in objs[k:k + 3]]
    bths = [o["roce"]["bth"] for o in objs[:3]]
    assert [b["opcode"] for b in bths] == [0x00, 0x01, 0x02]        # SEND_FIRST, MIDDLE, LAST
    assert [b["opcode_name"] for b in bths] == ["RC_SEND_FIRST", "RC_SEND_MIDDLE",
                                                 "RC_SEND_LAST"]
    assert [b["psn"] for b in bths] == [0xFFFFFF, 0, 1]             # mod 2^24
    assert [b["ack_req"] for b in bths] == [False, False, True]
    assert [b["pad_cnt"] for b in bths] == [0, 0, 2]
    assert {b["dest_qp"] for b in bths} == {0x22}
    for o in objs:
        assert "reth" not in o["roce"] and o["roce"]["icrc"]["ok"] and not o["problems"]
    assert [len(f) for f in frames] == [42 + 12 + MTU + 4] * 2 + [42 + 12 + 104 + 4]
    # the responder takes them in order and answers the A bit with one ACK
    back = [a for f in frames for a in rx.on_data(f, 1e-6)]
    assert len(back) == 1 and rx.complete_at == 1e-6 and rx.placed_bytes == n
    (ack,) = decode_json(back)
    assert ack["roce"]["bth"]["opcode"] == 0x11 and ack["roce"]["bth"]["psn"] == 1
    assert ack["roce"]["aeth"]["syndrome"] == 0x1F and ack["roce"]["aeth"]["msn"] == 1
    assert ack["roce"]["icrc"]["ok"] and not ack["problems"]
    answer(tx, back, 2e-6)
    assert tx.done_at == 2e-6


def test_q1_send_only_is_one_packet():
    tx, rx = pair(nbytes=100, op="send")
    (f,) = send_all(tx)
    o = decode_frame(1, f, 1).obj["roce"]
    assert o["bth"]["opcode"] == 0x04 and o["bth"]["ack_req"] and "reth" not in o
    back = rx.on_data(f, 0.0)
    assert parse(back[0])[4] == 0x1F and rx.complete_at == 0.0


def test_q4_q7_send_goes_back_n_like_write():
    tx, rx = pair(nbytes=4 * MTU, op="send")
    frames = send_all(tx)
    back = [a for i, f in enumerate(frames) if i != 1 for a in rx.on_data(f, 1e-6)]
    (nak,) = back                                   # one NAK for the expected PSN
    assert parse(nak)[4] == SYN_NAK_PSN and parse(nak)[2] == (0xFFFFFE + 1) % (1 << 24)
    answer(tx, back, 2e-6)
    again = send_all(tx, 3e-6)
    assert [parse(f)[0] for f in again] == [0x01, 0x01, 0x02] and tx.retx_packets == 3
    answer(tx, [a for f in again for a in rx.on_data(f, 4e-6)], 5e-6)
    assert tx.done_at == 5e-6 and rx.placed_bytes == 4 * MTU


def test_q6_an_opcode_of_the_wrong_operation_is_dropped():
    tx, _ = pair(nbytes=2 * MTU)                    # WRITE frames ...
    _, rx = pair(nbytes=2 * MTU, op="send")         # ... to a SEND responder
    assert [a for f in send_all(tx) for a in rx.on_data(f, 0.0)] == []
    assert rx.bad_opcode == 2 and rx.epsn == 0
    with pytest.raises(ValueError):
        pair(op="read")
