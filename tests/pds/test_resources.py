"""Issue 11 items 2 and 3: reassembly memory is charged for bytes that arrived (never for a claimed
length) and bounded per peer and in all (PDS-W5 of uet/pds/target.py asking SES-R1/SES-R2 of
uet/ses/target.py: the SES owns the messages and their budget, the PDS NACKs what it refuses);
partial messages and PDCs are limited per peer, idle partial messages are dropped (PDS-R3, on the
host's timer: HOST-H4 of uet/host.py) and idle PDCs reaped (PDS-T3); and the sender's resource-NACK retries
back off long enough to outlast the reaping (PDS-I10)."""

from __future__ import annotations

CHUNK_BYTES = 256 << 10  # uet.native.CHUNK_BYTES (a literal, so this module imports on old code too)
from uet.host import Host
from uet.pds import DatagramMeta, Endpoint, PdsConfig, seal
from uet.ses import events as sev
from uet.ses.packets import decode_ses
from uet.wire.build import uet_bytes
from uet.wire.enums import NACK_CODE

from .helpers import (A, B, EV, S, Recorder, decode, events, host_initiator, host_target, out,
                      request, send, target)

NC = {name: code for code, name in NACK_CODE.table.items()}
GIB = 1 << 30


def _syn_claim(spdcid: int, total: int, *, src: str = A, payload: bytes = b"x" * 100,
               message_id: int = 1) -> tuple[bytes, DatagramMeta]:
    """A valid-CRC SYN request whose SEND header claims ``total`` bytes (SOM, not EOM). The SES
    names a multi-packet message by (source, initiator, message id) (SES-K1 of uet/ses/target.py):
    claims meant as separate messages from one source need their own ``message_id``."""
    pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": S, "spdcid": spdcid,
           "psn_offset": 0}
    ses = {"opcode": 5, "message_id": message_id, "request_length": total, "som": True,
           "eom": False}
    m = DatagramMeta(src, B, EV, 4793, 2, 0)
    return seal((uet_bytes(pds, ses, None, payload),), m), m


def _nack_codes(ep) -> list[str | None]:
    return [layer["pds"].get("nack_code_name") for layer, _ in out(ep)]


def test_w5_a_claim_of_a_gigabyte_is_charged_one_chunk():
    ep = host_target()
    ep.receive_datagram(*_syn_claim(1, GIB, message_id=1), 0.0)
    ep.receive_datagram(*_syn_claim(2, GIB, message_id=2), 0.0)
    assert _nack_codes(ep) == [None, None]  # both accepted (ACKed)
    assert ep.ses.in_reassembly == 2
    assert ep.ses.budget.bytes == 2 * CHUNK_BYTES  # not 2 GiB


def test_w5_real_multi_packet_messages_still_arrive_after_huge_claims():
    ep = host_target()
    for i in range(1, 6):
        ep.receive_datagram(*_syn_claim(i, GIB, message_id=i), 0.0)
    out(ep)
    events(ep)
    data = bytes(range(256)) * 64
    for k, off in enumerate(range(0, len(data), 4096)):
        ep.receive_datagram(*request(S + k, syn=True, spdcid=99, payload=data[off:off + 4096],
                                     offset=off, total=len(data), message_id=7), 0.0)
    got = [e for e in events(ep) if isinstance(e, sev.MessageReceived)]
    assert [bytes(e.data) for e in got] == [data] and got[0].message_id == 7
    assert ep.ses.budget.bytes == 5 * CHUNK_BYTES  # the claims' chunks; the message's are freed


def test_w5_partial_messages_are_limited_per_peer_not_for_everyone():
    ep = host_target(max_rx_messages_per_peer=3)
    for i in range(1, 5):
        ep.receive_datagram(*_syn_claim(i, 1 << 20, message_id=i), 0.0)
    assert _nack_codes(ep) == [None, None, None, "NO_SES_MSG_AVAIL"]
    ep.receive_datagram(*_syn_claim(50, 1 << 20, src="10.0.0.3"), 0.0)
    assert _nack_codes(ep) == [None]  # another peer is not affected


def test_w5_storage_is_limited_per_peer_with_no_pkt_buffer():
    ep = host_target(rx_bytes_per_peer=3 * CHUNK_BYTES)
    for i in range(1, 5):
        ep.receive_datagram(*_syn_claim(i, GIB, message_id=i), 0.0)
    assert _nack_codes(ep) == [None, None, None, "NO_PKT_BUFFER"]
    ep.receive_datagram(*_syn_claim(50, GIB, src="10.0.0.3"), 0.0)
    assert _nack_codes(ep) == [None]
    assert ep.ses.budget.peer_messages(A) == 3  # the refused message holds nothing
    assert ep.ses.budget.peer_bytes(A) == 3 * CHUNK_BYTES


def test_r3_an_idle_partial_message_is_dropped_and_its_storage_freed():
    """Once the PDS's SES-T7 (a target PDC holding a partial message freed when idle), now SES-R3 of
    uet/ses/target.py on the host's timer (HOST-H4): the SES drops the message after
    ``partial_timeout`` with a MessageError (DROPPED, D.8 0x24) and releases its budget. The PDC
    is the PDS's and stays; what arrives late of the dropped message is never delivered."""
    ep = host_target(partial_timeout=2.0)
    ep.receive_datagram(*_syn_claim(1, 8192, payload=b"x" * 4096), 0.0)
    (ack, _), = out(ep)
    pdcid = ack["pds"]["spdcid"]
    events(ep)
    assert ep.ses.budget.bytes > 0 and ep.ses.budget.peer_messages(A) == 1
    dropped_at = None
    for _ in range(10):
        t = ep.get_timer()
        assert t is not None  # a partial message is held: the sweep is armed
        ep.handle_timer(t)
        evs = events(ep)
        if ep.ses.in_reassembly == 0:
            dropped_at = t
            break
        assert evs == []  # not dropped while younger than partial_timeout
    assert dropped_at is not None and 2.0 <= dropped_at <= 3.0
    assert evs == [sev.MessageError(A, 1, 5, 0x24, "partial message idle: dropped")]
    assert ep.ses.budget.bytes == 0 and ep.ses.budget.messages == 0
    assert ep.ses.budget.peer_messages(A) == 0 and ep.ses.budget.peer_bytes(A) == 0
    # the rest of the dropped message, arriving late: ACKed, without a response, not delivered
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, spdcid=1, ar=True, payload=b"y" * 4096,
                                 offset=4096, total=8192, message_id=1), dropped_at + 0.1)
    (late, _), = out(ep, dropped_at + 0.1)
    assert late["pds"]["type_name"] == "ACK_CC" and late["pds"]["next_hdr"] == 0
    assert not [e for e in events(ep) if isinstance(e, sev.MessageReceived)]
    # the PDC itself still carries the next message
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid, spdcid=1, ar=True, payload=b"z" * 50,
                                 message_id=2), dropped_at + 0.2)
    (ok, _), = out(ep, dropped_at + 0.2)
    assert ok["ses"]["return_code_name"] == "OK"
    got = [e for e in events(ep) if isinstance(e, sev.MessageReceived)]
    assert [(e.message_id, bytes(e.data)) for e in got] == [(2, b"z" * 50)]


def test_r3_a_message_dropped_at_the_target_fails_at_its_initiator_not_silently():
    """A pair of hosts: the second packet of a message is held up until the target has dropped
    the partial message (PDS-R3). Its late arrival is not delivered; the initiator never hears the
    message complete but fails it (PDS-X5: no SES response, UNDELIVERABLE 0x1F)."""
    a = host_initiator(mtu=1024, max_rto_retx=12)
    b = host_target(mtu=1024, partial_timeout=5e-3)
    h = a.send(B, bytes(range(256)) * 8)  # two requests
    log_a, log_b = [], []
    first_psn = None
    now = 0.0
    for _ in range(20000):
        dropped = any(isinstance(e, sev.MessageError) for e in log_b)
        moved = False
        for src, dst in ((a, b), (b, a)):
            for d, m in src.datagrams_to_send(now):
                moved = True
                if src is a and d[0] >> 3 == 2:  # RUD_REQ
                    psn = decode(d, m)["pds"]["psn"]
                    first_psn = psn if first_psn is None else first_psn
                    if psn == first_psn + 1 and not dropped:
                        continue  # held up
                dst.receive_datagram(d, m, now + 5e-6)
        log_a += events(a)
        log_b += events(b)
        if moved:
            now += 5e-6
            continue
        ts = [t for t in (a.get_timer(), b.get_timer()) if t is not None]
        if not ts:
            break
        now = max(now, min(ts))
        a.handle_timer(now)
        b.handle_timer(now)
    assert not [e for e in log_b if isinstance(e, sev.MessageReceived)]
    drops = [e for e in log_b if isinstance(e, sev.MessageError)]
    assert drops and all(e.return_code == 0x24 and e.peer == A for e in drops)
    assert not [e for e in log_a if isinstance(e, sev.OperationComplete)]
    failed = [e for e in log_a if isinstance(e, sev.OperationFailed)]
    assert [(e.handle, e.return_code) for e in failed] == [(h, 0x1F)]
    assert b.ses.in_reassembly == 0 and b.ses.budget.bytes == 0
    assert a.stats["internal_errors"] == b.stats["internal_errors"] == 0


def test_t3_one_address_cannot_take_the_pdc_table():
    ep = target(max_pdcs=64, max_pdcs_per_peer=8)
    codes = []
    for i in range(1, 21):
        ep.receive_datagram(*request(S, syn=True, spdcid=i, sport=1000 + i), 0.0)
        codes += _nack_codes(ep)
    assert codes.count("NO_PDC_AVAIL") == 12 and len(ep.pdcs()) == 8
    data, meta = request(S, syn=True, spdcid=5)
    meta = DatagramMeta("10.0.0.3", B, EV, 4793, 2, 0)
    ep.receive_datagram(seal((data[:-4],), meta), meta, 0.0)
    assert _nack_codes(ep) == [None]


def _run(eps: dict[str, Endpoint], until: float, *, latency: float = 10e-6) -> list:
    """A lossless wire between endpoints (by address): every datagram arrives ``latency`` later;
    time jumps to the next timer when nothing is in flight."""
    now = 0.0
    flight: list = []
    log: list = []
    while now <= until:
        for ep in eps.values():
            for d, m in ep.datagrams_to_send(now):
                flight.append((now + latency, m.dst, d, m))
            while (e := ep.next_event()) is not None:
                log.append((ep.address, e))
        if flight:
            flight.sort(key=lambda x: x[0])
            at, dst, d, m = flight.pop(0)
            now = max(now, at)
            eps[dst].receive_datagram(d, m, now)
            continue
        timers = [t for t in (ep.get_timer() for ep in eps.values()) if t is not None]
        if not timers:
            break
        now = max(now, min(timers))
        for ep in eps.values():
            t = ep.get_timer()
            if t is not None and t <= now:
                ep.handle_timer(now)
    return log


def test_i10_no_pdc_avail_backs_off_until_the_target_reaps():
    """A burst filled the target's PDC table; a real sender that starts right after succeeds once
    the idle PDCs may be reaped (1 s), because its retries back off for longer than that."""
    b = target(max_pdcs=4)
    for i in range(1, 5):  # the burst: four SYNs that never come back
        b.receive_datagram(*request(S, syn=True, spdcid=i, sport=1000 + i, ar=True,
                                    payload=b"x"), 0.0)
    out(b)
    events(b)
    c = "10.0.0.3"
    a = Endpoint(c, PdsConfig(), seed=3, upper=Recorder())
    h = send(a, B, b"m" * 10000)
    _run({c: a, B: b}, until=20.0)
    assert a.upper.completed == [h] and a.upper.failures == []  # CACKed: the old SendComplete
    # and the target took the message's requests, its bytes whole and once
    got = [decode_ses(nh, ses) for peer, _, nh, ses in b.upper.delivered if peer == c]
    assert b"".join(bytes(payload) for _, _, payload in got) == b"m" * 10000
    assert a.nacks_rcvd["NO_PDC_AVAIL"] >= 5  # more than the old 5 x 1 ms retries
    assert a.stats["rto"] == 0


def test_w5_the_defaults_admit_a_gigabyte_message_and_a_64_mib_one():
    """Issue 11 item 2: bounded, yet the defaults still take uet send's 64 MiB messages and a
    1 GiB message (charged chunk by chunk as its bytes arrive; counted here without the memory).
    The budget is the SES's now (SES-R1 of uet/ses/target.py): a default host's."""
    budget = Host(B).ses.budget
    assert budget.open_message(A) and budget.open_message(A)
    for _ in range(GIB // CHUNK_BYTES):
        assert budget.charge(A, CHUNK_BYTES)
    for _ in range((64 << 20) // CHUNK_BYTES):
        assert budget.charge(A, CHUNK_BYTES)
    assert budget.fits_bytes("10.0.0.3", 64 << 20)  # and another peer still has room
    assert not budget.fits_bytes(A, 512 << 20)  # but one peer cannot take it all
