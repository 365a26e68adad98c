"""Congestion control by name (``--cc fixed|nscc|rccc``): what a PDS configuration needs for each,
built in one place for every driver (``uet sim``'s two simulators and the live endpoints).

* ``fixed``: :class:`FixedWindow` of ``window_bytes``.
* ``nscc``: :class:`Nscc` (E.1) for a path of ``rate_gbps`` and ``base_rtt`` (the network's
  largest unloaded RTT, E.6).
* ``rccc``: :class:`Rccc` at the sender and, at every target, a :class:`CreditScheduler`
  sharing the receiver's link of ``rate_gbps`` per ``base_rtt`` (E.2; the scheduler is the
  project's choice, uet.cms.rccc), granting whole wire units and shares of whole packets.
"""

from __future__ import annotations

from typing import Any

from .fixed import FixedWindow
from .nscc import Nscc, NsccParams
from .rccc import CREDIT_UNIT, CreditScheduler, Rccc

CC_NAMES = ("fixed", "nscc", "rccc")


def pds_overrides(name: str, *, rate_gbps: float, base_rtt: float, window_bytes: int,
                  trimming: bool = True, nscc: NsccParams | None = None) -> dict[str, Any]:
    """The ``PdsConfig`` fields that select congestion control ``name`` (``nscc``: NSCC's
    parameters, default the E.1 table's for a network with or without ``trimming``)."""
    if name == "fixed":
        return {"cc_factory": lambda pc: FixedWindow(window_bytes, pc.mtu),
                "window_bytes": window_bytes}
    if name == "nscc":
        params = nscc or NsccParams(trimming=trimming)
        return {"cc_factory": lambda pc: Nscc(mtu=pc.mtu, rate_gbps=rate_gbps,
                                              base_rtt=base_rtt, params=params)}
    if name == "rccc":
        return {"cc_factory": lambda pc: Rccc(mtu=pc.mtu),
                "credit_scheduler_factory": lambda pc: CreditScheduler(
                    rate_gbps=rate_gbps, base_rtt=base_rtt, mtu=pc.mtu, unit=CREDIT_UNIT,
                    whole_packets=True)}
    raise ValueError(f"unknown congestion control {name!r} ({', '.join(CC_NAMES)})")
