"""Congestion management (CMS): the interface the PDS drives, and the algorithms behind it.

One file per algorithm; the PDS only knows :class:`CongestionControl`. Shipped: the fixed window
(:mod:`uet.cms.fixed`). NSCC, RCCC (uet-facts.md E.1, E.2) plug in later without touching the PDS.
"""

from .base import CongestionControl
from .fixed import FixedWindow

__all__ = ["CongestionControl", "FixedWindow"]
