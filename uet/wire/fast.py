"""Hot-path access to the schema's compiled codecs (:mod:`uet.wire.codec`).

``Codec.decode`` picks the header variant by walking its switch tree on every call, which costs
more than the decode itself. :class:`Fast` keeps the same codec but caches the variant per value of
the selector bits (extracted with a function generated from the schema's selector positions), and
:class:`Layout` exposes the shift and mask of every field of one variant so that encoders can OR
precomputed constant parts with the few fields that change per packet.

:meth:`Layout.reader` compiles a function that reads just the named fields of one variant - one
``struct.unpack_from`` over the byte-aligned words that hold them, then a shift and a mask per
field - instead of decoding the whole header into a dict. The struct format and the shifts are
computed from the variant's placed fields, so nothing here describes a field by hand: positions
come from the schema.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Mapping, Sequence

from ..errors import TruncatedError
from . import codec as _codec
from .codec import Variant
from .schema import DEFAULT_OPTIONS, Options


def _key_function(c) -> tuple[Callable[[Any, int], Any], int]:
    sels = {}
    for p in getattr(c, "_selectors", {}).values():
        sels[(p.offset, p.end)] = p.field.mask
    parts = []
    need = 0
    for (start, end), mask in sorted(sels.items()):
        sb, eb = start // 8, (end + 7) // 8
        need = max(need, eb)
        shift = eb * 8 - end
        if eb - sb == 1:
            raw = f"b[o + {sb}]"
        else:
            raw = f"int.from_bytes(b[o + {sb}:o + {eb}], 'big')"
        parts.append(f"(({raw} >> {shift}) & {mask})" if shift else f"({raw} & {mask})")
    if not parts:
        return (lambda b, o: 0), 0
    src = "def _key(b, o):\n    return (" + ", ".join(parts) + ",)\n"
    ns: dict[str, Any] = {}
    exec(compile(src, "<uet.wire.fast key>", "exec"), ns)
    return ns["_key"], need


class Layout:
    """Shift and mask of each field of one variant: ``value = (int >> shift) & mask``."""

    __slots__ = ("variant", "size", "bits", "shift", "mask", "signed")

    def __init__(self, variant: Variant):
        self.variant = variant
        self.size = variant.size
        self.bits = variant.size * 8
        self.shift: dict[str, int] = {}
        self.mask: dict[str, int] = {}
        self.signed: dict[str, bool] = {}
        for p in variant.placed:
            self.shift[p.name] = self.bits - p.end
            self.mask[p.name] = p.field.mask
            self.signed[p.name] = p.field.signed

    def const(self, fields: Mapping[str, Any]) -> int:
        """The header as an int with ``fields`` set and every other field 0."""
        return self.variant.encode_int(fields)

    def put(self, name: str, value: int) -> int:
        """``value`` placed at the field's position (signed values wrap to the field width)."""
        return (value & self.mask[name]) << self.shift[name]

    def position(self, name: str) -> tuple[int, int]:
        """(bit offset, width) of a field in this variant."""
        for p in self.variant.placed:
            if p.name == name:
                return p.offset, p.field.width
        raise KeyError(f"{self.variant.header.key}: no field {name!r} in this variant")

    def reader(self, *names: str) -> Callable[..., tuple]:
        """A compiled ``read(buf, off=0) -> tuple`` of the named fields' values, in order.

        Flags come out as 0/1 ints, signed fields sign-extended. The caller makes sure that
        ``buf[off:off + self.size]`` exists (``struct.error`` otherwise) and that the bytes are of
        this variant (selectors agree)."""
        return chain_reader((self, names))

    def get(self, value: int, name: str) -> int:
        x = (value >> self.shift[name]) & self.mask[name]
        if self.signed[name] and x >> (self.mask[name].bit_length() - 1):
            x -= self.mask[name] + 1
        return x


class Fast:
    """One header's codec with the variant cached by selector bits."""

    def __init__(self, key: str, opts: Options = DEFAULT_OPTIONS):
        self.key = key
        self.codec = _codec(key)
        self.opts = opts
        self._key, self._need = _key_function(self.codec)
        self._cache: dict[Any, Variant] = {}
        self._layouts: dict[int, Layout] = {}

    def variant(self, buf, off: int = 0) -> Variant:
        if len(buf) - off < self._need:
            raise TruncatedError(self.key, self.codec.min_size, max(len(buf) - off, 0), off)
        k = self._key(buf, off)
        v = self._cache.get(k)
        if v is None:
            v = self._cache[k] = self.codec.variant_for_bytes(buf, off, self.opts)
        return v

    def decode(self, buf, off: int = 0) -> tuple[dict[str, Any], int]:
        """Same result as ``wire.codec(key).decode(buf, off)``; raises TruncatedError when short."""
        v = self.variant(buf, off)
        end = off + v.size
        if end > len(buf):
            raise TruncatedError(self.key, v.size, len(buf) - off, off)
        return v.decode_int(int.from_bytes(buf[off:end], "big")), v.size

    def layout(self, **selectors: Any) -> Layout:
        """Layout of the variant that ``selectors`` (e.g. ``syn=1``) choose."""
        v = self.codec.variant_for_fields(selectors, self.opts)
        lay = self._layouts.get(id(v))
        if lay is None:
            lay = self._layouts[id(v)] = Layout(v)
        return lay

    def encode(self, fields: Mapping[str, Any]) -> bytes:
        return self.codec.encode(fields, self.opts)


_READERS: dict[tuple, Callable[..., tuple]] = {}
_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}


def chain_reader(*parts: tuple[Layout, Sequence[str]]) -> Callable[..., tuple]:
    """One compiled ``read(buf, off=0) -> tuple`` for headers that follow each other (a PDS
    header, then its SES header, ...): the named fields of each part, in order, read with a
    single ``struct.unpack_from``. Part *i* starts where part *i - 1* ends."""
    key = tuple((id(lay.variant), tuple(names)) for lay, names in parts)
    fn = _READERS.get(key)
    if fn is None:
        fn = _READERS[key] = _compile_reader(parts)
    return fn


def _tile(parts: Sequence[tuple[Layout, Sequence[str]]]
          ) -> tuple[list[tuple[int, int, Any]], list[list[int]], int]:
    """The named fields of headers that follow each other, as (absolute bit offset, end, Field),
    and the byte ranges ("units", [start, end]) that hold them, each widened to a struct word
    (1/2/4/8 bytes) where that stays inside the headers and before the next unit; and the
    headers' total size in bytes."""
    fields = []  # (name, absolute bit offset, end, Field)
    base = 0
    for lay, names in parts:
        placed = {p.name: p for p in lay.variant.placed}
        for n in names:
            if n not in placed:
                raise KeyError(f"{lay.variant.header.key}: no field {n!r} in this variant")
            p = placed[n]
            fields.append((base + p.offset, base + p.end, p.field))
        base += lay.size * 8
    total = base // 8
    spans = sorted({(o // 8, (e + 7) // 8) for o, e, _ in fields})
    units: list[list[int]] = []  # [start byte, end byte]
    for sb, eb in spans:
        if units and sb < units[-1][1]:
            units[-1][1] = max(units[-1][1], eb)
        else:
            units.append([sb, eb])
    # widen a unit to a struct size when that stays inside the headers and before the next unit
    for i, u in enumerate(units):
        limit = units[i + 1][0] if i + 1 < len(units) else total
        for size in (1, 2, 4, 8):
            if size >= u[1] - u[0] and u[0] + size <= limit:
                u[1] = u[0] + size
                break
    return fields, units, total


def reader_source(parts: Sequence[tuple[Layout, Sequence[str]]]) -> tuple[str, list[str], list[str]]:
    """What :func:`chain_reader` compiles, in pieces, for code that reads the fields inline:
    (struct format, the lines that unpack ``b`` at ``o`` into the words ``u0, u1, ...``, one
    expression of those words per named field, in order). The format's ``unpack_from`` is
    called ``_unpack`` and ``int.from_bytes`` ``_from_bytes`` in the lines."""
    fields, units, total = _tile(parts)
    fmt = [">"]
    pos = 0
    exprs: list[str] = [""] * len(fields)
    conv: list[str] = []
    for i, (sb, eb) in enumerate(units):
        if sb > pos:
            fmt.append(f"{sb - pos}x")
        size = eb - sb
        inside = [j for j, (o, e, _) in enumerate(fields) if sb * 8 <= o and e <= eb * 8]
        spots = {(fields[j][0], fields[j][1]) for j in inside}
        exact = len(spots) == 1 and next(iter(spots)) == (sb * 8, eb * 8)
        if size in _FORMATS:
            c = _FORMATS[size]
            if exact and fields[inside[0]][2].signed:
                c = c.lower()
            fmt.append(c)
        else:
            fmt.append(f"{size}s")
            conv.append(f"u{i} = _from_bytes(u{i}, 'big')")
        for j in inside:
            o, e, f = fields[j]
            shift = eb * 8 - e
            raw = f"(u{i} >> {shift})" if shift else f"u{i}"
            if exact:
                expr = f"u{i}"
            elif f.signed:
                sign = 1 << (f.width - 1)
                expr = f"((({raw} & {f.mask}) ^ {sign}) - {sign})"
            elif o == sb * 8:
                expr = raw  # the field starts the word: nothing above it to mask
            else:
                expr = f"({raw} & {f.mask})"
            exprs[j] = expr
        pos = eb
    unpack = ", ".join(f"u{i}" for i in range(len(units))) + ","
    return "".join(fmt), [f"{unpack} = _unpack(b, o)", *conv], exprs


def _compile_reader(parts: Sequence[tuple[Layout, Sequence[str]]]) -> Callable[..., tuple]:
    """Tile the bytes holding the wanted fields into struct words (1/2/4/8 bytes, else raw bytes
    read with ``int.from_bytes``) and generate one unpack plus one expression per field."""
    fmt, lines, exprs = reader_source(parts)
    src = ["def _read(b, o=0):", *(f"    {line}" for line in lines),
           "    return (" + ", ".join(exprs) + ",)"]
    ns: dict[str, Any] = {"_unpack": struct.Struct(fmt).unpack_from, "_from_bytes": int.from_bytes}
    keys = "+".join(lay.variant.header.key for lay, _ in parts)
    exec(compile("\n".join(src) + "\n", f"<uet.wire.fast reader {keys}>", "exec"), ns)
    fn = ns["_read"]
    fn.source = "\n".join(src)  # type: ignore[attr-defined]
    fn.format = fmt  # type: ignore[attr-defined]
    return fn


class Packer:
    """Encodes headers that follow each other from per-flow constants and a few fields that
    change per packet (see :func:`chain_packer`)."""

    def __init__(self, parts: Sequence[tuple[Layout, Sequence[str]]]):
        self.parts = tuple((lay, tuple(names)) for lay, names in parts)
        self.size = sum(lay.size for lay, _ in self.parts)
        self._consts, self.pack, self.format = _compile_packer(self.parts)

    def consts(self, *headers: int) -> tuple:
        """The constant part of every header (as ``Layout.const`` makes it, one int per part,
        the variable fields 0), cut into what ``pack`` takes as its first argument."""
        return self._consts(headers)


def chain_packer(*parts: tuple[Layout, Sequence[str]]) -> Packer:
    """A compiled encoder for headers that follow each other: ``pack(k, *values)`` gives the
    bytes of all parts, where ``k = packer.consts(const_1, ...)`` holds everything that does not
    change and ``values`` are the named fields of each part, in order (signed values wrap to
    the field width; the others must fit). One ``struct.pack`` does the work: the words that
    hold a variable field are ORed from its constant bits and the values, the rest is copied."""
    key = tuple((id(lay.variant), tuple(names)) for lay, names in parts)
    pk = _PACKERS.get(key)
    if pk is None:
        pk = _PACKERS[key] = Packer(parts)
    return pk


def _compile_packer(parts):
    fields, units, total = _tile(parts)
    # the whole byte range: variable units, and constant runs between them
    pieces = []  # (start, end, variable?)
    pos = 0
    for sb, eb in units:
        if sb > pos:
            pieces.append((pos, sb, False))
        pieces.append((sb, eb, True))
        pos = eb
    if pos < total:
        pieces.append((pos, total, False))
    fmt = [">"]
    cut = []  # per piece: (start, end, variable?, mask of the variable bits)
    args = []
    for i, (sb, eb, var) in enumerate(pieces):
        size = eb - sb
        if var and size in _FORMATS:
            fmt.append(_FORMATS[size])
        else:
            fmt.append(f"{size}s")
        vmask = 0
        terms = [f"k[{i}]"]
        if var:
            for j, (o, e, f) in enumerate(fields):
                if sb * 8 <= o and e <= eb * 8:
                    shift = eb * 8 - e
                    vmask |= f.mask << shift
                    val = f"(v{j} & {f.mask})" if f.signed else f"v{j}"
                    terms.append(f"({val} << {shift})" if shift else val)
        if var and size not in _FORMATS:
            args.append(f"({' | '.join(terms)}).to_bytes({size}, 'big')")
        else:
            args.append(" | ".join(terms))
        cut.append((sb, eb, var, vmask))
    params = ", ".join(["k"] + [f"v{j}" for j in range(len(fields))])
    src = f"def _pack({params}):\n    return _pack_s({', '.join(args)})\n"
    ns: dict[str, Any] = {"_pack_s": struct.Struct("".join(fmt)).pack}
    keys = "+".join(lay.variant.header.key for lay, _ in parts)
    exec(compile(src, f"<uet.wire.fast packer {keys}>", "exec"), ns)
    sizes = [lay.size for lay, _ in parts]

    def consts(headers: Sequence[int]) -> tuple:
        if len(headers) != len(sizes):
            raise ValueError(f"{len(sizes)} header constants expected")
        whole = 0
        for h, size in zip(headers, sizes):
            whole = (whole << (size * 8)) | h
        raw = whole.to_bytes(total, "big")
        k = []
        for sb, eb, var, vmask in cut:
            chunk = raw[sb:eb]
            if var:
                v = int.from_bytes(chunk, "big") & ~vmask
                k.append(v)
            else:
                k.append(chunk)
        return tuple(k)

    fn = ns["_pack"]
    fn.source = src  # type: ignore[attr-defined]
    return consts, fn, "".join(fmt)


_PACKERS: dict[tuple, Packer] = {}
_FAST: dict[str, Fast] = {}


def fast(key: str) -> Fast:
    f = _FAST.get(key)
    if f is None:
        f = _FAST[key] = Fast(key)
    return f
