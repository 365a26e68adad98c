"""Principle 6: no datagram, however malformed, makes an exception escape; state stays bounded.

The never-raise properties run against the PDS alone (a recording upper layer) and against a
whole host (uet.host: the SES parses the SES bytes the PDS hands up, RUDI and UUD take their
types), so that bad SES bytes are covered as they were when the PDS had a message layer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet.pds import DatagramMeta, seal
from uet.ses.packets import decode_ses

from .helpers import A, B, EV, S, SPDCID, established_target, events, out, request, target
from uet.wire.enums import NACK_CODE

NC = {name: code for code, name in NACK_CODE.table.items()}

metas = st.builds(DatagramMeta, st.sampled_from([A, "10.9.9.9"]), st.just(B),
                  st.integers(0, 65535), st.sampled_from([4793, 1]), st.integers(0, 3),
                  st.sampled_from([0, 11, 46, 63]))


def _internal_errors(ep) -> tuple[int, object]:
    """PDS-R3 (and SES-E1 of uet/ses/endpoint.py): the bugs counted, and what was kept of them."""
    pds = getattr(ep, "pds", ep)
    ses = getattr(ep, "ses", None)
    kept = (pds.last_error, pds.last_error_datagram, ses.last_error if ses is not None else None)
    return ep.stats["internal_errors"], kept


@pytest.mark.parametrize("host", [False, True], ids=["pds", "host"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=120), metas, st.booleans())
def test_arbitrary_bytes_never_raise(host, body, meta, sealed):
    ep, _ = established_target(host=host)
    data = seal((body,), meta) if sealed else body
    ep.receive_datagram(data, meta, 0.0)
    ep.datagrams_to_send(0.0)
    ep.handle_timer(1.0)
    n, kept = _internal_errors(ep)
    assert n == 0, kept


@pytest.mark.parametrize("host", [False, True], ids=["pds", "host"])
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 31), st.binary(min_size=40, max_size=80), metas)
def test_valid_crc_any_pds_type_never_raises(host, ptype, rest, meta):
    ep, _ = established_target(host=host)
    body = bytes([ptype << 3 | rest[0] & 7]) + rest[1:]
    ep.receive_datagram(seal((body,), meta), meta, 0.0)
    ep.datagrams_to_send(0.0)
    n, kept = _internal_errors(ep)
    assert n == 0, kept


class _Broken:
    """An upper layer with a bug in ``deliver`` (it declines the one-step ``take``, so every
    request goes through ``admit`` and ``deliver``)."""

    def admit(self, peer, next_hdr, data):
        return 0

    def take(self, peer, next_hdr, data, now):
        return False

    def deliver(self, peer, ref, next_hdr, data, now):
        raise KeyError("a bug above the PDS")


def test_r3_a_bug_is_counted_as_internal_errors_and_kept():
    """What the properties above read is the counter a bug does increment (PDS-R3): it is counted,
    kept with the datagram that hit it, and never raised to the caller."""
    ep, pdcid = established_target()
    ep.upper = _Broken()
    data, meta = request(S + 1, dpdcid=pdcid, ar=True)
    ep.receive_datagram(data, meta, 0.0)
    assert ep.stats["internal_errors"] == 1
    assert isinstance(ep.last_error, KeyError)
    assert ep.last_error_datagram == data.hex()


def test_bad_crc_is_dropped_and_counted():
    ep, pdcid = established_target()
    data, meta = request(S + 1, dpdcid=pdcid, ar=True)
    bad = bytearray(data)
    bad[30] ^= 0x40
    ep.receive_datagram(bytes(bad), meta, 0.0)
    assert out(ep) == [] and ep.stats["bad_crc"] == 1
    # wrong addresses in the metadata break the CRC too (it covers them)
    ep.receive_datagram(data, DatagramMeta("10.0.0.9", B, EV, 4793, 2, 0), 0.0)
    assert ep.stats["bad_crc"] == 2
    assert ep.upper.psns == [S]  # nothing of either reached the layer above


def test_syn_flood_is_bounded_and_other_pdcs_keep_working():
    ep = target(max_pdcs=16)
    ep.receive_datagram(*request(S, syn=True, ar=True, spdcid=1), 0.0)
    (ack, _), = out(ep)
    legit = ack["pds"]["spdcid"]
    for i in range(2, 500):
        ep.receive_datagram(*request(S + i, syn=True, start=S + i, spdcid=i, sport=1000 + i), 0.0)
    assert len(ep.pdcs()) == 16
    replies = out(ep)
    codes = [l["pds"].get("nack_code") for l, _ in replies]
    assert codes.count(NC["NO_PDC_AVAIL"]) == 500 - 2 - 15
    nacked = [l["pds"] for l, _ in replies if l["pds"].get("nack_code") == NC["NO_PDC_AVAIL"]]
    assert all(n["spdcid"] == 0 for n in nacked)
    events(ep)
    before = len(ep.upper.delivered)
    ep.receive_datagram(*request(S + 1, dpdcid=legit, spdcid=1, ar=True, message_id=77,
                                 payload=b"L" * 64), 0.0)
    assert out(ep)[0][0]["pds"]["cack_psn"] == S + 1
    # the legitimate PDC's request reached the layer above, its SES bytes intact
    (peer, psn, nh, ses), = ep.upper.delivered[before:]
    f, _, payload = decode_ses(nh, ses)
    assert (peer, psn, nh) == (A, S + 1, 3)
    assert f["message_id"] == 77 and bytes(payload) == b"L" * 64


def test_huge_request_length_does_not_allocate():
    ep, pdcid = established_target(host=True)
    ep.receive_datagram(*request(S + 1, dpdcid=pdcid, payload=bytes(10), total=(1 << 32) - 1), 0.0)
    layer = out(ep)[0][0]
    assert layer["ses"]["return_code_name"] == "TOO_LONG"
    assert ep.ses.budget.bytes == 0 and ep.ses.budget.messages == 0


def test_t3_idle_targets_are_reaped_when_a_new_syn_meets_the_limit():
    """A SYN flood fills the PDC limit; once those PDCs have been idle for target_idle_reap, a new
    initiator gets a PDC instead of NO_PDC_AVAIL, and a PDC that is still talking survives."""
    ep = target(max_pdcs=8, target_idle_reap=1.0)
    ep.receive_datagram(*request(S, syn=True, ar=True, spdcid=1), 0.0)
    (ack, _), = out(ep)
    legit = ack["pds"]["spdcid"]
    for i in range(2, 9):
        ep.receive_datagram(*request(S + i, syn=True, start=S + i, spdcid=i, sport=1000 + i), 0.0)
    assert len(ep.pdcs()) == 8
    ep.receive_datagram(*request(S + 1, dpdcid=legit, spdcid=1, ar=True), 1.5)  # legit keeps talking
    out(ep)
    ep.receive_datagram(*request(S + 99, syn=True, start=S + 99, spdcid=99, sport=2000), 0.5)
    assert out(ep)[0][0]["pds"].get("nack_code") == NC["NO_PDC_AVAIL"]  # nobody idle long enough yet
    ep.receive_datagram(*request(S + 99, syn=True, start=S + 99, spdcid=99, sport=2000), 2.2)
    (reply, _), = out(ep)
    assert reply["pds"]["type_name"] == "ACK_CC" and reply["pds"]["cack_psn"] == S + 99
    assert ep.stats["pdcs_reaped"] == 7
    assert len(ep.pdcs()) == 2
    ep.receive_datagram(*request(S + 2, dpdcid=legit, spdcid=1, ar=True), 2.3)
    assert out(ep)[0][0]["pds"]["cack_psn"] == S + 2


def test_c1_first_pdcid_is_seeded_random_so_endpoints_on_one_address_differ():
    from uet.pds import Endpoint, PdsConfig

    firsts = {Endpoint(A, PdsConfig(), seed=s)._next_pdcid for s in range(20)}
    assert len(firsts) > 15 and 0 not in firsts
    assert Endpoint(A, PdsConfig(first_pdcid=1))._next_pdcid == 1
    assert Endpoint(A, PdsConfig(), seed=3)._next_pdcid == Endpoint(A, PdsConfig(), seed=3)._next_pdcid
