"""Issue 25 item 8: what let a SYN flood kill an established transfer on a loaded machine, in
virtual time. The target's work per flood SYN must not grow with its PDC table (PDS-A5's pressure
watch scanned every target for every delivered message: 1 ms a SYN at 1,024 PDCs, so the kernel
dropped nearly everything, the real sender's requests too); an established PDC that is only quiet
is not reaped as soon as a half-open one (PDS-T3); and an established PDC's sender gives up only after
``max_rto_retx_established`` timeouts with a backoff capped at ``rto_max_established`` (PDS-I8), where
a queue of seconds at a loaded receiver used to exhaust C.9's five timeouts within 2.6 s."""

from __future__ import annotations

import pytest

from uet.pds import DatagramMeta, seal
from uet.pds.target import Target
from uet.wire.build import uet_bytes
from uet.wire.enums import NACK_CODE

from .helpers import (A, B, EV, S, ack_to, events, host_target, initiator, out, request, send,
                      target)

NC = {name: code for code, name in NACK_CODE.table.items()}


def _syn(src: str, spdcid: int, *, psn: int = S, message_id: int = 1, offset: int = 0,
         total: int = 64, payload: bytes = b"f" * 64) -> tuple[bytes, DatagramMeta]:
    """A valid-CRC SYN request of a SEND from ``src`` (a new PDC per ``spdcid``, start PSN S), as
    tests/io/flood.py sends them."""
    pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": psn, "spdcid": spdcid,
           "psn_offset": psn - S}
    ses = {"opcode": 5, "message_id": message_id, "request_length": total, "som": offset == 0,
           "eom": offset + len(payload) >= total}
    if offset:
        ses["payload_length"] = len(payload)
        ses["message_offset"] = offset
    m = DatagramMeta(src, B, EV, 4793, 2, 0)
    return seal((uet_bytes(pds, ses, None, payload),), m), m


def test_a5_a_syn_flood_costs_no_scan_of_the_pdc_table_per_message(monkeypatch):
    """Every one-packet message a flood SYN carries charges and releases the SES's reassembly
    bytes of its peer; whether the C lane may build a peer's ACKs (PDS-A5) is decided again only when
    that peer's pressure crosses PEND_FROM, and only for its PDCs. It used to be decided for every
    PDC of the peer, after a scan of the whole table, twice per message: 10,400 decisions for
    these 200 SYNs instead of one per PDC (when it is made) and one per peer."""
    calls = []
    refresh = Target.refresh_quick
    monkeypatch.setattr(Target, "refresh_quick", lambda t: (calls.append(t.peer), refresh(t))[1])
    h = host_target(max_pdcs=1024)
    peers = [f"127.0.0.{2 + k}" for k in range(4)]
    for i in range(200):
        h.receive_datagram(*_syn(peers[i % 4], 100 + i), 0.001 * i)
    assert len(h.pds.pdcs()) == 200 and h.ses.budget.bytes == 0  # all delivered, all released
    assert len(calls) == 200 + 4


def test_a5_the_lanes_of_a_peer_past_half_its_budget_leave_its_acks_to_python():
    """What the decision is for: the C lane builds no ACK of a peer whose reassembly bytes are more
    than half its budget (its ACKs carry the receiver penalty, PDS-A5); the other peers' it still
    does, and the peer's again once its messages complete."""
    h = host_target(rx_bytes_per_peer=10_000)
    other = "10.0.0.3"
    h.receive_datagram(*_syn(other, 50), 0.0)  # one whole message: nothing held
    for k in range(3):  # the first halves of three 2,000-byte messages: 60 % of the budget held
        h.receive_datagram(*_syn(A, 1 + k, message_id=10 + k, total=2000, payload=b"a" * 1000),
                           0.1)

    def quick() -> dict[str, set[int]]:
        by_peer: dict[str, set[int]] = {}
        for t in h.pds.pdcs():
            by_peer.setdefault(t.peer, set()).add(t._lane.ack_quick)
        return by_peer

    assert h.ses.budget.peer_bytes(A) == 6000
    assert quick() == {A: {0}, other: {1}}
    for k in range(3):  # the second halves: the messages complete, their bytes are freed
        h.receive_datagram(*_syn(A, 1 + k, psn=S + 1, message_id=10 + k, offset=1000,
                                 total=2000, payload=b"b" * 1000), 0.2)
    assert h.ses.budget.peer_bytes(A) == 0
    assert quick() == {A: {1}, other: {1}}


def test_t3_a_quiet_established_pdc_outlives_half_open_ones_at_a_full_table():
    """A SYN flood keeps the table full of half-open PDCs younger than target_idle_reap; an
    established PDC quiet for longer than that used to be reaped for the next SYN (its sender then
    met NACK INV_DPDCID). Now it is reaped only once idle for target_idle_reap_open, and
    half-open ones still go first."""
    ep = target(max_pdcs=8)  # the defaults: 1 s and 30 s
    ep.receive_datagram(*request(S, syn=True, ar=True, spdcid=1), 0.0)
    legit = out(ep)[0][0]["pds"]["spdcid"]
    ep.receive_datagram(*request(S + 1, dpdcid=legit, spdcid=1, ar=True), 0.1)  # established
    out(ep)
    for i in range(2, 9):  # the flood fills the table at 0.9 s
        ep.receive_datagram(*request(S, syn=True, start=S, spdcid=i, sport=1000 + i), 0.9)
    out(ep)
    assert len(ep.pdcs()) == 8
    ep.receive_datagram(*request(S, syn=True, start=S, spdcid=99, sport=2000), 1.5)
    assert out(ep)[0][0]["pds"].get("nack_code") == NC["NO_PDC_AVAIL"]
    ep.receive_datagram(*request(S + 2, dpdcid=legit, spdcid=1, ar=True), 1.6)
    assert out(ep)[0][0]["pds"]["cack_psn"] == S + 2  # still there, at 1.5 s quiet
    ep.receive_datagram(*request(S, syn=True, start=S, spdcid=99, sport=2000), 2.0)
    assert out(ep)[0][0]["pds"]["type_name"] == "ACK_CC"  # the half-open ones went first
    assert ep.stats["pdcs_reaped"] == 7 and len(ep.pdcs()) == 2


def test_t3_an_established_pdc_quiet_for_target_idle_reap_open_is_reaped():
    """A table full of PDCs whose senders left still frees: the established ones once quiet for
    target_idle_reap_open."""
    ep = target(max_pdcs=1, target_idle_reap=1.0, target_idle_reap_open=30.0)
    ep.receive_datagram(*request(S, syn=True, ar=True, spdcid=1), 0.0)
    legit = out(ep)[0][0]["pds"]["spdcid"]
    ep.receive_datagram(*request(S + 1, dpdcid=legit, spdcid=1, ar=True), 0.1)
    out(ep)
    ep.receive_datagram(*request(S, syn=True, start=S, spdcid=99, sport=2000), 20.0)
    assert out(ep)[0][0]["pds"].get("nack_code") == NC["NO_PDC_AVAIL"]
    ep.receive_datagram(*request(S, syn=True, start=S, spdcid=99, sport=2000), 30.2)
    assert out(ep)[0][0]["pds"]["type_name"] == "ACK_CC"
    ep.receive_datagram(*request(S + 2, dpdcid=legit, spdcid=1, ar=True), 30.3)
    assert out(ep)[0][0]["pds"]["nack_code"] == NC["INV_DPDCID"]


def _give_up_after(established: bool, **cfg: float) -> tuple[float, int]:
    """(seconds from a message's send, at 10 s, to its PDC's failure by RTO with the peer silent,
    the timeouts counted); ``established``: an earlier message was ACKed."""
    ep = initiator(rto_adaptive=False, rto_initial=0.2, rto_max=0.5, **cfg)
    if established:
        send(ep, B, bytes(100))
        psn = out(ep)[0][0]["pds"]["psn"]
        ep.receive_datagram(*ack_to(ep.pdcs()[0].pdcid, psn), 0.001)
        assert ep.upper.completed and not ep.upper.failures
    send(ep, B, bytes(100))
    out(ep, 10.0)
    t = 10.0
    for _ in range(50):  # bounded: the failure comes after a handful of timeouts
        t = ep.get_timer()
        ep.handle_timer(t)
        out(ep, t)
        if ep.upper.failures:
            break
    assert [r for _, r in ep.upper.failures] == ["retransmission limit (RTO)"]
    events(ep)
    return round(t - 10.0, 9), ep.stats["rto"]


def test_i8_an_established_pdc_waits_longer_before_giving_up():
    """C.9's five timeouts in a row (the sixth gives up), with the backoff capped at rto_max
    (0.5 s): 0.2 + 0.4 + 4 x 0.5 s of silence. Once the peer has answered, the cap is
    rto_max_established and the count max_rto_retx_established: with 4 s and 8 (a live
    endpoint's), 0.2 + 0.4 + 0.8 + 1.6 + 3.2 + 4 x 4 s; a peer that never answered is still
    given up as C.9 says."""
    live = {"rto_max_established": 4.0, "max_rto_retx_established": 8}
    assert _give_up_after(True, **live) == (pytest.approx(22.2), 9)
    assert _give_up_after(False, **live) == (pytest.approx(2.6), 6)
    assert _give_up_after(True, rto_max_established=4.0) == (pytest.approx(10.2), 6)
    assert _give_up_after(True) == (pytest.approx(2.6), 6)  # None: as C.9 has it
