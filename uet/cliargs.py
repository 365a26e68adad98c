"""Argument types shared by the ``uet`` subcommands: sizes, fractions, times, ``PATH@TIME`` and
``ADDR:PORT``. Each raises :class:`argparse.ArgumentTypeError` with an example of what it takes."""

from __future__ import annotations

import argparse

from . import UET_UDP_PORT

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size(s: str) -> int:
    """A byte count: ``4096``, ``64k``, ``16m``, ``64MiB``, ``1g``."""
    t = s.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        if t and t[-1] in _UNITS:
            return int(float(t[:-1]) * _UNITS[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s}: a byte count such as 4096, 64k, 64MiB") from None


def fraction(s: str) -> float:
    """A probability from 0 to 1 (``--loss 0.02``)."""
    try:
        v = float(s)
    except ValueError:
        v = -1.0
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{s}: a fraction from 0 to 1, e.g. 0.02")
    return v


def micros(s: str) -> float:
    """A time in microseconds; ``us``/``µs``, ``ms`` and ``s`` suffixes are accepted."""
    t = s.strip().lower()
    for suffix, scale in (("us", 1.0), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)):
        if t.endswith(suffix):
            return float(t[: -len(suffix)]) * scale
    return float(t)


def fail_spec(s: str) -> tuple[int, float]:
    """``I@T``: path I fails T microseconds after the start (``1@50``, ``1@250ms``)."""
    try:
        i, t = s.split("@", 1)
        return int(i), micros(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s}: expected PATH@TIME, e.g. 1@50 (µs) or 1@250ms") from None


def hostport(s: str, default_port: int = UET_UDP_PORT) -> tuple[str, int]:
    """``ADDR:PORT``, ``[V6ADDR]:PORT``, ``ADDR`` (port 4793) or a bare IPv6 address."""
    from .io.sockets import parse_hostport

    try:
        return parse_hostport(s, default_port)
    except (ValueError, OSError) as exc:
        raise argparse.ArgumentTypeError(f"{s}: expected ADDR:PORT, e.g. 127.0.0.1:4793 ({exc})") from None
