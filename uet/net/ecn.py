"""ECN marking and trimming: the one definition of each, for every queue of every driver (the
two-host links and the live relay, :mod:`uet.net.link`; the switch ports, :mod:`uet.net.switch`;
the RoCE ports of ``uet compare``, :mod:`uet.compare.ports`).

  NET-N1  RED marking (facts A.2: "switches set CE via RED thresholds"; E.6: a probability
      rising linearly from 0 to 1 between the thresholds; G.7 for RoCE's Pmax): an ECN-capable
      packet seeing a queue of ``depth`` bytes is CE-marked never at or below ``kmin``, always
      from ``kmax``, in between with probability ``pmax`` x (depth - kmin) / (kmax - kmin), one
      draw of the caller's generator (:func:`red_mark`).
  NET-N2  where the queue is read (``ecn_point``): "dequeue" (the default, E.6: the UEC's reference
      simulator marks on dequeue, the departing packet included in the depth) or "enqueue" (the
      depth the arriving packet joins, itself not included). A switch port does either
      (:class:`uet.net.switch.Port`); a link of the two-host paths and the live relay
      (:class:`uet.net.link.Link`) models its queue by the time it is busy until, so it decides a
      packet's fate when it arrives and marks on enqueue (its depth at dequeue depends on
      arrivals it has not seen yet).
  NET-N3  trimmable (docs/design-notes.md "Defaults", facts C.6): a data packet (DSCP not 46) longer than
      what a trim keeps (``trim_bytes`` of UDP payload, docs/design-notes.md: 256) (:func:`trimmable`).
  NET-N4  the trim victim (``trim_victim``) when a full data queue meets a trimmable packet: "either"
      (the default, E.6: the arriving one or the last one queued, with equal chance, one draw;
      always the arriving one lets a sender's resends fall into step with a full queue and be
      trimmed again and again) or "arriving" (:func:`victim_is_last`). A link has no packets
      queued to choose from (NET-N2), so it trims the arriving one.
"""

from __future__ import annotations

import random

ECN_POINTS = ("dequeue", "enqueue")
TRIM_VICTIMS = ("either", "arriving")
ECN_POINT = "dequeue"    # NET-N2 default (E.6)
TRIM_VICTIM = "either"   # NET-N4 default (E.6)


def red_mark(depth: float, kmin: float, kmax: float, rng: random.Random,
             pmax: float = 1.0) -> bool:
    """NET-N1: whether an ECN-capable packet seeing ``depth`` bytes of queue is CE-marked."""
    return depth > kmin and (depth >= kmax or rng.random() < pmax * (depth - kmin) / (kmax - kmin))


def ecn_mark(port: object, pkt: object, depth: float, kmax: float, pmax: float = 1.0) -> None:
    """NET-N1 on a port object (``kmin``, ``rng``, ``ce_marked``) and a packet object (``ect``,
    ``ce``): mark ``pkt`` and count it when it is ECN-capable and NET-N1 says so."""
    # depth > kmin first: N1 never marks at or below it, and most packets see a short queue
    if (pkt.ect and depth > port.kmin  # type: ignore[attr-defined]
            and red_mark(depth, port.kmin, kmax, port.rng, pmax)):  # type: ignore[attr-defined]
        pkt.ce = True  # type: ignore[attr-defined]
        port.ce_marked += 1  # type: ignore[attr-defined]


def trimmable(n: int, control: bool, keep: int) -> bool:
    """NET-N3: a packet of ``n`` bytes (counted as ``keep`` is) can be trimmed to ``keep``."""
    return not control and n > keep


def victim_is_last(rule: str, rng: random.Random) -> bool:
    """NET-N4: whether the last packet queued is trimmed instead of the arriving one (one draw of
    ``rng`` under "either", none under "arriving")."""
    return rule == "either" and rng.random() < 0.5


def check(ecn_point: str, trim_victim: str) -> None:
    """ValueError naming the field that is not one of its choices."""
    if ecn_point not in ECN_POINTS:
        raise ValueError(f"ecn_point is {' or '.join(ECN_POINTS)}, not {ecn_point!r}")
    if trim_victim not in TRIM_VICTIMS:
        raise ValueError(f"trim_victim is {' or '.join(TRIM_VICTIMS)}, not {trim_victim!r}")
