"""The one PSN arithmetic (uet.wire.psn, C.2) and its C twin uet.native.psn_diff agree."""

from __future__ import annotations

from hypothesis import given, strategies as st

from uet import native
from uet.wire.psn import M32, pdiff

psns = st.integers(0, M32)


@given(psns, psns)
def test_c2_pdiff_is_the_c_twins_serial_difference(a, b):
    assert pdiff(a, b) == native.psn_diff(a, b)
    assert -(1 << 31) <= pdiff(a, b) < (1 << 31)
    assert (b + pdiff(a, b)) & M32 == a


def test_c2_pdiff_wraps():
    assert pdiff(5, 0xFFFFFFF0) == 21
    assert pdiff(0xFFFFFFF0, 5) == -21
    assert pdiff(0x80000000, 0) == -(1 << 31)
