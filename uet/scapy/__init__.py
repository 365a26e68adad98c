"""Scapy layers for UET and RoCEv2, generated from the one schema (:mod:`uet.wire`).

Importing this module registers everything with Scapy; plain Scapy use is unaffected apart from
the added bindings (and one added payload rule on ``scapy.contrib.roce.AETH``, see below)::

    >>> from scapy.all import Ether, IP, UDP, Raw, rdpcap
    >>> from uet.scapy import *
    >>> pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=49152, chksum=0)
    ...        / UET_PDS_RUD_ROD_REQ(psn=7, spdcid=1, dpdcid=2) / UET_SES_STD(opcode="WRITE")
    ...        / Raw(b"data"))
    >>> again = Ether(bytes(pkt))          # the CRC-32C trailer was appended on build
    >>> again[UET].crc_ok()
    True

Nothing here lists a field by hand: :func:`make_layer` turns each :class:`uet.wire.schema.Header`
into a ``Packet`` subclass, and the bindings come from the chain tables of
:mod:`uet.wire.uet_headers` (``PDS_BY_TYPE``, ``SES_BY_NEXT_HDR``, ``ATOMIC_OPCODES``,
``CSWAP_AMO_OPCODES``, ``RENDEZVOUS_OPCODES``) and :func:`uet.wire.roce_headers.extension_headers`.

Layer classes (header key -> class)
-----------------------------------

=========================  ===========================  =========================================
schema key                 Scapy class                  selected by
=========================  ===========================  =========================================
``entropy``                ``UET_Entropy``              IP proto 253 / IPv6 nh 253 (A.1)
``tss``                    ``UET_TSS``                  type 1 (B.15)
``pds.<name>``             ``UET_PDS_<NAME>``           5-bit type of the first byte (B.1), e.g.
                                                        ``UET_PDS_RUD_ROD_REQ`` (types 2 and 3),
                                                        ``UET_PDS_ACK_CC``, ``UET_PDS_CONTROL``
``ses.<name>``             ``UET_SES_<NAME>``           PDS ``next_hdr`` (B.2), e.g.
                                                        ``UET_SES_STD``, ``UET_SES_RSP_DATA``
``ses.atomic/cswap``       ``UET_SES_ATOMIC/CSWAP``     SES opcode in ``ATOMIC_OPCODES``, then the
                                                        AMO opcode byte (``UET_SES_AMO`` dispatches)
``ses.rendezvous``         ``UET_SES_RENDEZVOUS``       standard header, ``RENDEZVOUS_OPCODES``
``roce.reth`` ...          ``RETH``, ``ImmDt``,         BTH opcode, in the order of
                           ``IETH``, ``AtomicETH``,     ``extension_headers(opcode)`` (G.4)
                           ``AtomicAckETH``, ``DETH``
=========================  ===========================  =========================================

``UET`` is the dispatcher bound to UDP port 4793 (destination *and* source port, since ACKs go from
4793 to the initiator's entropy port) and to ``UET_Entropy``: ``UET(data)`` returns the PDS (or TSS)
class for the type in ``data[0] >> 3`` (``Raw`` for reserved/unassigned types). All PDS classes and
``UET_TSS`` subclass ``UET``, so ``pkt[UET]`` finds the first UET header of any type. All generated
UET classes subclass ``UETPacket``. ``LAYERS`` maps every schema key to its class, ``PDS_LAYERS``
maps PDS type -> class, ``SES_LAYERS`` maps next_hdr -> class.

Field names
-----------

Field names are the codec's names (:mod:`uet.wire.codec`), reserved fields included
(``rsvd_<bit offset>``, default 0), with these exceptions:

* ``payload`` (NACK and CONTROL payload word) is ``payload_word``: Scapy reserves ``payload``
  (``SCAPY_FIELD_NAMES`` holds the mapping; :func:`scapy_name` / :func:`codec_name` convert).
* Where one name sits at two positions that no single field order can hold (``ses.std``:
  ``initiator_restart_token`` / ``target_restart_token`` are at bytes 12-19 for the deferrable
  sends and at bytes 24-31 for DEFERRABLE_RTR), the second position is an *alias* field named
  ``<name>_at<bit offset>`` in ``fields_desc``; it reads and writes the value under the real name,
  so ``pkt.initiator_restart_token`` and ``UET_SES_STD(initiator_restart_token=...)`` work for both.
  ``show()`` displays the value under the alias name; ``repr()`` and ``command()`` give it under the
  real name only when it was set by name. ``ALIASES`` lists them per class. (The same mechanism
  serves the ``@ccx_layout`` option, whose two arms give ``ack_ccx_state`` / ``nack_ccx_state``
  two widths.)
* Flags are 1-bit ``BitField``\\ s holding 0/1 (the codec gives bools; ``1 == True``). Enumerated
  fields are ``BitEnumField``\\ s with the facts' symbols (so ``opcode="WRITE"`` works). Signed fields
  are :class:`SignedBitField` (two's complement: ``pkt.clear_psn_offset == -2`` reads back).
* Switches (``uet.wire.schema.Switch``) become ``ConditionalField``\\ s whose condition finds the
  layout variant from the selector fields of the same packet (``syn``, ``p``, ``nt``, ``cc_type``,
  ``opcode``, ``som``, ``hd``, ``sp``) and, for ``@option`` switches, from
  ``conf.contribs["uet"]["options"]`` at dissection/build time (so the conflict choices of
  uet-facts.md H.1 are configurable without rebuilding classes).
* RoCEv2: ``scapy.contrib.roce.BTH`` and ``AETH`` keep Scapy's names. ``BTH_FIELD_NAMES`` maps them to
  the schema's: opcode, solicited->se, migreq->m, padcount->pad_cnt, version->tver, pkey->p_key,
  fecn, becn, resv6->rsvd_34, dqpn->dest_qp, ackreq->ack_req, resv7->rsvd_65, psn.

The PDS (or TSS) layer directly over UDP or ``UET_Entropy`` ("outermost") also has a trailer field
at the end of ``fields_desc``: ``crc`` for PDS classes, ``icv`` for ``UET_TSS``.

CRC-32C trailer (uet-facts.md A.3, coverage as in :mod:`uet.wire.trailer`)
------------------------------------------------------------------------

``conf.contribs["uet"]["trailer"]`` is ``"auto"`` (default), ``"crc"`` or ``"none"``:

* dissection: ``auto`` takes the last 4 bytes of the UET payload as the trailer exactly when they
  verify (as ``uet decode`` does); ``crc`` always takes them; ``none`` never does. The value is in
  the ``crc`` field; ``crc`` is ``False`` when no trailer was taken.
* building (outermost layer only): a trailer is appended unless the mode is ``none`` or the field is
  ``False``; ``crc=None`` (default) computes it, an int is written as is (to make bad packets). The
  CRC covers the IP source and destination addresses, then the final UDP header with its checksum
  taken as 0 and its length counting the trailer (native IP: the entropy header instead), then the
  UET bytes. Scapy computes the UDP length (it counts the trailer). The UDP checksum is Scapy's
  usual one unless you set ``chksum=0``, which is what UET senders do (design.md "Defaults").
* ``layer.crc_ok()`` says whether the carried trailer is right (``None`` when there is none or no
  IP layer to compute it with); ``layer.crc_computed()`` gives the value it should have.

``UET_TSS`` instead carries the 16-byte GCM tag (``icv``, bytes), taken from the end of the packet
on dissection; on build it is appended only when set (encryption is not done here).

Truncated input: a generated layer never raises on short input. It keeps the fields that fit whole
(like ``Codec.decode_partial``), ``layer.uet_truncated`` is true, and ``bytes(layer)`` gives back the
exact input.

Configuration
-------------

``conf.contribs["uet"]``: ``trailer`` (above), ``options`` (a :class:`uet.wire.schema.Options`),
``port`` (read-only mirror of the bound port). :func:`bind_uet_port` moves (or adds) the UET UDP
port; :func:`configure` sets all three.

RoCEv2 (extends ``scapy.contrib.roce``)
---------------------------------------

RETH, ImmDt, IETH, AtomicETH, AtomicAckETH and DETH are generated from ``uet.wire.roce_headers`` and
bound onto Scapy's ``BTH`` by opcode for every transport (RC, UC, UD) with ``bind_layers``; Scapy's
``AETH`` is bound for every opcode that carries one (Scapy itself binds only ACKNOWLEDGE). A header
that follows another extension header (RETH -> ImmDt, DETH -> ImmDt, AETH -> AtomicAckETH) is found
from the BTH opcode; for ``AETH`` this needs one added ``guess_payload_class`` rule, which leaves
every other case to Scapy's original method.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field as dc_field
from typing import Any, Iterable, Mapping

from scapy.config import conf
from scapy.error import warning
from scapy.fields import BitEnumField, BitField, ConditionalField, Field, XBitField
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet, bind_bottom_up, bind_layers, bind_top_down, split_bottom_up, \
    split_top_down
from scapy.contrib import roce as _roce
from scapy.contrib.roce import AETH, BTH

from .. import UET_IP_PROTO, UET_UDP_PORT, ROCE_UDP_PORT
from .. import native
from ..wire import roce_headers as R
from ..wire import uet_headers as U
from ..wire.codec import codec
from ..wire.schema import DEFAULT_OPTIONS, Field as SchemaField, Header, Options, Switch

__all__ = [
    "UET", "UETPacket", "UET_SES_AMO", "SignedBitField", "UETTrailerField", "CondSchemaField",
    "AliasField", "class_name",
    "LAYERS", "PDS_LAYERS", "SES_LAYERS", "ROCE_LAYERS", "ALIASES", "SCAPY_FIELD_NAMES",
    "BTH_FIELD_NAMES", "TRAILER_MODES", "bind_uet_port", "configure", "make_layer", "scapy_name",
    "codec_name", "uet_options", "trailer_mode",
]

TRAILER_MODES = ("auto", "crc", "none")

#: schema (codec) field name -> Scapy field name, where Scapy reserves the name.
SCAPY_FIELD_NAMES = {"payload": "payload_word"}
_CODEC_NAMES = {v: k for k, v in SCAPY_FIELD_NAMES.items()}

#: scapy.contrib.roce.BTH field name -> schema (roce.bth codec) field name.
BTH_FIELD_NAMES = {
    "opcode": "opcode", "solicited": "se", "migreq": "m", "padcount": "pad_cnt", "version": "tver",
    "pkey": "p_key", "fecn": "fecn", "becn": "becn", "resv6": "rsvd_34", "dqpn": "dest_qp",
    "ackreq": "ack_req", "resv7": "rsvd_65", "psn": "psn",
}


def scapy_name(name: str) -> str:
    """Scapy field name of a schema/codec field name."""
    return SCAPY_FIELD_NAMES.get(name, name)


def codec_name(name: str) -> str:
    """Schema/codec field name of a Scapy field name."""
    return _CODEC_NAMES.get(name, name)


# --- configuration ----------------------------------------------------------------------------

def _cfg() -> dict:
    """``conf.contribs["uet"]``, created with the defaults when missing."""
    d = conf.contribs.get("uet")
    if not isinstance(d, dict):
        d = conf.contribs["uet"] = {}
    d.setdefault("trailer", "auto")
    d.setdefault("options", Options())
    d.setdefault("port", UET_UDP_PORT)
    return d


_cfg()


def uet_options() -> Options:
    """The decoder options in force (``conf.contribs["uet"]["options"]``)."""
    o = _cfg().get("options")
    if isinstance(o, Options):
        return o
    if isinstance(o, Mapping):
        return Options(**o)
    return DEFAULT_OPTIONS


def trailer_mode() -> str:
    """The trailer mode in force (``conf.contribs["uet"]["trailer"]``)."""
    m = _cfg().get("trailer", "auto")
    if m not in TRAILER_MODES:
        raise ValueError(f'conf.contribs["uet"]["trailer"] must be one of {TRAILER_MODES}, not {m!r}')
    return m


# --- field types ------------------------------------------------------------------------------


class SignedBitField(BitField):
    """A two's-complement signed bit field (uet-facts.md B.5 clear_psn_offset, B.7, B.8)."""

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


class _VariantCond:
    """Condition of a field: the packet's layout variant (codec key) is one of ``keys``."""

    __slots__ = ("tree", "keys")

    def __init__(self, tree: list, keys: frozenset):
        self.tree = tree
        self.keys = keys

    def __call__(self, pkt: Packet) -> bool:
        return _variant_key(self.tree, pkt) in self.keys


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


# --- layout: schema variants -> one field order ----------------------------------------------


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


# --- base classes -----------------------------------------------------------------------------


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


class UET(UETPacket):
    """The UET packet after UDP (port 4793) or the entropy header: dispatches on the 5-bit type
    (B.1) to ``UET_TSS`` or a ``UET_PDS_*`` class. Those subclass ``UET`` and carry the trailer."""

    name = "UET"
    fields_desc: list = []
    _trailer: tuple[str, int] | None = None  # (field name, length) of the subclass's trailer

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt:
            return PDS_LAYERS.get(_pkt[0] >> 3, conf.raw_layer)
        return cls

    # --- trailer ---------------------------------------------------------------------------

    def _uet_outermost(self) -> bool:
        return isinstance(self.underlayer, (UDP, UET_Entropy))

    def do_dissect(self, s):  # type: ignore[override]
        self._uet_trailer = False
        tail = b""
        if self._trailer is not None and self._uet_outermost():
            s, tail, self._uet_trailer = self._take_trailer(s)
        rest = super().do_dissect(s)
        if tail:
            if self.uet_truncated:
                self.raw_packet_cache = s + tail  # payload is empty: the trailer follows at once
                self.fields[self._trailer[0]] = self._uet_trailer  # type: ignore[index]
            else:
                self.raw_packet_cache = None  # rebuild from the fields; post_build appends the trailer
        elif self.uet_truncated and self._trailer is not None:
            self.fields[self._trailer[0]] = False
        return rest

    def _take_trailer(self, s: bytes) -> tuple[bytes, bytes, Any]:
        name, length = self._trailer  # type: ignore[misc]
        if length != 4:  # TSS: the ICV replaces the CRC (uet-facts F), not subject to the CRC mode
            if len(s) >= length:
                return s[:-length], s[-length:], s[-length:]
            return s, b"", False
        mode = trailer_mode()
        if mode == "none" or len(s) < 4:
            return s, b"", False
        carried = int.from_bytes(s[-4:], "big")
        if mode == "crc":
            return s[:-4], s[-4:], carried
        computed = self._crc_over(s[:-4], len(s))
        if computed is not None and computed == carried:
            return s[:-4], s[-4:], carried
        return s, b"", False

    def _crc_seed_bytes(self, uet_len: int) -> bytes | None:
        """Addresses + UDP header (checksum 0) or entropy header, as uet.wire.trailer covers them;
        ``uet_len`` is the UET byte count including the trailer. None without an IP layer."""
        under = self.underlayer
        if isinstance(under, UDP):
            ulen = under.len if under.len is not None else 8 + uet_len
            mid = struct.pack("!HHHH", int(under.sport), int(under.dport), int(ulen) & 0xFFFF, 0)
        elif isinstance(under, UET_Entropy):
            mid = bytes(under.self_build())
        else:
            return None
        ip = under.underlayer
        while ip is not None and not isinstance(ip, (IP, IPv6)):
            ip = ip.underlayer
        if ip is None:
            return None
        addrs = b"".join(ip.get_field(n).i2m(ip, ip.getfieldval(n)) for n in ("src", "dst"))
        return addrs + mid

    def _crc_over(self, body: bytes, uet_len: int) -> int | None:
        seed = self._crc_seed_bytes(uet_len)
        if seed is None:
            return None
        return native.crc32c(body, native.crc32c(seed))

    def _trailer_on_build(self) -> bool:
        if self._trailer is None or not self._uet_outermost():
            return False
        val = self.getfieldval(self._trailer[0])
        if val is False:
            return False
        if self._trailer[1] != 4:
            return val is not None
        return trailer_mode() != "none"

    def post_build(self, p, pay):  # type: ignore[override]
        p += pay
        if not self._trailer_on_build():
            return p
        name, length = self._trailer  # type: ignore[misc]
        val = self.getfieldval(name)
        if length != 4:
            return p + bytes(val).ljust(length, b"\0")[:length]
        if val is None:
            val = self._crc_over(p, len(p) + 4)
            if val is None:
                warning("%s: no IP layer below, CRC-32C trailer set to 0", self.__class__.__name__)
                val = 0
        return p + (int(val) & 0xFFFFFFFF).to_bytes(4, "big")

    def crc_computed(self) -> int | None:
        """The CRC-32C trailer this packet should carry (None without IP/UDP below)."""
        if self._trailer is None or self._trailer[1] != 4:
            return None
        body = self._body_bytes()
        return self._crc_over(body, len(body) + 4)

    def crc_ok(self) -> bool | None:
        """Whether the carried CRC-32C trailer is right; None when no trailer was taken (or there
        is no IP layer to compute it with)."""
        if self._trailer is None or self._trailer[1] != 4:
            return None
        carried = self.getfieldval(self._trailer[0])
        if carried is False:
            return None
        computed = self.crc_computed()
        if computed is None:
            return None
        return carried is None or computed == int(carried)

    def _body_bytes(self) -> bytes:
        """This layer and its payload as on the wire, without the trailer."""
        full = bytes(self)
        if self._trailer_on_build():
            return full[:-self._trailer[1]]  # type: ignore[index]
        return full


class UET_SES_AMO(UETPacket):
    """Dispatcher for the SES atomic extension (D.6): ``UET_SES_CSWAP`` when the AMO opcode (first
    byte) is a compare-and-swap (``CSWAP_AMO_OPCODES``, and MSWAP with ``mswap_cswap_ext``),
    else ``UET_SES_ATOMIC``."""

    name = "UET SES AMO"
    fields_desc: list = []

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt:
            amo = _pkt[0]
            cswap = amo in U.CSWAP_AMO_OPCODES or (uet_options().mswap_cswap_ext
                                                   and amo == U.MSWAP_AMO_OPCODE)
            return UET_SES_CSWAP if cswap else UET_SES_ATOMIC
        return UET_SES_ATOMIC


class _RoCEExt(_SchemaPacket):
    """Base of the generated RoCEv2 extension headers: the next header follows the BTH opcode."""

    def guess_payload_class(self, payload):  # type: ignore[override]
        nxt = _roce_next(self)
        return nxt if nxt is not None else super().guess_payload_class(payload)


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
        "__module__": __name__,
        "__doc__": f"{header.title} ({header.key}, uet-facts.md {header.ref}). "
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


def _first_type(header: Header) -> int:
    return min(t for t, h in U.PDS_BY_TYPE.items() if h is header)


UET_Entropy = make_layer(U.ENTROPY)
UET_TSS = make_layer(U.TSS, UET, trailer=("icv", U.TSS_ICV_LEN), defaults={"type": 1})

_pds_headers: list[Header] = []
for _h in U.PDS_BY_TYPE.values():
    if _h not in _pds_headers:
        _pds_headers.append(_h)
for _h in _pds_headers:
    globals()[class_name(_h)] = make_layer(_h, UET, trailer=("crc", U.CRC_TRAILER_LEN),
                                           defaults={"type": _first_type(_h)})

for _h in (U.SES_STD, U.SES_SMALL, U.SES_MEDIUM, U.SES_RSP, U.SES_RSP_DATA, U.SES_RSP_DATA_SMALL,
           U.SES_ATOMIC, U.SES_CSWAP, U.SES_RENDEZVOUS):
    globals()[class_name(_h)] = make_layer(_h)

for _h in (R.RETH, R.IMMDT, R.IETH, R.ATOMICETH, R.ATOMICACKETH, R.DETH):
    globals()[class_name(_h)] = make_layer(_h, _RoCEExt)
LAYERS[R.BTH.key] = BTH
LAYERS[R.AETH.key] = AETH
LAYERS[R.CNP.key] = _roce.CNPPadding

#: PDS type (B.1) -> class; type 1 -> UET_TSS
PDS_LAYERS: dict[int, type] = {1: UET_TSS}
PDS_LAYERS.update({t: LAYERS[h.key] for t, h in U.PDS_BY_TYPE.items()})
#: next_hdr (B.2) -> SES class
SES_LAYERS: dict[int, type] = {nh: LAYERS[h.key] for nh, h in U.SES_BY_NEXT_HDR.items()}
#: RoCE schema key -> class
ROCE_LAYERS: dict[str, type] = {h.key: LAYERS[h.key] for h in R.ROCE_HEADERS}

__all__ += sorted(class_name(h) for h in U.UET_HEADERS)
__all__ += sorted(_ROCE_CLASS_NAMES.values())


# --- bindings ---------------------------------------------------------------------------------

_bound_ports: list[int] = []


def bind_uet_port(port: int, *, keep_old: bool = False) -> None:
    """Dissect UDP ``port`` (as destination or source) as UET, and make ``UDP()/UET_...()`` use it
    as destination. Without ``keep_old`` the previously bound port(s) are released."""
    port = int(port)
    if not keep_old:
        for old in _bound_ports:
            split_bottom_up(UDP, UET, dport=old)
            split_bottom_up(UDP, UET, sport=old)
        _bound_ports.clear()
        split_top_down(UDP, UET)
    if port not in _bound_ports:
        bind_bottom_up(UDP, UET, dport=port)
        bind_bottom_up(UDP, UET, sport=port)
        _bound_ports.append(port)
    bind_top_down(UDP, UET, dport=port)
    _cfg()["port"] = port


def configure(*, trailer: str | None = None, options: Options | None = None,
              port: int | None = None) -> None:
    """Set the trailer mode, the decoder options and/or the UET UDP port."""
    if trailer is not None:
        if trailer not in TRAILER_MODES:
            raise ValueError(f"trailer must be one of {TRAILER_MODES}")
        _cfg()["trailer"] = trailer
    if options is not None:
        _cfg()["options"] = options
    if port is not None:
        bind_uet_port(port)


bind_uet_port(_cfg()["port"])
bind_layers(IP, UET_Entropy, proto=UET_IP_PROTO)
bind_layers(IPv6, UET_Entropy, nh=UET_IP_PROTO)
bind_layers(UET_Entropy, UET)

# PDS -> SES by next_hdr (B.2); CONTROL's slot holds ctl_type (B.12): no SES.
for _h in _pds_headers:
    if _h is U.CONTROL:
        continue
    for _nh, _sh in U.SES_BY_NEXT_HDR.items():
        bind_layers(LAYERS[_h.key], LAYERS[_sh.key], next_hdr=_nh)

# SES request -> extension by opcode (D.5, D.6), as uet.wire.packet chains them.
_first_atomic = min(U.ATOMIC_OPCODES)
for _sh in (U.SES_STD, U.SES_SMALL, U.SES_MEDIUM):
    _lower = LAYERS[_sh.key]
    for _op in sorted(U.ATOMIC_OPCODES):
        bind_bottom_up(_lower, UET_SES_AMO, opcode=_op)
    bind_top_down(_lower, UET_SES_ATOMIC, opcode=_first_atomic)
    bind_top_down(_lower, UET_SES_CSWAP, opcode=_first_atomic)
for _op in sorted(U.RENDEZVOUS_OPCODES):
    bind_bottom_up(UET_SES_STD, UET_SES_RENDEZVOUS, opcode=_op)
bind_top_down(UET_SES_STD, UET_SES_RENDEZVOUS, opcode=min(U.RENDEZVOUS_OPCODES))


# RoCEv2: extension headers onto scapy.contrib.roce's BTH by opcode (G.3, G.4).
def _roce_next(layer: Packet) -> type | None:
    """The class of the RoCE extension header after ``layer``, from the BTH opcode below it."""
    bth = layer.underlayer
    while bth is not None and not isinstance(bth, BTH):
        bth = bth.underlayer
    if bth is None:
        return None
    try:
        exts = R.extension_headers(int(bth.opcode))
    except (TypeError, ValueError):
        return None
    if not exts:
        return None
    classes = [ROCE_LAYERS[h.key] for h in exts]
    for i, cls in enumerate(classes[:-1]):
        if type(layer) is cls:
            return classes[i + 1]
    return None


_scapy_aeth_guess = AETH.guess_payload_class


def _aeth_guess_payload_class(self, payload):
    nxt = _roce_next(self)
    return nxt if nxt is not None else _scapy_aeth_guess(self, payload)


if not getattr(AETH.guess_payload_class, "_uet", False):
    _aeth_guess_payload_class._uet = True
    AETH.guess_payload_class = _aeth_guess_payload_class  # type: ignore[method-assign]

_TOP_DOWN_OPCODE = {  # the opcode BTH()/X() gets (RC; UD for DETH), one per class
    "roce.reth": 0x0A, "roce.immdt": 0x05, "roce.ieth": 0x17, "roce.atomiceth": 0x14,
    "roce.deth": 0x64,
}
for _opc in range(256):
    _exts = R.extension_headers(_opc)
    if not _exts or _exts[0] is R.CNP:
        continue
    _first = ROCE_LAYERS[_exts[0].key]
    if _first is AETH:
        if not any(c is AETH and fv.get("opcode") == _opc for fv, c in BTH.payload_guess):
            bind_bottom_up(BTH, AETH, opcode=_opc)
        continue
    bind_bottom_up(BTH, _first, opcode=_opc)
for _key, _opc in _TOP_DOWN_OPCODE.items():
    bind_top_down(BTH, ROCE_LAYERS[_key], opcode=_opc)

# Scapy binds UDP 4791 -> BTH itself; make sure of it.
if not any(c is BTH and fv.get("dport") == ROCE_UDP_PORT for fv, c in UDP.payload_guess):
    bind_layers(UDP, BTH, dport=ROCE_UDP_PORT)

del _h, _sh, _nh, _op, _lower, _opc, _exts, _first, _key
