"""A summary's values in words for a person (``uet demo``, ``uet sim`` without ``--json``):
yes/no rather than True/False, "none" rather than None or an empty map, and no Python reprs;
``--json`` keeps the values as they are."""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> str:
    """A value in words: yes/no, none, ``K V, K V`` for a map, items joined for a list, numbers
    as they are (floats to 6 significant digits)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return "; ".join(map(plain, value)) or "none"
    return str(value)
