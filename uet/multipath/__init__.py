"""Multipath: how a sender picks the entropy value (the UDP source port, docs/facts.md A.1, E.5)
of each packet. The PDS only knows :class:`EntropySelector`; the policies are oblivious spraying
(round-robin, random, htsim's per-round order), one EV, and REPS (E.5, E.6); a CSIG-aware
selector (E.4) wraps any of them; :class:`SelectorFactory` builds them from a plain description
(:class:`SelectorSpec`) for the PDS."""

from .base import EntropySelector, entropy_values
from .csig import CsigSelector, csig_selector
from .factory import SelectorFactory, SelectorSpec
from .reps import ObliviousSpray, Reps
from .spray import SELECTOR_KINDS, RandomSpray, RoundRobinSpray, SingleEntropy, make_selector

__all__ = ["SELECTOR_KINDS", "CsigSelector", "EntropySelector", "ObliviousSpray", "RandomSpray",
           "Reps", "RoundRobinSpray", "SelectorFactory", "SelectorSpec", "SingleEntropy",
           "csig_selector", "entropy_values", "make_selector"]
