"""Message reassembly (uet.native.Reassembly), both backends."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import _twin

import uet.native as _native

# (not imported from conftest: other test directories have their own conftest)
requires_c = pytest.mark.skipif(
    _native.BACKEND != "c", reason="C backend not in use (BACKEND=%r)" % _native.BACKEND
)

SETTINGS = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])


def _pattern(n: int, seed: int) -> bytes:
    return bytes((seed * 31 + i * 7 + 1) & 0xFF for i in range(n))


class Model:
    """Byte-per-byte reference: which bytes arrived and what they hold."""

    def __init__(self, length):
        self.length = length
        self.buf = bytearray(length)
        self.have = bytearray(length)

    def place(self, offset, data):
        if offset < 0 or offset + len(data) > self.length:
            return "ValueError"
        new = 0
        for i, b in enumerate(data):
            if not self.have[offset + i]:
                self.have[offset + i] = 1
                self.buf[offset + i] = b
                new += 1
        return new

    def has(self, offset, length):
        if offset < 0 or length < 0 or offset + length > self.length:
            return "ValueError"
        return all(self.have[offset : offset + length])

    def missing(self):
        out, i, n = [], 0, self.length
        while i < n:
            if self.have[i]:
                i += 1
                continue
            j = i
            while j < n and not self.have[j]:
                j += 1
            out.append((i, j - i))
            i = j
        return out

    @property
    def received(self):
        return sum(self.have)


def _call(f, *args):
    try:
        return f(*args)
    except ValueError:
        return "ValueError"


def test_zero_length_message_is_complete(impl):
    r = impl.Reassembly(0)
    assert r.complete and r.received == 0 and r.length == 0
    assert r.missing() == []
    assert r.place(0, b"") == 0
    assert r.has(0, 0)
    with pytest.raises(ValueError):
        r.place(0, b"x")
    assert len(r.buffer) == 0


def test_place_new_duplicate_overlap(impl):
    r = impl.Reassembly(100)
    assert not r.complete and r.received == 0
    assert r.missing() == [(0, 100)]
    assert r.place(10, b"A" * 20) == 20
    assert r.place(10, b"B" * 20) == 0  # pure duplicate, not overwritten
    assert bytes(r.buffer[10:30]) == b"A" * 20
    assert r.place(0, b"C" * 15) == 10  # overlaps 10..15 on the left
    assert bytes(r.buffer[0:30]) == b"C" * 10 + b"A" * 20
    assert r.place(25, b"D" * 10) == 5  # overlaps 25..30 on the right
    assert bytes(r.buffer[0:35]) == b"C" * 10 + b"A" * 20 + b"D" * 5
    assert r.received == 35
    assert r.has(0, 35) and r.has(5, 0) and not r.has(0, 36) and not r.has(34, 2)
    assert r.missing() == [(35, 65)]
    assert r.place(50, b"E" * 10) == 10
    assert r.missing() == [(35, 15), (60, 40)]
    assert r.place(30, bytes(range(70))) == 15 + 40  # spans both holes
    assert r.complete and r.received == 100
    assert r.missing() == []
    assert bytes(r.buffer[50:60]) == b"E" * 10
    assert bytes(r.buffer[35:50]) == bytes(range(5, 20))
    assert bytes(r.buffer[60:100]) == bytes(range(30, 70))


def test_out_of_range_raises_and_touches_nothing(impl):
    r = impl.Reassembly(64)
    r.place(0, b"\x01" * 8)
    snapshot = bytes(r.buffer)
    for off, data in ((-1, b"x"), (64, b"x"), (60, b"12345"), (2**40, b"x"), (-(2**70), b""),
                      (2**70, b""), (65, b""), (0, bytes(65))):
        with pytest.raises(ValueError):
            r.place(off, data)
    for off, n in ((-1, 0), (0, -1), (64, 1), (0, 65), (2**64, 0), (1, 2**64), (-(2**63) - 1, 0)):
        with pytest.raises(ValueError):
            r.has(off, n)
    assert bytes(r.buffer) == snapshot and r.received == 8
    assert r.place(64, b"") == 0  # empty placement at the very end is in range
    assert r.has(64, 0)


def test_bad_constructor_and_types(impl):
    with pytest.raises(ValueError):
        impl.Reassembly(-1)
    with pytest.raises(TypeError):
        impl.Reassembly(1.5)
    r = impl.Reassembly(10)
    with pytest.raises(TypeError):
        r.place(1.0, b"x")
    with pytest.raises(TypeError):
        r.place(0, "text")


def test_buffer_is_writable_view_of_message(impl):
    r = impl.Reassembly(16)
    r.place(4, bytearray(b"abcd"))
    r.place(8, memoryview(b"__efgh__")[2:6])
    assert bytes(r.buffer[4:12]) == b"abcdefgh"
    mv = r.buffer
    assert isinstance(mv, memoryview) and not mv.readonly and len(mv) == 16
    mv[0] = 0x7A
    assert r.buffer[0] == 0x7A


def test_chunks_shuffled_to_completion(impl):
    length = 37 * 4096 - 1234
    src = random.Random(5).randbytes(length)
    offs = list(range(0, length, 4096))
    random.Random(6).shuffle(offs)
    r = impl.Reassembly(length)
    total = 0
    for o in offs:
        chunk = src[o : o + 4096]
        total += r.place(o, chunk)
        assert r.place(o, chunk) == 0
        assert r.has(o, len(chunk))
    assert total == length and r.complete and bytes(r.buffer) == src


@SETTINGS
@given(
    st.integers(0, 700),
    st.lists(st.tuples(st.integers(-3, 710), st.integers(0, 300), st.integers(0, 255)), max_size=25),
    st.lists(st.tuples(st.integers(-2, 705), st.integers(-2, 705)), max_size=8),
)
def test_placements_against_byte_model(impl, length, ops, queries):
    r, m = impl.Reassembly(length), Model(length)
    for off, n, seed in ops:
        data = _pattern(n, seed)
        assert _call(r.place, off, data) == m.place(off, data)
        assert r.received == m.received
        assert r.complete == (m.received == length)
    assert bytes(r.buffer) == bytes(m.buf)
    assert r.missing() == m.missing()
    for off, n in queries:
        assert _call(r.has, off, n) == m.has(off, n)


# ---------------------------------------------------------------- C vs twin


def _observe(r):
    return (r.received, r.complete, r.length, bytes(r.buffer), r.missing())


@requires_c
@SETTINGS
@given(
    st.integers(0, 20000),
    st.lists(st.tuples(st.integers(-5, 20005), st.integers(0, 9000), st.integers(0, 255),
                       st.booleans()), max_size=30),
    st.lists(st.tuples(st.integers(-5, 20005), st.integers(-5, 20005)), max_size=10),
)
def test_reassembly_c_vs_twin(length, ops, queries):
    from uet.native import _cbackend

    c, t = _cbackend.Reassembly(length), _twin.Reassembly(length)
    for off, n, seed, aligned in ops:
        if aligned:  # 4 KiB-aligned chunks, as on the wire
            off, n = (off // 4096) * 4096, min(n, 4096)
        data = _pattern(n, seed)
        assert _call(c.place, off, data) == _call(t.place, off, data)
        assert _call(c.place, off, memoryview(data)) == _call(t.place, off, data)
    assert _observe(c) == _observe(t)
    for off, n in queries:
        assert _call(c.has, off, n) == _call(t.has, off, n)


@requires_c
def test_reassembly_c_vs_twin_many_small_random():
    from uet.native import _cbackend

    rng = random.Random(11)
    for length in (1, 63, 64, 65, 127, 128, 129, 1000):
        c, t = _cbackend.Reassembly(length), _twin.Reassembly(length)
        for _ in range(200):
            off = rng.randint(-2, length + 2)
            data = rng.randbytes(rng.randint(0, 70))
            assert _call(c.place, off, data) == _call(t.place, off, data)
            o2, n2 = rng.randint(-1, length + 1), rng.randint(-1, 80)
            assert _call(c.has, o2, n2) == _call(t.has, o2, n2)
        assert _observe(c) == _observe(t)


@requires_c
def test_reassembly_c_vs_twin_large_message():
    """A message big enough for the C copy path with non-temporal stores."""
    from uet.native import _cbackend

    rng = random.Random(12)
    length = (9 << 20) + 333
    c, t = _cbackend.Reassembly(length), _twin.Reassembly(length)
    src = rng.randbytes(length)
    for _ in range(300):
        off = rng.randrange(length)
        n = rng.choice([0, 1, 63, 255, 256, 257, 4096, 4097, rng.randint(0, 70000)])
        n = min(n, length - off)
        for r in (c, t):
            r.place(off, src[off : off + n])  # same bytes at the same place
        assert c.received == t.received
    # new data over partly received ranges must not overwrite what is there
    for _ in range(50):
        off = rng.randrange(length)
        data = rng.randbytes(min(rng.randint(0, 20000), length - off))
        assert c.place(off, data) == t.place(off, data)
    assert c.missing() == t.missing()
    assert c.buffer.tobytes() == t.buffer.tobytes()
    for off, n in c.missing():
        assert c.place(off, src[off : off + n]) == n
    assert c.complete
