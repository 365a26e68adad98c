"""The seeded pseudo-random bytes that ``uet sim``, ``uet demo`` and ``uet send --bytes`` move.

The stream of a seed is what ``random.Random(seed).randbytes(n)`` returns, at any ``n``: made
by :func:`uet.native.randbytes` (MT19937 in C, or its twin in pieces of whole 32-bit words,
since one ``randbytes`` call fails from 256 MiB on), so every seed keeps its data below 256 MiB
and has data above it.
"""

from __future__ import annotations

import random
from typing import Iterator

from . import native

CHUNK = 1 << 20  # a multiple of 4 (whole words), so that pieces continue one stream


def _words(seed: int, n: int, block: int) -> Iterator[bytes]:
    """The stream in ``block``-byte pieces (``block`` a multiple of 4), the last one shorter."""
    rng = random.Random(seed)
    for off in range(0, n, block):
        yield native.randbytes(rng, min(block, n - off))


def seeded_chunks(seed: int, n: int, size: int = CHUNK) -> Iterator[bytes]:
    """The ``n`` bytes of ``seed``'s stream in pieces of ``size`` bytes (the last may be
    shorter; none when ``n`` is 0), generated as they are taken. The stream is always made in
    ``CHUNK`` pieces, so a ``size`` of 256 MiB or more (one message of ``uet send --bytes 1g
    --message-size 1g``) is no single ``randbytes`` call."""
    if size < 1:
        raise ValueError("size must be at least 1")
    if size == CHUNK:
        yield from _words(seed, n, CHUNK)
        return
    buf = bytearray()
    for piece in _words(seed, n, CHUNK):
        buf += piece
        while len(buf) >= size:
            with memoryview(buf) as view:  # one copy out, not a slice and then a copy
                out = bytes(view[:size])
            del buf[:size]
            yield out
    if buf:
        yield bytes(buf)


def seeded_bytes(seed: int, n: int) -> bytes:
    """All ``n`` bytes of ``seed``'s stream at once, made straight into the bytes returned (the
    twin: a BytesIO handed over without a copy): about ``n`` bytes at the peak, where a join of
    pieces holds them and the result, ``2n`` (issue 29: 527 -> 273 MiB for 256 MiB)."""
    return native.randbytes(random.Random(seed), n)
