"""From schema header to ``fields_desc``: merging a header's layout variants into one field order.

A :class:`uet.wire.schema.Header` can have several layouts (its ``Switch`` arms: "one position, two
meanings"); Scapy needs one ``fields_desc``. :func:`_layout` merges the codec's variants into one
order in which every variant's fields are a subsequence; :func:`_fields_desc` turns it into Scapy
fields, each conditional on the variants it belongs to (:class:`_VariantCond`, which finds a
packet's variant from its selector fields and the decoder options, as the codec does).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Iterable, Mapping

from scapy.fields import BitEnumField, BitField, XBitField
from scapy.packet import Packet

from ..wire.codec import codec
from ..wire.schema import DEFAULT_OPTIONS, Field as SchemaField, Header, Switch
from .config import scapy_name, uet_options
from .fields import AliasField, CondSchemaField, SignedBitField


class _VariantCond:
    """Condition of a field: the packet's layout variant (codec key) is one of ``keys``."""

    __slots__ = ("tree", "keys")

    def __init__(self, tree: list, keys: frozenset):
        self.tree = tree
        self.keys = keys

    def __call__(self, pkt: Packet) -> bool:
        return _variant_key(self.tree, pkt) in self.keys


def _switch_tree(items: Iterable[Any]) -> list:
    tree = []
    for it in items:
        if isinstance(it, Switch):
            tree.append((it, [_switch_tree(it.arm_items(i)) for i in range(len(it.cases) + 1)]))
    return tree


def _selector_value(pkt: Packet, name: str) -> Any:
    try:
        v = pkt.getfieldval(name)
    except AttributeError:
        return 0
    if v is None:
        return 0
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _variant_key(tree: list, pkt: Packet) -> tuple[int, ...]:
    """The codec variant key of ``pkt``: the same pre-order walk of the switches as the codec's."""
    key = []
    opts = None
    stack = list(reversed(tree))
    while stack:
        sw, arms = stack.pop()
        if sw.is_option:
            if opts is None:
                opts = uet_options()
            value = opts.get(sw.on[1:])
        else:
            value = _selector_value(pkt, scapy_name(sw.on))
        idx = sw.arm(value)
        key.append(idx)
        stack.extend(reversed(arms[idx]))
    return tuple(key)


def _default_key(tree: list, key: tuple[int, ...]) -> bool:
    """Whether ``key`` takes the DEFAULT_OPTIONS arm of every option switch on its path."""
    stack = list(reversed(tree))
    i = 0
    while stack:
        sw, arms = stack.pop()
        idx = key[i]
        i += 1
        if sw.is_option and idx != sw.arm(DEFAULT_OPTIONS.get(sw.on[1:])):
            return False
        stack.extend(reversed(arms[idx]))
    return True


def _same_layout(a: SchemaField, b: SchemaField) -> bool:
    return (a.width, a.signed, a.flag, a.reserved, a.display, a.enum) == \
        (b.width, b.signed, b.flag, b.reserved, b.display, b.enum)


@dataclass(eq=False)
class _Node:
    """One field of the generated ``fields_desc``: a name placed in some layout variants."""

    name: str  # codec name
    field: SchemaField
    offset: int  # first bit offset seen (for ordering and alias names)
    order: int
    alias_of: str | None = None
    keys: set = dc_field(default_factory=set)
    scapy: str = ""  # the Scapy field name (the alias name for an alias)


def _reaches(succ: dict, a: _Node, b: _Node) -> bool:
    seen, todo = set(), [a]
    while todo:
        n = todo.pop()
        if n is b:
            return True
        if id(n) in seen:
            continue
        seen.add(id(n))
        todo.extend(succ.get(n, ()))
    return False


def _layout(header: Header) -> tuple[list[_Node], list, frozenset]:
    """Merge the codec's variants of ``header`` into one field order (a topological order of the
    fields, each variant's fields being a subsequence). Each node knows the variants it is in."""
    c = codec(header)
    tree = _switch_tree(header.items)
    variants = sorted(c.variants.items(), key=lambda kv: not _default_key(tree, kv[0]))
    nodes: list[_Node] = []
    by_name: dict[str, list[_Node]] = {}
    succ: dict[_Node, set] = {}
    for key, var in variants:
        prev: _Node | None = None
        used: set[int] = set()
        for p in var.placed:
            node = None
            for cand in by_name.get(p.name, []):
                if id(cand) in used or not _same_layout(cand.field, p.field):
                    continue
                if prev is not None and cand not in succ.get(prev, ()) and _reaches(succ, cand, prev):
                    continue  # would put cand both before and after prev
                node = cand
                break
            if node is None:
                same = by_name.setdefault(p.name, [])
                alias = None
                if same:
                    alias = same[0].name
                node = _Node(p.name, p.field, p.offset, len(nodes), alias_of=alias)
                same.append(node)
                nodes.append(node)
            node.keys.add(key)
            used.add(id(node))
            if prev is not None:
                succ.setdefault(prev, set()).add(node)
            prev = node
    # Kahn's algorithm, earliest offset first
    indeg = {id(n): 0 for n in nodes}
    for a, bs in succ.items():
        for b in bs:
            indeg[id(b)] += 1
    ready = [n for n in nodes if indeg[id(n)] == 0]
    out: list[_Node] = []
    while ready:
        ready.sort(key=lambda n: (n.offset, n.order))
        n = ready.pop(0)
        out.append(n)
        for b in succ.get(n, ()):
            indeg[id(b)] -= 1
            if indeg[id(b)] == 0:
                ready.append(b)
    if len(out) != len(nodes):  # cannot happen: edges are only added when they keep the graph acyclic
        raise RuntimeError(f"{header.key}: no field order fits every variant")
    return out, tree, frozenset(c.variants)


def _enum_table(enum) -> dict[int, str]:
    table = dict(enum.table)
    for lo, hi, _label in enum.ranges:
        for v in range(lo, hi + 1):
            table.setdefault(v, enum.symbol(v))
    return table


def _scapy_field(name: str, f: SchemaField, default: int = 0):
    if f.enum is not None:
        return BitEnumField(name, default, f.width, _enum_table(f.enum))
    if f.signed:
        return SignedBitField(name, default, f.width)
    if f.display == "hex" or f.reserved:
        return XBitField(name, default, f.width)
    return BitField(name, default, f.width)


def _fields_desc(header: Header, defaults: Mapping[str, int]) -> tuple[list, dict[str, str]]:
    nodes, tree, all_keys = _layout(header)
    names: set[str] = set()
    aliases: dict[str, str] = {}
    for n in nodes:
        if n.alias_of is None:
            n.scapy = scapy_name(n.name)
        else:
            base = f"{scapy_name(n.name)}_at{n.offset}"
            nm, i = base, 2
            while nm in names:
                nm, i = f"{base}_{i}", i + 1
            n.scapy = nm
            aliases[nm] = scapy_name(n.name)
        names.add(n.scapy)
    keys_by_name: dict[str, set] = {}
    for n in nodes:
        keys_by_name.setdefault(n.name, set()).update(n.keys)
    out = []
    for n in nodes:
        fld = _scapy_field(n.scapy, n.field, defaults.get(n.name, 0))
        if n.alias_of is not None:
            out.append(AliasField(fld, _VariantCond(tree, frozenset(n.keys)), scapy_name(n.name)))
        elif n.keys == set(all_keys):
            out.append(fld)
        else:
            cond = _VariantCond(tree, frozenset(n.keys))
            any_cond = _VariantCond(tree, frozenset(keys_by_name[n.name]))
            out.append(CondSchemaField(fld, cond, any_cond))
    return out, aliases
