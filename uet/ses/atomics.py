"""The SES atomics engine (docs/facts.md D.6, return codes D.8): pure functions over bytes.

Choices where the facts are silent (documented here, tested in tests/ses/test_d6_atomics.py):

* Byte order in target memory and of the operand in the request payload: little-endian (host order
  of every mainstream target). The compare/swap values of the 36-byte extension are 128-bit fields;
  the low ``8 * size`` bits hold the datatype's bit pattern.
* Compare direction follows libfabric's ``FI_CSWAP_*`` (which the SES is modelled on): the swap
  happens when ``compare OP current`` holds, e.g. CSWAP_LE swaps when ``compare <= current``.
* Logical operations (LOR, LAND, LXOR) yield 0 or 1; integer results wrap modulo 2^bits.
* Supported data types: INT8 ... UINT128 for every operation below; FLOAT and DOUBLE for MIN, MAX,
  SUM, DIFF, PROD, READ, WRITE and the CSWAP family (bitwise/logical ones -> AMO_UNSUPPORTED_OP).
  The complex, long-double, BF16 and FP16 types and vendor types -> AMO_UNSUPPORTED_DT.
* MSWAP (0x13; H.2: its extension is not pinned down) and INVAL (0x14) -> AMO_UNSUPPORTED_OP.
* Alignment: the target offset must be a multiple of the datatype size (AMO_UNALIGNED).
"""

from __future__ import annotations

import math
import struct

# D.6 AMO opcodes
MIN, MAX, SUM, DIFF, PROD, LOR, LAND, BOR, BAND, LXOR, BXOR, READ, WRITE = range(13)
CSWAP, CSWAP_NE, CSWAP_LE, CSWAP_LT, CSWAP_GE, CSWAP_GT, MSWAP, INVAL = range(0x0D, 0x15)
CSWAP_FAMILY = frozenset(range(CSWAP, CSWAP_GT + 1))

# D.8 return codes used here
RC_OK = 0x01
RC_AMO_UNSUPPORTED_OP, RC_AMO_UNSUPPORTED_DT, RC_AMO_UNSUPPORTED_SIZE, RC_AMO_UNALIGNED = (
    0x0F, 0x10, 0x11, 0x12)
RC_AMO_FP_NAN, RC_AMO_FP_OVERFLOW = 0x13, 0x15

#: D.6 datatype -> (size in bytes, signed) for the integer types.
INT_TYPES = {0x00: (1, True), 0x01: (1, False), 0x02: (2, True), 0x03: (2, False),
             0x04: (4, True), 0x05: (4, False), 0x06: (8, True), 0x07: (8, False),
             0x08: (16, True), 0x09: (16, False)}
#: D.6 datatype -> (size, struct format) for the floating-point types supported.
FLOAT_TYPES = {0x0A: (4, "<f"), 0x0B: (8, "<d")}
FLOAT_OPS = frozenset({MIN, MAX, SUM, DIFF, PROD, READ, WRITE}) | CSWAP_FAMILY
INT_OPS = frozenset(range(0, 13)) | CSWAP_FAMILY
#: Everything supported, for documentation and tests.
SUPPORTED_AMO_OPCODES = INT_OPS
SUPPORTED_DATATYPES = frozenset(INT_TYPES) | frozenset(FLOAT_TYPES)


def datatype_size(dt: int) -> int | None:
    if dt in INT_TYPES:
        return INT_TYPES[dt][0]
    if dt in FLOAT_TYPES:
        return FLOAT_TYPES[dt][0]
    return None


def check(amo: int, dt: int) -> int:
    """RC_OK, or the AMO return code that refuses (op, datatype) before memory is touched."""
    if dt not in INT_TYPES and dt not in FLOAT_TYPES:
        return RC_AMO_UNSUPPORTED_DT
    ops = INT_OPS if dt in INT_TYPES else FLOAT_OPS
    if amo not in ops:
        return RC_AMO_UNSUPPORTED_OP
    return RC_OK


def encode_value(dt: int, value: int | float) -> bytes:
    """The memory/operand bytes of ``value`` for datatype ``dt`` (little-endian)."""
    if dt in FLOAT_TYPES:
        return struct.pack(FLOAT_TYPES[dt][1], value)
    size, _ = INT_TYPES[dt]
    return (int(value) % (1 << (8 * size))).to_bytes(size, "little")


def decode_value(dt: int, raw: bytes) -> int | float:
    if dt in FLOAT_TYPES:
        return struct.unpack(FLOAT_TYPES[dt][1], raw)[0]
    size, signed = INT_TYPES[dt]
    return int.from_bytes(raw[:size], "little", signed=signed)


def ext_value(dt: int, value: int | float) -> int:
    """The 128-bit extension field (compare/swap) holding ``value`` (low bits = bit pattern)."""
    return int.from_bytes(encode_value(dt, value), "little")


def _from_ext(dt: int, field: int) -> int | float:
    size = datatype_size(dt) or 16
    return decode_value(dt, (int(field) & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))


def _cond(amo: int, compare: int | float, cur: int | float) -> bool:
    if amo == CSWAP:
        return compare == cur
    if amo == CSWAP_NE:
        return compare != cur
    if amo == CSWAP_LE:
        return compare <= cur
    if amo == CSWAP_LT:
        return compare < cur
    if amo == CSWAP_GE:
        return compare >= cur
    return compare > cur  # CSWAP_GT


def apply(amo: int, dt: int, old: bytes, operand: bytes = b"", compare: int = 0,
          swap: int = 0) -> tuple[int, bytes | None]:
    """Apply AMO ``amo`` of type ``dt`` to the current bytes ``old``.

    Returns ``(return_code, new_bytes)``; ``new_bytes`` is None when memory is left unchanged
    (READ, a failed compare, an error). The fetched value is always ``old``. Never raises.
    """
    rc = check(amo, dt)
    if rc != RC_OK:
        return rc, None
    size = datatype_size(dt)
    assert size is not None
    if len(old) != size:
        return RC_AMO_UNSUPPORTED_SIZE, None
    if amo in CSWAP_FAMILY:
        cur = decode_value(dt, old)
        if _cond(amo, _from_ext(dt, compare), cur):
            return RC_OK, (int(swap) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        return RC_OK, None
    if amo == READ:
        return RC_OK, None
    if len(operand) != size:
        return RC_AMO_UNSUPPORTED_SIZE, None
    a, b = decode_value(dt, old), decode_value(dt, operand)
    if amo == WRITE:
        return RC_OK, bytes(operand)
    if amo == MIN:
        r = min(a, b)
    elif amo == MAX:
        r = max(a, b)
    elif amo == SUM:
        r = a + b
    elif amo == DIFF:
        r = a - b
    elif amo == PROD:
        r = a * b
    elif amo == LOR:
        r = int(bool(a) or bool(b))
    elif amo == LAND:
        r = int(bool(a) and bool(b))
    elif amo == LXOR:
        r = int(bool(a) != bool(b))
    else:
        mask = (1 << (8 * size)) - 1
        ua, ub = int(a) & mask, int(b) & mask
        r = ua | ub if amo == BOR else ua & ub if amo == BAND else ua ^ ub
    if dt in FLOAT_TYPES:
        if isinstance(r, float) and math.isnan(r) and not (math.isnan(a) or math.isnan(b)):
            return RC_AMO_FP_NAN, None
        try:
            return RC_OK, struct.pack(FLOAT_TYPES[dt][1], r)
        except (OverflowError, struct.error):
            return RC_AMO_FP_OVERFLOW, None
    return RC_OK, encode_value(dt, r)
