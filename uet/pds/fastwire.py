"""Hot-path access to the schema's compiled codecs (:mod:`uet.wire.codec`).

``Codec.decode`` picks the header variant by walking its switch tree on every call, which costs
more than the decode itself. :class:`Fast` keeps the same codec but caches the variant per value of
the selector bits (extracted with a function generated from the schema's selector positions), and
:class:`Layout` exposes the shift and mask of every field of one variant so that encoders can OR
precomputed constant parts with the few fields that change per packet. Nothing here describes a
field by hand: positions come from the schema.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..errors import TruncatedError
from ..wire import codec as _codec
from ..wire.codec import Variant
from ..wire.schema import DEFAULT_OPTIONS, Options


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
    exec(compile(src, "<uet.pds.fastwire key>", "exec"), ns)
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


_FAST: dict[str, Fast] = {}


def fast(key: str) -> Fast:
    f = _FAST.get(key)
    if f is None:
        f = _FAST[key] = Fast(key)
    return f
