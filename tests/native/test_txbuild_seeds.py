"""uet.native.txbuild with the trailer context (issue 28): given the PDC's addresses
(``context``), the C request builder seeds every trailer itself (``uet_udp_seed``, the C twin of
uet.wire.trailer.udp_seed, A.3), so a run is one C call and no Python seed; the datagrams stay
byte for byte the reference's, for IPv4 and IPv6, for a message and for any other item, and a
value C does not take (a port outside 16 bits) falls back to ``udp_seed``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from uet.native.txbuild import build_requests, build_requests_py
from uet.pds.initiator import _trailer_context
from uet.pds.packets import RequestHeader
from uet.wire.enums import ROD_REQ, RUD_REQ
from uet.wire.trailer import address_bytes, udp_seed

from tests.native.test_txbuild import IS_C, Chunks, message, reference, requires_c

M32 = 0xFFFFFFFF
PAIRS = [("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2:3")]


def _no_seed(*args: object) -> int:
    raise AssertionError("udp_seed called although the C builder had the trailer context")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 6000), mtu=st.integers(1, 900), first=st.integers(0, 12),
       psn=st.integers(0, M32), port=st.integers(0, 0xFFFF), v6=st.booleans(),
       evs=st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=40), rod=st.booleans())
def test_context_seeds_are_the_reference_trailers_A3(n, mtu, first, psn, port, v6, evs, rod):
    src, dst = PAIRS[v6]
    item = message(n, mtu, seed=n & 0xFF)
    first = min(first, item.count - 1)
    count = item.count - first
    entropy = [evs[i % len(evs)] for i in range(count)]
    header = RequestHeader(ROD_REQ if rod else RUD_REQ, 7, 9)
    kw = dict(header=header, item=item, first=first, psn=psn, clear_psn=psn, ar=[True] * count,
              entropy=entropy, src=src, dst=dst, port=port)
    want = reference(header, item, first, psn, psn, [True] * count, entropy, src, dst, port)
    ctx = address_bytes(src) + address_bytes(dst)
    assert build_requests_py(udp_seed=udp_seed, context=ctx, **kw) == want
    got = build_requests(udp_seed=_no_seed if IS_C else udp_seed, context=ctx, **kw)
    assert [bytes(d) for d in got] == want


@requires_c
@pytest.mark.parametrize("src, dst", PAIRS)
def test_context_seeds_an_item_that_is_not_a_message(src, dst):
    """The generic C path (an Outgoing without a request template) seeds from the context too."""
    item = Chunks([b"\x01" * 8, b"\x02" * 20, b""], [b"abc", b"", b"\xff" * 50])
    header = RequestHeader(RUD_REQ, 3, 4)
    kw = dict(header=header, item=item, first=0, psn=5, clear_psn=4, ar=[False, True, False],
              entropy=[50000, 50001, 65535], src=src, dst=dst, port=4793)
    want = reference(header, item, 0, 5, 4, [False, True, False], [50000, 50001, 65535], src,
                     dst, 4793)
    got = build_requests(udp_seed=_no_seed, context=address_bytes(src) + address_bytes(dst), **kw)
    assert [bytes(d) for d in got] == want


@requires_c
def test_a_port_C_does_not_take_falls_back_to_udp_seed():
    """An entropy beyond 16 bits is not C's to seed: udp_seed gives it, the bytes are the
    reference's (which takes the port's low 16 bits, as the wire does)."""
    item = message(3000, 1000)
    header = RequestHeader(RUD_REQ, 1, 2)
    calls = []

    def seed(*a: int) -> int:
        calls.append(a)
        return udp_seed(*a)  # type: ignore[arg-type]

    kw = dict(header=header, item=item, first=0, psn=1, clear_psn=0, ar=[False] * 3,
              entropy=[1 << 16 | 7, 8, 9], src=PAIRS[0][0], dst=PAIRS[0][1], port=4793)
    got = build_requests(udp_seed=seed, context=address_bytes(PAIRS[0][0])
                         + address_bytes(PAIRS[0][1]), **kw)
    assert [bytes(d) for d in got] == build_requests_py(udp_seed=udp_seed, **kw)
    assert len(calls) == 3


def test_the_trailer_context_of_a_pdc():
    """Initiator's per-PDC constant: the two addresses' bytes, or None (names, mixed families)."""
    assert _trailer_context("10.0.0.1", "10.0.0.2") == bytes([10, 0, 0, 1, 10, 0, 0, 2])
    assert _trailer_context("::1", "fd00::2") == address_bytes("::1") + address_bytes("fd00::2")
    assert _trailer_context("a", "b") is None
    assert _trailer_context("10.0.0.1", "::1") is None
