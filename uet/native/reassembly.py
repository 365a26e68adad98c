"""Message reassembly whose memory follows the bytes that arrived, not the length a header claims.

The message buffer is one anonymous memory mapping of ``length`` bytes (a bytearray for a message
of one chunk): the kernel gives it pages only when they are first written, so nothing is zeroed or
committed up front (issue 11: a header that claims 1 GiB must not cost 1 GiB). A chunk's pages
are committed in one go when the chunk is taken into use (``MADV_POPULATE_WRITE``, Linux 5.14+:
one system call instead of a page fault per 4 KiB page, measured 2.1 -> 1.6 us per 4 KiB
placement of a 64 MiB message).

No per-message zero-fill (issue 15 item 3): the mappings of messages longer than one chunk come
from :data:`POOL`, which keeps the mappings it made (up to ``POOL_BYTES`` in all) and hands one
out again once nothing refers to it any more - the message it held was delivered and dropped,
or abandoned. Its pages are then already there (no fault, no zeroing by the kernel: 2.1 -> 1.25
us per placement). Stale bytes never show: a delivered message is one whose every byte arrived,
so every byte of it was written by a placement; :meth:`Reassembly.take` of a message with holes
zeroes the holes first (in a reused mapping only: a fresh one reads zeros there anyway).
"Nothing refers to it" is CPython's reference count of the mapping: every memoryview, slice or
buffer export of it holds a reference, so a buffer that any object can still read is never
handed out (tests/native/test_buffer_pool.py). The buffer is
divided into chunks of ``chunk`` bytes; a chunk's tracking engine - one contiguous reassembly
engine of the backend in use over that slice of the buffer (C, or the Python twin:
``uet.native._cbackend.Reassembly`` / ``uet.native._twin.Reassembly``) - exists only once a byte
landed in it, and ``allocated`` (the chunks touched) is what a receiver charges against its
budget. The exactness rules are the engines': bytes already received are never overwritten, and
``place`` returns how many bytes were new.

:meth:`Reassembly.take` hands the whole message over once, without a copy: the bytearray, or a
memoryview of the mapping (missing bytes read as zeros). :meth:`Reassembly.release` drops a
message that will not be taken (its endpoint stops: uet.host.Host.shutdown), in an explicit
order - C chunk table, engines (C state, then their buffer exports), views - rather than leaving
memoryviews exported to C to the garbage collector, which cannot clear them (issue 25).
"""

from __future__ import annotations

import mmap
import operator
import sys
from typing import Any

from . import rxlane
from ._twin import MessageSpan


def _cbackend() -> Any:
    """The C backend's module, or None (the twin is in use)."""
    from . import _impl

    return _impl if rxlane.AVAILABLE else None

#: Default chunk size: the accounting granule, and the most a 1-byte packet can make a receiver
#: charge. Small enough that scattered tiny packets pin little; a 64 MiB message is 256 chunks.
CHUNK_BYTES = 256 << 10

# Linux: do not reserve swap for the mapping either (pages are committed as they are written).
_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0


# madvise(MADV_POPULATE_WRITE): commit a range's pages now, writable (Linux 5.14+; elsewhere
# the first write of each page faults it in, as without it)
_POPULATE_WRITE = 23 if sys.platform.startswith("linux") else None

#: Most bytes of mappings the pool keeps for reuse (what a receiver holds on to when idle).
POOL_BYTES = 256 << 20


def _lazy_buffer(length: int) -> Any:
    """``length`` writable bytes whose pages cost nothing until written."""
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | _NORESERVE
    try:
        return mmap.mmap(-1, length, flags=flags)
    except (OSError, ValueError):  # no flags support or a refusal: the portable form
        return mmap.mmap(-1, length)


def _populate(buf: Any, offset: int, n: int) -> None:
    """Commit the pages of ``buf[offset:offset + n]`` now (one system call), if the kernel can."""
    global _POPULATE_WRITE
    page = mmap.PAGESIZE
    lo = offset - offset % page
    try:
        buf.madvise(_POPULATE_WRITE, lo, offset + n - lo)
    except (OSError, ValueError, AttributeError):
        _POPULATE_WRITE = None  # an older kernel: the first writes fault the pages in


class BufferPool:
    """Anonymous mappings for message buffers, reused once nothing refers to them (see the
    module docstring). ``acquire(length)`` gives ``(mapping, reused)``: a kept mapping of at
    least ``length`` bytes (and at most twice that, plus a chunk) that only the pool refers to,
    else a new one of ``length`` rounded up to a chunk - kept when it fits in ``max_bytes``."""

    def __init__(self, max_bytes: int = POOL_BYTES, chunk: int = CHUNK_BYTES) -> None:
        self.max_bytes = max_bytes
        self.chunk = chunk
        self._maps: list[Any] = []
        self._bytes = 0
        self.reused = 0      # mappings handed out again
        self.made = 0        # mappings made

    @property
    def kept_bytes(self) -> int:
        """Bytes of the mappings the pool keeps (in use or free)."""
        return self._bytes

    def acquire(self, length: int) -> tuple[Any, bool]:
        getrefcount = sys.getrefcount
        if _REFCOUNTED:
            for m in self._maps:  # (a list iterator holds no reference to the items)
                # references: the list, ``m`` and getrefcount's argument - nobody else's
                if length <= len(m) <= 2 * length + self.chunk and getrefcount(m) <= 3:
                    self.reused += 1
                    return m, True
        size = -(-length // self.chunk) * self.chunk
        m = _lazy_buffer(size)
        self.made += 1
        if _REFCOUNTED and self._bytes + size <= self.max_bytes:
            self._maps.append(m)
            self._bytes += size
        return m, False

    def clear(self) -> None:
        """Forget every kept mapping (those still in use live on with their users)."""
        self._maps = []
        self._bytes = 0


# reference counts say when nobody else holds a mapping: CPython's, not other interpreters'
_REFCOUNTED = sys.implementation.name == "cpython"
#: The pool of this process.
POOL = BufferPool()


class Reassembly(MessageSpan):
    """One message of known length; storage pages and tracking come as bytes land."""

    __slots__ = ("_length", "_chunk", "_engine", "_chunks", "_table", "_slots", "_allocated",
                 "_buf", "_view", "_stale")

    def __init__(self, length: int, *, chunk: int = CHUNK_BYTES, engine: Any = None) -> None:
        length = operator.index(length)
        chunk = operator.index(chunk)
        if length < 0:
            raise ValueError("Reassembly: negative length")
        if chunk < 1:
            raise ValueError("Reassembly: chunk must be at least 1 byte")
        if engine is None:
            from . import _impl

            engine = _impl.Reassembly
        self._length = length
        self._chunk = chunk
        self._engine = engine
        self._chunks: dict[int, Any] = {}
        # the received count, and with the C engine the chunk table the receive lane places
        # through (uet.native.rxlane): one copy, whoever places
        self._slots: Any = None  # the table's engine slots, once a lane reads it (lane_table)
        if engine is getattr(_cbackend(), "Reassembly", None):
            self._table = rxlane.new_chunk_table(length, chunk)
        else:
            self._table = rxlane.ChunkCounts()
        self._allocated = 0
        self._buf: Any = None  # created with the first chunk
        self._view: memoryview | None = None
        self._stale = False    # the buffer is a reused mapping: its holes hold old bytes

    def lane_table(self) -> Any:
        """The C chunk table the receive lane places through (uet.native.rxlane), its engine
        slots filled; None with the twin's engines."""
        if isinstance(self._table, rxlane.ChunkCounts):
            return None
        if self._slots is None:
            self._slots = rxlane.chunk_slots(self._table, self._chunks)
        return self._table

    @property
    def received(self) -> int:
        """Number of distinct bytes received so far."""
        return self._table.received

    @property
    def complete(self) -> bool:
        """True once every byte of the message arrived."""
        return self._table.received == self._length

    @property
    def allocated(self) -> int:
        """Bytes of the chunks a byte landed in (what the receiver charges)."""
        return self._allocated

    def _engine_of(self, index: int) -> Any:
        e = self._chunks.get(index)
        if e is None:
            if self._view is None:
                if self._length <= self._chunk:
                    self._buf = bytearray(self._length)
                else:
                    self._buf, self._stale = POOL.acquire(self._length)
                self._view = memoryview(self._buf)[:self._length]
            lo = index * self._chunk
            size = min(self._chunk, self._length - lo)
            if not self._stale and _POPULATE_WRITE is not None and type(self._buf) is not bytearray:
                _populate(self._buf, lo, size)
            e = self._chunks[index] = self._engine(size, self._view[lo:lo + size])
            if self._slots is not None:
                rxlane.set_chunk(self._table, index, e)
            self._allocated += size
        return e

    def needed(self, offset: int, n: int) -> int:
        """Bytes of chunks a placement of ``n`` bytes at ``offset`` would add to ``allocated``
        (0 when the chunks it touches are in use). The range is not checked here."""
        if n <= 0:
            return 0
        chunk = self._chunk
        first = offset // chunk
        last = (offset + n - 1) // chunk
        chunks = self._chunks
        if first in chunks and last in chunks:
            return 0
        need = 0
        for index in range(first, last + 1):
            if index not in chunks:
                need += min(chunk, self._length - index * chunk)
        return need

    def reserve(self, offset: int, n: int) -> int:
        """Take the chunks that [offset, offset + n) touches into use now (a receiver that
        charges a budget before it accepts a packet and places it later, in order); returns the
        bytes added to ``allocated``. Raises ValueError for a range outside the message."""
        lo, hi = self._range(offset, n)
        before = self._allocated
        chunk = self._chunk
        for index in range(lo // chunk, -(-hi // chunk)):
            self._engine_of(index)
        return self._allocated - before

    def place(self, offset: int, data: Any) -> int:
        """Store ``data`` at ``offset``; the number of bytes that had not arrived before. Raises
        ValueError for a range outside the message."""
        n = len(data) if type(data) is bytes else memoryview(data).nbytes
        chunk = self._chunk
        if offset >= 0:
            index = offset // chunk
            base = index * chunk
            if 0 < n and offset + n <= base + chunk and offset + n <= self._length:
                # one chunk: the common packet (the engine checks the rest)
                e = self._chunks.get(index)
                if e is None:
                    e = self._engine_of(index)
                new = e.place(offset - base, data)
                self._table.received += new
                return new
        lo, hi = self._range(offset, n)
        if lo == hi:
            return 0
        view = data if isinstance(data, memoryview) else memoryview(data)
        new = 0
        pos = lo
        while pos < hi:
            index = pos // chunk
            end = min(hi, (index + 1) * chunk)
            new += self._engine_of(index).place(pos - index * chunk, view[pos - lo:end - lo])
            pos = end
        self._table.received += new
        return new

    def place_allocated(self, offset: int, data: Any) -> int | None:
        """:meth:`place` for a placement that lies inside one chunk already in use (the middle
        of a message whose storage is charged): the new bytes; None, and nothing changed, for
        any other placement."""
        n = len(data)
        chunk = self._chunk
        index = offset // chunk
        base = index * chunk
        if offset < 0 or n <= 0 or offset + n > base + chunk or offset + n > self._length:
            return None
        e = self._chunks.get(index)
        if e is None:
            return None
        new = e.place(offset - base, data)
        self._table.received += new
        return new

    def has(self, offset: int, length: int) -> bool:
        """True iff every byte of [offset, offset + length) has arrived."""
        lo, hi = self._range(offset, length)
        chunk = self._chunk
        pos = lo
        while pos < hi:
            index = pos // chunk
            end = min(hi, (index + 1) * chunk)
            e = self._chunks.get(index)
            if e is None or not e.has(pos - index * chunk, end - pos):
                return False
            pos = end
        return True

    def missing(self) -> list[tuple[int, int]]:
        """The holes, as (offset, length) in increasing order, adjacent holes merged."""
        out: list[tuple[int, int]] = []
        chunk = self._chunk

        def add(start: int, n: int) -> None:
            if out and out[-1][0] + out[-1][1] == start:
                out[-1] = (out[-1][0], out[-1][1] + n)
            else:
                out.append((start, n))

        for index in range(-(-self._length // chunk)):
            base = index * chunk
            e = self._chunks.get(index)
            if e is None:
                add(base, min(chunk, self._length - base))
                continue
            for start, n in e.missing():
                add(base + start, n)
        return out

    def take(self) -> bytearray | memoryview:
        """The whole message (missing bytes read as zeros), without a copy: a bytearray, or a
        memoryview of the mapping for a message longer than one chunk. The tracking is
        released; the storage lives as long as what is returned."""
        if self._view is None:
            self._engine_of(0) if self._length else None
        if self._stale and self._table.received < self._length:
            view = self._view
            for start, n in self.missing():  # never another message's bytes
                view[start:start + n] = bytes(n)
        data = self._buf if isinstance(self._buf, bytearray) else self._view
        self._drop_engines()
        self._buf = self._view = None
        self._stale = False
        return data if data is not None else bytearray()

    def release(self) -> None:
        """Drop the message and its storage now (its endpoint stops, or gives it up), in
        order: the C chunk table forgets the engines (the receive lane reaches none of them
        any more), each engine frees its C state and ends its buffer export, then the view of
        the buffer is released; the mapping is the pool's again once nothing else refers to
        it. Never left to the garbage collector (issue 25). Afterwards the message is empty:
        nothing received, nothing allocated. Idempotent."""
        self._drop_engines()
        self._table.received = 0
        view = self._view
        self._buf = self._view = None
        self._stale = False
        if view is not None:
            try:
                view.release()
            except BufferError:
                pass  # exported elsewhere: it stays theirs until they let go

    def _drop_engines(self) -> None:
        if self._slots is not None:
            rxlane.drop_chunks(self._table)  # first: C must not reach an engine being freed
            self._slots = None
        chunks, self._chunks = self._chunks, {}
        self._allocated = 0
        for e in chunks.values():
            e.release()

    def __repr__(self) -> str:
        return "Reassembly(length=%d, received=%d, allocated=%d)" % (
            self._length, self._table.received, self._allocated)
