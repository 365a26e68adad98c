"""The seeded pseudo-random bytes that ``uet sim``, ``uet demo`` and ``uet send --bytes`` move.

The stream of a seed is what ``random.Random(seed).randbytes(n)`` returns, produced in pieces:
one ``randbytes`` call takes its size in bits as a C int, so it fails from 256 MiB on. Pieces of
whole 32-bit words (a multiple of 4 bytes) followed by one call for the rest give the very same
bytes as the single call (``getrandbits`` fills little-endian words in order and only the last,
partial word is shifted), so every seed keeps its data below 256 MiB and has data above it.
"""

from __future__ import annotations

import io
import random
from typing import Iterator

CHUNK = 1 << 20  # a multiple of 4: see the module docstring


def _words(seed: int, n: int, block: int) -> Iterator[bytes]:
    """The stream in ``block``-byte pieces (``block`` a multiple of 4), the last one shorter."""
    rng = random.Random(seed)
    for off in range(0, n, block):
        yield rng.randbytes(min(block, n - off))


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
    """All ``n`` bytes of ``seed``'s stream at once. Written into a BytesIO, whose buffer grows
    in place and is handed over without a copy: about ``n`` bytes at the peak, where a join of
    the pieces holds them and the result, ``2n`` (issue 29: 527 -> 273 MiB for 256 MiB)."""
    out = io.BytesIO()
    for piece in _words(seed, n, CHUNK):
        out.write(piece)
    return out.getvalue()
