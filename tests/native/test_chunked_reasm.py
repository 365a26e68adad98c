"""uet.native.Reassembly: chunks allocated as bytes arrive (issue 11 item 2), exact like its
engines. Checked against a byte model with every engine and random chunk sizes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import Reassembly

from .test_native_reasm import Model, _call

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def test_a_huge_claim_allocates_only_the_chunk_a_byte_landed_in(impl):
    r = Reassembly(1 << 30, chunk=1 << 16, engine=impl.Reassembly)
    assert r.allocated == 0
    assert r.place((1 << 29) + 5, b"hello") == 5
    assert r.allocated == 1 << 16
    assert r.place((1 << 29) + 6, b"x") == 0  # same chunk, nothing new
    assert r.allocated == 1 << 16 and r.received == 5
    assert r.missing() == [(0, (1 << 29) + 5), ((1 << 29) + 10, (1 << 30) - (1 << 29) - 10)]


def test_placement_across_a_chunk_boundary(impl):
    r = Reassembly(10, chunk=4, engine=impl.Reassembly)
    assert r.place(3, b"abcdef") == 6
    assert r.allocated == 10  # chunks 0-3, 4-7, 8-9 (the last is short)
    assert r.has(3, 6) and not r.has(2, 2)
    assert r.missing() == [(0, 3), (9, 1)]
    assert r.place(0, b"0123456789") == 4
    assert r.complete and r.take() == b"012abcdef9"
    assert r.allocated == 0


def test_one_chunk_message_is_handed_over_without_a_copy(impl):
    r = Reassembly(6, engine=impl.Reassembly)
    r.place(0, b"abcdef")
    data = r.take()
    assert isinstance(data, bytearray) and data == b"abcdef"


def test_take_of_an_incomplete_message_reads_zeros(impl):
    r = Reassembly(8, chunk=2, engine=impl.Reassembly)
    r.place(2, b"ab")
    assert r.take() == b"\0\0ab\0\0\0\0"


def test_bad_ranges_raise_and_touch_nothing(impl):
    r = Reassembly(64, chunk=8, engine=impl.Reassembly)
    for off, data in ((-1, b"x"), (64, b"x"), (60, b"12345"), (2**70, b"")):
        with pytest.raises(ValueError):
            r.place(off, data)
    assert r.allocated == 0 and r.received == 0
    with pytest.raises(ValueError):
        Reassembly(-1)
    with pytest.raises(ValueError):
        Reassembly(8, chunk=0)
    with pytest.raises(TypeError):
        Reassembly(1.5)


@SETTINGS
@given(st.integers(0, 300), st.integers(1, 64),
       st.lists(st.tuples(st.integers(-4, 310), st.binary(max_size=80)), max_size=30),
       st.lists(st.tuples(st.integers(-2, 305), st.integers(-2, 80)), max_size=10))
def test_chunked_against_byte_model(length, chunk, ops, queries):
    import uet.native

    for engine in {uet.native._impl.Reassembly, uet.native._twin.Reassembly}:
        r = Reassembly(length, chunk=chunk, engine=engine)
        m = Model(length)
        for off, data in ops:
            assert _call(r.place, off, data) == m.place(off, data)
            assert r.received == m.received
            assert r.allocated <= length
        for off, n in queries:
            assert _call(r.has, off, n) == m.has(off, n)
        assert r.missing() == m.missing()
        assert r.complete == (m.received == length)
        assert bytes(r.take()) == bytes(m.buf)


def test_needed_and_reserve_count_the_chunks_a_range_touches(impl):
    r = Reassembly(10, chunk=4, engine=impl.Reassembly)
    assert r.needed(3, 6) == 10 and r.needed(0, 0) == 0
    assert r.reserve(3, 2) == 8 and r.allocated == 8
    assert r.needed(3, 6) == 2 and r.needed(0, 8) == 0
    assert r.place(3, b"ab") == 2 and r.allocated == 8  # placing into reserved chunks is free
    with pytest.raises(ValueError):
        r.reserve(9, 2)


@SETTINGS
@given(st.integers(1, 300), st.integers(1, 64),
       st.lists(st.tuples(st.booleans(), st.integers(-4, 310), st.binary(max_size=80)),
                max_size=30))
def test_place_allocated_is_place_inside_a_chunk_in_use_and_nothing_else(length, chunk, ops):
    """place_allocated (the placement the C receive lane does, native/rxlane.c ses_take): inside one chunk
    already in use it does what place does; anywhere else it returns None and changes nothing."""
    import uet.native

    for engine in {uet.native._impl.Reassembly, uet.native._twin.Reassembly}:
        r = Reassembly(length, chunk=chunk, engine=engine)
        m = Model(length)
        for fast, off, data in ops:
            if not fast:
                assert _call(r.place, off, data) == m.place(off, data)
                continue
            before = (r.received, r.allocated, r.missing())
            inside = (0 <= off and data and off + len(data) <= length
                      and off // chunk == (off + len(data) - 1) // chunk
                      and r.needed(off, len(data)) == 0)
            got = r.place_allocated(off, data)
            if inside:
                assert got == m.place(off, data) and r.allocated == before[1]
            else:
                assert got is None and (r.received, r.allocated, r.missing()) == before
        assert bytes(r.take()) == bytes(m.buf)
