"""Generate the Wireshark Lua dissector from the header schema (``uet wireshark -o uet.lua``).

Nothing about a header is written here by hand: the ProtoFields, value tables, bit masks, the
if/else that picks a header's layout ("one position, two meanings"), the truncation and reserved-bit
checks and the derived values all come from the declarations in :mod:`uet.wire` (through
the field plan below). What is hand-written is the packet chain (which header follows which),
mirroring :mod:`uet.wire.packet`, whose constants (PDS_BY_TYPE, SES_BY_NEXT_HDR, the atomic,
compare-swap and rendezvous opcode sets, the RoCEv2 extension headers per opcode) are also emitted
from Python. Expert-info texts are the ``problems`` strings of ``uet decode --json``.

Where the Lua comes from. The hand-written Lua lives in ``.lua`` files next to this module (package
data, read by :func:`lua_source`); the generated parts are built by :class:`_Emitter`. The output is
these parts, in this order, each stripped of blank lines at its ends and joined by one blank line:

1. ``header_comment.lua`` - the opening comment; a :class:`string.Template` whose ``${...}``
   placeholders (``version``, ``name``, ``port``, ``ip_proto``, ``roce_port``, ``renamed``) are
   filled by :meth:`_Emitter.header_comment`. It is the only templated file.
2. generated: ``GEN_NAME``, ``GEN_PORT``, ``UET_IP_PROTO``, ``ROCE_UDP_PORT`` and the field kinds
   ``K_*`` (:meth:`_Emitter.constants`);
3. ``prelude.lua`` - bit operations, CRC tables, bit-field readers, protocol registration
   (``proto``, ``proto_ip``, ``proto_roce``, ``PN``, ``RN``);
4. generated: value strings ``VS``, fields ``F``, header layouts ``H``, chain tables
   (``PDS_BY_TYPE``, ``OPTIONS``, ...);
5. ``runtime.lua`` (extra fields, experts, preferences, ``add_header``), ``uet_chain.lua`` (the UET
   packet chain and its registration), ``roce_additions.lua``, ``csig.lua`` (the CSIG tag on its
   EtherType) (:data:`RUNTIME_FILES`).

Those files are plain Lua copied verbatim (each parses on its own with ``luac -p``), except that
leading lines starting with ``--!`` describe the file and are dropped.

The output is deterministic (no timestamps, sorted sets): generating twice gives the same bytes.
It runs on Lua 5.2 with ``bit32`` (Wireshark 4.0-4.2, Debian 12) and on Lua 5.3/5.4 with native
bit operators (Wireshark 4.4+).

Field plan. Abbreviation scheme (documented in the generated Lua and in the README):

* A header field is ``<proto>.<json path>.<field>``, where the JSON path is where ``uet decode
  --json`` puts the header: ``uet.pds.psn``, ``uet.ses.opcode``, ``uet.tss.sdi``,
  ``uet.entropy.entropy``, the SES extensions nested inside ``ses`` as in the JSON
  (``uet.ses.atomic.atomic_opcode``, ``uet.ses.cswap.compare_value``,
  ``uet.ses.rendezvous.eager_length``), RoCEv2 headers under ``uetroce`` (``uetroce.bth.psn``,
  ``uetroce.reth.r_key``), the CSIG tag (the frame's ``csig`` object, facts E.4) under its own
  protocol ``uetcsig``, which stands for the whole object (``uetcsig.t``, ``uetcsig.s``).
* Derived values keep their JSON names (``uet.pds.clear_psn``, ``uet.pds.sack_base_psn``).
* One abbreviation is one Wireshark field, shared by every header that has a field of that name with
  the same Wireshark type (container bytes, bit mask, signedness, value table, base). When a name is
  reused with a different type, the first declaration (headers in schema order, default decoder
  options first) keeps the plain name and each other type gets a suffix: ``_<option value>`` when it
  only occurs under a non-default decoder option (``use_rsv_pdc_83``, ``ack_ccx_state_xdp2``),
  else ``_<width>`` when the width differs (``request_length_14``), else ``_<header>``
  (``opcode_rsp``). :func:`renamed_fields` lists them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from string import Template

from .. import ROCE_UDP_PORT, UET_IP_PROTO, UET_UDP_PORT, __version__
from ..cms.csig import CSIG_ETHERTYPE
from ..wire import enums as EN
from ..wire import net_headers as NH
from ..wire import roce_headers as R
from ..wire import uet_headers as U
from ..wire.codec import Placed, codec
from ..wire.schema import DEFAULT_OPTIONS, Enum, Field, Header, Item, Switch

# --- the field plan ---------------------------------------------------------------------------
#: SES extension headers: nested inside ``ses`` in the JSON, hence ``uet.ses.<short>.<field>``.
EXTENSION_KEYS = (U.SES_ATOMIC.key, U.SES_CSWAP.key, U.SES_RENDEZVOUS.key)

UET_HEADERS: tuple[Header, ...] = U.UET_HEADERS
ROCE_HEADERS: tuple[Header, ...] = R.ROCE_HEADERS
#: E.4: Wireshark has no dissector for the CSIG tag, so unlike the other link and IP headers it is
#: generated too, as its own protocol on an EtherType (csig.lua).
CSIG_HEADERS: tuple[Header, ...] = (NH.CSIG,)
#: every header the script dissects itself, in the order its tables are emitted
SCHEMA_HEADERS: tuple[Header, ...] = UET_HEADERS + ROCE_HEADERS + CSIG_HEADERS
#: protocol -> the Lua local holding its registered name (prelude.lua)
_NAME_VAR = {"uet": "PN", "roce": "RN", "csig": "CN"}

# Field kinds (also used as Lua constants by the generator).
K_RSVD, K_FLAG, K_UINT, K_INT, K_NUMX, K_U64, K_U64X, K_BYTES, K_BYTESX = range(9)


def json_path(h: Header) -> str:
    """Where ``uet decode --json`` puts the header, below ``uet`` or ``roce``; ``""`` for the CSIG
    tag, whose JSON object (the frame's ``csig``) its protocol stands for."""
    if h.key in EXTENSION_KEYS:
        return f"ses.{h.short}"
    if h.layer == "roce":
        return h.short
    if h.layer == "csig":
        return ""
    return h.layer


def proto_of(h: Header) -> str:
    """``"uet"``, ``"roce"`` or ``"csig"``: which generated protocol shows the header."""
    return h.layer if h.layer in ("roce", "csig") else "uet"


def _suffix(path: str, name: str) -> str:
    """The abbreviation after the protocol name: ``pds.psn``, or ``t`` for the CSIG tag."""
    return f"{path}.{name}" if path else name


def field_prefix(pr: str, uet: str, roce: str, csig: str) -> str:
    """The registered name that prefixes the fields of protocol ``pr`` (``"uet"``, ...)."""
    return {"uet": uet, "roce": roce, "csig": csig}[pr]


@dataclass(frozen=True)
class Spec:
    """The Wireshark side of one placed field: ProtoField constructor, container, mask, table."""

    kind: int
    ctor: str          # ProtoField.<ctor>
    nbytes: int        # container bytes (the tree item's length)
    mask: int          # 0 = no mask in the ProtoField
    base: str          # base.DEC / base.HEX / base.NONE, or the bool container width
    enum: str | None   # Enum.name of the value table
    width: int

    @property
    def signature(self) -> tuple:
        return (self.ctor, self.nbytes, self.mask, self.base, self.enum)


def spec_of(p: Placed) -> Spec:
    f = p.field
    b0 = p.offset // 8
    nb = (p.end + 7) // 8 - b0
    pad = nb * 8 - (p.offset - b0 * 8) - f.width
    full = f.width == nb * 8
    mask = ((1 << f.width) - 1) << pad
    enum = f.enum.name if f.enum is not None else None
    base = "base.HEX" if f.display == "hex" else "base.DEC"
    if f.reserved:
        return Spec(K_RSVD, "", nb, 0, "", None, f.width)
    if f.flag:
        return Spec(K_FLAG, "bool", nb, mask, str(nb * 8), None, 1)
    if f.width <= 32 and nb <= 4:
        size = {1: 8, 2: 16, 3: 24, 4: 32}[nb]
        if f.signed:
            if full:
                return Spec(K_INT, f"int{size}", nb, 0, "base.DEC", enum, f.width)
            return Spec(K_NUMX, "int32", nb, 0, "base.DEC", enum, f.width)
        return Spec(K_UINT, f"uint{size}", nb, 0 if full else mask, base, enum, f.width)
    if f.width <= 32:  # a narrow field spread over 5 bytes: explicit value, no mask
        return Spec(K_NUMX, "int32" if f.signed else "uint32", nb, 0,
                    "base.DEC" if f.signed else base, enum, f.width)
    if f.width <= 64:
        ctor = "int64" if f.signed else "uint64"
        b = "base.DEC" if f.signed else base
        # Wireshark 4.0's Lua takes a ProtoField mask as a double: 64-bit masks are not exact, so a
        # masked 64-bit field is added with an explicit value instead.
        return Spec(K_U64 if full else K_U64X, ctor, nb, 0, b, None, f.width)
    return Spec(K_BYTES if full else K_BYTESX, "bytes", nb, 0, "base.NONE", None, f.width)


@dataclass
class VariantPlan:
    """One concrete layout of a header (as :class:`uet.wire.codec.Variant`), plus which
    non-default decoder options it needs."""

    key: tuple[int, ...]
    placed: tuple[Placed, ...]
    size: int
    nondefault: tuple[tuple[str, str], ...]


def _expand(items: tuple[Item, ...], off: int, key: tuple[int, ...], placed: tuple[Placed, ...],
            nd: tuple[tuple[str, str], ...], selectors: dict[int, Placed]) -> list:
    """Every variant of ``items`` as (key, placed fields, bits, non-default option arms), in the
    codec's order; ``selectors`` collects the field each switch reads (by ``id(switch)``)."""
    states = [(key, placed, off, nd)]
    for it in items:
        nxt = []
        for k, p, o, n in states:
            if isinstance(it, Field):
                name = f"rsvd_{o}" if it.reserved else it.name
                nxt.append((k, p + (Placed(it, name, o),), o + it.width, n))
                continue
            if it.is_option:
                dflt = it.arm(DEFAULT_OPTIONS.get(it.on[1:]))
            else:
                dflt = None
                sel = next(q for q in p if q.name == it.on)
                if selectors.setdefault(id(it), sel).offset != sel.offset:
                    raise AssertionError(f"selector {it.on!r} moves between variants")
            for idx in range(len(it.cases) + 1):
                n2 = n
                if it.is_option and idx != dflt:
                    val = (sorted(str(v) for v in it.cases[idx].values)[0]
                           if idx < len(it.cases) else "default")
                    n2 = n + ((it.on[1:], val),)
                nxt.extend(_expand(it.arm_items(idx), o, k + (idx,), p, n2, selectors))
        states = nxt
    return states


def variants(h: Header) -> list[VariantPlan]:
    """The header's variants, default-option ones first, each checked against the codec's."""
    out = []
    cvars = codec(h).variants
    for key, placed, bits, nd in _expand(h.items, 0, (), (), (), {}):
        cv = cvars[key]
        if [(p.name, p.offset, p.field.width) for p in cv.placed] != \
                [(p.name, p.offset, p.field.width) for p in placed]:
            raise AssertionError(f"{h.key} variant {key}: plan differs from the codec")
        out.append(VariantPlan(key, placed, bits // 8, nd))
    out.sort(key=lambda v: (bool(v.nondefault), v.key))
    return out


def _switch_tree(items: tuple[Item, ...]) -> list[tuple[Switch, list[list]]]:
    """The switches of ``items`` with, per arm (cases then default), the switches inside it."""
    tree = []
    for it in items:
        if isinstance(it, Switch):
            tree.append((it, [_switch_tree(it.arm_items(i)) for i in range(len(it.cases) + 1)]))
    return tree


@dataclass
class FieldDef:
    """One generated ProtoField."""

    proto: str       # "uet" / "roce" / "csig"
    suffix: str      # abbreviation after the protocol name: "pds.psn"
    label: str
    spec: Spec
    doc: str
    headers: list[str] = field(default_factory=list)


@dataclass
class Plan:
    fields: list[FieldDef]
    by_placement: dict[tuple[str, str, tuple], FieldDef]
    renamed: list[tuple[str, str]]   # (proto-relative abbreviation, why)

    def field_for(self, header_key: str, p: Placed) -> FieldDef:
        return self.by_placement[(header_key, p.name, spec_of(p).signature)]


def _doc(f: Field) -> str:
    return f"{f.doc} [facts {f.ref}]" if f.ref else f.doc


@lru_cache(maxsize=1)
def plan() -> Plan:
    groups: dict[tuple[str, str, str], list[tuple[Spec, Header, VariantPlan, Placed]]] = {}
    for h in SCHEMA_HEADERS:
        for var in variants(h):
            for p in var.placed:
                if p.field.reserved:
                    continue
                groups.setdefault((proto_of(h), json_path(h), p.name), []).append((spec_of(p), h, var, p))
    fields: list[FieldDef] = []
    by_placement: dict[tuple[str, str, tuple], FieldDef] = {}
    renamed: list[tuple[str, str]] = []
    taken = {(pr, _suffix(path, name)) for (pr, path, name) in groups}
    for (pr, path, name), entries in groups.items():
        by_sig: dict[tuple, list] = {}
        for e in entries:
            by_sig.setdefault(e[0].signature, []).append(e)
        base_spec = entries[0][0]
        for i, (sig, es) in enumerate(by_sig.items()):
            spec, h0, _, p0 = es[0]
            if i == 0:
                suffix = _suffix(path, name)
            else:
                if all(v.nondefault for _, _, v, _ in es):
                    tag, why = es[0][2].nondefault[0][1], f"decoder option {es[0][2].nondefault[0][0]}"
                elif spec.width != base_spec.width:
                    tag, why = str(spec.width), f"{spec.width}-bit form"
                else:
                    tag, why = h0.short, f"{h0.key} ({spec.enum or spec.ctor})"
                suffix = _suffix(path, f"{name}_{tag}")
                if (pr, suffix) in taken:
                    raise AssertionError(f"renamed field {pr}.{suffix} collides")
                taken.add((pr, suffix))
                renamed.append((f"{pr}:{suffix}", f"{name} in {', '.join(sorted({e[1].key for e in es}))}"
                                                  f": {why}"))
            fd = FieldDef(pr, suffix, name, spec, _doc(p0.field))
            for _, h, _, p in es:
                if h.key not in fd.headers:
                    fd.headers.append(h.key)
                by_placement[(h.key, p.name, sig)] = fd
            fields.append(fd)
    return Plan(fields, by_placement, renamed)


def abbreviation(header_key: str, p: Placed, uet: str = "uet", roce: str = "uetroce",
                 csig: str = "uetcsig") -> str:
    """The filter name of placed field ``p`` of header ``header_key`` (``uet.pds.psn``)."""
    fd = plan().field_for(header_key, p)
    return f"{field_prefix(fd.proto, uet, roce, csig)}.{fd.suffix}"


def renamed_fields(uet: str = "uet", roce: str = "uetroce",
                   csig: str = "uetcsig") -> list[tuple[str, str]]:
    """(abbreviation, reason) of every field whose name had to be made unique."""
    out = []
    for tagged, why in plan().renamed:
        pr, suffix = tagged.split(":", 1)
        out.append((f"{field_prefix(pr, uet, roce, csig)}.{suffix}", why))
    return out


# --- the hand-written Lua files --------------------------------------------------------------

#: Hand-written Lua copied after the generated tables, in this order (see the module docstring).
RUNTIME_FILES = ("runtime.lua", "uet_chain.lua", "roce_additions.lua", "csig.lua")

#: Lines opening a ``.lua`` file with this prefix describe the file itself and are not copied.
_NOTE_PREFIX = "--!"


@lru_cache(maxsize=None)
def lua_source(name: str) -> str:
    """The text of the hand-written Lua file ``name`` shipped in this package (package data, read
    with :mod:`importlib.resources` so that it works from a wheel or zip), without its leading
    ``--!`` note lines."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    lines = text.split("\n")
    start = 0
    while start < len(lines) and lines[start].startswith(_NOTE_PREFIX):
        start += 1
    return "\n".join(lines[start:])


# --- the Lua emitter --------------------------------------------------------------------------

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


def _q(s: str) -> str:
    """A Lua string literal (deterministic, ASCII)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "\\\"":
            out.append("\\" + ch)
        elif 32 <= o < 127:
            out.append(ch)
        else:
            out.append("\\%03d" % o if o < 256 else "?")
    return '"' + "".join(out) + '"'


def _lit(v: object) -> str:
    if isinstance(v, str):
        return _q(v)
    return str(int(v))  # bools and ints


def _all_enums() -> list[Enum]:
    seen: dict[str, Enum] = {}
    for h in SCHEMA_HEADERS:
        for f in h.all_fields():
            if f.enum is not None and f.enum.name not in seen:
                seen[f.enum.name] = f.enum
    seen.setdefault(EN.AETH_NAK_CODE.name, EN.AETH_NAK_CODE)
    return list(seen.values())


def _enum_table(e: Enum) -> dict[int, str]:
    table = dict(e.table)
    for lo, hi, _label in e.ranges:
        for v in range(lo, hi + 1):
            table.setdefault(v, e.symbol(v))  # type: ignore[arg-type]
    return dict(sorted(table.items()))


def _options() -> list[tuple[str, list[object]]]:
    """Decoder options that schema switches depend on, with their values (default first)."""
    found: dict[str, list[object]] = {}

    def walk(items: tuple[Item, ...]) -> None:
        for it in items:
            if isinstance(it, Switch):
                if it.is_option:
                    name = it.on[1:]
                    vals = found.setdefault(name, [DEFAULT_OPTIONS.get(name)])
                    for case in it.cases:
                        for v in sorted(case.values, key=str):
                            if v not in vals:
                                vals.append(v)
                for case in it.cases:
                    walk(case.items)
                walk(it.default)

    for h in SCHEMA_HEADERS:
        walk(h.items)
    return sorted(found.items())


class _Emitter:
    def __init__(self, port: int, proto_name: str):
        if not _IDENT.match(proto_name):
            raise ValueError(f"protocol name {proto_name!r}: lower-case letters, digits and _ only")
        self.port = int(port)
        self.name = proto_name
        self.plan = plan()
        self.fid: dict[int, str] = {}  # id(FieldDef) -> Lua expression

    # --- pieces ---------------------------------------------------------------------------

    def header_comment(self) -> str:
        """The comment block that opens the file (``header_comment.lua`` filled in)."""
        renamed = "\n".join(f"--   {a:<34} {why}" for a, why in renamed_fields(
            self.name, self.name + "roce", self.name + "csig"))
        return Template(lua_source("header_comment.lua")).substitute(
            version=__version__, name=self.name, port=self.port, ip_proto=UET_IP_PROTO,
            roce_port=ROCE_UDP_PORT, csig_ethertype=f"0x{CSIG_ETHERTYPE:04x}", renamed=renamed)

    def constants(self) -> str:
        """The generator's settings and the field kinds, as the Lua locals the hand-written parts use."""
        kinds = ", ".join(f"{n} = {v}" for n, v in _KINDS)
        return "\n".join([
            f'local GEN_NAME = "{self.name}"',  # a plain identifier (checked in __init__): no escaping
            f"local GEN_PORT = {self.port}",
            f"local UET_IP_PROTO = {UET_IP_PROTO}",
            f"local ROCE_UDP_PORT = {ROCE_UDP_PORT}",
            f"local CSIG_ETHERTYPE = 0x{CSIG_ETHERTYPE:04X}",
            f"local K = {{ {kinds} }}",
            "local K_RSVD, K_FLAG, K_UINT, K_INT, K_NUMX = K.K_RSVD, K.K_FLAG, K.K_UINT, K.K_INT, K.K_NUMX",
            "local K_U64, K_U64X, K_BYTES, K_BYTESX = K.K_U64, K.K_U64X, K.K_BYTES, K.K_BYTESX",
        ])

    def enums(self) -> str:
        out = ["-- value strings (uet/wire/enums.py; vendor ranges expanded)", "local VS = {}"]
        for e in _all_enums():
            items = ", ".join(f"[{k}] = {_q(v)}" for k, v in _enum_table(e).items())
            out.append(f"VS[{_q(e.name)}] = {{ {items} }}")
        return "\n".join(out)

    def fields(self) -> str:
        out = ["-- header fields (one per abbreviation; see the header comment for the naming)",
               "local F = {}"]
        for fd in self.plan.fields:
            s = fd.spec
            pref = _NAME_VAR[fd.proto]
            key = f"{fd.proto}:{fd.suffix}"
            self.fid[id(fd)] = f"F[{_q(key)}]"
            abbr = f'{pref} .. {_q("." + fd.suffix)}'
            vs = f"VS[{_q(s.enum)}]" if s.enum else "nil"
            if s.ctor == "bool":
                args = f"{abbr}, {_q(fd.label)}, {s.base}, nil, {s.mask}, {_q(fd.doc)}"
            elif s.ctor == "bytes":
                args = f"{abbr}, {_q(fd.label)}, base.NONE, {_q(fd.doc)}"
            else:
                mask = str(s.mask) if s.mask else "nil"
                args = f"{abbr}, {_q(fd.label)}, {s.base}, {vs}, {mask}, {_q(fd.doc)}"
            out.append(f"F[{_q(key)}] = ProtoField.{s.ctor}({args})")
        # header items, derived values and the rest
        seen_paths: list[tuple[str, str]] = []
        for h in SCHEMA_HEADERS:
            pp = (proto_of(h), json_path(h))
            if pp not in seen_paths and pp[1]:  # no path: the protocol's own item is the header's
                seen_paths.append(pp)
        for pr, path in seen_paths:
            pref = _NAME_VAR[pr]
            out.append(f'F[{_q(pr + ":" + path)}] = ProtoField.none({pref} .. {_q("." + path)}, '
                       f'{_q(path + " header")})')
        derived: list[tuple[str, str, str]] = []
        for h in SCHEMA_HEADERS:
            for d in h.derived:
                key = f"{proto_of(h)}:{_suffix(json_path(h), d.name)}"
                if all(k != key for k, _, _ in derived):
                    derived.append((key, d.name, f"{d.doc} [facts {d.ref}]" if d.ref else d.doc))
        for key, name, doc in derived:
            pr, suffix = key.split(":", 1)
            pref = _NAME_VAR[pr]
            out.append(f'F[{_q(key)}] = ProtoField.uint32({pref} .. {_q("." + suffix)}, {_q(name)}, '
                       f'base.DEC, nil, nil, {_q(doc)})')
        return "\n".join(out)

    def headers(self) -> str:
        out = ["-- header layouts: one table per variant, chosen by if/else on the selector fields",
               "local H = {}"]
        for h in SCHEMA_HEADERS:
            out.append(self._header(h))
        return "\n".join(out)

    def _header(self, h: Header) -> str:
        pr = proto_of(h)
        vars_ = variants(h)
        lines = ["do"]
        lines.append("  local V = {}")
        by_key = {}
        for i, var in enumerate(vars_, 1):
            by_key[var.key] = i
            fl = []
            for p in var.placed:
                s = spec_of(p)
                b0 = p.offset // 8
                pad = s.nbytes * 8 - (p.offset - b0 * 8) - p.field.width
                parts = [f"k={s.kind}", f"b={b0}", f"l={s.nbytes}", f"p={pad}", f"w={p.field.width}",
                         f"o={p.offset}", f"n={_q(p.name)}"]
                if not p.field.reserved:
                    fd = self.plan.field_for(h.key, p)
                    parts.insert(0, f"f={self.fid[id(fd)]}")
                    if s.enum:
                        parts.append(f"e=VS[{_q(s.enum)}]")
                        parts.append(f"en={_q(s.enum)}")
                    if p.field.signed:
                        parts.append("s=true")
                    if s.kind == K_U64X:
                        m = ((1 << p.field.width) - 1) << pad
                        parts.append(f"mlo={m & 0xFFFFFFFF}, mhi={m >> 32}")
                fl.append("{" + ", ".join(parts) + "}")
            lines.append(f"  V[{i}] = {{ size = {var.size}, fields = {{")
            for f in fl:
                lines.append(f"    {f},")
            lines.append("  } }")
        derived = []
        for d in h.derived:
            key = f"{pr}:{_suffix(json_path(h), d.name)}"
            derived.append(f"{{n={_q(d.name)}, a={_q(d.a)}, b={_q(d.b)}, neg={'true' if d.op == '-' else 'false'}, "
                           f"m={1 << d.bits}, f=F[{_q(key)}]}}")
        sizes = [v.size for v in vars_]
        # a header without a JSON path below its protocol (the CSIG tag) is the protocol's own item
        hf = f"F[{_q(pr + ':' + json_path(h))}]" if json_path(h) else f"proto_{pr}"
        lines.append(f"  H[{_q(h.key)}] = {{ key = {_q(h.key)}, title = {_q(h.title)}, ref = {_q(h.ref)}, "
                     f"hf = {hf}, max = {max(sizes)}, vars = V,")
        lines.append(f"    derived = {{ {', '.join(derived)} }},")
        lines.append("    choose = function(raw, have)")
        lines.extend(self._choose(h, by_key))
        lines.append("    end }")
        lines.append("end")
        return "\n".join(lines)

    def _choose(self, h: Header, by_key: dict[tuple[int, ...], int]) -> list[str]:
        """Lua if/else that reads each selector (or option) and returns the variant, mirroring
        the codec's chooser. A selector beyond the captured bytes reads as 0 (as
        ``Codec.decode_partial`` does): the arms it picks only hold fields past the cut."""
        tree = _switch_tree(h.items)
        if not tree:
            return ["      return V[1]"]
        selectors = self._selector_places(h)
        out: list[str] = []

        def rec(pending: list, key: tuple[int, ...], ind: str) -> None:
            if not pending:
                out.append(f"{ind}return V[{by_key[key]}]")
                return
            (sw, arms), rest = pending[0], pending[1:]
            if sw.is_option:
                sel = f"OPT.{sw.on[1:]}"
            else:
                b, nb, pad, w = selectors[id(sw)]
                out.append(f"{ind}local s{len(key)} = (have >= {b + nb}) and getv(raw, {b}, {nb}, {pad}, {w}) or 0")
                sel = f"s{len(key)}"
            for idx in range(len(sw.cases) + 1):
                if idx < len(sw.cases):
                    vals = sorted(sw.cases[idx].values, key=str)
                    cond = " or ".join(f"{sel} == {_lit(v)}" for v in vals)
                    out.append(f"{ind}{'if' if idx == 0 else 'elseif'} {cond} then")
                else:
                    out.append(f"{ind}else")
                rec(list(arms[idx]) + rest, key + (idx,), ind + "  ")
            out.append(f"{ind}end")

        rec(list(tree), (), "      ")
        return out

    @staticmethod
    def _selector_places(h: Header) -> dict[int, tuple[int, int, int, int]]:
        selectors: dict[int, Placed] = {}
        _expand(h.items, 0, (), (), (), selectors)
        places = {}
        for sw_id, p in selectors.items():
            b0 = p.offset // 8
            nb = (p.end + 7) // 8 - b0
            pad = nb * 8 - (p.offset - b0 * 8) - p.field.width
            places[sw_id] = (b0, nb, pad, p.field.width)
        return places

    def tables(self) -> str:
        def lua_set(values) -> str:
            return "{ " + ", ".join(f"[{v}] = true" for v in sorted(values)) + " }"

        pds = ", ".join(f'[{t}] = H[{_q(h.key)}]' for t, h in sorted(U.PDS_BY_TYPE.items()))
        ses = ", ".join(f'[{t}] = H[{_q(h.key)}]' for t, h in sorted(U.SES_BY_NEXT_HDR.items()))
        roce = []
        for op in range(256):
            exts = R.extension_headers(op)
            if exts is not None:
                roce.append(f"[{op}] = {{ " + ", ".join(f"H[{_q(x.key)}]" for x in exts) + " }")
        opts = []
        for name, vals in _options():
            entries = ", ".join(f"{{ {i}, {_q(str(v))}, {i} }}" for i, v in enumerate(vals, 1))
            lits = ", ".join(f"[{i}] = {_lit(v)}" for i, v in enumerate(vals, 1))
            opts.append(f"OPTIONS[{_q(name)}] = {{ enum = {{ {entries} }}, values = {{ {lits} }} }}")
        return "\n".join([
            "-- packet chain tables (uet/wire/uet_headers.py, roce_headers.py)",
            f"local PDS_BY_TYPE = {{ {pds} }}",
            f"local SES_BY_NEXT_HDR = {{ {ses} }}",
            f"local ATOMIC_OPCODES = {lua_set(U.ATOMIC_OPCODES)}",
            f"local CSWAP_AMO_OPCODES = {lua_set(U.CSWAP_AMO_OPCODES)}",
            f"local MSWAP_AMO_OPCODE = {U.MSWAP_AMO_OPCODE}",
            f"local RENDEZVOUS_OPCODES = {lua_set(U.RENDEZVOUS_OPCODES)}",
            "local REQUEST_OPCODE_NAMES = { " + ", ".join(
                f"[{v}] = {_q(n)}" for v, n in sorted(EN.SES_OPCODE.table.items())) + " }",
            f"local CRC_TRAILER_LEN = {U.CRC_TRAILER_LEN}",
            f"local TSS_ICV_LEN = {U.TSS_ICV_LEN}",
            f"local CNP_OPCODE = {EN.CNP_OPCODE}",
            "local ROCE_EXT = { " + ", ".join(roce) + " }",
            "local OPTIONS = {}",
            *opts,
        ])

    def render(self) -> str:
        # Generated and hand-written parts alternate in the order the Lua needs its locals: each part
        # may use what the parts before it define (see the module docstring for who defines what).
        parts = [
            self.header_comment(),
            self.constants(),
            lua_source("prelude.lua"),
            self.enums(),
            self.fields(),
            self.headers(),
            self.tables(),
            *(lua_source(name) for name in RUNTIME_FILES),
        ]
        text = "\n\n".join(p.strip("\n") for p in parts) + "\n"
        return text


_KINDS = (("K_RSVD", K_RSVD), ("K_FLAG", K_FLAG), ("K_UINT", K_UINT), ("K_INT", K_INT),
          ("K_NUMX", K_NUMX), ("K_U64", K_U64), ("K_U64X", K_U64X), ("K_BYTES", K_BYTES),
          ("K_BYTESX", K_BYTESX))


def generate_lua(port: int = UET_UDP_PORT, proto_name: str = "uet") -> str:
    """The Lua source of the dissector: UET on UDP ``port`` (a preference) and IP protocol 253,
    RoCEv2 additions on UDP 4791, the CSIG tag (``<name>csig``) on the EtherType
    :data:`uet.cms.csig.CSIG_ETHERTYPE` (a preference).
    ``proto_name`` is the protocol (and field prefix) to register; when Wireshark already has a
    protocol of that name, the script falls back to ``<name>ref``."""
    return _Emitter(port, proto_name).render()
