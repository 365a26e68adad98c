"""Issue 11 items 2 and 3 for the SES (SES-R1 to SES-R3 of uet/ses/target.py): partial messages and their
bytes are counted per peer, a transport can refuse beyond the limits (admit), and idle partial
messages are dropped (expire) - so one address's never-finished messages cannot block the others.
"""

from __future__ import annotations

from uet import wire
from uet.host import Host
from uet.pds import DatagramMeta, seal
from uet.ses import SesConfig, SesEndpoint
from uet.ses import events as sev
from uet.wire.build import uet_bytes

B = "10.0.0.2"
SEND = 0x05


def _std(mid: int, total: int, payload: bytes, *, offset: int = 0) -> tuple[dict, bytes]:
    f = {"opcode": SEND, "message_id": mid, "request_length": total, "som": offset == 0,
         "eom": offset + len(payload) >= total}
    if offset:
        f.update(payload_length=len(payload), message_offset=offset)
    return f, wire.encode("ses.std", f) + payload


def test_r1_partial_messages_and_bytes_are_counted_per_peer():
    s = SesEndpoint(SesConfig())
    for mid in range(1, 4):
        s.post_recv()
        f, _ = _std(mid, 1 << 30, b"x" * 100)  # a claim: only the 100 bytes are charged
        s.receive(3, f, None, b"x" * 100, peer="p", request_ref=mid)
    # charged per reassembly chunk a byte landed in (uet.native.CHUNK_BYTES), not per claim
    assert s.budget.peer_messages("p") == 3 and s.budget.peer_bytes("p") == 3 * (256 << 10)
    assert s.budget.peer_messages("q") == 0


def test_r2_admit_refuses_beyond_the_per_peer_limits_only():
    chunk = 256 << 10
    s = SesEndpoint(SesConfig(max_rx_messages_per_peer=2, rx_bytes_per_peer=2 * chunk))
    for mid in (1, 2):
        s.post_recv()
        f, raw = _std(mid, 2 * chunk, b"x" * 400)
        assert s.admit("p", 3, raw) == 0
        s.receive(3, f, None, b"x" * 400, peer="p")
    assert s.admit("p", 3, _std(3, 5000, b"x" * 10)[1]) == 0x09  # NO_SES_MSG_AVAIL
    # the message's second chunk would exceed the peer's storage: NO_PKT_BUFFER
    assert s.admit("p", 3, _std(1, 2 * chunk, b"y" * 400, offset=chunk)[1]) == 0x07
    assert s.admit("p", 3, _std(1, 2 * chunk, b"y" * 100, offset=400)[1]) == 0  # chunk in use
    assert s.admit("q", 3, _std(3, 5000, b"x" * 400)[1]) == 0  # another peer
    assert s.admit("p", 3, _std(9, 10, b"x" * 10)[1]) == 0  # a whole message holds nothing


def test_r3_idle_partial_messages_are_dropped_and_their_receive_posted_again():
    s = SesEndpoint(SesConfig(partial_timeout=5.0))
    h = s.post_recv()
    f, _ = _std(1, 8000, b"x" * 4000)
    s.receive(3, f, None, b"x" * 4000, peer="p", now=1.0)
    assert s.in_reassembly == 1
    assert s.expire(5.9) == 0
    assert s.expire(6.0) == 1
    assert s.in_reassembly == 0 and s.budget.bytes == 0 and s.budget.messages == 0
    errs = [e for e in s.events() if isinstance(e, sev.MessageError)]
    assert errs and errs[-1].return_code == 0x24  # DROPPED
    # the receive is free for the next message
    f2, _ = _std(2, 10, b"y" * 10)
    s.receive(3, f2, None, b"y" * 10, peer="r", now=7.0)
    got = [e for e in s.events() if isinstance(e, sev.MessageReceived)]
    assert got and got[0].recv_handle == h and got[0].data == b"y" * 10


def _request(src: str, spdcid: int, mid: int, total: int, payload: bytes, psn: int = 1000,
             syn: bool = True) -> tuple[bytes, DatagramMeta]:
    pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": syn, "psn": psn, "spdcid": spdcid,
           "psn_offset": 0}
    ses = {"opcode": SEND, "message_id": mid, "request_length": total, "som": True, "eom": False}
    m = DatagramMeta(src, B, 50000, 4793, 2, 0)
    return seal((uet_bytes(pds, ses, None, payload),), m), m


def _nack_codes(ep: Host, now: float = 0.0) -> list:
    from uet.wire.packet import decode_uet

    return [decode_uet(d, None, trailer="none").layer["pds"].get("nack_code_name")
            for d, _ in ep.datagrams_to_send(now)]


def test_never_finished_messages_from_one_address_do_not_block_another():
    """The SES as the PDS's upper layer (PDS-W5 of uet/pds/target.py): one address opens
    never-finished messages until refused; another address's multi-packet message still gets
    in."""
    b = Host(B, ses=SesConfig(max_rx_messages_per_peer=8), seed=2)
    codes = []
    for i in range(1, 21):
        b.receive_datagram(*_request("10.0.0.66", i, i, 1 << 20, b"x" * 1000), 0.0)
        codes += _nack_codes(b)
    assert codes.count("NO_SES_MSG_AVAIL") == 12 and codes.count(None) == 8
    b.receive_datagram(*_request("10.0.0.3", 1, 1, 1 << 20, b"x" * 1000), 0.0)
    assert _nack_codes(b) == [None]


def test_the_host_sweep_expires_the_ses_partial_messages():
    """HOST-H4 of uet/host.py."""
    b = Host(B, ses=SesConfig(partial_timeout=3.0), seed=2)
    ses = b.ses
    b.receive_datagram(*_request("10.0.0.66", 1, 1, 1 << 20, b"x" * 1000), 0.0)
    b.datagrams_to_send(0.0)
    assert ses.in_reassembly == 1
    now = 0.0
    for _ in range(10):
        t = b.get_timer()
        assert t is not None
        now = t
        b.handle_timer(now)
        if not ses.in_reassembly:
            break
    assert ses.in_reassembly == 0 and 3.0 <= now <= 4.5
