"""B.13/C.8 RUDI and B.14/C.8 UUD: the sans-IO cores (uet.pds.rudi, uet.pds.uud) alone and under
the SES through the lossy loopback."""

from __future__ import annotations

import pytest

from uet import wire
from uet.pds import DatagramMeta
from uet.pds.rudi import RudiConfig, RudiEndpoint, RudiRequest, RudiRequestFailed, RudiResponse
from uet.pds.uud import UudDatagram, UudEndpoint
from uet.ses import DatagramReceived, MessageError, OperationComplete, OperationFailed, SesConfig, SesEndpoint
from uet.ses.loopback import Loopback

from .helpers import only, run


def deliver(src, dst, now=0.0, dscp=None):
    out = src.datagrams_to_send(now)
    for data, meta in out:
        if dscp is not None:
            meta = DatagramMeta(meta.src, meta.dst, meta.sport, meta.dport, meta.ecn, dscp)
        dst.receive_datagram(data, meta, now)
    return out


def test_b13_rudi_request_response_wire_format():
    a, b = RudiEndpoint("10.0.0.1"), RudiEndpoint("10.0.0.2")
    pid = a.send_request("10.0.0.2", 3, b"SESBYTES", 0.0, tag="t")
    (data, meta), = deliver(a, b)
    f = wire.decode("pds.rudi", data)
    assert f["type"] == 4 and f["next_hdr"] == 3 and f["pkt_id"] == pid and not f["retx"]
    assert data[8:-4] == b"SESBYTES"
    req = b.next_event()
    assert isinstance(req, RudiRequest) and req.pkt_id == pid and req.ses == b"SESBYTES"
    b.respond(req, 4, b"RSP")
    (data, meta), = deliver(b, a)
    f = wire.decode("pds.rudi", data)
    assert f["type"] == 5 and f["next_hdr"] == 4 and f["pkt_id"] == pid
    rsp = a.next_event()
    assert isinstance(rsp, RudiResponse) and rsp.tag == "t" and rsp.ses == b"RSP"
    assert a.outstanding == 0 and a.get_timer() is None


def test_u11_rudi_answers_go_to_the_uet_port_from_the_request_ev():
    """A.1, H.1 #19: a RUDI response and a RUDI NACK go to the UET port the request went to, with
    the request's EV in their source port; the initiator credits that EV (its selector)."""
    a, b = RudiEndpoint("10.0.0.1"), RudiEndpoint("10.0.0.2")
    a.send_request("10.0.0.2", 3, b"x", 0.0)
    (_, req_meta), = deliver(a, b)
    ev, port = req_meta.sport, req_meta.dport
    assert port == 4793 and ev != port
    b.respond(b.next_event(), 4, b"RSP")
    (_, meta), = deliver(b, a)
    assert (meta.src, meta.dst, meta.sport, meta.dport) == ("10.0.0.2", "10.0.0.1", ev, port)
    assert isinstance(a.next_event(), RudiResponse)
    b.nack(req_meta, 7, 0x07)
    (_, meta), = b.datagrams_to_send()
    assert (meta.sport, meta.dport, meta.dscp) == (ev, port, 46)


def test_c8_rudi_per_packet_rto_then_failure():
    a = RudiEndpoint("10.0.0.1", RudiConfig(rto=1e-3, max_retx=3))
    pid = a.send_request("10.0.0.2", 3, b"x", 0.0)
    a.datagrams_to_send()
    now, sent = 0.0, []
    while (t := a.get_timer()) is not None:
        now = t
        a.handle_timer(now)
        sent += a.datagrams_to_send()
    assert len(sent) == 3 and all(wire.decode("pds.rudi", d)["retx"] for d, _ in sent)
    ev = a.next_event()
    assert isinstance(ev, RudiRequestFailed) and ev.pkt_id == pid
    assert now == pytest.approx(1e-3 + 2e-3 + 4e-3 + 8e-3)


def test_b10_rudi_trimmed_request_gets_nack_nt1_and_resend():
    a, b = RudiEndpoint("10.0.0.1"), RudiEndpoint("10.0.0.2")
    pid = a.send_request("10.0.0.2", 3, b"y" * 300, 0.0)
    deliver(a, b, dscp=11)
    assert b.next_event() is None
    (nack, meta), = deliver(b, a)
    f = wire.decode("pds.nack", nack)
    assert f["nt"] and f["pkt_id"] == pid and f["nack_code"] == 0x01
    assert f["spdcid"] == 0 and f["dpdcid"] == 0 and meta.dscp == 46
    (again, _), = a.datagrams_to_send()
    assert wire.decode("pds.rudi", again)["retx"]


def test_b11_rudi_nack_reactions():
    a = RudiEndpoint("10.0.0.1", RudiConfig(nack_retx_time=5e-3))
    b = RudiEndpoint("10.0.0.2")
    p1 = a.send_request("10.0.0.2", 3, b"1", 0.0)
    p2 = a.send_request("10.0.0.2", 3, b"2", 0.0)
    a.datagrams_to_send()
    meta = DatagramMeta("10.0.0.1", "10.0.0.2", 49152)
    b.nack(meta, p1, 0x07)  # NO_PKT_BUFFER: resend after NACK_RETX_TIME
    b.nack(meta, p2, 0x19)  # UNEXP_EVENT: fail
    b.nack(meta, 999, 0x01)  # unknown pkt_id
    deliver(b, a, now=0.0)
    assert a.datagrams_to_send() == []
    ev = a.next_event()
    assert isinstance(ev, RudiRequestFailed) and ev.pkt_id == p2 and "UNEXP_EVENT" in ev.reason
    assert a.stats["unknown_nack"] == 1
    assert a.get_timer() == pytest.approx(5e-3)
    a.handle_timer(5e-3)
    assert len(a.datagrams_to_send()) == 1


def test_c8_rudi_unknown_and_duplicate_responses_dropped_and_counted():
    a, b = RudiEndpoint("10.0.0.1"), RudiEndpoint("10.0.0.2")
    a.send_request("10.0.0.2", 3, b"x", 0.0)
    deliver(a, b)
    req = b.next_event()
    b.respond(req, 4, b"r")
    b.respond(req, 4, b"r")  # e.g. a duplicate request answered twice
    deliver(b, a)
    assert isinstance(a.next_event(), RudiResponse) and a.next_event() is None
    assert a.stats["unknown_response"] == 1


def test_a3_rudi_bad_crc_and_garbage_never_raise():
    a = RudiEndpoint("10.0.0.1")
    meta = DatagramMeta("10.0.0.2", "10.0.0.1", 4793)
    for junk in (b"", b"\x20", bytes(12), b"\x20\x00\x00\x00" + bytes(8), bytes(range(40))):
        a.receive_datagram(junk, meta, 0.0)
    assert a.next_event() is None and sum(a.stats.values()) == 5


@pytest.mark.parametrize("seed", range(5))
def test_c8_rudi_rma_idempotent_under_loss_dup_trim_reorder(seed):
    a, b = SesEndpoint(SesConfig(mtu=512, seed=seed)), SesEndpoint(SesConfig(mtu=512))
    mem = bytearray(8192)
    b.register(3, mem)
    lb = Loopback({"a": a, "b": b}, mode="rudi", loss=0.25, trim=0.15, dup=0.3, seed=seed,
                  rudi=RudiConfig(max_retx=30, max_nack_retx=30, seed=seed))
    data = bytes((i * 31 + seed) % 256 for i in range(8192))
    for off in range(0, 8192, 512):  # RUDI: one single-packet write per chunk
        a.write("b", 3, off, data[off:off + 512])
    evs = run(lb)
    assert len(only(evs["a"], OperationComplete)) == 16 and bytes(mem) == data
    for off in range(0, 8192, 512):
        a.read("b", 3, off, 512)
    evs = run(lb)
    got = sorted(only(evs["a"], OperationComplete), key=lambda e: e.message_id)
    assert b"".join(e.data for e in got) == data
    assert lb.stats["dropped"] and lb.stats["duplicated"]
    assert b.stats["requests"] >= 32  # repeats executed again, results unchanged (idempotent)


def test_c8_rudi_send_refused_and_multi_packet_not_carried():
    a, b = SesEndpoint(SesConfig(mtu=100)), SesEndpoint(SesConfig(mtu=100))
    b.register(1, bytearray(1000))
    b.post_recv()
    lb = Loopback({"a": a, "b": b}, mode="rudi")
    a.send("b", b"not idempotent")
    a.write("b", 1, 0, b"z" * 300)
    evs = run(lb)
    codes = sorted(e.return_code for e in only(evs["a"], OperationFailed))
    assert codes == [0x18, 0x1F]  # OP_VIOLATION; UNDELIVERABLE (multi-packet over RUDI)


# --- UUD ------------------------------------------------------------------------------------------

def test_b14_uud_wire_format_and_no_retransmission():
    a, b = UudEndpoint("10.0.0.1"), UudEndpoint("10.0.0.2")
    assert a.send_datagram("10.0.0.2", b"SES", next_hdr=3)
    (data, meta), = deliver(a, b)
    f = wire.decode("pds.uud", data)
    assert f["type"] == 6 and f["next_hdr"] == 3 and len(data) == 4 + 3 + 4
    ev = b.next_event()
    assert isinstance(ev, UudDatagram) and ev.ses == b"SES"
    assert a.get_timer() is None


def test_b14_uud_trimmed_and_corrupted_dropped():
    a, b = UudEndpoint("10.0.0.1"), UudEndpoint("10.0.0.2")
    a.send_datagram("10.0.0.2", b"x" * 100)
    deliver(a, b, dscp=11)
    a.send_datagram("10.0.0.2", b"x" * 100)
    (data, meta), = a.datagrams_to_send()
    b.receive_datagram(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:], meta)
    assert b.next_event() is None and b.stats["trimmed"] == 1 and b.stats["bad_crc"] == 1
    assert not a.send_datagram("10.0.0.2", b"x" * 10_000) and a.stats["too_long"] == 1


@pytest.mark.parametrize("seed", range(4))
def test_c8_uud_under_loss_delivers_subset_never_corrupted_or_duplicated(seed):
    a, b = SesEndpoint(SesConfig(mtu=1024, seed=seed)), SesEndpoint()
    lb = Loopback({"a": a, "b": b}, mode="uud", loss=0.3, trim=0.2, corrupt=0.2, dup=0.0,
                  seed=seed)
    sent = [bytes([i]) * (50 + i * 7) + i.to_bytes(2, "big") for i in range(120)]
    for d in sent:
        a.datagram("b", d)
    evs = run(lb)
    got = [e.data for e in only(evs["b"], DatagramReceived)]
    assert 0 < len(got) < len(sent)
    assert set(got) <= set(sent) and len(got) == len(set(got))
    assert not a.outstanding and not only(evs["a"], OperationFailed)


def test_c8_uud_non_datagram_dropped_and_counted():
    a, b = SesEndpoint(), SesEndpoint()
    b.register(1, bytearray(8))
    lb = Loopback({"a": a, "b": b}, mode="uud")
    a.write("b", 1, 0, b"x")
    evs = run(lb)
    assert b.stats["uud_not_datagram"] == 1 and only(evs["b"], MessageError)
    assert bytes(b.regions[1].buffer) == bytes(8)


def test_a_bug_in_rudi_or_uud_is_an_internal_error_not_bad_input():
    """PDS-R3 of uet/pds/endpoint.py holds for the endpoints without PDCs too: an exception of their
    own logic is counted as internal_errors (the host adds them up) and kept with the datagram."""
    from uet.host import Host
    from uet.pds import DatagramMeta, seal

    h = Host("10.0.0.2")
    h.rudi._receive = lambda *a, **k: (_ for _ in ()).throw(KeyError("bug"))
    m = DatagramMeta("10.0.0.1", "10.0.0.2", 50000, 4793, 2, 0)
    d = seal((bytes([4 << 3]) + bytes(40),), m)
    h.receive_datagram(d, m, 0.0)
    assert isinstance(h.rudi.last_error, KeyError) and h.rudi.last_error_datagram == d.hex()
    sender = Host("10.0.0.1")
    assert sender.uud.send_datagram("10.0.0.2", b"ses bytes")
    (d, m), = sender.datagrams_to_send(0.0)
    h.uud._events = None  # a bug: appending the delivery fails
    h.receive_datagram(d, m, 0.0)
    assert isinstance(h.uud.last_error, AttributeError) and h.uud.last_error_datagram == d.hex()
    assert h.rudi.stats["malformed"] == h.uud.stats["malformed"] == 0
    assert h.stats["internal_errors"] == 2
