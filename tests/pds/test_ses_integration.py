"""The SES as the PDS's upper layer, two whole hosts (uet/host.py; PDS-X1 to PDS-X6 of uet/pds/initiator.py,
PDS-W5 and PDS-X3 of uet/pds/target.py): operations as requests, responses on ACKs (stored per PSN, resent
for duplicates and ACK_REQ), read data on a reverse PDC, transport failure."""

from __future__ import annotations

import pytest

from uet.host import Host
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.ses import events as sev
from uet.ses.atomics import SUM

A, B = "10.0.0.1", "10.0.0.2"
U64 = 0x07
ACK_TYPES = (7, 8, 9)


def pair(mode: str = "rud", *, mtu: int = 4096, b_ses: dict | None = None):
    """Two hosts whose SES sends its own packets (read data ...) over ``mode`` too."""
    a = Host(A, pds=PdsConfig(mtu=mtu), ses=SesConfig(mtu=mtu, seed=1), seed=1, ses_mode=mode)
    b = Host(B, pds=PdsConfig(mtu=mtu), ses=SesConfig(mtu=mtu, seed=2, **(b_ses or {})), seed=2,
             ses_mode=mode)
    return a, b


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


def host_events(h):
    out = []
    while (e := h.next_event()) is not None:
        out.append(e)
    return out


def completes(h):
    return [e for e in host_events(h) if isinstance(e, (sev.OperationComplete, sev.OperationFailed))]


def test_write_and_fetching_atomic_complete_with_responses_on_acks():
    a, b = pair()
    mem = bytearray(64)
    b.ses.register(1, mem)
    a.op("rud", a.ses.write, B, 1, 8, b"x" * 40)
    a.op("rud", a.ses.atomic, B, 1, 0, SUM, U64, 5, fetch=True)
    acks_with_ses = []

    def watch(src, data, k):
        if src == B and data[0] >> 3 in ACK_TYPES and ((data[0] & 7) << 1 | data[1] >> 7):
            acks_with_ses.append(data)
        return False

    pump(a, b, watch)
    evs = completes(a)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    fetched = [e.data for e in evs if e.op == "fetching_atomic"]
    assert fetched == [(0).to_bytes(8, "little")]
    assert mem[8:48] == b"x" * 40 and int.from_bytes(mem[:8], "little") == 5
    assert len(acks_with_ses) >= 2  # PDS-X3: the responses rode on ACKs
    assert a.stats["internal_errors"] == b.stats["internal_errors"] == 0


def test_lost_ack_duplicate_request_gets_the_stored_response_not_a_second_execution():
    a, b = pair()
    mem = bytearray(8)
    b.ses.register(1, mem)
    a.op("rud", a.ses.atomic, B, 1, 0, SUM, U64, 7, fetch=True)
    pump(a, b, lambda src, data, k: src == B and k == 0)  # the first ACK (with the response) lost
    evs = completes(a)
    assert len(evs) == 1 and isinstance(evs[0], sev.OperationComplete)
    assert evs[0].data == (0).to_bytes(8, "little")
    assert int.from_bytes(mem, "little") == 7  # executed once (PDS-W2 answered from PDS-X3's store)
    assert b.stats["dup_rx"] >= 1


def test_response_lost_under_a_cumulative_ack_is_asked_for_again():
    a, b = pair()
    mem = bytearray(8)
    b.ses.register(1, mem)
    a.op("rud", a.ses.atomic, B, 1, 0, SUM, U64, 1, fetch=True)
    a.op("rud", a.ses.atomic, B, 1, 0, SUM, U64, 2, fetch=True)
    # B's first ACK (for the first PSN, carrying its response) is lost; the second covers both
    pump(a, b, lambda src, data, k: src == B and k == 0)
    evs = completes(a)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    assert sorted(int.from_bytes(e.data, "little") for e in evs) in ([0, 1], [0, 2])
    assert int.from_bytes(mem, "little") == 3
    assert a.stats["ack_req_tx"] >= 1  # PDS-X5


@pytest.mark.parametrize("mode", ["rud", "rod"])
def test_read_data_beyond_the_ack_goes_on_a_reverse_pdc(mode):
    a, b = pair(mode)
    data = bytes(range(256)) * 40
    b.ses.register(1, bytearray(data))
    a.op(mode, a.ses.read, B, 1, 0, len(data))
    pump(a, b)
    evs = completes(a)
    assert len(evs) == 1 and evs[0].data == data
    # B sent the data as requests, on a PDC of its own in the same mode
    assert [p.mode for p in b.pdcs() if p.role == "initiator"] == [mode]


def test_pdc_failure_fails_the_operation():
    a, b = pair()
    b.ses.register(1, bytearray(64))
    a.op("rud", a.ses.write, B, 1, 0, b"y" * 32)
    pump(a, b, lambda src, data, k: src == A, until=10.0)
    evs = completes(a)
    assert len(evs) == 1 and isinstance(evs[0], sev.OperationFailed)
    assert evs[0].return_code == 0x1F


def test_a_plain_send_arrives_as_message_received_and_completes():
    """Every send is an SES SEND now (the PDS has no message layer of its own): ``host.send``
    lands in the target's posted receive with the same bytes and completes at the sender when
    its response rides back on an ACK."""
    a, b = pair()
    r = b.ses.post_recv()
    h = a.send(B, b"hello" * 100)
    pump(a, b)
    got = [e for e in host_events(b) if isinstance(e, sev.MessageReceived)]
    done = completes(a)
    assert [(bytes(e.data), e.peer, e.recv_handle) for e in got] == [(b"hello" * 100, A, r)]
    assert [(type(e), e.handle) for e in done] == [(sev.OperationComplete, h)]


def test_host_refuses_an_ses_mtu_beyond_the_pds_mtu():
    with pytest.raises(ValueError):
        Host(A, pds=PdsConfig(mtu=1024), ses=SesConfig(mtu=4096))
    assert Host(A, pds=PdsConfig(mtu=1024), ses=SesConfig(mtu=1024)).ses.config.mtu == 1024


def test_messages_beyond_the_reassembly_limit_get_no_ses_msg_avail_and_are_retried():
    # the SES owns its messages, so its config holds the limit (SES-R1 of uet/ses/target.py)
    a, b = pair(mtu=1024, b_ses={"max_rx_messages": 1})
    mem = bytearray(8192)
    b.ses.register(1, mem)
    a.op("rud", a.ses.write, B, 1, 0, b"a" * 4000)
    a.op("rud", a.ses.write, B, 1, 4096, b"b" * 4000)
    pump(a, b, lambda src, data, k: src == A and k == 3)  # the first write stays incomplete
    evs = completes(a)
    assert [type(e) for e in evs] == [sev.OperationComplete] * 2
    assert mem[:4000] == b"a" * 4000 and mem[4096:8096] == b"b" * 4000
    assert b.nacks_sent["NO_SES_MSG_AVAIL"] >= 1
