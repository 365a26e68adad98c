"""Oblivious spraying (round-robin and seeded random) and the single-EV ECMP baseline."""

from __future__ import annotations

import random
from typing import Sequence

from .base import EPHEMERAL_LO, EntropySelector


class RoundRobinSpray(EntropySelector):
    """Cycle through the values: packet k uses values[k mod N]."""

    def __init__(self, values: Sequence[int]):
        if not values:
            raise ValueError("no entropy values")
        self.values = list(values)
        self._i = 0
        self._n = len(self.values)

    def next(self, now: float) -> int:
        i = self._i
        self._i = i + 1 if i + 1 < self._n else 0
        return self.values[i]


class RandomSpray(EntropySelector):
    """Pick a value uniformly at random (seeded) for every packet."""

    def __init__(self, values: Sequence[int], rng: random.Random):
        if not values:
            raise ValueError("no entropy values")
        self.values = list(values)
        self._rng = rng

    def next(self, now: float) -> int:
        return self.values[int(self._rng.random() * len(self.values))]


class SingleEntropy(EntropySelector):
    """One value for every packet: a flow pinned to one ECMP path. With ``rehash_on_timeout``
    (default) a retransmission timeout moves the flow to a new random value, as Linux TCP rehashes
    its flow label on RTO; without it, a failed path stays failed."""

    def __init__(self, value: int, rng: random.Random | None = None, rehash_on_timeout: bool = True):
        self.value = value
        self.values = [value]
        self._rng = rng or random.Random(value)
        self.rehash_on_timeout = rehash_on_timeout

    def next(self, now: float) -> int:
        return self.value

    def on_timeout(self, now: float) -> None:
        if self.rehash_on_timeout:
            self.value = self._rng.randrange(EPHEMERAL_LO, 65536)
            self.values = [self.value]
