"""Oblivious spraying policies (round-robin and seeded random), the single-EV ECMP baseline, and
:func:`make_selector`, which builds one by name (these, or REPS and htsim's oblivious spraying
from reps.py). Path health (MULTIPATH-H1 to MULTIPATH-H4) is the base class's."""

from __future__ import annotations

import random
from typing import Sequence

from .base import EPHEMERAL_LO, EntropySelector, entropy_values
from .reps import REPS_RECYCLE, ObliviousSpray, Reps


class RoundRobinSpray(EntropySelector):
    """Cycle through the values: packet k uses values[k mod N]."""

    def __init__(self, values: Sequence[int]):
        super().__init__(values)
        self._i = 0
        self._n = len(self.values)

    def choose(self, now: float) -> int:
        i = self._i
        self._i = i + 1 if i + 1 < self._n else 0
        return self.values[i]


class RandomSpray(EntropySelector):
    """Pick a value uniformly at random (seeded) for every packet."""

    def __init__(self, values: Sequence[int], rng: random.Random):
        super().__init__(values)
        self._rng = rng

    def choose(self, now: float) -> int:
        return self.values[int(self._rng.random() * len(self.values))]


class SingleEntropy(EntropySelector):
    """One value for every packet: a flow pinned to one ECMP path. With ``rehash_on_timeout``
    (default) a retransmission timeout moves the flow to a new random value, as Linux TCP rehashes
    its flow label on RTO; without it, a failed path stays failed."""

    def __init__(self, value: int, rng: random.Random | None = None, rehash_on_timeout: bool = True):
        super().__init__([value])
        self.value = value
        self._rng = rng or random.Random(value)
        self.rehash_on_timeout = rehash_on_timeout

    def choose(self, now: float) -> int:
        return self.value

    def next_retransmit(self, now: float) -> int:
        return self.value  # the baseline: one path, whatever happened on it

    def on_timeout(self, *, now: float) -> None:
        if self.rehash_on_timeout:
            self.value = self._rng.randrange(EPHEMERAL_LO, 65536)
            self.values = [self.value]


#: the names :func:`make_selector` knows
SELECTOR_KINDS = ("rr", "random", "single", "reps", "oblivious")


def make_selector(kind: str, n: int = 64, seed: int | random.Random = 0, *,
                  values: Sequence[int] | None = None,
                  rehash_on_timeout: bool = True,
                  reps_recycle: str = REPS_RECYCLE) -> EntropySelector:
    """``rr`` (round-robin spraying), ``random`` (seeded random spraying), ``single`` (one EV:
    the ECMP baseline; ``rehash_on_timeout`` as :class:`SingleEntropy`'s), ``reps`` (REPS with
    its defaults, E.5/E.6: reps.py) or ``oblivious`` (each EV once per round of ``n`` in a new
    seeded order, E.6: reps.py; ``reps_recycle`` is REPS's MULTIPATH-R1 choice) over ``values`` (a live endpoint's entropy sockets' ports; a
    ``single`` selector takes the first), or without them over ``n`` seeded entropy values."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    if kind not in SELECTOR_KINDS:
        raise ValueError(f"unknown entropy selection {kind!r} ({', '.join(SELECTOR_KINDS)})")
    if values is None:
        values = entropy_values(1 if kind == "single" else n, rng)
    if kind == "rr":
        return RoundRobinSpray(values)
    if kind == "random":
        return RandomSpray(values, rng)
    if kind == "single":
        return SingleEntropy(values[0], rng, rehash_on_timeout=rehash_on_timeout)
    if kind == "reps":
        return Reps(values, rng, recycle=reps_recycle)
    return ObliviousSpray(values, rng)
