"""Congestion management (CMS): the interface the PDS drives, and the algorithms behind it.

One file per algorithm; the PDS only knows :class:`CongestionControl`. Shipped: the fixed window
(:mod:`uet.cms.fixed`) and NSCC (:mod:`uet.cms.nscc`, docs/facts.md E.1, E.6). RCCC (E.2) plugs in
later without touching the PDS.
"""

from .base import CongestionControl
from .fixed import FixedWindow
from .nscc import Nscc, NsccParams

__all__ = ["CongestionControl", "FixedWindow", "Nscc", "NsccParams"]
