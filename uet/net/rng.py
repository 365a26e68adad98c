"""The fabric's one seeded random generator, written twice: here (the reference) and in C
(``native/rng.h``, used by the C fabric engine ``native/fabric.c``), so that both engines of the
many-host simulator draw the same numbers from the same seed (issue 29 item 1).

  NET-R1  xoshiro256** (Blackman and Vigna, 2018) over 64-bit words; the state is four words
      filled by splitmix64 from the seed (the seed taken modulo 2^64), as its authors advise.
  NET-R2  ``random()``: the top 53 bits of the next word over 2^53, a float in [0, 1);
      ``getrandbits(32)``: the top 32 bits of the next word.

Every random draw of the switched fabric comes from one such generator per run, in event order:
ECN's RED draw (uet.net.ecn NET-N1) and the trim victim (NET-N4) of every switch port. The
switches' ECMP salts (uet.net.ecmp NET-M2) are drawn once when the fabric is built, in Python, and
given to either engine as numbers.
"""

from __future__ import annotations

M64 = 0xFFFFFFFFFFFFFFFF
_SCALE = 1.0 / (1 << 53)


def splitmix64(x: int) -> tuple[int, int]:
    """NET-R1: (the next state, the output) of splitmix64 from state ``x``."""
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


class Rng:
    """NET-R1, NET-R2: xoshiro256** seeded by splitmix64; ``random()`` as :class:`random.Random`'s."""

    __slots__ = ("s0", "s1", "s2", "s3")

    def __init__(self, seed: int):
        x = seed & M64
        x, self.s0 = splitmix64(x)
        x, self.s1 = splitmix64(x)
        x, self.s2 = splitmix64(x)
        x, self.s3 = splitmix64(x)

    def next_u64(self) -> int:
        """The next 64-bit word (NET-R1)."""
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        r = (s1 * 5) & M64
        r = ((((r << 7) | (r >> 57)) & M64) * 9) & M64
        t = (s1 << 17) & M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        self.s0, self.s1, self.s2 = s0, s1, s2
        self.s3 = ((s3 << 45) | (s3 >> 19)) & M64
        return r

    def random(self) -> float:
        """NET-R2: a float in [0, 1) from the top 53 bits of the next word."""
        return (self.next_u64() >> 11) * _SCALE

    def getrandbits(self, k: int) -> int:
        """NET-R2 for ``k`` <= 64: the top ``k`` bits of the next word."""
        if not 0 < k <= 64:
            raise ValueError(f"getrandbits takes 1 to 64 bits, not {k}")
        return self.next_u64() >> (64 - k)
