"""Message reassembly whose memory follows the bytes that arrived, not the length a header claims.

The message buffer is one anonymous memory mapping of ``length`` bytes (a bytearray for a message
of one chunk): the kernel gives it pages only when they are first written, so nothing is zeroed or
committed up front (issue 11: a header that claims 1 GiB must not cost 1 GiB). The buffer is
divided into chunks of ``chunk`` bytes; a chunk's tracking engine - one contiguous reassembly
engine of the backend in use over that slice of the buffer (C, or the Python twin:
``uet.native._cbackend.Reassembly`` / ``uet.native._twin.Reassembly``) - exists only once a byte
landed in it, and ``allocated`` (the chunks touched) is what a receiver charges against its
budget. The exactness rules are the engines': bytes already received are never overwritten, and
``place`` returns how many bytes were new.

:meth:`Reassembly.take` hands the whole message over once, without a copy: the bytearray, or a
memoryview of the mapping (missing bytes read as zeros).
"""

from __future__ import annotations

import mmap
import operator
import sys
from typing import Any

from ._twin import MessageSpan

#: Default chunk size: the accounting granule, and the most a 1-byte packet can make a receiver
#: charge. Small enough that scattered tiny packets pin little; a 64 MiB message is 256 chunks.
CHUNK_BYTES = 256 << 10

# Linux: do not reserve swap for the mapping either (pages are committed as they are written).
_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0


def _lazy_buffer(length: int) -> Any:
    """``length`` writable bytes whose pages cost nothing until written."""
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | _NORESERVE
    try:
        return mmap.mmap(-1, length, flags=flags)
    except (OSError, ValueError):  # no flags support or a refusal: the portable form
        return mmap.mmap(-1, length)


class Reassembly(MessageSpan):
    """One message of known length; storage pages and tracking come as bytes land."""

    __slots__ = ("_length", "_chunk", "_engine", "_chunks", "_received", "_allocated", "_buf",
                 "_view")

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
        self._received = 0
        self._allocated = 0
        self._buf: Any = None  # created with the first chunk
        self._view: memoryview | None = None

    @property
    def allocated(self) -> int:
        """Bytes of the chunks a byte landed in (what the receiver charges)."""
        return self._allocated

    def _engine_of(self, index: int) -> Any:
        e = self._chunks.get(index)
        if e is None:
            if self._view is None:
                self._buf = (bytearray(self._length) if self._length <= self._chunk
                             else _lazy_buffer(self._length))
                self._view = memoryview(self._buf)
            lo = index * self._chunk
            size = min(self._chunk, self._length - lo)
            e = self._chunks[index] = self._engine(size, self._view[lo:lo + size])
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
                self._received += new
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
        self._received += new
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
        self._received += new
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
        data = self._buf if isinstance(self._buf, bytearray) else self._view
        self._chunks = {}
        self._allocated = 0
        self._buf = self._view = None
        return data if data is not None else bytearray()

    def __repr__(self) -> str:
        return "Reassembly(length=%d, received=%d, allocated=%d)" % (
            self._length, self._received, self._allocated)
