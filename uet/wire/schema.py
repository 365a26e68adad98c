"""The header description language: one declaration per header, as data.

A header is a list of *items*, laid out MSB-first from bit 0 (docs/facts.md section 0 conventions):

* :class:`Field` - a named bit field (width, signedness, enum table, flag, reserved, doc, facts row);
* :class:`Switch` - "one position, two meanings": the items that follow depend on a field decoded
  earlier in the same header (``on="syn"``) or on a decoder option (``on="@ccx_layout"``).

Everything else - the fast codecs (:mod:`uet.wire.codec`), the Scapy layers, the JSON and tree
renderings and the Wireshark Lua generator - is derived from these declarations. Nothing here knows
about bytes; it only describes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Sequence, Union


@dataclass(frozen=True)
class Enum:
    """A value table: number -> symbol, as the facts tables name them."""

    name: str
    table: Mapping[int, str]
    ref: str = ""
    #: Ranges that are legal but unnamed (vendor, experimental), shown as ``<label>_0xNN``.
    ranges: tuple[tuple[int, int, str], ...] = ()

    def symbol(self, value: int) -> str | None:
        sym = self.table.get(value)
        if sym is not None:
            return sym
        for lo, hi, label in self.ranges:
            if lo <= value <= hi:
                return f"{label}_0x{value:02X}"
        return None

    def value(self, symbol: str) -> int:
        for v, s in self.table.items():
            if s == symbol:
                return v
        raise KeyError(f"{self.name}: no symbol {symbol!r}")

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and self.symbol(value) is not None


@dataclass(frozen=True)
class Field:
    """One bit field. ``display`` is a rendering hint: dec, hex, ipv4, ipv6."""

    name: str
    width: int
    doc: str = ""
    ref: str = ""
    signed: bool = False
    enum: Enum | None = None
    flag: bool = False
    reserved: bool = False
    display: str = "dec"

    def __post_init__(self) -> None:
        if self.width <= 0:
            raise ValueError(f"field {self.name}: width must be positive")
        if self.flag and self.width != 1:
            raise ValueError(f"flag {self.name} must be 1 bit wide")

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Case:
    """One arm of a :class:`Switch`: taken when the selector is in ``values``."""

    values: frozenset[int] | frozenset[str]
    items: tuple["Item", ...]
    label: str = ""


@dataclass(frozen=True)
class Switch:
    """Items whose meaning depends on an earlier field (or, with ``@name``, on a decoder option).

    Every case (and the default) must cover the same number of bits, unless the switch is the last
    variable part of a header whose length legitimately varies (the TSS SSI, the XDP2 CCX layouts).
    """

    on: str
    cases: tuple[Case, ...]
    default: tuple["Item", ...] = ()
    doc: str = ""

    @property
    def is_option(self) -> bool:
        return self.on.startswith("@")

    def arm(self, value: object) -> int:
        """Index of the case taken for ``value``; ``len(cases)`` means the default."""
        for i, case in enumerate(self.cases):
            if value in case.values:
                return i
        return len(self.cases)

    def arm_items(self, index: int) -> tuple["Item", ...]:
        return self.cases[index].items if index < len(self.cases) else self.default


Item = Union[Field, Switch]


@dataclass(frozen=True)
class Derived:
    """A value computed from two fields, mod 2**bits: ``a + b`` or ``a - b`` (PSN arithmetic)."""

    name: str
    a: str
    op: str
    b: str
    bits: int = 32
    doc: str = ""
    ref: str = ""

    def compute(self, values: Mapping[str, int]) -> int | None:
        if self.a not in values or self.b not in values:
            return None
        x, y = int(values[self.a]), int(values[self.b])
        r = x + y if self.op == "+" else x - y
        return r & ((1 << self.bits) - 1)


@dataclass(frozen=True)
class Header:
    """A header declaration. ``key`` is ``layer.name`` (``pds.ack_cc``); ``layer`` is the JSON key."""

    key: str
    title: str
    items: tuple[Item, ...]
    ref: str = ""
    doc: str = ""
    derived: tuple[Derived, ...] = ()

    @property
    def layer(self) -> str:
        return self.key.split(".", 1)[0]

    @property
    def short(self) -> str:
        return self.key.split(".", 1)[-1]

    def all_fields(self) -> Iterator[Field]:
        """Every field of every arm, depth first (a name may appear in several arms)."""
        yield from _walk_fields(self.items)

    def field_named(self, name: str) -> Field:
        for f in self.all_fields():
            if f.name == name:
                return f
        raise KeyError(f"{self.key}: no field {name!r}")


def _walk_fields(items: Iterable[Item]) -> Iterator[Field]:
    for it in items:
        if isinstance(it, Field):
            yield it
        else:
            for case in it.cases:
                yield from _walk_fields(case.items)
            yield from _walk_fields(it.default)


# --- small constructors that keep the declarations readable ----------------------------------


def U(name: str, width: int, doc: str = "", ref: str = "", *, display: str = "dec") -> Field:
    return Field(name, width, doc, ref, display=display)


def X(name: str, width: int, doc: str = "", ref: str = "") -> Field:
    return Field(name, width, doc, ref, display="hex")


def S(name: str, width: int, doc: str = "", ref: str = "") -> Field:
    return Field(name, width, doc, ref, signed=True)


def E(name: str, width: int, enum: Enum, doc: str = "", ref: str = "") -> Field:
    return Field(name, width, doc, ref, enum=enum)


def Flag(name: str, doc: str = "", ref: str = "") -> Field:
    return Field(name, 1, doc, ref, flag=True)


def Rsvd(width: int, doc: str = "reserved") -> Field:
    return Field("rsvd", width, doc, reserved=True, display="hex")


def When(on: str, cases: Mapping[object, Sequence[Item]], default: Sequence[Item] = (), doc: str = "") -> Switch:
    """``When("syn", {1: [...], 0: [...]})``; a key may be a value or a tuple/set of values."""
    built = []
    for key, items in cases.items():
        values = frozenset(key) if isinstance(key, (tuple, set, frozenset)) else frozenset([key])
        built.append(Case(values, tuple(items)))  # type: ignore[arg-type]
    return Switch(on, tuple(built), tuple(default), doc)


@dataclass
class Options:
    """Decoder/encoder choices where the facts conflict (docs/facts.md H.1). Defaults follow H.1.

    * ``ccx_layout``: ``"1.0"`` (ACK_CCX 40 B, NACK_CCX 32 B; H.1 #2, #3) or ``"xdp2"`` (32 B / 24 B).
    * ``rsv_pdc_bit``: ``80`` (WS/XDP2, H.1 #4) or ``83`` (reference provider).
    * ``mswap_cswap_ext``: whether AMO MSWAP (0x13) carries the 36-byte compare-swap extension
      (H.2 gap; Wireshark selects the extension for 0x0D-0x12 only, so the default is ``False``).
    """

    ccx_layout: str = "1.0"
    rsv_pdc_bit: int = 80
    mswap_cswap_ext: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    def get(self, name: str) -> object:
        if hasattr(self, name):
            return getattr(self, name)
        return self.extra.get(name)


DEFAULT_OPTIONS = Options()
