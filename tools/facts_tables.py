#!/usr/bin/env python3
"""The field tables of docs/facts.md, generated from the header declarations (uet/wire/).

docs/facts.md holds blocks of the form::

    <!-- table: pds.ack -->
    ...generated rows...
    <!-- end table -->

A ``table`` block is the layout of one declared header (``uet.wire.registry.HEADERS``), a ``values``
block (``<!-- values: nack_code -->``) the value table of one enumeration of ``uet.wire.enums``, so
the document shows exactly what the codecs, the Scapy layers and the Lua dissector use; nothing is
typed by hand twice. ``python tools/facts_tables.py`` rewrites the blocks in place; ``--check`` only says
which blocks are stale and exits 1 (tests/test_facts_labels.py runs the same check).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from uet.wire import enums  # noqa: E402
from uet.wire.registry import HEADERS  # noqa: E402
from uet.wire.schema import Enum, Field, Header, Item, Switch  # noqa: E402

FACTS = ROOT / "docs" / "facts.md"
BLOCK = re.compile(r"(<!-- (?P<kind>table|values): (?P<key>[\w.]+) -->\n)(?P<body>.*?)(<!-- end table -->)",
                   re.S)
ENUMS: dict[str, Enum] = {e.name: e for e in vars(enums).values() if isinstance(e, Enum)}


def _widths(items: Iterable[Item]) -> set[int]:
    """The possible bit lengths of a run of items (a switch whose arms differ gives several)."""
    totals = {0}
    for it in items:
        if isinstance(it, Field):
            totals = {t + it.width for t in totals}
        else:
            arms = [c.items for c in it.cases] + [it.default]  # an empty default: no bits
            totals = {t + w for t in totals for arm in arms for w in _widths(arm)}
    return totals


def _condition(sw: Switch, values: Iterable[object] | None) -> str:
    name = f"option {sw.on[1:]}" if sw.is_option else sw.on
    if values is None:
        return f"{name}: other"
    ordered = sorted(values, key=lambda v: (isinstance(v, str), v if isinstance(v, int) else 0, str(v)))
    shown = ", ".join(f"0x{v:02X}" if isinstance(v, int) and sw.on == "opcode" else str(v)
                      for v in ordered)
    return f"{name} = {shown}"


def _at(bits: set[int]) -> str:
    return " or ".join(str(b) for b in sorted(bits))


def _rows(items: Iterable[Item], bits: set[int], when: str) -> Iterator[tuple[str, Field, str]]:
    for it in items:
        if isinstance(it, Field):
            yield _at(bits), it, when
            bits = {b + it.width for b in bits}
            continue
        arms = [(c.items, _condition(it, c.values)) for c in it.cases]
        if it.default or not it.cases:
            arms.append((it.default, _condition(it, None)))
        for items_, cond in arms:
            yield from _rows(items_, bits, f"{when}; {cond}" if when else cond)
        bits = {b + w for b in bits for w in _widths([it])}


def _kind(f: Field) -> str:
    if f.reserved:
        return "reserved, 0"
    parts = [f.doc] if f.doc else []
    if f.signed:
        parts.append("signed")
    if f.enum is not None:
        parts.append(f"values: {f.enum.name}")
    return "; ".join(parts)


def table(header: Header) -> str:
    """The markdown table of one header: bit offset, width, field, meaning, condition."""
    rows = list(_rows(header.items, {0}, ""))
    size = " or ".join(str(w // 8) for w in sorted(_widths(header.items)))
    lines = [f"Generated from `{header.key}` ({header.title}), {size} bytes as declared:", "",
             "| bit | width | field | meaning | when |", "|---|---|---|---|---|"]
    for bit, f, when in rows:
        name = "rsvd" if f.reserved else f"`{f.name}`"
        lines.append(f"| {bit} | {f.width} | {name} | {_kind(f)} | {when} |")
    for d in header.derived:
        lines.append(f"| | | `{d.name}` (derived) | {d.a} {d.op} {d.b}, mod 2^{d.bits} | |")
    return "\n".join(lines) + "\n"


def values(enum: Enum) -> str:
    """The value table of one enumeration, on one line per value."""
    lines = [f"Generated from the enumeration `{enum.name}`:", "", "| value | name |", "|---|---|"]
    lines += [f"| {v} (0x{v:02X}) | {name} |" for v, name in sorted(enum.table.items())]
    lines += [f"| 0x{lo:02X}-0x{hi:02X} | {label}_0xNN |" for lo, hi, label in enum.ranges]
    return "\n".join(lines) + "\n"


def _block(kind: str, key: str) -> str | None:
    """The body of one block, between blank lines so that markdown ends the table before the
    closing comment."""
    if kind == "table":
        body = table(HEADERS[key]) if key in HEADERS else None
    else:
        body = values(ENUMS[key]) if key in ENUMS else None
    return None if body is None else f"\n{body}\n"


def render(text: str) -> str:
    """``text`` with every generated block regenerated."""
    def one(m: re.Match[str]) -> str:
        body = _block(m.group("kind"), m.group("key"))
        if body is None:
            raise SystemExit(f"docs/facts.md: a {m.group('kind')} block names an undeclared "
                             f"{'header' if m.group('kind') == 'table' else 'enumeration'} {m.group('key')!r}")
        return m.group(1) + body + m.group(5)
    return BLOCK.sub(one, text)


def stale(text: str) -> list[str]:
    """Keys of the blocks whose rows differ from the declarations."""
    return [m.group("key") for m in BLOCK.finditer(text)
            if m.group("body") != _block(m.group("kind"), m.group("key"))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="regenerate the field tables of docs/facts.md "
                                            "from the header declarations in uet/wire/")
    p.add_argument("--check", action="store_true", help="only report stale tables (exit 1 if any)")
    p.add_argument("--file", type=Path, default=FACTS, help="the facts file (default docs/facts.md)")
    args = p.parse_args(argv)
    text = args.file.read_text(encoding="utf-8")
    if args.check:
        old = stale(text)
        for key in old:
            print(f"{args.file}: table {key} is stale; run python tools/facts_tables.py", file=sys.stderr)
        return 1 if old else 0
    new = render(text)
    if new != text:
        args.file.write_text(new, encoding="utf-8")
        print(f"{args.file}: tables regenerated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
