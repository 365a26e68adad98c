"""A message's digest in place of its bytes: reassembly that keeps only what is in flight.

:class:`DigestReassembly` is :class:`uet.native.reassembly.Reassembly` (the same chunks, engines,
C receive lane, exact counts and budget charges) for a receiver that wants to know what arrived,
not to keep it: a simulator's sink (issue 29 item 3: a 128-host permutation of 16 MB flows held
every flow whole at its receiver). Whenever a chunk is taken into use, the complete chunks at the
front of the message are hashed in order and let go - the C lane forgets the engine, the engine
frees its tracking, and the chunk's pages go back to the kernel (``MADV_DONTNEED``) - so what a
message holds is the chunks between its first hole and its furthest byte: the window, not the
length. A packet for a chunk that was let go is a duplicate (every byte of it had arrived).
:meth:`DigestReassembly.take` hands over a :class:`Digest` (the length and a 64-bit hash of
every byte, in order: :class:`Crc64`) instead of the bytes; :meth:`Digest.of` makes the one a
sender expects.
"""

from __future__ import annotations

import mmap
from typing import Any, Iterable, NamedTuple

from . import crc32, crc32c, rxlane
from .reassembly import Reassembly

_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


class Crc64:
    """The hash of a :class:`Digest`: CRC-32C and CRC-32 (IEEE) of the same bytes, 8 bytes in
    all. Two polynomials: any damage of up to 32 bits in a row changes both, other damage goes
    unseen with a chance of about 2^-64; at 2-3 GB/s (the C CRCs) where BLAKE2b makes 0.4 GB/s
    here, and a 128-host run of 16 MB flows hashes 4 GB (each flow at both ends)."""

    __slots__ = ("c", "z")

    def __init__(self) -> None:
        self.c = self.z = 0

    def update(self, data: Any) -> None:
        self.c = crc32c(data, self.c)
        self.z = crc32(data, self.z)

    def digest(self) -> bytes:
        return (self.c << 32 | self.z).to_bytes(8, "big")


new_hash = Crc64


class Digest(NamedTuple):
    """What a digesting receive delivers for a message: its length and the hash of its bytes
    (:class:`Crc64`)."""

    length: int
    value: bytes

    @classmethod
    def of(cls, *pieces: Any) -> "Digest":
        """The digest of the bytes of ``pieces`` (bytes-like) one after the other."""
        return cls.chain(pieces)

    @classmethod
    def chain(cls, pieces: Iterable[Any]) -> "Digest":
        """The digest of an iterable of bytes-like pieces (a seeded stream generated as it is
        hashed: uet.payload.seeded_chunks)."""
        h = new_hash()
        n = 0
        for p in pieces:
            h.update(p)
            n += memoryview(p).nbytes
        return cls(n, h.digest())


class DigestReassembly(Reassembly):
    """Reassembly that hashes and lets go of the complete chunks at its front (module doc)."""

    __slots__ = ("_hash", "_front")

    def __init__(self, length: int, **kw: Any) -> None:
        super().__init__(length, **kw)
        self._hash = new_hash()
        self._front = 0  # chunks [0, _front) are hashed and let go

    def _engine_of(self, index: int) -> Any:
        if index not in self._chunks:
            self._drain()
        return super()._engine_of(index)

    def _drain(self) -> None:
        chunks, chunk, front = self._chunks, self._chunk, self._front
        while (e := chunks.get(front)) is not None and e.complete:
            lo = front * chunk
            size = e.length
            self._hash.update(self._view[lo:lo + size])
            if self._slots is not None:
                rxlane.clear_chunk(self._table, front)  # first: C must not reach it any more
            del chunks[front]
            e.release()
            if _DONTNEED is not None and type(self._buf) is mmap.mmap:
                self._free(lo, lo + size)
            front += 1
        self._front = front

    def _free(self, lo: int, hi: int) -> None:
        """The kernel takes back the whole pages of [lo, hi) (they read as zeros afterwards): a
        page that a later chunk shares is kept (the default chunk is a multiple of a page)."""
        page = mmap.PAGESIZE
        lo, hi = -(-lo // page) * page, hi // page * page
        if hi > lo:
            self._buf.madvise(_DONTNEED, lo, hi - lo)

    def _cut(self, offset: int, n: int) -> int:
        """How many of the ``n`` bytes at ``offset`` lie in chunks let go."""
        done = self._front * self._chunk
        return max(0, min(offset + n, done) - offset) if offset < done else 0

    def needed(self, offset: int, n: int) -> int:
        """Reassembly.needed, a chunk let go counting as in use (its charge was made)."""
        if n <= 0:
            return 0
        chunk, front, chunks = self._chunk, self._front, self._chunks
        first, last = offset // chunk, (offset + n - 1) // chunk
        if (first < front or first in chunks) and (last < front or last in chunks):
            return 0
        return sum(min(chunk, self._length - i * chunk)
                   for i in range(max(first, front), last + 1) if i not in chunks)

    def reserve(self, offset: int, n: int) -> int:
        cut = self._cut(offset, n) if offset >= 0 else 0
        self._range(offset, n)
        return super().reserve(offset + cut, n - cut) if cut < n else 0

    def place(self, offset: int, data: Any) -> int:
        n = len(data) if type(data) is bytes else memoryview(data).nbytes
        cut = self._cut(offset, n) if offset >= 0 else 0
        if not cut:
            return super().place(offset, data)
        self._range(offset, n)  # (raises for a range outside the message)
        if cut == n:
            return 0  # a duplicate: every byte of a chunk let go had arrived
        return super().place(offset + cut, memoryview(data).cast("B")[cut:])

    def has(self, offset: int, length: int) -> bool:
        cut = self._cut(offset, length)
        return super().has(offset + cut, length - cut) if cut < length else True

    def missing(self) -> list[tuple[int, int]]:
        done = self._front * self._chunk  # the chunks let go read as holes to the base: clip
        return [(max(s, done), s + n - max(s, done)) for s, n in super().missing() if s + n > done]

    def take(self) -> Digest:  # type: ignore[override]
        """The message's :class:`Digest` (missing bytes hashed as zeros); the storage is let go."""
        self._drain()
        rest = self._front * self._chunk
        data = super().take()
        h = self._hash
        with memoryview(data) as view:
            h.update(view[rest:])
        if type(data) is memoryview:
            data.release()
        return Digest(self._length, h.digest())

    def __repr__(self) -> str:
        return "DigestReassembly(length=%d, received=%d, hashed_chunks=%d)" % (
            self._length, self._table.received, self._front)
