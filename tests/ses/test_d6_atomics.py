"""D.6 atomics: the engine alone and end to end (ATOMIC, FETCHING_ATOMIC, compare-and-swap)."""

from __future__ import annotations

import struct

import pytest

from uet.ses import OperationComplete, OperationFailed, atomics as A
from uet.wire.enums import RETURN_CODE

from .helpers import only, pair, run

INT32, UINT32, INT64, UINT64 = 0x04, 0x05, 0x06, 0x07
RC = {v: k for k, v in RETURN_CODE.table.items()}


def le(v: int, n: int = 8) -> bytes:
    return (v % (1 << (8 * n))).to_bytes(n, "little")


def do_atomic(amo_op, dt, start: bytes, operand, *, fetch=True, offset=0, cswap=None, **lossy):
    a, b, lb = pair(seed=5, **lossy)
    mem = bytearray(64)
    mem[offset:offset + len(start)] = start
    b.register(1, mem)
    if cswap is not None:
        a.cswap("b", 1, offset, dt, cswap[0], cswap[1], amo_opcode=amo_op, fetch=fetch)
    else:
        a.atomic("b", 1, offset, amo_op, dt, operand, fetch=fetch)
    evs = run(lb)
    return mem, evs["a"]


def test_d6_atomic_sum_int64():
    mem, evs = do_atomic(A.SUM, INT64, le(-5), 12)
    assert A.decode_value(INT64, bytes(mem[:8])) == 7
    (done,) = only(evs, OperationComplete)
    assert done.op == "fetching_atomic" and done.data == le(-5)


def test_d6_atomic_sum_uint64_wraps():
    mem, _ = do_atomic(A.SUM, UINT64, le(2**64 - 1), 2)
    assert bytes(mem[:8]) == le(1)


def test_d6_atomic_sum_int32_non_fetching():
    mem, evs = do_atomic(A.SUM, INT32, le(40, 4), 2, fetch=False)
    assert bytes(mem[:4]) == le(42, 4)
    (done,) = only(evs, OperationComplete)
    assert done.op == "atomic" and done.data is None and done.modified_length == 4


@pytest.mark.parametrize("dt,start,operand,want_min,want_max", [
    (INT32, -3, 2, -3, 2), (UINT32, 2**32 - 3, 2, 2, 2**32 - 3),
    (INT64, -(2**40), 7, -(2**40), 7), (UINT64, 2**63, 1, 1, 2**63)])
def test_d6_atomic_min_max_signedness(dt, start, operand, want_min, want_max):
    n = A.datatype_size(dt)
    for op, want in ((A.MIN, want_min), (A.MAX, want_max)):
        mem, _ = do_atomic(op, dt, le(start, n), operand)
        assert A.decode_value(dt, bytes(mem[:n])) == want


@pytest.mark.parametrize("op,start,operand,want", [
    (A.BOR, 0b1010, 0b0101, 0b1111), (A.BAND, 0b1110, 0b0111, 0b0110),
    (A.BXOR, 0b1100, 0b1010, 0b0110), (A.LOR, 0, 5, 1), (A.LAND, 3, 0, 0), (A.LXOR, 3, 4, 0),
    (A.DIFF, 10, 3, 7), (A.PROD, 6, 7, 42), (A.WRITE, 99, 5, 5)])
def test_d6_atomic_bitwise_logical_arith_int64(op, start, operand, want):
    mem, _ = do_atomic(op, INT64, le(start), operand)
    assert A.decode_value(INT64, bytes(mem[:8])) == want


def test_d6_atomic_read_fetches_without_writing():
    mem, evs = do_atomic(A.READ, UINT32, le(0xDEADBEEF, 4), 0)
    assert bytes(mem[:4]) == le(0xDEADBEEF, 4)
    assert only(evs, OperationComplete)[0].data == le(0xDEADBEEF, 4)


@pytest.mark.parametrize("op,compare,cur,swapped", [
    (A.CSWAP, 5, 5, True), (A.CSWAP, 4, 5, False), (A.CSWAP_NE, 4, 5, True),
    (A.CSWAP_LE, 5, 5, True), (A.CSWAP_LE, 6, 5, False), (A.CSWAP_LT, 4, 5, True),
    (A.CSWAP_GE, 6, 5, True), (A.CSWAP_GE, 4, 5, False), (A.CSWAP_GT, 5, 5, False),
    (A.CSWAP, -1, -1, True)])
def test_d6_cswap_family_int64(op, compare, cur, swapped):
    mem, evs = do_atomic(op, INT64, le(cur), None, cswap=(compare, 77))
    assert A.decode_value(INT64, bytes(mem[:8])) == (77 if swapped else cur)
    assert only(evs, OperationComplete)[0].data == le(cur)


def test_d6_cswap_uint32_at_offset():
    mem, _ = do_atomic(A.CSWAP, UINT32, le(9, 4), None, cswap=(9, 2**32 - 1), offset=12)
    assert bytes(mem[12:16]) == b"\xff" * 4 and bytes(mem[:12]) == bytes(12)


def test_d6_atomic_double_sum():
    a = struct.pack("<d", 1.5)
    mem, _ = do_atomic(A.SUM, 0x0B, a, 2.25)
    assert struct.unpack("<d", bytes(mem[:8]))[0] == 3.75


def test_d6_atomic_int128():
    mem, _ = do_atomic(A.SUM, 0x09, le(2**100, 16), 2**100)
    assert int.from_bytes(mem[:16], "little") == 2**101


def test_d6_atomic_under_loss_and_reorder_applies_once():
    mem, evs = do_atomic(A.SUM, INT64, le(0), 1, loss=0.3, trim=0.2)
    assert A.decode_value(INT64, bytes(mem[:8])) == 1


# --- D.8 AMO return codes ------------------------------------------------------------------------

def _rc(evs):
    (f,) = only(evs, OperationFailed)
    return RETURN_CODE.symbol(f.return_code)


def test_d8_amo_unaligned():
    mem, evs = do_atomic(A.SUM, INT64, b"", 1, offset=4)
    assert _rc(evs) == "AMO_UNALIGNED" and mem == bytearray(64)


def test_d8_amo_unsupported_dt():
    _, evs = do_atomic(A.SUM, 0x0C, b"", b"\0" * 8)  # FLOAT_COMPLEX
    assert _rc(evs) == "AMO_UNSUPPORTED_DT"
    _, evs = do_atomic(A.SUM, 0xE5, b"", b"\0" * 8)  # vendor type
    assert _rc(evs) == "AMO_UNSUPPORTED_DT"


@pytest.mark.parametrize("op", [A.MSWAP, A.INVAL, 0x15, 0xE0])
def test_d8_amo_unsupported_op(op):
    _, evs = do_atomic(op, INT64, b"", b"\0" * 8)
    assert _rc(evs) == "AMO_UNSUPPORTED_OP"


def test_d8_amo_unsupported_op_bitwise_on_float():
    _, evs = do_atomic(A.BOR, 0x0B, b"", b"\0" * 8)
    assert _rc(evs) == "AMO_UNSUPPORTED_OP"


def test_d8_amo_unsupported_size():
    _, evs = do_atomic(A.SUM, INT64, b"", b"\0" * 4)  # 4-byte operand for an 8-byte type
    assert _rc(evs) == "AMO_UNSUPPORTED_SIZE"


def test_d6_engine_never_raises_on_odd_input():
    for op in range(0, 0x20):
        for dt in range(0, 0x14):
            rc, new = A.apply(op, dt, b"\x01" * (A.datatype_size(dt) or 3), b"\x02" * 8, 2**130, -1)
            assert isinstance(rc, int)
