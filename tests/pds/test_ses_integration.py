"""The SES sublayer on the PDS core (uet/pds/endpoint.py X1-X6): operations as requests, responses
on ACKs (stored per PSN, resent for duplicates and ACK_REQ), read data on a reverse PDC, transport
failure."""

from __future__ import annotations

from uet.pds import Endpoint, PdsConfig
from uet.ses import SesConfig, SesEndpoint
from uet.ses import events as sev
from uet.ses.atomics import SUM

A, B = "10.0.0.1", "10.0.0.2"
U64 = 0x07
ACK_TYPES = (7, 8, 9)


def pair(mode: str = "rud"):
    a, b = Endpoint(A, PdsConfig(), seed=1), Endpoint(B, PdsConfig(), seed=2)
    sa, sb = SesEndpoint(SesConfig(seed=1)), SesEndpoint(SesConfig(seed=2))
    a.attach_ses(sa, mode=mode)
    b.attach_ses(sb, mode=mode)
    return a, b, sa, sb


def pump(a, b, drop=lambda src, data, k: False, until: float = 1.0, steps: int = 100000):
    """Move datagrams between a and b in virtual time (5 us a hop); ``drop(src, data, k)`` with
    k = the index of that datagram among those ``src`` sent."""
    now = 0.0
    sent = {A: 0, B: 0}
    peer = {A: b, B: a}
    for _ in range(steps):
        moved = False
        for ep in (a, b):
            for data, meta in ep.datagrams_to_send(now):
                k = sent[ep.address]
                sent[ep.address] += 1
                moved = True
                if not drop(ep.address, data, k):
                    peer[ep.address].receive_datagram(data, meta, now + 5e-6)
        if moved:
            now += 5e-6
            continue
        ts = [t for t in (a.get_timer(), b.get_timer()) if t is not None]
        if not ts or min(ts) > until:
            return now
        now = max(now, min(ts))
        a.handle_timer(now)
        b.handle_timer(now)
    return now


def completes(ses):
    return [e for e in ses.events() if isinstance(e, (sev.OperationComplete, sev.OperationFailed))]


def test_write_and_fetching_atomic_complete_with_responses_on_acks():
    a, b, sa, sb = pair()
    mem = bytearray(64)
    sb.register(1, mem)
    sa.write(B, 1, 8, b"x" * 40)
    sa.atomic(B, 1, 0, SUM, U64, 5, fetch=True)
    acks_with_ses = []

    def watch(src, data, k):
        if src == B and data[0] >> 3 in ACK_TYPES and ((data[0] & 7) << 1 | data[1] >> 7):
            acks_with_ses.append(data)
        return False

    pump(a, b, watch)
    evs = completes(sa)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    fetched = [e.data for e in evs if e.op == "fetching_atomic"]
    assert fetched == [(0).to_bytes(8, "little")]
    assert mem[8:48] == b"x" * 40 and int.from_bytes(mem[:8], "little") == 5
    assert len(acks_with_ses) >= 2  # X3: the responses rode on ACKs
    assert a.stats["internal_error"] == b.stats["internal_error"] == 0


def test_lost_ack_duplicate_request_gets_the_stored_response_not_a_second_execution():
    a, b, sa, sb = pair()
    mem = bytearray(8)
    sb.register(1, mem)
    sa.atomic(B, 1, 0, SUM, U64, 7, fetch=True)
    pump(a, b, lambda src, data, k: src == B and k == 0)  # the first ACK (with the response) lost
    evs = completes(sa)
    assert len(evs) == 1 and isinstance(evs[0], sev.OperationComplete)
    assert evs[0].data == (0).to_bytes(8, "little")
    assert int.from_bytes(mem, "little") == 7  # executed once (W2 answered from X3's store)
    assert b.stats["dup_rx"] >= 1


def test_response_lost_under_a_cumulative_ack_is_asked_for_again():
    a, b, sa, sb = pair()
    mem = bytearray(8)
    sb.register(1, mem)
    sa.atomic(B, 1, 0, SUM, U64, 1, fetch=True)
    sa.atomic(B, 1, 0, SUM, U64, 2, fetch=True)
    # B's first ACK (for the first PSN, carrying its response) is lost; the second covers both
    pump(a, b, lambda src, data, k: src == B and k == 0)
    evs = completes(sa)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    assert sorted(int.from_bytes(e.data, "little") for e in evs) in ([0, 1], [0, 2])
    assert int.from_bytes(mem, "little") == 3
    assert a.stats["ack_req_tx"] >= 1  # X5


def test_read_data_beyond_the_ack_goes_on_a_reverse_pdc():
    for mode in ("rud", "rod"):
        a, b, sa, sb = pair(mode)
        data = bytes(range(256)) * 40
        sb.register(1, bytearray(data))
        sa.read(B, 1, 0, len(data))
        pump(a, b)
        evs = completes(sa)
        assert len(evs) == 1 and evs[0].data == data
        assert any(p.role == "initiator" for p in b.pdcs())  # B sent the data as requests


def test_pdc_failure_fails_the_operation():
    a, b, sa, sb = pair()
    sb.register(1, bytearray(64))
    sa.write(B, 1, 0, b"y" * 32)
    pump(a, b, lambda src, data, k: src == A, until=10.0)
    evs = completes(sa)
    assert len(evs) == 1 and isinstance(evs[0], sev.OperationFailed)
    assert evs[0].return_code == 0x1F


def test_plain_sends_unchanged_without_ses():
    a, b = Endpoint(A, PdsConfig(), seed=1), Endpoint(B, PdsConfig(), seed=2)
    assert a.ses_layer is None
    h = a.send_message(B, b"hello" * 100)
    pump(a, b)
    from uet.pds import events as ev
    got = [e for e in iter(b.next_event, None) if isinstance(e, ev.MessageDelivered)]
    done = [e for e in iter(a.next_event, None) if isinstance(e, ev.SendComplete)]
    assert [bytes(e.data) for e in got] == [b"hello" * 100] and [e.handle for e in done] == [h]


def test_attach_refuses_an_ses_mtu_beyond_the_pds_mtu():
    import pytest
    with pytest.raises(ValueError):
        Endpoint(A, PdsConfig(mtu=1024)).attach_ses(SesEndpoint(SesConfig(mtu=4096)))


def test_messages_beyond_the_reassembly_limit_get_no_ses_msg_avail_and_are_retried():
    a = Endpoint(A, PdsConfig(mtu=1024), seed=1)
    b = Endpoint(B, PdsConfig(mtu=1024), seed=2)
    # the SES owns its messages, so its config holds the limit (R1 of uet/ses/endpoint.py)
    sa = SesEndpoint(SesConfig(mtu=1024, seed=1))
    sb = SesEndpoint(SesConfig(mtu=1024, seed=2, max_rx_messages=1))
    a.attach_ses(sa)
    b.attach_ses(sb)
    mem = bytearray(8192)
    sb.register(1, mem)
    sa.write(B, 1, 0, b"a" * 4000)
    sa.write(B, 1, 4096, b"b" * 4000)
    pump(a, b, lambda src, data, k: src == A and k == 3)  # the first write stays incomplete
    evs = completes(sa)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    assert mem[:4000] == b"a" * 4000 and mem[4096:8096] == b"b" * 4000
    assert b.nacks_sent["NO_SES_MSG_AVAIL"] >= 1
