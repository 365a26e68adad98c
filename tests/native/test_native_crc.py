"""CRC-32C (docs/facts.md A.3) and zlib CRC-32, both backends."""

from __future__ import annotations

import random
import zlib

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

FAST = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

# Lengths around the C code's interleave block boundaries (3 x 256, 3 x 1344,
# 3 x 8192) and word boundaries.
EDGE_LENGTHS = [0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 767, 768, 769, 1023, 4031, 4032, 4033,
                4095, 4096, 4097, 24575, 24576, 24577, 49152 + 776]


def _bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def test_a3_crc32c_check_value(impl):
    assert impl.crc32c(b"123456789") == 0xE3069283


def test_a3_crc32c_empty(impl):
    assert impl.crc32c(b"") == 0
    assert impl.crc32c(b"", 0x12345678) == 0x12345678


def test_a3_crc32c_chaining_check_value(impl):
    assert impl.crc32c(b"56789", impl.crc32c(b"1234")) == 0xE3069283


def test_a3_crc32c_buffer_types(impl):
    data = _bytes(1000, 1)
    want = impl.crc32c(data)
    assert impl.crc32c(bytearray(data)) == want
    assert impl.crc32c(memoryview(data)) == want
    assert impl.crc32c(memoryview(bytearray(data))) == want
    # a slice of a larger buffer, a multi-byte format, a non-contiguous view
    big = b"xyz" + data + b"abc"
    assert impl.crc32c(memoryview(big)[3:-3]) == want
    assert impl.crc32c(memoryview(data).cast("I")) == want
    assert impl.crc32c(memoryview(data + data)[::2]) == impl.crc32c((data + data)[::2])


def test_a3_crc32c_rejects_non_buffers(impl):
    with pytest.raises(TypeError):
        impl.crc32c("123456789")
    with pytest.raises(TypeError):
        impl.crc32c(None)


def test_a3_crc32c_crc_argument_mod_2_32(impl):
    data = b"hello"
    assert impl.crc32c(data, 0x1_0000_0005) == impl.crc32c(data, 5)
    assert impl.crc32c(data, -1) == impl.crc32c(data, 0xFFFFFFFF)


@pytest.mark.parametrize("n", EDGE_LENGTHS)
def test_a3_crc32c_google_edge_lengths(impl, n):
    google_crc32c = pytest.importorskip("google_crc32c")
    data = _bytes(n, n)
    assert impl.crc32c(data) == google_crc32c.value(data)
    # unaligned starts
    for k in (1, 3, 5):
        view = memoryview(data)[k:]
        assert impl.crc32c(view) == google_crc32c.value(bytes(view))


@FAST
@given(st.binary(max_size=3000))
def test_a3_crc32c_google_random(data):
    google_crc32c = pytest.importorskip("google_crc32c")
    assert uet.native.crc32c(data) == google_crc32c.value(data)
    assert _twin.crc32c(data) == google_crc32c.value(data)


@FAST
@given(st.binary(max_size=2000), st.binary(max_size=2000), st.integers(0, 2**32 - 1))
def test_a3_crc32c_chaining(a, b, seed):
    for f in (uet.native.crc32c, _twin.crc32c):
        assert f(b, f(a)) == f(a + b)
        assert f(b, f(a, seed)) == f(a + b, seed)


def test_a3_crc32c_large_buffer():
    google_crc32c = pytest.importorskip("google_crc32c")
    data = _bytes((1 << 20) + 13, 7)
    assert uet.native.crc32c(data) == google_crc32c.value(data)


@FAST
@given(st.binary(max_size=2000), st.integers(0, 2**32 - 1))
def test_crc32_is_zlib(data, crc):
    assert uet.native.crc32(data) == zlib.crc32(data)
    assert uet.native.crc32(data, crc) == zlib.crc32(data, crc)
    assert _twin.crc32(data, crc) == zlib.crc32(data, crc)
    assert uet.native.crc32(bytearray(data), crc) == zlib.crc32(data, crc)


# ---------------------------------------------------------------- C vs twin


@requires_c
@FAST
@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1), st.integers(0, 7))
def test_a3_crc32c_c_vs_twin(data, crc, skip):
    from uet.native import _cbackend
    from uet.native._uet_native import lib

    view = memoryview(data)[min(skip, len(data)):]
    want = _twin.crc32c(view, crc)
    assert _cbackend.crc32c(view, crc) == want
    assert _cbackend.crc32c(bytes(view), crc) == want
    assert _cbackend.crc32c_sw(view, crc) == want
    b = bytes(view)
    assert lib.uet_crc32c_hw(crc, b, len(b)) == want
    assert lib.uet_crc32c_sw(crc, b, len(b)) == want


@requires_c
@pytest.mark.parametrize("n", EDGE_LENGTHS + [(1 << 16) + 5])
def test_a3_crc32c_c_paths_vs_twin_edges(n):
    from uet.native._uet_native import lib

    data = _bytes(n, n + 1)
    want = _twin.crc32c(data, 0xDEADBEEF)
    assert lib.uet_crc32c(0xDEADBEEF, data, n) == want
    assert lib.uet_crc32c_sw(0xDEADBEEF, data, n) == want
    assert lib.uet_crc32c_hw(0xDEADBEEF, data, n) == want


@requires_c
@FAST
@given(st.binary(max_size=3000), st.integers(0, 2**32 - 1))
def test_crc32_c_vs_twin(data, crc):
    from uet.native import _cbackend

    from uet.native._uet_native import lib

    assert _cbackend.crc32(data, crc) == _twin.crc32(data, crc)
    assert _cbackend.crc32(memoryview(data), crc) == _twin.crc32(data, crc)
    assert lib.uet_crc32_sw(crc, data, len(data)) == _twin.crc32(data, crc)


@requires_c
@pytest.mark.parametrize("n", EDGE_LENGTHS + [(1 << 16) + 5])
def test_crc32_c_paths_vs_twin_edges(n):
    from uet.native._uet_native import lib

    data = _bytes(n, n + 2)
    for k in (0, 1, 9):
        view = data[k:]
        want = _twin.crc32(view, 0xA5A5A5A5)
        assert lib.uet_crc32(0xA5A5A5A5, view, len(view)) == want
        assert lib.uet_crc32_sw(0xA5A5A5A5, view, len(view)) == want


@settings(deadline=None, max_examples=150)
@given(st.binary(max_size=300), st.integers(-3, 310), st.integers(0, 0xFFFFFFFF))
def test_crc32c_prefix_c_vs_twin_and_whole(data, n, crc):
    import uet.native as native
    from uet.native import _twin

    def call(f):
        try:
            return f(data, n, crc)
        except ValueError:
            return "ValueError"

    want = "ValueError" if not 0 <= n <= len(data) else _twin.crc32c(data[:n], crc)
    assert call(_twin.crc32c_prefix) == want
    assert call(native.crc32c_prefix) == want
    assert call(lambda d, k, c: native.crc32c_prefix(memoryview(d), k, c)) == want
