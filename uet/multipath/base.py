"""The entropy-selection interface.

``next(now)`` gives the entropy value (EV) for the next packet of one PDC. The hooks tell the
selector what happened to packets sent with an EV: ACK (with the CE flag), NACK, loss or timeout -
what REPS needs (uet-facts.md E.5: recycle EVs returned on ACKs without CE, explore on loss, freeze
after timeouts). ACKs and NACKs echo the request's EV (A.1), so the PDS passes the EV it sees.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

EPHEMERAL_LO = 49152  # entropy values are UDP source ports from the dynamic range


class EntropySelector:
    values: Sequence[int] = ()

    def next(self, now: float) -> int:
        raise NotImplementedError

    def on_ack(self, ev: int, ce: bool, now: float) -> None:
        pass

    def on_nack(self, ev: int, code: int, now: float) -> None:
        pass

    def on_loss(self, ev: int, now: float) -> None:
        pass

    def on_timeout(self, now: float) -> None:
        pass


def entropy_values(n: int, rng: random.Random, lo: int = EPHEMERAL_LO, hi: int = 65535) -> list[int]:
    """``n`` distinct entropy values (UDP source ports) drawn from [lo, hi] with ``rng``."""
    if not 1 <= n <= hi - lo + 1:
        raise ValueError(f"need 1..{hi - lo + 1} entropy values, got {n}")
    return sorted(rng.sample(range(lo, hi + 1), n))


def make_selector(kind: str, n: int = 64, seed: int | random.Random = 0) -> EntropySelector:
    """``rr`` (round-robin spraying), ``random`` (seeded random spraying) or ``single`` (one EV:
    the ECMP baseline) over ``n`` seeded entropy values."""
    from .spray import RandomSpray, RoundRobinSpray, SingleEntropy

    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    if kind == "rr":
        return RoundRobinSpray(entropy_values(n, rng))
    if kind == "random":
        return RandomSpray(entropy_values(n, rng), rng)
    if kind == "single":
        return SingleEntropy(entropy_values(1, rng)[0], rng)
    raise ValueError(f"unknown entropy selection {kind!r} (rr, random, single)")


SelectorFactory = Callable[[random.Random], EntropySelector]
