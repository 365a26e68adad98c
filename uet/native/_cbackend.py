"""C backend: thin wrappers around the cffi extension ``uet.native._uet_native``.

Same API and behaviour as ``uet.native._twin``; importing this module fails
(ImportError) when the extension was not built.
"""

from __future__ import annotations

from ._twin import DUPLICATE, NEW, OUT_OF_WINDOW, MAX_WINDOW
from ._twin import __all__ as _twin_all
from ._twin import message_buffer
from ._uet_native import ffi as _ffi, lib as _lib

# the twin's API (the reference), and whether the CPU CRC instruction is used
__all__ = [*_twin_all, "HAS_HW_CRC32C"]

_from_buffer = _ffi.from_buffer
_M32 = 0xFFFFFFFF
HAS_HW_CRC32C: bool = bool(_lib.uet_crc32c_has_hw())


def _buf(data):
    """A char[] cdata over ``data`` without copying (copies only if non-contiguous)."""
    try:
        return _from_buffer(data)
    except (TypeError, BufferError):
        mv = memoryview(data)  # raises TypeError for non-buffers, like the twin
        return _from_buffer(mv.tobytes())


def crc32c(
    data, crc: int = 0, _c=_lib.uet_crc32c, _bytes=bytes, _len=len
) -> int:
    """CRC-32C (Castagnoli) of ``data``, chained from ``crc``.

    ``crc32c(b, crc32c(a)) == crc32c(a + b)``; uses the CPU CRC instruction
    when present.  (The underscore defaults only bind hot names as locals.)
    """
    # bytes go straight to the C "char *" parameter (no copy, no from_buffer)
    if type(data) is not _bytes:
        data = _buf(data)
    try:
        return _c(crc, data, _len(data))
    except OverflowError:
        return _c(crc & _M32, data, _len(data))


def crc32c_prefix(
    data, length: int, crc: int = 0, _c=_lib.uet_crc32c, _bytes=bytes
) -> int:
    """CRC-32C of the first ``length`` bytes of ``data`` (no copy of the prefix), chained from
    ``crc``. Raises ValueError when ``length`` is negative or beyond ``len(data)``."""
    if type(data) is not _bytes:
        data = _buf(data)
    if not 0 <= length <= len(data):
        raise ValueError("crc32c_prefix: length %r outside 0..%d" % (length, len(data)))
    return _c(crc & _M32, data, length)


def crc32c_sw(data, crc: int = 0) -> int:
    """The portable slicing-by-8 C path (for tests)."""
    b = _buf(data)
    return _lib.uet_crc32c_sw(crc & _M32, b, len(b))


def crc32(data, crc: int = 0) -> int:
    """zlib-compatible CRC-32 (IEEE 802.3) of ``data``, chained from ``crc``."""
    b = data if type(data) is bytes else _buf(data)
    return _lib.uet_crc32(crc & _M32, b, len(b))


_ICRC_ERR = {
    -1: "ICRC: packet too short for IP+UDP+BTH",
    -2: "ICRC: unknown IP version",
    -3: "ICRC: IPv4 IHL is below 5",
}


def roce_icrc(ip_packet) -> int:
    """RoCEv2 ICRC of an IP packet (IP+UDP+BTH+payload+pad, without the ICRC).

    Raises ValueError for an unknown IP version or a packet too short to hold
    IP + UDP + BTH.  Store the result least-significant byte first.
    """
    b = ip_packet if type(ip_packet) is bytes else _buf(ip_packet)
    rc = _lib.uet_roce_icrc(b, len(b))
    if rc < 0:
        raise ValueError(_ICRC_ERR.get(rc, "ICRC: error %d" % rc))
    return rc


def _index(name, value):
    if isinstance(value, int):
        return value
    try:
        return value.__index__()
    except AttributeError:
        raise TypeError("%s must be an integer" % name) from None


# what a released Reassembly holds: an empty message that reaches no buffer
_EMPTY = _ffi.gc(_lib.uet_reasm_new(_ffi.NULL, 0), _lib.uet_reasm_free)


class Reassembly:
    """Place out-of-order payloads into a message buffer of known length.

    Tracks exactly which bytes arrived (C: one bit per byte).  A placement
    stores only the bytes that had not arrived yet; bytes already present are
    never overwritten.
    """

    __slots__ = ("_r", "_buf", "_view", "_cbuf", "_length")

    def __init__(self, length: int, buffer=None) -> None:
        self._length, buffer = message_buffer(length, buffer)
        length = self._length
        self._buf = buffer
        self._view = memoryview(buffer)  # pins a bytearray (no resize)
        self._cbuf = _from_buffer(buffer, require_writable=True)
        try:
            r = _lib.uet_reasm_new(self._cbuf, length)
        except OverflowError:
            raise ValueError("Reassembly: length too large") from None
        if r == _ffi.NULL:
            raise MemoryError("Reassembly: cannot allocate the tracking bitmap")
        self._r = _ffi.gc(r, _lib.uet_reasm_free)

    def release(self, _release=_ffi.release) -> None:
        """Let go of the buffer now, in order: the C state that points into it is freed, then
        the buffer export the C side held ends, then this engine's view is released (a view
        still exported elsewhere is only dropped). Afterwards the engine is an empty message of
        length 0 that reaches no buffer. Idempotent.

        Also the finalizer: an engine that the garbage collector finds in a reference cycle
        ends its export before any object of the cycle is cleared. Left to the collector, a
        memoryview still exported to the C side fails to clear (BufferError) and its later
        deallocation crashes the interpreter (issue 25: ``uet recv`` stopped with a message in
        reassembly)."""
        r = getattr(self, "_r", None)  # (unset when __init__ raised)
        if r is _EMPTY:
            return
        self._r, self._length = _EMPTY, 0
        if r is not None:
            _release(r)  # uet_reasm_free: nothing in C points into the buffer any more
        cbuf, self._cbuf = getattr(self, "_cbuf", None), None
        if cbuf is not None:
            _release(cbuf)  # the export ends
        view = getattr(self, "_view", None)
        self._buf = bytearray()
        self._view = memoryview(self._buf)
        if view is not None:
            try:
                view.release()
            except BufferError:
                pass  # someone else exported our view: it stays theirs until they let go

    __del__ = release

    @property
    def length(self) -> int:
        """Message length in bytes."""
        return _lib.uet_reasm_length(self._r)

    @property
    def received(self) -> int:
        """Number of distinct bytes received so far."""
        return _lib.uet_reasm_received(self._r)

    @property
    def complete(self) -> bool:
        """True once every byte of the message has arrived (at once for length 0)."""
        return _lib.uet_reasm_received(self._r) == self._length

    @property
    def buffer(self) -> memoryview:
        """Writable memoryview of the whole message buffer."""
        return self._view

    def place(
        self,
        offset: int,
        data,
        _place=_lib.uet_reasm_place,
        _bytes=bytes,
        _len=len,
    ) -> int:
        """Store ``data`` at ``offset``; return the number of NEW bytes stored.

        Returns 0 for a pure duplicate.  On a partial overlap only the bytes
        not yet received are copied.  Raises ValueError when ``offset`` is
        negative or ``offset + len(data)`` exceeds the message length.
        """
        if type(data) is not _bytes:
            data = _buf(data)
        try:
            n = _place(self._r, offset, data, _len(data))
        except OverflowError:
            n = -1
        if n < 0:
            raise ValueError(
                "Reassembly: range offset=%r length=%d outside message of %d bytes"
                % (offset, _len(data), self._length)
            )
        return n

    def has(self, offset: int, length: int) -> bool:
        """True iff every byte of [offset, offset+length) has arrived.

        A zero-length range inside the message is always present.  Raises
        ValueError for a range outside the message.
        """
        try:
            rc = _lib.uet_reasm_has(self._r, offset, length)
        except OverflowError:
            rc = -1
        if rc < 0:
            raise ValueError(
                "Reassembly: range offset=%r length=%r outside message of %d bytes"
                % (offset, length, self._length)
            )
        return bool(rc)

    def missing(self) -> list[tuple[int, int]]:
        """The holes, as a list of (offset, length) in increasing order."""
        n = _lib.uet_reasm_missing(self._r, _ffi.NULL, 0)
        if n == 0:
            return []
        out = _ffi.new("int64_t[]", 2 * n)
        _lib.uet_reasm_missing(self._r, out, n)
        flat = _ffi.unpack(out, 2 * n)
        return list(zip(flat[0::2], flat[1::2]))

    def __repr__(self) -> str:
        return "Reassembly(length=%d, received=%d)" % (self._length, self.received)


def _psn_error(psn):
    psn = _index("psn", psn)
    return ValueError("PSN %d outside 0..2^32-1" % psn)


class PsnWindow:
    """Receive window over 32-bit PSNs: tracks PSNs in [cack+1, cack+size].

    ``cack`` is the highest PSN such that it and every PSN before it were
    received (initially start_psn - 1 mod 2^32).  All arithmetic is serial
    (mod 2^32, signed 32-bit comparisons).
    """

    __slots__ = ("_w", "_size")

    def __init__(self, start_psn: int, size: int = 1024) -> None:
        start_psn = _index("psn", start_psn)
        size = _index("size", size)
        if not 0 <= start_psn <= _M32:
            raise _psn_error(start_psn)
        if not 1 <= size <= MAX_WINDOW:
            raise ValueError("PsnWindow: size must be in 1..%d" % MAX_WINDOW)
        w = _lib.uet_psnwin_new(start_psn, size)
        if w == _ffi.NULL:
            raise MemoryError("PsnWindow: cannot allocate")
        self._w = _ffi.gc(w, _lib.uet_psnwin_free)
        self._size = size

    @property
    def handle(self) -> object:
        """The C window itself, for the C receive lane that shares it (uet.native.rxlane)."""
        return self._w

    @property
    def cack(self) -> int:
        """Cumulative ACK point: all PSNs up to and including it are received."""
        return _lib.uet_psnwin_cack(self._w)

    @property
    def size(self) -> int:
        """Window size in PSNs."""
        return self._size

    @property
    def highest(self) -> int:
        """Highest PSN received (serial order); cack before anything arrives."""
        return _lib.uet_psnwin_highest(self._w)

    def set(self, psn: int, _set=_lib.uet_psnwin_set) -> int:
        """Record ``psn``; return NEW, DUPLICATE or OUT_OF_WINDOW."""
        try:
            return _set(self._w, psn)
        except OverflowError:
            raise _psn_error(psn) from None

    def test(self, psn: int) -> bool:
        """True iff ``psn`` has been received (PSNs at or before cack count)."""
        try:
            return bool(_lib.uet_psnwin_test(self._w, psn))
        except OverflowError:
            raise _psn_error(psn) from None

    def sack_word(self, base_psn: int) -> int:
        """64-bit int whose bit i is set iff PSN base_psn + i was received."""
        try:
            return _lib.uet_psnwin_sack(self._w, base_psn)
        except OverflowError:
            raise _psn_error(base_psn) from None

    def __repr__(self) -> str:
        return "PsnWindow(cack=%d, size=%d, highest=%d)" % (self.cack, self._size, self.highest)


def psn_diff(a: int, b: int) -> int:
    """Signed 32-bit serial difference a - b (mod 2^32, in [-2^31, 2^31))."""
    return _lib.uet_psn_diff(a & _M32, b & _M32)


def psn_lt(a: int, b: int) -> bool:
    """Serial-number a < b (32-bit, RFC 1982 style)."""
    return bool(_lib.uet_psn_lt(a & _M32, b & _M32))


def randbytes(rng, n: int) -> bytes:
    """The twin's randbytes: MT19937 run in C from ``rng``'s state (native/mtbytes.c), straight
    into the bytes object returned, which then takes the state the generator ends in."""
    if n < 0:
        raise ValueError("n must be non-negative, got %d" % n)
    version, words, gauss = rng.getstate()
    state = _ffi.new("uint32_t[]", words)
    # A fresh bytes object (zero pages from calloc, never the shared empty one when n > 0) that
    # nothing else holds yet, filled in place as CPython's own constructors fill theirs: no copy.
    out = bytes(n)
    if len(words) != _lib.UET_MT_STATE or _lib.uet_mt_bytes(state, out, n) != 0:
        raise ValueError("not a random.Random state")
    rng.setstate((version, tuple(state), gauss))
    return out
