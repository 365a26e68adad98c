"""Entropy selectors built from a plain description (issue 28): what a host's initiator PDCs use
is said once, as data (:class:`SelectorSpec`: the policy, its values, the CSIG knobs), and
:class:`SelectorFactory` turns it into one selector per PDC when the PDS asks (the
``entropy_factory`` of :class:`uet.pds.PdsConfig`). So the sans-IO core never calls back into the
layer that opened the sockets: a live endpoint (uet.io) only describes its entropy sockets.

With the PDC's ``csig`` set (E.4, the PDS's rule PDS-I16) the policy goes inside a
:class:`uet.multipath.csig.CsigSelector` (MULTIPATH-K1 to MULTIPATH-K5) with the description's scale and knobs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..cms.csig import Scale
from .base import EntropySelector
from .csig import CsigSelector
from .reps import REPS_RECYCLE
from .spray import SELECTOR_KINDS, make_selector


@dataclass(frozen=True)
class SelectorSpec:
    """The entropy selection of a host's initiator PDCs, as data."""

    kind: str = "rr"                       # a policy of SELECTOR_KINDS
    values: Sequence[int] | None = None    # its EVs (a live endpoint's entropy ports); None:
                                           # ``entropy_values`` seeded ones per PDC
    rehash_on_timeout: bool = True         # ``single``: a timeout moves to a new random EV
    reps_recycle: str = REPS_RECYCLE       # ``reps``: MULTIPATH-R1's choice (reps.py)
    csig_scale: Scale | None = None        # the CSIG selector's scale (CMS-C2) ...
    csig_knobs: Mapping[str, float] = field(default_factory=dict)  # ... and MULTIPATH-K2 to MULTIPATH-K4 knobs
    alias: Callable[[int], int] | None = None  # a reflected EV -> ours (a relay remapped it)

    def __post_init__(self) -> None:
        if self.kind not in SELECTOR_KINDS:
            raise ValueError(f"unknown entropy selection {self.kind!r} "
                             f"({', '.join(SELECTOR_KINDS)})")


class SelectorFactory:
    """``factory(cfg, rng)``: a new selector for one PDC of PdsConfig ``cfg`` (``rng`` its
    host's); ``made`` keeps every one it built (for the summaries' counters)."""

    def __init__(self, spec: SelectorSpec):
        self.spec = spec
        self.made: list[EntropySelector] = []

    def __call__(self, cfg: Any, rng: random.Random) -> EntropySelector:
        spec = self.spec
        sel = make_selector(spec.kind, cfg.entropy_values, rng, values=spec.values,
                            rehash_on_timeout=spec.rehash_on_timeout,
                            reps_recycle=spec.reps_recycle)
        if cfg.csig is not None:
            sel = CsigSelector(sel, t=cfg.csig, scale=spec.csig_scale, alias=spec.alias,
                               **spec.csig_knobs)
        self.made.append(sel)
        return sel
