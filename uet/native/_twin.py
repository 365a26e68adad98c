"""Pure-Python twins of the C functions in ``native/``.

Every function and class here is the reference for its C counterpart in
``uet.native._uet_native``: same arguments, same results, same exceptions.
The test-suite (tests/native) drives both with random inputs and compares.

Nothing here imports cffi, so this module always works.
"""

from __future__ import annotations

import bisect
import io
import struct
import sys
import zlib

__all__ = [
    "crc32c",
    "crc32c_prefix",
    "crc32",
    "roce_icrc",
    "Reassembly",
    "PsnWindow",
    "NEW",
    "DUPLICATE",
    "OUT_OF_WINDOW",
    "psn_diff",
    "psn_lt",
    "randbytes",
]

# --------------------------------------------------------------------------
# CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, init/xorout ~0.
# Slicing-by-8: one table lookup per byte, but one Python loop iteration per
# 8 bytes, which is what costs in CPython.
# --------------------------------------------------------------------------

_POLY_C = 0x82F63B78


def _make_tables(poly: int) -> list[list[int]]:
    t0 = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t0.append(c)
    tables = [t0]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[i] >> 8) ^ t0[prev[i] & 0xFF] for i in range(256)])
    return tables


_T = _make_tables(_POLY_C)
_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7 = _T
_LITTLE = sys.byteorder == "little"


def _as_bytes_view(data) -> memoryview:
    mv = memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1 or not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    elif mv.format != "B":
        mv = mv.cast("B")
    return mv


def crc32c_prefix(data, length: int, crc: int = 0) -> int:
    """CRC-32C of the first ``length`` bytes of ``data``, chained from ``crc``. Raises
    ValueError when ``length`` is negative or beyond ``len(data)``."""
    mv = _as_bytes_view(data)
    length = _check_index("length", length)
    if not 0 <= length <= len(mv):
        raise ValueError("crc32c_prefix: length %r outside 0..%d" % (length, len(mv)))
    return crc32c(mv[:length], crc)


def crc32c(data, crc: int = 0) -> int:
    """CRC-32C of ``data`` (bytes-like), continuing from a previous ``crc``.

    ``crc32c(b, crc32c(a)) == crc32c(a + b)``; ``crc32c(b"123456789") ==
    0xE3069283``; ``crc32c(b"") == 0``.
    """
    mv = _as_bytes_view(data)
    n = len(mv)
    c = (crc & 0xFFFFFFFF) ^ 0xFFFFFFFF
    t0 = _T0
    nw = n >> 3
    if nw:
        if _LITTLE:
            words = mv[: nw << 3].cast("Q")
        else:  # pragma: no cover - big-endian hosts
            words = struct.unpack_from("<%dQ" % nw, mv)
        t1, t2, t3, t4, t5, t6, t7 = _T1, _T2, _T3, _T4, _T5, _T6, _T7
        for w in words:
            w ^= c
            c = (
                t7[w & 0xFF]
                ^ t6[(w >> 8) & 0xFF]
                ^ t5[(w >> 16) & 0xFF]
                ^ t4[(w >> 24) & 0xFF]
                ^ t3[(w >> 32) & 0xFF]
                ^ t2[(w >> 40) & 0xFF]
                ^ t1[(w >> 48) & 0xFF]
                ^ t0[w >> 56]
            )
    for b in mv[nw << 3 :]:
        c = t0[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32(data, crc: int = 0) -> int:
    """Ordinary CRC-32 (IEEE 802.3, the one zlib uses); same chaining rule."""
    return zlib.crc32(data, crc & 0xFFFFFFFF)


# --------------------------------------------------------------------------
# RoCEv2 ICRC (docs/facts.md G.6)
# --------------------------------------------------------------------------

_LRH_SEED = zlib.crc32(b"\xff" * 8)  # 0x2144DF1C
_UDP_LEN = 8
_BTH_LEN = 12


def roce_icrc(ip_packet) -> int:
    """RoCEv2 invariant CRC of an IP packet (IPv4 or IPv6, then UDP, then BTH).

    ``ip_packet`` runs from the first IP header byte to the end of the BTH
    payload and pad, excluding the 4 ICRC bytes.  Variant fields are masked
    to all ones on a copy (IPv4 TOS, TTL, header checksum; IPv6 traffic
    class, flow label, hop limit; UDP checksum; BTH byte 4) and the result is
    the zlib CRC-32 of 8 bytes of 0xFF followed by the masked packet.  The
    caller stores the result least-significant byte first.

    Raises ValueError for an unknown IP version or a packet too short to hold
    IP + UDP + BTH.
    """
    b = bytearray(_as_bytes_view(ip_packet))
    if not b:
        raise ValueError("ICRC: empty packet")
    version = b[0] >> 4
    if version == 4:
        ihl = (b[0] & 0x0F) * 4
        if ihl < 20:
            raise ValueError("ICRC: IPv4 IHL %d is below 5" % (ihl // 4))
        if len(b) < ihl + _UDP_LEN + _BTH_LEN:
            raise ValueError("ICRC: packet too short for IPv4+UDP+BTH")
        b[1] = 0xFF  # TOS (DSCP + ECN)
        b[8] = 0xFF  # TTL
        b[10] = 0xFF  # header checksum
        b[11] = 0xFF
        udp = ihl
    elif version == 6:
        if len(b) < 40 + _UDP_LEN + _BTH_LEN:
            raise ValueError("ICRC: packet too short for IPv6+UDP+BTH")
        b[0] |= 0x0F  # traffic class, high nibble
        b[1] = 0xFF  # traffic class low nibble + flow label high nibble
        b[2] = 0xFF  # flow label
        b[3] = 0xFF
        b[7] = 0xFF  # hop limit
        udp = 40
    else:
        raise ValueError("ICRC: unknown IP version %d" % version)
    b[udp + 6] = 0xFF  # UDP checksum
    b[udp + 7] = 0xFF
    b[udp + _UDP_LEN + 4] = 0xFF  # BTH FECN/BECN/resv6
    return zlib.crc32(b, _LRH_SEED)


# --------------------------------------------------------------------------
# Message reassembly
# --------------------------------------------------------------------------


def _check_index(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = value.__index__()
        except AttributeError:
            raise TypeError("%s must be an integer" % name) from None
    return value


def message_buffer(length, buffer=None) -> tuple[int, object]:
    """(length, buffer) of a one-buffer reassembly: the caller's buffer (writable, ``length``
    bytes) or a zeroed one of our own."""
    length = _check_index("length", length)
    if length < 0:
        raise ValueError("Reassembly: negative length")
    if buffer is None:
        buffer = bytearray(length)
    elif len(buffer) != length:
        raise ValueError("Reassembly: the buffer is not length bytes long")
    return length, buffer


class MessageSpan:
    """What every reassembly (this twin, the C one's wrapper, the chunked one of
    :mod:`uet.native.reassembly`) says about its message: length, bytes received, and the check
    of a byte range against it."""

    __slots__ = ()
    _length: int
    _received: int

    @property
    def length(self) -> int:
        """Message length in bytes."""
        return self._length

    @property
    def received(self) -> int:
        """Number of distinct bytes received so far."""
        return self._received

    @property
    def complete(self) -> bool:
        """True once every byte of the message has arrived (at once for length 0)."""
        return self._received == self._length

    def _range(self, offset, length) -> tuple[int, int]:
        offset = _check_index("offset", offset)
        length = _check_index("length", length)
        if offset < 0 or length < 0 or offset + length > self._length:
            raise ValueError(
                "Reassembly: range offset=%d length=%d outside message of %d bytes"
                % (offset, length, self._length)
            )
        return offset, offset + length


class Reassembly(MessageSpan):
    """Place out-of-order payloads into a message buffer of known length.

    Tracks exactly which bytes arrived (here: a sorted list of disjoint,
    non-adjacent received intervals).  A placement stores only the bytes that
    had not arrived yet; bytes already present are never overwritten.
    """

    __slots__ = ("_length", "_buf", "_view", "_starts", "_ends", "_received")

    def __init__(self, length: int, buffer=None) -> None:
        self._length, self._buf = message_buffer(length, buffer)
        self._view = memoryview(self._buf)
        if self._view.readonly:
            raise TypeError("Reassembly: the buffer must be writable")
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._received = 0

    def release(self) -> None:
        """Let go of the buffer now: this engine's view is released (a view still exported
        elsewhere is only dropped). Afterwards the engine is an empty message of length 0 that
        reaches no buffer. Idempotent. (The C twin frees its C state and ends its buffer
        export first; its finalizer does the same.)"""
        view = self._view
        self._length = self._received = 0
        self._starts, self._ends = [], []
        self._buf = bytearray()
        self._view = memoryview(self._buf)
        try:
            view.release()
        except BufferError:
            pass  # someone else exported our view: it stays theirs until they let go

    @property
    def buffer(self) -> memoryview:
        """Writable memoryview of the whole message buffer."""
        return self._view

    def place(self, offset: int, data) -> int:
        """Store ``data`` at ``offset``; return the number of NEW bytes stored.

        Returns 0 for a pure duplicate.  On a partial overlap only the bytes
        not yet received are copied.  Raises ValueError when ``offset`` is
        negative or ``offset + len(data)`` exceeds the message length.
        """
        src = _as_bytes_view(data)
        lo, hi = self._range(offset, len(src))
        if lo == hi:
            return 0
        starts, ends = self._starts, self._ends
        # first interval whose end >= lo (touching or overlapping on the left)
        i = bisect.bisect_left(ends, lo)
        # first interval whose start > hi (beyond, not even adjacent)
        j = bisect.bisect_right(starts, hi, i)
        new = 0
        pos = lo
        buf = self._view
        for k in range(i, j):
            s, e = starts[k], ends[k]
            if s > pos:
                gap_end = min(s, hi)
                if gap_end > pos:
                    buf[pos:gap_end] = src[pos - lo : gap_end - lo]
                    new += gap_end - pos
            if e > pos:
                pos = e
        if pos < hi:
            buf[pos:hi] = src[pos - lo : hi - lo]
            new += hi - pos
        if i < j:
            ns = min(starts[i], lo)
            ne = max(ends[j - 1], hi)
            starts[i:j] = [ns]
            ends[i:j] = [ne]
        else:
            starts.insert(i, lo)
            ends.insert(i, hi)
        self._received += new
        return new

    def has(self, offset: int, length: int) -> bool:
        """True iff every byte of [offset, offset+length) has arrived.

        A zero-length range inside the message is always present.  Raises
        ValueError for a range outside the message.
        """
        lo, hi = self._range(offset, length)
        if lo == hi:
            return True
        i = bisect.bisect_right(self._starts, lo) - 1
        return i >= 0 and self._ends[i] >= hi

    def missing(self) -> list[tuple[int, int]]:
        """The holes, as a list of (offset, length) in increasing order."""
        out = []
        pos = 0
        for s, e in zip(self._starts, self._ends):
            if s > pos:
                out.append((pos, s - pos))
            pos = e
        if pos < self._length:
            out.append((pos, self._length - pos))
        return out

    def __repr__(self) -> str:
        return "Reassembly(length=%d, received=%d)" % (self._length, self._received)


# --------------------------------------------------------------------------
# PSN receive window
# --------------------------------------------------------------------------

NEW = 0
DUPLICATE = 1
OUT_OF_WINDOW = 2

_M32 = 0xFFFFFFFF
MAX_WINDOW = 1 << 24


def psn_diff(a: int, b: int) -> int:
    """Signed 32-bit serial difference a - b (mod 2^32, in [-2^31, 2^31))."""
    d = (a - b) & _M32
    return d - 0x100000000 if d & 0x80000000 else d


def psn_lt(a: int, b: int) -> bool:
    """Serial-number a < b (32-bit, RFC 1982 style)."""
    return psn_diff(a, b) < 0


def _check_psn(psn) -> int:
    psn = _check_index("psn", psn)
    if not 0 <= psn <= _M32:
        raise ValueError("PSN %d outside 0..2^32-1" % psn)
    return psn


class PsnWindow:
    """Receive window over 32-bit PSNs: tracks PSNs in [cack+1, cack+size].

    ``cack`` is the highest PSN such that it and every PSN before it were
    received (initially start_psn - 1 mod 2^32).  ``set`` records a PSN and
    advances ``cack`` over the contiguous run; PSNs at or before ``cack``
    count as received.  All arithmetic is serial (mod 2^32, signed 32-bit
    comparisons), so the window wraps through 0xFFFFFFFF -> 0.
    """

    __slots__ = ("_cack", "_size", "_highest", "_got")

    def __init__(self, start_psn: int, size: int = 1024) -> None:
        start_psn = _check_psn(start_psn)
        size = _check_index("size", size)
        if not 1 <= size <= MAX_WINDOW:
            raise ValueError("PsnWindow: size must be in 1..%d" % MAX_WINDOW)
        self._cack = (start_psn - 1) & _M32
        self._size = size
        self._highest = self._cack
        self._got: set[int] = set()  # received PSNs after cack

    @property
    def handle(self) -> None:
        """The C window a C receive lane shares (uet.native.rxlane): none in this twin."""
        return None

    @property
    def cack(self) -> int:
        """Cumulative ACK point: all PSNs up to and including it are received."""
        return self._cack

    @property
    def size(self) -> int:
        """Window size in PSNs."""
        return self._size

    @property
    def highest(self) -> int:
        """Highest PSN received (serial order); cack before anything arrives."""
        return self._highest

    def set(self, psn: int) -> int:
        """Record ``psn``; return NEW, DUPLICATE or OUT_OF_WINDOW.

        DUPLICATE: at or before cack, or already received.  OUT_OF_WINDOW:
        beyond cack + size (serial).  On NEW, cack advances over the run of
        received PSNs that follows it.
        """
        psn = _check_psn(psn)
        d = psn_diff(psn, self._cack)
        if d <= 0:
            return DUPLICATE
        if d > self._size:
            return OUT_OF_WINDOW
        got = self._got
        if psn in got:
            return DUPLICATE
        got.add(psn)
        if psn_diff(psn, self._highest) > 0:
            self._highest = psn
        c = self._cack
        nxt = (c + 1) & _M32
        while nxt in got:
            got.discard(nxt)
            c = nxt
            nxt = (c + 1) & _M32
        self._cack = c
        return NEW

    def test(self, psn: int) -> bool:
        """True iff ``psn`` has been received (PSNs at or before cack count)."""
        psn = _check_psn(psn)
        d = psn_diff(psn, self._cack)
        if d <= 0:
            return True
        if d > self._size:
            return False
        return psn in self._got

    def sack_word(self, base_psn: int) -> int:
        """64-bit int whose bit i is set iff PSN base_psn + i was received."""
        base_psn = _check_psn(base_psn)
        cack, size, got = self._cack, self._size, self._got
        w = 0
        for i in range(64):
            p = (base_psn + i) & _M32
            d = psn_diff(p, cack)
            if d <= 0 or (d <= size and p in got):
                w |= 1 << i
        return w

    def __repr__(self) -> str:
        return "PsnWindow(cack=%d, size=%d, highest=%d)" % (
            self._cack,
            self._size,
            self._highest,
        )


# --------------------------------------------------------------------------
# The seeded data (uet.payload): the bytes of a random.Random at any length.
# --------------------------------------------------------------------------

RAND_PIECE = 1 << 20  # bytes per randbytes call: a multiple of 4, see randbytes


def randbytes(rng, n: int) -> bytes:
    """The next ``n`` bytes of ``rng`` (a ``random.Random``), advancing it: what
    ``rng.randbytes(n)`` returns, at any ``n``. One ``randbytes`` call takes its size in bits as a
    C int and fails from 256 MiB, so the bytes are made in pieces of whole 32-bit words: the same
    stream (``getrandbits`` fills little-endian words in order and only the last, partial word is
    shifted). They are written into a BytesIO, whose buffer is handed over without a copy."""
    if n < 0:
        raise ValueError("n must be non-negative, got %d" % n)
    if n <= RAND_PIECE:
        return rng.randbytes(n)
    out = io.BytesIO()
    for off in range(0, n, RAND_PIECE):
        out.write(rng.randbytes(min(RAND_PIECE, n - off)))
    return out.getvalue()
