"""32-bit PSN arithmetic (C.2): the one definition of the PSN mask and the serial difference.

Pure Python on purpose: the sans-IO core calls :func:`pdiff` per packet, and a call through the C
extension costs more than this expression. Its C twin is :func:`uet.native.psn_diff`
(tests/wire/test_psn.py checks they agree); :mod:`uet.native` keeps its own mask, being a leaf.
"""

from __future__ import annotations

M32 = 0xFFFFFFFF   # PSNs are 32 bits and wrap
H32 = 0x80000000   # the sign bit of a serial difference


def pdiff(a: int, b: int) -> int:
    """Signed 32-bit serial difference a - b (C.2): negative when a is before b."""
    d = (a - b) & M32
    return d - 0x100000000 if d & H32 else d
