"""The NSCC state of ACK_CC (facts B.8, E.3): what a target writes (PDS-A5 of uet/pds/target.py)
and what the initiator reads (uet.pds.packets.read_ack) for its congestion control."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from uet.pds.packets import AckEncoder, read_ack
from uet.ses.packets import STD_SIZE
from uet.wire.enums import ACK_CC_TYPE

from .helpers import S, established_target, out, request


def _ack_state(ack: dict) -> tuple[int, int, int, int]:
    state = ack["pds"]
    return state["rcvd_bytes"], state["ooo_count"], state["rcv_cwnd_pend"], state["restore_cwnd"]


def test_a5_rcvd_bytes_and_ooo_count_are_the_running_counts():
    ep, pdcid = established_target()
    ep.receive_datagram(*request(S + 2, dpdcid=pdcid, ar=True, payload=bytes(1000)), 0.0)
    (ack, _), = out(ep)
    first = _ack_state(ack)
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, ar=True, payload=bytes(3000)), 0.0)
    (ack, _), = out(ep)
    second = _ack_state(ack)
    # rcvd_bytes counts what the PDS carried: the SES header (D.3) and the payload
    assert second[0] - first[0] == 3000 + STD_SIZE
    assert first[1] == 1 and second[1] == 1  # S + 2 came before S + 1: one out of order
    assert first[2:] == second[2:] == (0, 0)  # no pressure: no penalty, nothing to restore


def test_a5_pressure_above_half_gives_a_linear_penalty_then_restore():
    ep, pdcid = established_target()
    got = []
    for i, pressure in enumerate((0.75, 1.0, 0.5, 0.2)):
        ep.upper.pressure_value = pressure
        ep.receive_datagram(*request(S + 1 + i, dpdcid=pdcid, ar=True), 0.0)
        (ack, _), = out(ep)
        got.append(_ack_state(ack)[2:])
    # pend = 127 x (pressure - 0.5) / 0.5, truncated; restore on the first ACK after a penalty
    assert got == [(63, 0), (127, 0), (0, 1), (0, 0)]


@given(cack=st.integers(0, 2**32 - 1), pend=st.integers(0, 127), restore=st.integers(0, 1),
       rcvd=st.integers(0, 2**24 - 1), ooo=st.integers(0, 2**16 - 1), m=st.booleans())
def test_b8_nscc_state_round_trip(cack, pend, restore, rcvd, ooo, m):
    enc = AckEncoder("ack_cc", 5, 6, 8)
    data = enc.pack(cack, 0, m, False, 0, 0, 0, rcvd, ooo, rcv_cwnd_pend=pend,
                    restore_cwnd=restore)
    a = read_ack(ACK_CC_TYPE, data, len(data))
    assert (a.cc_type, a.rcv_cwnd_pend, a.restore_cwnd, a.rcvd_bytes, a.ooo_count, a.m,
            a.service_time, a.cack_psn) == (0, pend, restore, rcvd, ooo, int(m), 0, cack)


def test_b8_credit_ack_carries_its_credit_and_no_nscc_state():
    """cc_type 1 (credit, E.2): the credit sits where NSCC keeps service_time, RC and pend."""
    enc = AckEncoder("ack_cc", 5, 6, 8)
    data = enc.pack(7, 0, False, False, 0, 0, 0, 0xABCDEF, 9, credit=0x12345)
    a = read_ack(ACK_CC_TYPE, data, len(data))
    assert (a.cc_type, a.credit, a.ooo_count, a.rcvd_bytes, a.rcv_cwnd_pend) == (
        1, 0x12345, 9, 0, 0)
    assert data[24:27] == bytes.fromhex("012345") and data[30:32] == bytes.fromhex("0009")
