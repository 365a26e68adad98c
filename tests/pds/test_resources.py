"""Issue 11 items 2 and 3 at the sans-IO core: reassembly memory is charged for bytes that arrived
(never for a claimed length) and bounded per peer and in all (W5); partial messages and PDCs are
limited per peer, idle ones are freed (T3, T7); and the sender's resource-NACK retries back off
long enough to outlast the reaping (I10)."""

from __future__ import annotations

CHUNK_BYTES = 256 << 10  # uet.native.CHUNK_BYTES (a literal, so this module imports on old code too)
from uet.pds import DatagramMeta, Endpoint, MessageDelivered, MessageFailed, PdcClosed, PdsConfig
from uet.pds import SendComplete, seal
from uet.wire.build import uet_bytes
from uet.wire.enums import NACK_CODE

from .helpers import A, B, EV, S, events, out, request, target

NC = {name: code for code, name in NACK_CODE.table.items()}
GIB = 1 << 30


def _syn_claim(spdcid: int, total: int, *, src: str = A, payload: bytes = b"x" * 100,
               message_id: int = 1) -> tuple[bytes, DatagramMeta]:
    """A valid-CRC SYN request whose SEND header claims ``total`` bytes (SOM, not EOM)."""
    pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": S, "spdcid": spdcid,
           "psn_offset": 0}
    ses = {"opcode": 5, "message_id": message_id, "request_length": total, "som": True,
           "eom": False}
    m = DatagramMeta(src, B, EV, 4793, 2, 0)
    return seal((uet_bytes(pds, ses, None, payload),), m), m


def _nack_codes(ep: Endpoint) -> list[str | None]:
    return [layer["pds"].get("nack_code_name") for layer, _ in out(ep)]


def test_w5_a_claim_of_a_gigabyte_is_charged_one_chunk():
    ep = target()
    ep.receive_datagram(*_syn_claim(1, GIB), 0.0)
    ep.receive_datagram(*_syn_claim(2, GIB), 0.0)
    assert _nack_codes(ep) == [None, None]  # both accepted (ACKed)
    assert ep.ses.buffered == 2 * CHUNK_BYTES  # not 2 GiB


def test_w5_real_multi_packet_messages_still_arrive_after_huge_claims():
    ep = target()
    for i in range(1, 6):
        ep.receive_datagram(*_syn_claim(i, GIB), 0.0)
    out(ep)
    data = bytes(range(256)) * 64
    for k, off in enumerate(range(0, len(data), 4096)):
        ep.receive_datagram(*request(S + k, syn=True, spdcid=99, payload=data[off:off + 4096],
                                     offset=off, total=len(data), message_id=7), 0.0)
    assert [e.data for e in events(ep) if isinstance(e, MessageDelivered)] == [data]
    assert ep.ses.buffered == 5 * CHUNK_BYTES


def test_w5_partial_messages_are_limited_per_peer_not_for_everyone():
    ep = target(max_rx_messages_per_peer=3)
    for i in range(1, 5):
        ep.receive_datagram(*_syn_claim(i, 1 << 20), 0.0)
    assert _nack_codes(ep) == [None, None, None, "NO_SES_MSG_AVAIL"]
    ep.receive_datagram(*_syn_claim(50, 1 << 20, src="10.0.0.3"), 0.0)
    assert _nack_codes(ep) == [None]  # another peer is not affected


def test_w5_storage_is_limited_per_peer_with_no_pkt_buffer():
    ep = target(rx_buffer_per_peer=3 * CHUNK_BYTES)
    for i in range(1, 5):
        ep.receive_datagram(*_syn_claim(i, GIB), 0.0)
    assert _nack_codes(ep) == [None, None, None, "NO_PKT_BUFFER"]
    ep.receive_datagram(*_syn_claim(50, GIB, src="10.0.0.3"), 0.0)
    assert _nack_codes(ep) == [None]
    assert ep.ses.budget.peer_messages(A) == 3  # the refused message holds nothing


def test_t7_an_idle_partial_message_frees_its_pdc_and_storage():
    ep = target(target_idle_timeout=2.0)
    ep.receive_datagram(*_syn_claim(1, GIB), 0.0)
    (ack, _), = out(ep)
    events(ep)
    t = ep.get_timer()
    assert t == 2.0
    ep.handle_timer(t)
    assert ep.ses.buffered == 0 and ep.pdcs() == []
    assert any(isinstance(e, PdcClosed) and e.error for e in events(ep))
    # its initiator, if it comes back, hears that the PDC is gone (no silent loss)
    ep.receive_datagram(*request(S + 1, dpdcid=ack["pds"]["spdcid"], spdcid=1), 2.1)
    assert _nack_codes(ep) == ["INV_DPDCID"]


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
    a = Endpoint(c, PdsConfig(), seed=3)
    h = a.send_message(B, b"m" * 10000)
    log = _run({c: a, B: b}, until=20.0)
    done = [e for addr, e in log if addr == c and isinstance(e, (SendComplete, MessageFailed))]
    assert done and isinstance(done[0], SendComplete) and done[0].handle == h
    assert a.nacks_rcvd["NO_PDC_AVAIL"] >= 5  # more than the old 5 x 1 ms retries
    assert a.stats["rto"] == 0


def test_w5_the_defaults_admit_a_gigabyte_message_and_a_64_mib_one():
    """Issue 11 item 2: bounded, yet the defaults still take uet send's 64 MiB messages and a
    1 GiB message (charged chunk by chunk as its bytes arrive; counted here without the memory)."""
    from uet.pds.messages import MessageLayer

    budget = MessageLayer(target()).budget
    assert budget.open_message(A) and budget.open_message(A)
    for _ in range(GIB // CHUNK_BYTES):
        assert budget.charge(A, CHUNK_BYTES)
    for _ in range((64 << 20) // CHUNK_BYTES):
        assert budget.charge(A, CHUNK_BYTES)
    assert budget.fits_bytes("10.0.0.3", 64 << 20)  # and another peer still has room
    assert not budget.fits_bytes(A, 512 << 20)  # but one peer cannot take it all
