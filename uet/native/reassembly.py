"""Message reassembly whose memory follows the bytes that arrived, not the length a header claims.

A message of ``length`` bytes is cut into chunks of ``chunk`` bytes; a chunk's storage (and its
tracking state) exists only once a byte landed in it. ``allocated`` is the storage held, which is
what a receiver charges against its reassembly budget (issue 11: a header that claims 1 GiB must
not reserve 1 GiB). Each chunk is one contiguous reassembly engine of the backend in use (C, or
the Python twin: ``uet.native._cbackend.Reassembly`` / ``uet.native._twin.Reassembly``), so the
exactness rules are theirs: bytes already received are never overwritten, and ``place`` returns
how many bytes were new.

:meth:`Reassembly.take` hands the whole message over once: the chunk itself when the message
fits one chunk (no copy), else the chunks joined.
"""

from __future__ import annotations

import operator
from typing import Any

#: Default chunk size: the worst case a tiny packet can make a receiver allocate. Small enough
#: that scattered 1-byte packets pin little; large enough that a 64 MiB message is 256 chunks.
CHUNK_BYTES = 256 << 10


class Reassembly:
    """One message of known length, stored in lazily allocated chunks."""

    __slots__ = ("_length", "_chunk", "_engine", "_chunks", "_received", "_allocated")

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

    @property
    def length(self) -> int:
        """Message length in bytes."""
        return self._length

    @property
    def received(self) -> int:
        """Distinct bytes received so far."""
        return self._received

    @property
    def complete(self) -> bool:
        return self._received == self._length

    @property
    def allocated(self) -> int:
        """Bytes of storage held (chunks a byte landed in)."""
        return self._allocated

    def _range(self, offset: int, length: int) -> tuple[int, int]:
        offset = operator.index(offset)
        if offset < 0 or length < 0 or offset + length > self._length:
            raise ValueError("Reassembly: range offset=%d length=%d outside message of %d bytes"
                             % (offset, length, self._length))
        return offset, offset + length

    def _engine_of(self, index: int) -> Any:
        e = self._chunks.get(index)
        if e is None:
            size = min(self._chunk, self._length - index * self._chunk)
            e = self._chunks[index] = self._engine(size)
            self._allocated += size
        return e

    def needed(self, offset: int, n: int) -> int:
        """Bytes of storage a placement of ``n`` bytes at ``offset`` would allocate (0 when the
        chunks it touches exist). The range is not checked here; :meth:`place` does that."""
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
        """Allocate the chunks that [offset, offset + n) touches now (a receiver that charges a
        budget before it accepts a packet and places it later, in order); returns the bytes
        newly allocated. Raises ValueError for a range outside the message."""
        lo, hi = self._range(offset, n)
        before = self._allocated
        chunk = self._chunk
        for index in range(lo // chunk, -(-hi // chunk)):
            self._engine_of(index)
        return self._allocated - before

    def place(self, offset: int, data: Any) -> int:
        """Store ``data`` at ``offset``; the number of bytes that had not arrived before. Raises
        ValueError for a range outside the message."""
        view = data if isinstance(data, memoryview) else memoryview(data)
        n = view.nbytes
        lo, hi = self._range(offset, n)
        if lo == hi:
            return 0
        chunk = self._chunk
        new = 0
        pos = lo
        while pos < hi:
            index = pos // chunk
            end = min(hi, (index + 1) * chunk)
            new += self._engine_of(index).place(pos - index * chunk, view[pos - lo:end - lo])
            pos = end
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

    def take(self) -> bytes | bytearray:
        """The whole message (missing bytes read as zeros); the storage is released. A message
        of one chunk comes back as that chunk's bytearray, without a copy."""
        chunk = self._chunk
        count = -(-self._length // chunk)
        if count == 1 and 0 in self._chunks:
            buf = self._chunks[0].buffer
            data = buf.obj if isinstance(buf.obj, bytearray) else bytes(buf)
        else:
            parts = []
            for index in range(count):
                e = self._chunks.get(index)
                parts.append(e.buffer if e is not None
                             else bytes(min(chunk, self._length - index * chunk)))
            data = b"".join(parts)
        self._chunks = {}
        self._allocated = 0
        return data

    def __repr__(self) -> str:
        return "Reassembly(length=%d, received=%d, allocated=%d)" % (
            self._length, self._received, self._allocated)
