"""Renderings of decoded headers derived from the schema: flat JSON objects and readable trees.

JSON (docs/design-notes.md "uet decode" contract): every non-reserved field of the variant in force, in wire
order; ``<field>_name`` beside every enumerated field; derived values (``clear_psn``, ``ack_psn`` ...)
after their sources; addresses as strings. Reserved fields are left out (a non-zero one is reported
as a problem instead).
"""

from __future__ import annotations

from typing import Any, Mapping

from .codec import Codec, Variant
from .codec import display_value as _display
from .schema import DEFAULT_OPTIONS, Options


def header_json(c: Codec, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS,
                variant: Variant | None = None) -> dict[str, Any]:
    """Flat JSON object of one decoded header (possibly partial: absent fields are skipped)."""
    var = variant or c.variant_for_fields(fields, opts)
    out: dict[str, Any] = {}
    for p in var.placed:
        f = p.field
        if f.reserved or p.name not in fields:
            continue
        v = fields[p.name]
        out[p.name] = _display(f.display, v) if f.display in ("ipv4", "ipv6") else v
        if f.enum is not None:
            out[p.name + "_name"] = f.enum.symbol(v)
    out.update(c.derived(fields))
    return out


def header_tree(c: Codec, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS,
                indent: str = "    ") -> list[str]:
    """Readable lines, one per field, like ``tshark -V``: name, value, enum symbol, bit position."""
    var = c.variant_for_fields(fields, opts)
    lines = []
    for p in var.placed:
        f = p.field
        if p.name not in fields:
            continue
        v = fields[p.name]
        if f.reserved and not v:
            continue
        if f.flag:
            text = "set" if v else "not set"
        elif f.display in ("ipv4", "ipv6"):
            text = _display(f.display, v)
        elif f.display == "hex" or f.reserved:
            text = f"0x{v:0{(f.width + 3) // 4}x}"
        else:
            text = str(v)
        if f.enum is not None:
            text += f" ({f.enum.symbol(v) or 'unknown'})"
        label = "reserved" if f.reserved else p.name
        lines.append(f"{indent}{label}: {text}")
    for name, v in c.derived(fields).items():
        lines.append(f"{indent}[{name}: {v}]")
    return lines
