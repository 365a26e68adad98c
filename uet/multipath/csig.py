"""A CSIG-aware entropy selector (facts E.4, E.5): another policy (REPS by default) chooses,
and the CSIG signals reflected to the sender (uet.cms.csig CMS-C4, the PDS's rule PDS-I16) veto the EVs
whose path is known to be clearly worse than the best one known.

E.4 carries the path's bottleneck value back to the sender; E.5 lets a sender change EV when a
path is bad. How a sender should compare paths is not in the facts; the project's choice:

  MULTIPATH-K1  memory: per EV, the bucket (CMS-C2) and arrival time of its newest reflected tag
      (:meth:`on_signal`). A tag of another signal type, or with r set (CMS-C1), is counted
      (``ignored``) and not kept; so is a tag with d set (CMS-C3): it measured only the hops before
      a trim, and the trim itself reaches the inner policy as a NACK (REPS MULTIPATH-R3).
  MULTIPATH-K2  expiry: a signal older than ``max_age`` (default 200 us, about 20 RTTs of the default
      leaf-spine) is forgotten (``expired``): a path avoided that long is tried again, so a
      path that recovered is found (its next packet brings a fresh signal). It must outlast
      the time the policy takes to come back to an EV (64 EVs at 1-3 packets per us: 20-60 us),
      or an EV's signal has expired whenever it is offered again and vetoes nothing.
  MULTIPATH-K3  clearly worse, against the best path now: the reference is the best bucket among the
      signals of the last ``recent`` (default 20 us, about two RTTs), so that values from
      before the fabric's load changed (a flow's first round trips see an idle fabric) do not
      make every newer one look bad. For the minimum types (ABW, ABW/C) a bucket below
      ``frac`` (0.5) of the reference and more than ``margin`` (4) buckets below it (near the
      bottom of the scale, 0 against 1 or 2 is quantisation noise, not a worse path); for the
      maximum types (delay, nQD) a bucket more than ``margin`` above the reference (the
      lowest: 2 us of per-hop delay, or 4/31 of a buffer, on the default scale). An EV without
      a signal, or with no reference, is never worse: the policy's exploration is what finds
      the paths' values.
  MULTIPATH-K4  veto: when the inner policy offers a clearly worse EV, it is asked again (``reasked``),
      at most ``reasks`` (3) times per packet, as MULTIPATH-H1 of base.py skips failed EVs; if every
      offer was clearly worse the last one is used (``kept_bad``: nothing better is at hand).
      The health rules MULTIPATH-H1 to MULTIPATH-H4 of base.py run on top of this choice, as for any policy.
  MULTIPATH-K5  the inner policy hears everything: every hook (``on_delivered``, ``on_ack``, ``on_nack``,
      ``on_loss``, ``on_timeout``, ``on_signal``) goes to it as to this selector's own health
      rules, so REPS recycles, forgets and freezes as it would alone.

What the tag can tell (measured, tools/bench_csig.py): a tag holds the path's worst hop (CMS-C3), so
a bottleneck every path shares hides the others. One flow at line rate fills its receiver's link,
whose ABW is then 0 on every path a few RTTs in: no path is clearly worse, however degraded a
spine is. The signal separates paths when the shared hops have room (a window-limited sender, or
many senders on different receivers).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..cms.csig import MINIMUM_TYPES, Scale
from .base import EntropySelector

CSIG_FRAC = 0.5          # MULTIPATH-K3: a minimum-type path below half the best one is clearly worse
CSIG_MARGIN = 4          # MULTIPATH-K3: a maximum-type path more than 4 buckets above the best one
CSIG_MAX_AGE = 200e-6    # MULTIPATH-K2: longer than the policy takes to come back to an EV
CSIG_RECENT = 20e-6      # MULTIPATH-K3: about two RTTs of the default leaf-spine (9.4 us each)
CSIG_REASKS = 3          # MULTIPATH-K4: like MULTIPATH-H1's skipping, a bounded number of second opinions


class CsigSelector(EntropySelector):
    """MULTIPATH-K1 to MULTIPATH-K5 around ``inner`` (any :class:`EntropySelector`) for signal type ``t`` on ``scale``."""

    def __init__(self, inner: EntropySelector, *, t: int, scale: Scale | None = None,
                 frac: float = CSIG_FRAC, margin: int = CSIG_MARGIN,
                 max_age: float = CSIG_MAX_AGE, recent: float = CSIG_RECENT,
                 reasks: int = CSIG_REASKS, alias: Callable[[int], int] | None = None):
        super().__init__(inner.values)
        if not 0 <= t <= 3:
            raise ValueError(f"unknown CSIG signal type {t}")
        if not (0 < frac <= 1 and margin >= 0 and 0 < recent <= max_age and reasks >= 0):
            raise ValueError("need 0 < frac <= 1, margin >= 0, 0 < recent <= max_age, "
                             "reasks >= 0")
        self.inner = inner
        self.t = t
        self.scale = scale or Scale()
        self.frac = frac
        self.margin = margin
        self.max_age = max_age
        self.recent = recent
        self.reasks = reasks
        self.alias = alias  # MULTIPATH-K1: a reflected EV -> the sender's own (a relay remapped it)
        self._minimum = t in MINIMUM_TYPES
        self._sig: dict[int, tuple[int, float]] = {}   # MULTIPATH-K1: EV -> (bucket, when reflected)
        self._best = 0                                  # MULTIPATH-K3: the reference, cached ...
        self._best_ev: int | None = None                # ... the EV that holds it ...
        self._best_until = -math.inf                    # ... until its signal is not recent
        self.counters: dict[str, int] = dict.fromkeys(
            ("signals", "ignored", "expired", "reasked", "kept_bad"), 0)

    # --- the policy ----------------------------------------------------------------------------

    def choose(self, now: float) -> int:
        ev = self.inner.choose(now)
        if not self._sig:
            return ev
        for _ in range(self.reasks):  # MULTIPATH-K4
            if not self._worse(ev, now):
                return ev
            self.counters["reasked"] += 1
            ev = self.inner.choose(now)
        if self._worse(ev, now):
            self.counters["kept_bad"] += 1
        return ev

    def _worse(self, ev: int, now: float) -> bool:
        """MULTIPATH-K3 (with MULTIPATH-K2 on the way)."""
        got = self._sig.get(ev)
        if got is None:
            return False
        bucket, when = got
        if now - when > self.max_age:
            del self._sig[ev]
            self.counters["expired"] += 1
            return False
        best = self._reference(now)
        if best is None:
            return False
        if self._minimum:
            return bucket < self.frac * best and bucket < best - self.margin
        return bucket > best + self.margin

    def _reference(self, now: float) -> int | None:
        """MULTIPATH-K3: the best bucket among the recent signals, None without one (MULTIPATH-K2: expired ones
        are forgotten on the way)."""
        if now <= self._best_until:
            return self._best
        sig, minimum, age, recent = self._sig, self._minimum, self.max_age, self.recent
        best, best_ev, best_when = 0, None, -math.inf
        for ev, (bucket, when) in list(sig.items()):
            if now - when > age:
                del sig[ev]
                self.counters["expired"] += 1
            elif now - when <= recent and (
                    best_ev is None or (bucket > best if minimum else bucket < best)):
                best, best_ev, best_when = bucket, ev, when
        self._best, self._best_ev, self._best_until = best, best_ev, best_when + recent
        return best if best_ev is not None else None

    def paths(self, now: float) -> dict[int, float]:
        """The fresh signals (MULTIPATH-K1, MULTIPATH-K2) as values of the scale (Gb/s, a fraction or seconds)."""
        return {ev: self.scale.value(self.t, b) for ev, (b, when) in self._sig.items()
                if now - when <= self.max_age}

    # --- hooks (MULTIPATH-K5: the health rules and the inner policy both hear each one) ------------------

    def on_signal(self, *, now: float, ev: int, bits: int) -> None:
        """MULTIPATH-K1: the newest tag reflected for ``ev`` (under its ``alias``, when one is given)."""
        if self.alias is not None:
            ev = self.alias(ev)
        fwd = getattr(self.inner, "on_signal", None)
        if fwd is not None:
            fwd(now=now, ev=ev, bits=bits)
        if bits >> 14 != self.t or bits & 3:  # another type, d or r set (MULTIPATH-K1)
            self.counters["ignored"] += 1
            return
        bucket = (bits >> 9) & 31
        self.counters["signals"] += 1
        self._sig[ev] = (bucket, now)
        if now > self._best_until:
            return  # no cached best: the next look rescans
        if (bucket >= self._best) if self._minimum else (bucket <= self._best):
            self._best, self._best_ev, self._best_until = bucket, ev, now + self.recent
        elif ev == self._best_ev:
            self._best_until = -math.inf  # the best got worse: rescan

    def on_delivered(self, *, now: float, ev: int) -> None:
        super().on_delivered(now=now, ev=ev)
        self.inner.on_delivered(now=now, ev=ev)

    def on_ack(self, *, now: float, ev: int, ce: bool) -> None:
        super().on_ack(now=now, ev=ev, ce=ce)
        self.inner.on_ack(now=now, ev=ev, ce=ce)

    def on_nack(self, *, now: float, ev: int, code: int) -> None:
        super().on_nack(now=now, ev=ev, code=code)
        self.inner.on_nack(now=now, ev=ev, code=code)

    def on_loss(self, *, now: float, ev: int) -> None:
        super().on_loss(now=now, ev=ev)
        self.inner.on_loss(now=now, ev=ev)

    def on_timeout(self, *, now: float) -> None:
        super().on_timeout(now=now)
        self.inner.on_timeout(now=now)


def csig_selector(inner: EntropySelector, *, t: int, scale: Scale | None = None,
                  **kw: Any) -> CsigSelector:
    """:class:`CsigSelector` around ``inner`` (the factory :mod:`uet.sim.fabric` builds the
    PDS's ``entropy_factory`` with when CSIG is on; ``kw``: frac, margin, max_age, recent,
    reasks)."""
    return CsigSelector(inner, t=t, scale=scale, **kw)
