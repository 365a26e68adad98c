"""uet.native.randbytes (the seeded data of uet.payload): the C MT19937 of native/mtbytes.c
against its twin, ``random.Random.randbytes`` in pieces of whole words - the same bytes and the
generator left in the same state, at any length and from any point of the state (an index in
the middle of the 624 words, a piece ending inside a word)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

import uet.native
from uet.native import _twin

requires_c = pytest.mark.skipif(uet.native.BACKEND != "c", reason="C extension not built")


def test_twin_continues_one_stream_across_its_pieces():
    n = 2 * _twin.RAND_PIECE + 7
    rng = random.Random(5)
    assert _twin.randbytes(rng, n) == random.Random(5).randbytes(n)
    assert rng.getstate() == _advanced(5, n).getstate()


def _advanced(seed: int, n: int) -> random.Random:
    rng = random.Random(seed)
    rng.randbytes(n)
    return rng


def test_negative_length_is_a_value_error(impl):
    with pytest.raises(ValueError, match="non-negative"):
        impl.randbytes(random.Random(1), -1)


@requires_c
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**64), skip=st.integers(0, 3000), n=st.integers(0, 9000),
       then=st.integers(0, 40))
def test_c_gives_the_twins_bytes_and_state(seed, skip, n, then):
    c_rng, py_rng = random.Random(seed), random.Random(seed)
    c_rng.randbytes(skip)  # any index of the state and a word cut short before
    py_rng.randbytes(skip)
    got = uet.native._impl.randbytes(c_rng, n)
    assert type(got) is bytes and got == _twin.randbytes(py_rng, n)
    assert c_rng.getstate() == py_rng.getstate()
    assert c_rng.randbytes(then) == py_rng.randbytes(then)


@requires_c
def test_c_above_one_piece_and_fresh_objects():
    n = 3 * _twin.RAND_PIECE + 5
    a, b = uet.native._impl.randbytes(random.Random(9), n), _twin.randbytes(random.Random(9), n)
    assert a == b
    one = [uet.native._impl.randbytes(random.Random(s), 1) for s in range(3)]
    assert one == [random.Random(s).randbytes(1) for s in range(3)]  # each its own object


@requires_c
def test_c_rejects_a_state_that_is_not_mt19937():
    rng = random.Random(1)
    version, words, gauss = rng.getstate()
    bad = random.Random()
    bad.getstate = lambda: (version, words[:-1], gauss)  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="random.Random state"):
        uet.native._impl.randbytes(bad, 4)
