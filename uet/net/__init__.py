"""The network model (docs/design-notes.md "The second wave": one model for every driver): what a path does
to a datagram - rate, delay, queueing, ECN marking, trimming, loss, corruption, reordering,
duplication, failure - and which path ECMP gives it. Pure code with no clock and no sockets:
:mod:`uet.sim` drives it in virtual time, :mod:`uet.fabric` in wall time. Each rule is written
once: ECN marking and trimming in :mod:`.ecn`, ECMP in :mod:`.ecmp`, CSIG stamping in :mod:`.csig`;
the queues are :mod:`.link` (a path's) and :mod:`.switch` (a switch port's), the topologies
:mod:`.topology` and their routes as relay paths :mod:`.route`."""

from .config import TRIM_KEEP, NetConfig
from .ecmp import Ecmp, salt
from .link import CE, COUNTERS, ETH_IP4_UDP, REORDERED, TRIMMED, Fate, Link, flip

__all__ = ["CE", "COUNTERS", "ETH_IP4_UDP", "Ecmp", "Fate", "Link", "NetConfig", "REORDERED",
           "TRIMMED", "TRIM_KEEP", "flip", "salt"]
