"""Shared helpers for the SES tests: endpoints wired by the in-memory loopback."""

from __future__ import annotations

from uet.ses import SesConfig, SesEndpoint
from uet.ses.loopback import Loopback


def pair(mtu: int = 4096, mode: str = "rud", seed: int = 0, **lossy):
    a = SesEndpoint(SesConfig(mtu=mtu, seed=seed))
    b = SesEndpoint(SesConfig(mtu=mtu, seed=seed + 1))
    lb = Loopback({"a": a, "b": b}, mode=mode, seed=seed, **lossy)
    return a, b, lb


def run(lb):
    lb.run()
    return {n: ep.events() for n, ep in lb.eps.items()}


def only(events, cls):
    return [e for e in events if isinstance(e, cls)]
