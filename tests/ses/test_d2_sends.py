"""D.1/D.2/D.9 send family: posted receives, tags with ignore bits, the unexpected list, header
data, deferrable send with restart tokens, rendezvous, MSG_ERROR, under loss and reordering."""

from __future__ import annotations

import pytest

from uet.ses import (MessageError, MessageReceived, OperationComplete, OperationFailed,
                     RecvFailed, SendDeferred)

from .helpers import only, pair, run


@pytest.mark.parametrize("seed", range(4))
def test_d2_send_multi_packet_under_loss_and_reorder(seed):
    a, b, lb = pair(mtu=512, seed=seed, loss=0.2, trim=0.1)
    h = b.post_recv()
    data = bytes((i * 7) % 251 for i in range(10_000))
    a.send("b", data, header_data=99, dc=True)
    evs = run(lb)
    (m,) = only(evs["b"], MessageReceived)
    assert m.data == data and m.recv_handle == h and m.header_data == 99 and m.dc and m.tag is None
    (c,) = only(evs["a"], OperationComplete)
    assert c.op == "send" and c.modified_length == len(data)


def test_d2_tagged_matching_with_ignore_bits_in_posting_order():
    a, b, lb = pair()
    h1 = b.post_recv(match_bits=0x1200, ignore_bits=0xFF)
    h2 = b.post_recv(match_bits=0x1200, ignore_bits=0xFF)
    hu = b.post_recv()  # untagged: never matches a tagged send
    a.tsend("b", b"first", 0x1234)
    evs = run(lb)
    a.tsend("b", b"second", 0x12FF)
    evs2 = run(lb)
    (m1,), (m2,) = only(evs["b"], MessageReceived), only(evs2["b"], MessageReceived)
    assert (m1.recv_handle, m1.tag, m1.data) == (h1, 0x1234, b"first")
    assert (m2.recv_handle, m2.tag) == (h2, 0x12FF)
    a.send("b", b"untagged")
    (m3,) = only(run(lb)["b"], MessageReceived)
    assert m3.recv_handle == hu


def test_d2_unexpected_list_then_post_recv():
    a, b, lb = pair(mtu=100)
    a.tsend("b", b"x" * 350, 7)
    a.send("b", b"plain")
    evs = run(lb)
    assert only(evs["b"], MessageReceived) == []
    assert len(only(evs["a"], OperationComplete)) == 2
    assert b.stats["unexpected"] == 2
    b.post_recv(match_bits=8)  # no match: stays posted
    assert b.events() == []
    h = b.post_recv(match_bits=7)
    (m,) = only(b.events(), MessageReceived)
    assert m.unexpected and m.data == b"x" * 350 and m.recv_handle == h
    b.post_recv()
    (m,) = only(b.events(), MessageReceived)
    assert m.data == b"plain"


def test_d7_unexpected_response_says_overflow_list():
    a, b, lb = pair()
    a.send("b", b"u")
    (p,) = a.packets_to_send()
    rsp = b.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="a")
    assert rsp.ses["list"] == 1 and rsp.ses["return_code"] == 1


def test_m3_capacity_too_long_consumes_receive():
    a, b, lb = pair()
    h = b.post_recv(2)
    a.send("b", b"abc")
    evs = run(lb)
    (rf,) = only(evs["b"], RecvFailed)
    assert rf.recv_handle == h
    assert only(evs["a"], OperationFailed)


@pytest.mark.parametrize("tagged", [False, True])
def test_d9_deferrable_send_restart(tagged):
    a, b, lb = pair(mtu=300, loss=0.1, seed=3)
    data = bytes(range(256)) * 4
    mb = 0x77 if tagged else None
    a.deferrable_send("b", data, match_bits=mb)
    evs = run(lb)
    (d,) = only(evs["a"], SendDeferred)
    assert not only(evs["b"], MessageReceived) and b.stats["deferred"] == 1
    h = b.post_recv(match_bits=mb)
    evs = run(lb)
    (m,) = only(evs["b"], MessageReceived)
    assert m.data == data and m.recv_handle == h and m.opcode == (0x0B if tagged else 0x08)
    (c,) = only(evs["a"], OperationComplete)
    assert c.handle == d.handle


def test_d9_deferrable_send_with_receive_posted_goes_straight():
    a, b, lb = pair()
    b.post_recv()
    a.deferrable_send("b", b"now")
    evs = run(lb)
    assert only(evs["b"], MessageReceived)[0].data == b"now"
    assert not only(evs["a"], SendDeferred)


def test_d9_restart_with_unknown_target_token_fails():
    a, b, lb = pair()
    a.deferrable_send("b", b"x")
    (p,) = a.packets_to_send()
    p.ses["target_restart_token"] = 12345
    a._ops[p.message_id].restarted = True
    rsp = b.receive(p.next_hdr, p.ses, None, p.payload, peer="a")
    a.receive(rsp.next_hdr, rsp.ses, None, b"", peer="b", message_id=p.message_id)
    (f,) = only(a.events(), OperationFailed)
    assert f.return_code == 0x05


@pytest.mark.parametrize("tagged,posted_first", [(False, True), (True, True), (False, False)])
def test_d5_rendezvous_send_pulls_the_rest(tagged, posted_first):
    a, b, lb = pair(mtu=1000, loss=0.1, seed=9)
    mb = 0x42 if tagged else None
    data = bytes((i * 13) % 256 for i in range(7_777))
    if posted_first:
        h = b.post_recv(match_bits=mb)
    a.rendezvous_send("b", data, match_bits=mb, eager=500)
    evs = run(lb)
    if not posted_first:
        assert not only(evs["b"], MessageReceived)
        h = b.post_recv(match_bits=mb)
        evs["b"] += b.events()
    (m,) = only(evs["b"], MessageReceived)
    assert m.data == data and m.recv_handle == h
    (c,) = only(evs["a"], OperationComplete)
    assert c.op == "rendezvous_send"
    assert not [k for k in a.regions]  # the source region is released


def test_d1_msg_error_terminates_partial_message():
    a, b, lb = pair(mtu=100)
    b.post_recv()
    h = a.send("b", b"m" * 1000)
    ps = a.packets_to_send()
    for p in ps[:3]:  # part of the message arrives
        b.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="a")
    assert a.abort(h)
    (f,) = only(a.events(), OperationFailed)
    assert f.return_code == 0x1E  # CANCELLED
    (err,) = a.packets_to_send()
    assert err.ses["opcode"] == 0x0F
    rsp = b.receive(err.next_hdr, err.ses, None, b"", peer="a")
    assert rsp.ses["return_code"] == 1
    assert only(b.events(), MessageError)[0].reason.startswith("message terminated")
    assert not b._rx


def test_d1_no_op_round_trip():
    a, b, lb = pair()
    a.no_op("b")
    assert only(run(lb)["a"], OperationComplete)[0].op == "no_op"


def test_i3_an_operation_acknowledged_by_the_transport_still_waits_for_its_response():
    """SES-I3 (D.7): the transport's ACK of every request is noted on the operation, which completes
    only when its response comes; a driver asks acked_by_transport to tell a target that took
    the bytes but never answered from one that never got them."""
    a, b, lb = pair()
    h = a.send("b", b"x" * 100)
    (item,) = a.items_to_send()
    assert not a.acked_by_transport(h)
    a.acked(item.message_id, 0.0)  # what the PDS says once CACK covers its requests (C.2)
    assert a.acked_by_transport(h) and a.outstanding == 1 and not a.events()
    a.transport_failed(item.message_id, "no SES response")
    assert not a.acked_by_transport(h)
    (f,) = only(a.events(), OperationFailed)
    assert f.handle == h and f.reason == "no SES response"
