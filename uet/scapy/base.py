"""Base classes of the generated layers and the generator itself.

* :class:`_SchemaPacket` - truncation-tolerant dissection and the schema views
  (``schema_fields``, ``schema_values``) every generated layer has; :class:`UETPacket` is the base
  of the UET ones;
* :func:`make_layer` - one schema header -> one ``Packet`` subclass, recorded in :data:`LAYERS`
  (schema key -> class) and :data:`ALIASES`; :func:`class_name` gives its name.

The UET and RoCEv2 classes themselves are made in :mod:`uet.scapy.uet_layers` and
:mod:`uet.scapy.roce`.
"""

from __future__ import annotations

import struct
from typing import Any, Mapping

from scapy.packet import Packet

from ..wire.codec import codec
from ..wire.schema import Header
from .config import codec_name, uet_options
from .fields import AliasField, UETTrailerField
from .layout import _fields_desc

#: ``__module__`` of the generated classes: the package, which exports every one of them by name
#: (so that they pickle and print as ``uet.scapy.<name>`` wherever they are made).
_PUBLIC_MODULE = __name__.rpartition(".")[0]


class _SchemaPacket(Packet):
    """Base of every generated layer: truncation-tolerant dissection."""

    __slots__ = ["_uet_truncated", "_uet_trailer"]
    _schema: Header | None = None

    def do_dissect(self, s):  # type: ignore[override]
        self._uet_truncated = False
        try:
            return super().do_dissect(s)
        except struct.error:
            # Short input: keep the fields that fitted whole (decode_partial's rule) and the
            # exact bytes, so that bytes(layer) gives back the input.
            self.raw_packet_cache = s
            self.raw_packet_cache_fields = {}
            self.explicit = 1
            self._uet_truncated = True
            return b""

    @property
    def uet_truncated(self) -> bool:
        """True when the input ended inside this header."""
        return bool(getattr(self, "_uet_truncated", False))

    def copy(self):  # type: ignore[override]
        c = super().copy()
        for slot in ("_uet_truncated", "_uet_trailer"):
            if hasattr(self, slot):
                object.__setattr__(c, slot, getattr(self, slot))
        return c

    @classmethod
    def schema_fields(cls) -> list[str]:
        """The Scapy names of the header's fields (aliases excluded), in ``fields_desc`` order."""
        out = []
        for f in cls.fields_desc:
            if isinstance(f, AliasField) or isinstance(f, UETTrailerField):
                continue
            if f.name not in out:
                out.append(f.name)
        return out

    def schema_values(self) -> dict[str, Any]:
        """The fields on the wire as a dict with the *codec's* names (flags as bools), like
        ``codec(key).decode`` gives them: the value of every field of this packet's variant."""
        c = codec(self._schema)  # type: ignore[arg-type]
        view = {codec_name(k): v for k, v in self._all_values().items()}
        var = c.variant_for_fields(view, uet_options())
        out = {}
        for p in var.placed:
            v = view.get(p.name, 0)
            out[p.name] = bool(v) if p.field.flag else v
        return out

    def _all_values(self) -> dict[str, Any]:
        vals = {}
        for f in self.fields_desc:
            if isinstance(f, (AliasField, UETTrailerField)):
                continue
            vals[f.name] = self.getfieldval(f.name)
        return vals


class UETPacket(_SchemaPacket):
    """Base class of every generated UET layer (``pkt[UETPacket]`` finds the first one)."""

    match_subclass = True


# --- generation -------------------------------------------------------------------------------

#: schema key -> Scapy class (UET and RoCE, generated ones and the Scapy ones used for roce.bth/aeth)
LAYERS: dict[str, type] = {}
#: class name -> {alias field name: real field name}
ALIASES: dict[str, dict[str, str]] = {}

_ROCE_CLASS_NAMES = {"roce.reth": "RETH", "roce.immdt": "ImmDt", "roce.ieth": "IETH",
                     "roce.atomiceth": "AtomicETH", "roce.atomicacketh": "AtomicAckETH",
                     "roce.deth": "DETH"}


def class_name(header: Header) -> str:
    """``UET_Entropy``, ``UET_TSS``, ``UET_PDS_<SHORT>``, ``UET_SES_<SHORT>``, or the RoCE name."""
    if header.key in _ROCE_CLASS_NAMES:
        return _ROCE_CLASS_NAMES[header.key]
    if header.key == "entropy":
        return "UET_Entropy"
    if header.key == "tss":
        return "UET_TSS"
    return f"UET_{header.layer.upper()}_{header.short.upper()}"


def _display_name(header: Header) -> str:
    if header.layer == "pds":
        return f"UET PDS {header.title}"
    if header.layer == "ses":
        return f"UET {header.title}"
    if header.layer == "roce":
        return class_name(header)
    return header.title


def make_layer(header: Header, base: type = UETPacket, *, trailer: tuple[str, int] | None = None,
               defaults: Mapping[str, int] | None = None, name: str | None = None,
               extra: Mapping[str, Any] | None = None, register: bool = True) -> type:
    """Generate the Scapy ``Packet`` subclass of one schema header.

    ``trailer`` = (field name, length) adds the trailer field at the end (outermost UET layers);
    ``defaults`` gives field defaults other than 0 (by codec name); ``register`` records the class in
    ``LAYERS`` / ``ALIASES`` (bindings are made separately)."""
    fields, aliases = _fields_desc(header, defaults or {})
    if trailer is not None:
        fields.append(UETTrailerField(*trailer))
    cname = name or class_name(header)
    doc_rows = "\n".join(f"    {f.name}" for f in fields)
    dct: dict[str, Any] = {
        "name": _display_name(header),
        "fields_desc": fields,
        "_schema": header,
        "__module__": _PUBLIC_MODULE,
        "__doc__": f"{header.title} ({header.key}, docs/facts.md {header.ref}). "
                   f"{header.doc}\n\nGenerated from the schema; fields:\n{doc_rows}\n",
    }
    if trailer is not None:
        dct["_trailer"] = trailer
    dct.update(extra or {})
    cls = type(base)(cname, (base,), dct)
    if register:
        LAYERS[header.key] = cls
        if aliases:
            ALIASES[cname] = aliases
    return cls
