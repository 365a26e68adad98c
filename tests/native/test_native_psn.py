"""PSN receive window and serial arithmetic (uet.native.PsnWindow), both backends."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import uet.native
from uet.native import _twin

import uet.native as _native

# (not imported from conftest: other test directories have their own conftest)
requires_c = pytest.mark.skipif(
    _native.BACKEND != "c", reason="C backend not in use (BACKEND=%r)" % _native.BACKEND
)

SETTINGS = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])
M32 = 0xFFFFFFFF


def _s32(x):
    return ((x + 2**31) % 2**32) - 2**31


def test_constants():
    assert (uet.native.NEW, uet.native.DUPLICATE, uet.native.OUT_OF_WINDOW) == (0, 1, 2)
    assert len({uet.native.NEW, uet.native.DUPLICATE, uet.native.OUT_OF_WINDOW}) == 3


def test_psn_diff_and_lt(impl):
    assert impl.psn_diff(5, 3) == 2
    assert impl.psn_diff(3, 5) == -2
    assert impl.psn_diff(0, 0xFFFFFFFF) == 1
    assert impl.psn_diff(0xFFFFFFFF, 0) == -1
    assert impl.psn_diff(0x80000000, 0) == -(2**31)
    assert impl.psn_diff(0x7FFFFFFF, 0) == 2**31 - 1
    assert impl.psn_lt(0xFFFFFFF0, 3) and not impl.psn_lt(3, 0xFFFFFFF0)
    assert not impl.psn_lt(7, 7)


@SETTINGS
@given(st.integers(0, M32), st.integers(0, M32))
def test_psn_diff_random(a, b):
    for mod in (uet.native, _twin):
        d = mod.psn_diff(a, b)
        assert -(2**31) <= d < 2**31 and (b + d) & M32 == a
        assert mod.psn_lt(a, b) == (d < 0)


def test_window_in_order_and_wraparound(impl):
    start = 0xFFFFFFF0
    w = impl.PsnWindow(start, size=64)
    assert w.cack == 0xFFFFFFEF and w.highest == 0xFFFFFFEF and w.size == 64
    for i in range(40):
        psn = (start + i) & M32
        assert w.set(psn) == impl.NEW
        assert w.cack == psn and w.highest == psn
        assert w.set(psn) == impl.DUPLICATE
    assert w.cack == (start + 39) & M32 == 0x17
    assert w.test(0xFFFFFFFF) and w.test(0) and w.test(0x17) and not w.test(0x18)
    assert w.sack_word(0xFFFFFFF0) == (1 << 40) - 1


def test_window_out_of_order_statuses(impl):
    w = impl.PsnWindow(100, size=16)  # window 100..115
    assert w.set(99) == impl.DUPLICATE  # at cack
    assert w.set(116) == impl.OUT_OF_WINDOW  # cack + 17
    assert w.set(115) == impl.NEW  # cack + 16, last in window
    assert w.highest == 115 and w.cack == 99
    assert w.set(102) == impl.NEW
    assert w.set(101) == impl.NEW
    assert w.cack == 99 and w.set(102) == impl.DUPLICATE
    assert w.sack_word(100) == (1 << 1) | (1 << 2) | (1 << 15)
    assert w.sack_word(90) == ((1 << 10) - 1) | (1 << 11) | (1 << 12) | (1 << 25)
    assert w.set(100) == impl.NEW
    assert w.cack == 102 and w.highest == 115
    assert w.set(118) == impl.NEW  # window moved with cack: 103..118
    assert w.set(119) == impl.OUT_OF_WINDOW
    assert not w.test(117) and w.test(118) and w.test(5) and not w.test(119)
    assert w.highest == 118


def test_window_far_psns_serial(impl):
    w = impl.PsnWindow(0, size=1024)
    # more than 2^31 "behind" in plain numbers is just ahead in serial terms
    # cack is 0xFFFFFFFF; serial distance decides, not the plain numbers
    assert w.set(0xFFFFFFFF) == impl.DUPLICATE  # == cack
    assert w.set(0x7FFFFFFF) == impl.DUPLICATE  # diff -2^31: "before" cack
    assert w.set(0x7FFFFFFE) == impl.OUT_OF_WINDOW  # diff 2^31 - 1
    assert w.set(0xFFFFFC00) == impl.DUPLICATE  # diff -1023
    assert w.set(1024) == impl.OUT_OF_WINDOW  # diff 1025
    assert w.set(1023) == impl.NEW and w.cack == 0xFFFFFFFF and w.highest == 1023
    assert w.test(0x7FFFFFFF) and not w.test(0x7FFFFFFE) and w.test(1023) and not w.test(1022)


def test_window_bad_arguments(impl):
    for size in (0, -1, 2**24 + 1):
        with pytest.raises(ValueError):
            impl.PsnWindow(0, size)
    for psn in (-1, 2**32):
        with pytest.raises(ValueError):
            impl.PsnWindow(psn)
    w = impl.PsnWindow(0, 8)
    for psn in (-1, 2**32, 2**64):
        with pytest.raises(ValueError):
            w.set(psn)
        with pytest.raises(ValueError):
            w.test(psn)
        with pytest.raises(ValueError):
            w.sack_word(psn)
    assert w.cack == M32 and w.highest == M32
    impl.PsnWindow(M32, 2**24)  # extremes are fine
    impl.PsnWindow(0, 1)


class Model:
    """Unbounded-integer reference: PSN = start + offset, offsets never wrap."""

    def __init__(self, start, size):
        self.start, self.size = start, size
        self.cack = -1  # offset
        self.highest = -1
        self.got = set()

    def _d(self, psn):
        return _s32(psn - ((self.start + self.cack) & M32))

    def set(self, psn):
        d = self._d(psn)
        if d <= 0:
            return _twin.DUPLICATE
        if d > self.size:
            return _twin.OUT_OF_WINDOW
        off = self.cack + d
        if off in self.got:
            return _twin.DUPLICATE
        self.got.add(off)
        self.highest = max(self.highest, off)
        while self.cack + 1 in self.got:
            self.cack += 1
        return _twin.NEW

    def test(self, psn):
        d = self._d(psn)
        return d <= 0 or (d <= self.size and self.cack + d in self.got)

    def sack(self, base):
        return sum(1 << i for i in range(64) if self.test((base + i) & M32))


START = st.one_of(
    st.integers(0xFFFFFF00, M32), st.integers(0, 64), st.integers(0x7FFFFF00, 0x80000100),
    st.integers(0, M32),
)


@SETTINGS
@given(
    START,
    st.integers(1, 300),
    st.lists(st.one_of(st.integers(-80, 700), st.integers(0, M32).map(lambda x: ("abs", x))),
             max_size=200),
    st.lists(st.integers(-100, 800), max_size=6),
)
def test_window_against_model(impl, start, size, ops, bases):
    w, m = impl.PsnWindow(start, size), Model(start, size)
    for op in ops:
        psn = op[1] if isinstance(op, tuple) else (start + op) & M32
        assert w.set(psn) == m.set(psn)
        assert w.cack == (start + m.cack) & M32
        assert w.highest == (start + m.highest) & M32
    for b in bases:
        base = (start + b) & M32
        assert w.sack_word(base) == m.sack(base)
        assert w.test(base) == m.test(base)


# ---------------------------------------------------------------- C vs twin


@requires_c
@SETTINGS
@given(START, st.integers(1, 2000), st.integers(0, 2**31), st.integers(50, 800))
def test_window_c_vs_twin(start, size, seed, n):
    from uet.native import _cbackend

    rng = random.Random(seed)
    c, t = _cbackend.PsnWindow(start, size), _twin.PsnWindow(start, size)
    span = size * 2 + 130
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            psn = rng.getrandbits(32)
        elif r < 0.5:  # mostly near the head, to move cack along
            psn = (c.cack + 1 + rng.randint(0, 8)) & M32
        else:
            psn = (c.cack + rng.randint(-70, span)) & M32
        assert c.set(psn) == t.set(psn)
        assert (c.cack, c.highest) == (t.cack, t.highest)
        base = (c.cack + rng.randint(-80, span)) & M32
        assert c.sack_word(base) == t.sack_word(base)
        assert c.test(base) == t.test(base)


@requires_c
@SETTINGS
@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))
def test_psn_diff_c_vs_twin(a, b):
    from uet.native import _cbackend
    from uet.native._uet_native import lib

    assert _cbackend.psn_diff(a, b) == _twin.psn_diff(a, b)
    assert _cbackend.psn_lt(a, b) == _twin.psn_lt(a, b)
    assert lib.uet_psn_diff(a & M32, b & M32) == _twin.psn_diff(a, b)
