"""Scapy field types of the generated uet layers.

* :class:`SignedBitField` - two's-complement bit fields;
* :class:`UETTrailerField` - the CRC-32C / ICV trailer of the outermost UET layer, which takes no
  room in the header and is taken from / appended to the end of the UET payload;
* :class:`CondSchemaField` - a field present in some layout variants only;
* :class:`AliasField` - the second position of a field name (see "Field names" in :mod:`uet.scapy`).

The conditions these fields are given come from :mod:`uet.scapy.layout`.
"""

from __future__ import annotations

from scapy.fields import BitField, ConditionalField, Field


class SignedBitField(BitField):
    """A two's-complement signed bit field (docs/facts.md B.5 clear_psn_offset, B.7, B.8)."""

    def m2i(self, pkt, x):  # type: ignore[override]
        if x is None:
            return x
        sign = 1 << (self.size - 1)
        return ((x & ((1 << self.size) - 1)) ^ sign) - sign

    def i2m(self, pkt, x):  # type: ignore[override]
        if x is None:
            return 0
        return int(x) & ((1 << self.size) - 1)

    def randval(self):
        from scapy.volatile import RandNum
        return RandNum(-(1 << (self.size - 1)), (1 << (self.size - 1)) - 1)


class UETTrailerField(Field):
    """The packet trailer of the outermost UET layer: it occupies no room in the header and is taken
    from (on dissection) or appended to (on build) the end of the whole UET payload.

    Values: ``None`` - compute on build (CRC) / nothing (ICV); an int (CRC) or bytes (ICV) - that
    value; ``False`` - no trailer (what dissection gives when none was taken)."""

    __slots__ = ["length"]

    def __init__(self, name: str, length: int):
        self.length = length
        Field.__init__(self, name, None, fmt="!I" if length == 4 else f"{length}s")

    def getfield(self, pkt, s):  # type: ignore[override]
        return s, getattr(pkt, "_uet_trailer", False)

    def addfield(self, pkt, s, val):  # type: ignore[override]
        return s  # appended by post_build, after the payload

    def any2i(self, pkt, x):  # type: ignore[override]
        return x

    def i2m(self, pkt, x):  # type: ignore[override]
        return x

    def i2repr(self, pkt, x):  # type: ignore[override]
        if x is False:
            return "absent"
        if x is None:
            return "None (computed on build)" if self.length == 4 else "None"
        if isinstance(x, int):
            return f"0x{x:08x}"
        return repr(x)

    def i2len(self, pkt, x):  # type: ignore[override]
        return 0

    def randval(self):
        from scapy.volatile import RandInt, RandBin
        return RandInt() if self.length == 4 else RandBin(self.length)


class CondSchemaField(ConditionalField):
    """A field present in some layout variants. ``i2h`` (attribute access) also answers while an
    alias of the same name is the one on the wire."""

    __slots__ = ["any_cond"]

    def __init__(self, fld, cond, any_cond=None):
        super().__init__(fld, cond)
        self.any_cond = any_cond or cond

    def i2h(self, pkt, val):  # type: ignore[override]
        if pkt is not None and not self.any_cond(pkt):
            return None
        return self.fld.i2h(pkt, val)


class AliasField(ConditionalField):
    """A second position of a field name (see the module docstring): on the wire here when ``cond``
    holds, its value lives under ``target``."""

    __slots__ = ["target"]

    def __init__(self, fld, cond, target: str):
        super().__init__(fld, cond)
        self.target = target

    def getfield(self, pkt, s):  # type: ignore[override]
        if self._evalcond(pkt):
            s, val = self.fld.getfield(pkt, s)
            pkt.fields[self.target] = val
        return s, None

    def addfield(self, pkt, s, val):  # type: ignore[override]
        if self._evalcond(pkt):
            return self.fld.addfield(pkt, s, pkt.getfieldval(self.target))
        return s

    def i2repr(self, pkt, x):  # type: ignore[override]
        return self.fld.i2repr(pkt, pkt.getfieldval(self.target) if pkt is not None else x)

    def i2h(self, pkt, val):  # type: ignore[override]
        return None
