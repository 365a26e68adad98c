"""Multipath: how a sender picks the entropy value (the UDP source port, uet-facts.md A.1, E.5)
of each packet. The PDS only knows :class:`EntropySelector`; REPS (E.5) plugs in later."""

from .base import EntropySelector, entropy_values
from .spray import RandomSpray, RoundRobinSpray, SingleEntropy, make_selector

__all__ = ["EntropySelector", "RandomSpray", "RoundRobinSpray", "SingleEntropy", "entropy_values",
           "make_selector"]
