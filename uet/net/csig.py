"""CSIG stamping (facts E.4): what a queue does to a CSIG tag passing it, written once for the
switch ports of the many-host simulator (:class:`uet.net.switch.Port`, NET-S5 to NET-S6) and the links of the
live relay (:class:`uet.fabric.paths.Link`, L1-L4). The tag, its buckets and compare-and-replace
are rules CMS-C1 to CMS-C4 of :mod:`uet.cms.csig`; here is only what a hop does with them.

  NET-G1  the utilisation a bandwidth signal (ABW, ABW/C) reads is an exponentially weighted average
      of the link's busy fraction with time constant ``tau``, brought up to ``now`` from ``since``
      knowing that the link was busy until ``end`` and idle after it (exact for that piecewise
      constant signal: :func:`utilisation`). E.4 names the signals, not how a switch measures
      them (a choice; each driver picks its ``tau``).
  NET-G2  a tagged data packet the hop forwards untrimmed is stamped: CMS-C3 compare and replace with the
      hop's bucket and locator; counted ``csig_stamped`` (compared) and ``csig_replaced``
      (changed) on the hop (:func:`stamp_on`).
  NET-G3  a tagged packet the hop trims gets d (do-not-update) set (E.4, C.6) and is not stamped;
      counted ``csig_d_set`` when d was not set already (:func:`trim_on`).
"""

from __future__ import annotations

import math

from ..cms.csig import set_d, stamp


def utilisation(u: float, since: float, end: float, now: float, tau: float) -> float:
    """NET-G1: the average ``u`` as of ``since``, brought up to ``now`` (busy until ``end``)."""
    if now <= since:
        return u
    end = min(max(end, since), now)
    if end > since:
        u = 1.0 - (1.0 - u) * math.exp((since - end) / tau)
    if now > end:
        u *= math.exp((end - now) / tau)
    return u


def stamp_on(hop: object, bits: int, bucket: int, lm: int) -> int:
    """NET-G2: the tag ``bits`` after ``hop`` (its counters moved) stamped it with ``bucket``."""
    new = stamp(bits, bucket, lm)
    hop.csig_stamped += 1  # type: ignore[attr-defined]
    if new != bits:
        hop.csig_replaced += 1  # type: ignore[attr-defined]
    return new


def trim_on(hop: object, bits: int) -> int:
    """NET-G3: the tag ``bits`` of a packet ``hop`` trimmed."""
    if not bits & 2:
        hop.csig_d_set += 1  # type: ignore[attr-defined]
    return set_d(bits)
