"""Fast encode/decode compiled from the schema (:mod:`uet.wire.schema`).

Each header expands into its *variants* - one per combination of :class:`Switch` arms - and every
variant gets a generated decoder (one ``int.from_bytes`` of the header, then a shift and a mask per
field) and a generated encoder. Decoding picks the variant by reading the selector fields first.

Decoded headers are plain dicts: ints, bools for flags, negative ints for signed fields; reserved
fields appear as ``rsvd_<bit offset>`` so that a decode/encode round trip is exact even for packets
that set reserved bits.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import DecodeError, EncodeError, TruncatedError
from .schema import DEFAULT_OPTIONS, Field, Header, Item, Options, Switch


@dataclass(frozen=True)
class Placed:
    """A field at its bit offset inside one variant; ``name`` is unique within the variant."""

    field: Field
    name: str
    offset: int

    @property
    def end(self) -> int:
        return self.offset + self.field.width


class Variant:
    """One concrete layout of a header: fixed size, fixed field positions."""

    def __init__(self, header: Header, key: tuple[int, ...], placed: tuple[Placed, ...], bits: int):
        if bits % 8:
            raise ValueError(f"{header.key} variant {key}: {bits} bits is not a whole number of bytes")
        self.header = header
        self.key = key
        self.placed = placed
        self.size = bits // 8
        self.names = tuple(p.name for p in placed)
        self._dec: Callable[[int], dict[str, Any]] = _compile_decoder(placed, bits)
        self._enc: Callable[[Mapping[str, Any]], int] | None = None  # compiled on first use
        self.enum_fields = tuple(p for p in placed if p.field.enum is not None)
        self.reserved = tuple(p for p in placed if p.field.reserved)
        self._reserved_names = tuple(p.name for p in self.reserved)
        self._enum_checks = tuple((p.name, frozenset(p.field.enum.table), p.field.enum)  # type: ignore[union-attr]
                                  for p in self.enum_fields)
        self.to_json: Callable[[Mapping[str, Any]], dict[str, Any]] = _compile_json(header, placed)

    def problems(self, fields: Mapping[str, Any],
                 unknown: Callable[[str, str, int], str | None] | None = None) -> list[str]:
        """Reserved bits that are set and enum values nobody defined (whole headers only).
        ``unknown(header key, field, value)`` may word an undefined enum value more precisely
        (the packet chain's D.7 check); when it returns None the generic note stands."""
        out: list[str] = []
        for n in self._reserved_names:
            if fields[n]:
                out.extend(self._reserved_problem(n, fields[n]))
        for n, known, enum in self._enum_checks:
            v = fields[n]
            if v not in known and enum.symbol(v) is None:
                better = unknown(self.header.key, n, v) if unknown is not None else None
                out.append(better or f"{self.header.key}: {n} = {v} (0x{v:X}) is not a known {enum.name} value")
        return out

    def _reserved_problem(self, name: str, value: int) -> list[str]:
        p = next(q for q in self.reserved if q.name == name)
        return [f"{self.header.key}: reserved bits {p.offset}-{p.end - 1} are set (0x{value:X})"]

    def decode_int(self, value: int) -> dict[str, Any]:
        return self._dec(value)

    def encode_int(self, fields: Mapping[str, Any]) -> int:
        if self._enc is None:  # decoding alone (uet decode) never needs it
            self._enc = _compile_encoder(self.header.key, self.placed, self.size * 8)
        return self._enc(fields)


def _compile_decoder(placed: tuple[Placed, ...], bits: int) -> Callable[[int], dict[str, Any]]:
    parts = []
    for p in placed:
        f = p.field
        shift = bits - p.end
        raw = f"(v >> {shift})" if shift else "v"
        if f.flag:
            expr = f"({raw} & 1) == 1"
        elif f.signed:
            sign = 1 << (f.width - 1)
            expr = f"((({raw}) & {f.mask}) ^ {sign}) - {sign}"
        elif p.offset == 0 and shift == 0:
            expr = "v"
        else:
            expr = f"{raw} & {f.mask}" if p.offset else raw
        parts.append(f"{p.name!r}: {expr}")
    src = "def _dec(v):\n    return {" + ", ".join(parts) + "}\n"
    ns: dict[str, Any] = {}
    exec(compile(src, "<uet.wire.codec decoder>", "exec"), ns)
    return ns["_dec"]


def display_value(disp: str, v: Any) -> Any:
    """A field's value as JSON shows it: addresses as strings, the rest as they are."""
    if disp == "ipv4":
        return str(ipaddress.IPv4Address(v))
    if disp == "ipv6":
        return str(ipaddress.IPv6Address(v))
    return v


def _compile_json(header: Header, placed: tuple[Placed, ...]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """The JSON object of a whole decoded variant (docs/design-notes.md contract; see render.header_json)."""
    ns: dict[str, Any] = {"_display": display_value}
    parts = []
    names = set()
    for i, p in enumerate(placed):
        f = p.field
        if f.reserved:
            continue
        names.add(p.name)
        if f.display in ("ipv4", "ipv6"):
            parts.append(f"{p.name!r}: _display({f.display!r}, d[{p.name!r}])")
        else:
            parts.append(f"{p.name!r}: d[{p.name!r}]")
        if f.enum is not None:
            ns[f"T{i}"], ns[f"S{i}"] = dict(f.enum.table), f.enum.symbol
            parts.append(f"{p.name + '_name'!r}: T{i}.get(d[{p.name!r}]) or S{i}(d[{p.name!r}])")
    for dv in header.derived:
        if dv.a in names and dv.b in names:
            parts.append(f"{dv.name!r}: (d[{dv.a!r}] {dv.op} d[{dv.b!r}]) & {(1 << dv.bits) - 1}")
    src = "def _json(d):\n    return {" + ", ".join(parts) + "}\n"
    exec(compile(src, f"<uet.wire.codec json {header.key}>", "exec"), ns)
    return ns["_json"]


def _compile_encoder(hkey: str, placed: tuple[Placed, ...], bits: int) -> Callable[[Mapping[str, Any]], int]:
    lines = ["def _enc(d):", "    v = 0", "    g = d.get"]
    for p in placed:
        f = p.field
        shift = bits - p.end
        lo = -(1 << (f.width - 1)) if f.signed else 0
        hi = f.mask
        lines.append(f"    x = g({p.name!r}, 0)")
        lines.append("    if x.__class__ is not int: x = _toint(x, %r)" % p.name)
        lines.append(f"    if x < {lo} or x > {hi}: _range({hkey!r}, {p.name!r}, x, {lo}, {hi})")
        lines.append(f"    v |= (x & {f.mask}) << {shift}" if f.signed else f"    v |= x << {shift}")
    lines.append("    return v")
    ns: dict[str, Any] = {"_toint": _toint, "_range": _range}
    exec(compile("\n".join(lines) + "\n", "<uet.wire.codec encoder>", "exec"), ns)
    return ns["_enc"]


def _toint(x: Any, name: str) -> int:
    if isinstance(x, bool) or isinstance(x, int):
        return int(x)
    raise EncodeError(f"field {name}: expected an int, got {type(x).__name__}")


def _range(hkey: str, name: str, x: int, lo: int, hi: int) -> None:
    raise EncodeError(f"{hkey}: field {name} = {x} does not fit [{lo}, {hi}]")


class Codec:
    """Encoder/decoder for one :class:`Header`, built once per header (see :func:`codec`)."""

    def __init__(self, header: Header):
        self.header = header
        self.key = header.key
        self._selectors: dict[int, Placed] = {}
        self.variants: dict[tuple[int, ...], Variant] = {}
        for key, placed, bits in _expand(header.items, 0, (), (), self._selectors):
            self.variants[key] = Variant(header, key, placed, bits)
        self._switches = _switch_tree(header.items)
        self.min_size = min(v.size for v in self.variants.values())
        self.max_size = max(v.size for v in self.variants.values())
        self._only = next(iter(self.variants.values())) if len(self.variants) == 1 else None
        # the bytes needed to read every selector field
        self._sel_bytes = max(((p.end + 7) // 8 for p in self._selectors.values()), default=0)
        self._compile_choosers()

    # --- variant choice --------------------------------------------------------------------
    # The switch tree is compiled into two small functions (one reading selectors from bytes,
    # one from a dict of fields) that return the variant directly.

    def _compile_choosers(self) -> None:
        def gen(tree: list[Any], indent: str, src: str, out: list[str]) -> None:
            for sw, arms in tree:
                if sw.is_option:
                    expr = f"getattr(opts, {sw.on[1:]!r}, None)"
                elif src == "bytes":
                    p = self._selectors[id(sw)]
                    sb, eb = p.offset // 8, (p.end + 7) // 8
                    expr = (f"(int.from_bytes(b[o + {sb}:o + {eb}], 'big') >> {eb * 8 - p.end})"
                            f" & {p.field.mask}")
                else:
                    expr = f"int(d.get({sw.on!r}, 0))"
                var = f"s{len(out)}"
                out.append(f"{indent}{var} = {expr}")
                for i, case in enumerate(sw.cases):
                    values = set(case.values)
                    out.append(f"{indent}{'if' if i == 0 else 'elif'} {var} in {values!r}:")
                    out.append(f"{indent}    k.append({i})")
                    gen(arms[i], indent + "    ", src, out)
                out.append(f"{indent}else:")
                out.append(f"{indent}    k.append({len(sw.cases)})")
                gen(arms[len(sw.cases)], indent + "    ", src, out)

        for src, sig in (("bytes", "b, o, opts"), ("fields", "d, opts")):
            body: list[str] = []
            gen(self._switches, "    ", src, body)
            code = f"def _choose({sig}):\n    k = []\n" + "\n".join(body) + "\n    return V[tuple(k)]\n"
            ns: dict[str, Any] = {"V": self.variants}
            exec(compile(code, f"<uet.wire.codec chooser {self.key}>", "exec"), ns)
            setattr(self, f"_choose_{src}", ns["_choose"])

    def variant_for_bytes(self, buf: bytes | bytearray | memoryview, off: int = 0,
                          opts: Options = DEFAULT_OPTIONS) -> Variant:
        if self._only is not None:
            return self._only
        if len(buf) - off < self._sel_bytes:
            raise TruncatedError(self.key, self.min_size, max(len(buf) - off, 0), off)
        return self._choose_bytes(buf, off, opts)

    def variant_for_fields(self, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS) -> Variant:
        if self._only is not None:
            return self._only
        return self._choose_fields(fields, opts)

    # --- decode / encode -------------------------------------------------------------------

    def decode(self, buf: bytes | bytearray | memoryview, off: int = 0,
               opts: Options = DEFAULT_OPTIONS) -> tuple[dict[str, Any], int]:
        """Decode the header at ``buf[off:]``; returns (fields, size in bytes).

        Raises :class:`TruncatedError` when the buffer ends inside the header.
        """
        if off < 0:
            raise DecodeError("negative offset", header=self.key)
        var = self.variant_for_bytes(buf, off, opts)
        end = off + var.size
        if end > len(buf):
            raise TruncatedError(self.key, var.size, len(buf) - off, off)
        return var.decode_int(int.from_bytes(buf[off:end], "big")), var.size

    def decode_partial(self, buf: bytes | bytearray | memoryview, off: int = 0,
                       opts: Options = DEFAULT_OPTIONS) -> tuple[dict[str, Any], int]:
        """Like :meth:`decode`, but on a short buffer return the fields that fit whole.

        Returns (fields, size the header needs). Never raises on short input.
        """
        have = max(len(buf) - off, 0)
        # Selectors that are cut off read as zero: they only pick arms whose fields lie beyond the
        # cut, which are dropped below, so every field kept is decoded under its true layout.
        padded = bytes(buf[off:off + have]) + bytes(max(self.max_size - have, 0))
        var = self.variant_for_bytes(padded, 0, opts)
        if have >= var.size:
            return var.decode_int(int.from_bytes(padded[:var.size], "big")), var.size
        full = var.decode_int(int.from_bytes(padded[:var.size], "big"))
        return {p.name: full[p.name] for p in var.placed if p.end <= have * 8}, var.size

    def decode_any(self, buf: bytes, off: int = 0,
                   opts: Options = DEFAULT_OPTIONS) -> tuple[dict[str, Any], int, Variant | None]:
        """(fields, size needed, variant) - the variant is None when the buffer was too short and
        ``fields`` holds only the whole fields that fit (as :meth:`decode_partial`)."""
        try:
            var = self._only or self.variant_for_bytes(buf, off, opts)
        except TruncatedError:
            var = None
        if var is not None and off + var.size <= len(buf):
            return var.decode_int(int.from_bytes(buf[off:off + var.size], "big")), var.size, var
        fields, size = self.decode_partial(buf, off, opts)
        return fields, size, None

    def encode(self, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS) -> bytes:
        var = self.variant_for_fields(fields, opts)
        return var.encode_int(fields).to_bytes(var.size, "big")

    def size_of(self, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS) -> int:
        return self.variant_for_fields(fields, opts).size

    # --- checks and derived values ---------------------------------------------------------

    def problems(self, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS) -> list[str]:
        """Readable notes on reserved bits that are set and enum values nobody defined."""
        var = self.variant_for_fields(fields, opts)
        return var.problems({n: fields.get(n, 0) for n in var.names})

    def derived(self, fields: Mapping[str, Any]) -> dict[str, int]:
        out = {}
        for d in self.header.derived:
            v = d.compute(fields)
            if v is not None:
                out[d.name] = v
        return out


def _expand(items: tuple[Item, ...], off: int, key: tuple[int, ...], placed: tuple[Placed, ...],
            selectors: dict[int, Placed]) -> list[tuple[tuple[int, ...], tuple[Placed, ...], int]]:
    states = [(key, placed, off)]
    for it in items:
        nxt = []
        for k, p, o in states:
            if isinstance(it, Field):
                name = f"rsvd_{o}" if it.reserved else it.name
                nxt.append((k, p + (Placed(it, name, o),), o + it.width))
                continue
            if not it.is_option:
                sel = next((q for q in p if q.name == it.on), None)
                if sel is None:
                    raise ValueError(f"switch on {it.on!r} before that field is declared")
                prev = selectors.setdefault(id(it), sel)
                if prev.offset != sel.offset:
                    raise ValueError(f"selector {it.on!r} moves between variants")
            for idx in range(len(it.cases) + 1):
                nxt.extend(_expand(it.arm_items(idx), o, k + (idx,), p, selectors))
        states = nxt
    return states


def _switch_tree(items: tuple[Item, ...]) -> list[tuple[Switch, list[list[Any]]]]:
    tree = []
    for it in items:
        if isinstance(it, Switch):
            arms = [_switch_tree(it.arm_items(i)) for i in range(len(it.cases) + 1)]
            tree.append((it, arms))
    return tree


_CODECS: dict[str, Codec] = {}


def codec(header: Header | str) -> Codec:
    """The (cached) codec of a header, by declaration or by key (``"pds.ack_cc"``)."""
    key = header if isinstance(header, str) else header.key
    c = _CODECS.get(key)
    if c is None:
        from .registry import HEADERS

        h = HEADERS[key] if isinstance(header, str) else header
        c = _CODECS[key] = Codec(h)
    return c
