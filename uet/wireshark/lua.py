"""Generate the Wireshark Lua dissector from the header schema (``uet wireshark -o uet.lua``).

Nothing about a header is written here by hand: the ProtoFields, value tables, bit masks, the
if/else that picks a header's layout ("one position, two meanings"), the truncation and reserved-bit
checks and the derived values all come from the declarations in :mod:`uet.wire` (through
the field plan below). What is hand-written is the packet chain (which header follows which),
mirroring :mod:`uet.wire.packet`, whose constants (PDS_BY_TYPE, SES_BY_NEXT_HDR, the atomic,
compare-swap and rendezvous opcode sets, the RoCEv2 extension headers per opcode) are also emitted
from Python. Expert-info texts are the ``problems`` strings of ``uet decode --json``.

The output is deterministic (no timestamps, sorted sets): generating twice gives the same bytes.
It runs on Lua 5.2 with ``bit32`` (Wireshark 4.0-4.2, Debian 12) and on Lua 5.3/5.4 with native
bit operators (Wireshark 4.4+).

Field plan. Abbreviation scheme (documented in the generated Lua and in the README):

* A header field is ``<proto>.<json path>.<field>``, where the JSON path is where ``uet decode
  --json`` puts the header: ``uet.pds.psn``, ``uet.ses.opcode``, ``uet.tss.sdi``,
  ``uet.entropy.entropy``, the SES extensions nested inside ``ses`` as in the JSON
  (``uet.ses.atomic.atomic_opcode``, ``uet.ses.cswap.compare_value``,
  ``uet.ses.rendezvous.eager_length``), RoCEv2 headers under ``uetroce`` (``uetroce.bth.psn``,
  ``uetroce.reth.r_key``).
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

from .. import ROCE_UDP_PORT, UET_IP_PROTO, UET_UDP_PORT, __version__
from ..wire import enums as EN
from ..wire import roce_headers as R
from ..wire import uet_headers as U
from ..wire.codec import Placed, codec
from ..wire.schema import DEFAULT_OPTIONS, Enum, Field, Header, Item, Switch

# --- the field plan ---------------------------------------------------------------------------
#: SES extension headers: nested inside ``ses`` in the JSON, hence ``uet.ses.<short>.<field>``.
EXTENSION_KEYS = (U.SES_ATOMIC.key, U.SES_CSWAP.key, U.SES_RENDEZVOUS.key)

UET_HEADERS: tuple[Header, ...] = U.UET_HEADERS
ROCE_HEADERS: tuple[Header, ...] = R.ROCE_HEADERS

# Field kinds (also used as Lua constants by the generator).
K_RSVD, K_FLAG, K_UINT, K_INT, K_NUMX, K_U64, K_U64X, K_BYTES, K_BYTESX = range(9)


def json_path(h: Header) -> str:
    """Where ``uet decode --json`` puts the header, below ``uet`` or ``roce``."""
    if h.key in EXTENSION_KEYS:
        return f"ses.{h.short}"
    if h.layer == "roce":
        return h.short
    return h.layer


def proto_of(h: Header) -> str:
    """``"uet"`` or ``"roce"``: which generated protocol shows the header."""
    return "roce" if h.layer == "roce" else "uet"


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

    proto: str       # "uet" / "roce"
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
    return f"{f.doc} [uet-facts {f.ref}]" if f.ref else f.doc


@lru_cache(maxsize=1)
def plan() -> Plan:
    groups: dict[tuple[str, str, str], list[tuple[Spec, Header, VariantPlan, Placed]]] = {}
    for h in UET_HEADERS + ROCE_HEADERS:
        for var in variants(h):
            for p in var.placed:
                if p.field.reserved:
                    continue
                groups.setdefault((proto_of(h), json_path(h), p.name), []).append((spec_of(p), h, var, p))
    fields: list[FieldDef] = []
    by_placement: dict[tuple[str, str, tuple], FieldDef] = {}
    renamed: list[tuple[str, str]] = []
    taken = {(pr, f"{path}.{name}") for (pr, path, name) in groups}
    for (pr, path, name), entries in groups.items():
        by_sig: dict[tuple, list] = {}
        for e in entries:
            by_sig.setdefault(e[0].signature, []).append(e)
        base_spec = entries[0][0]
        for i, (sig, es) in enumerate(by_sig.items()):
            spec, h0, _, p0 = es[0]
            if i == 0:
                suffix = f"{path}.{name}"
            else:
                if all(v.nondefault for _, _, v, _ in es):
                    tag, why = es[0][2].nondefault[0][1], f"decoder option {es[0][2].nondefault[0][0]}"
                elif spec.width != base_spec.width:
                    tag, why = str(spec.width), f"{spec.width}-bit form"
                else:
                    tag, why = h0.short, f"{h0.key} ({spec.enum or spec.ctor})"
                suffix = f"{path}.{name}_{tag}"
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


def abbreviation(header_key: str, p: Placed, uet: str = "uet", roce: str = "uetroce") -> str:
    """The filter name of placed field ``p`` of header ``header_key`` (``uet.pds.psn``)."""
    fd = plan().field_for(header_key, p)
    return f"{uet if fd.proto == 'uet' else roce}.{fd.suffix}"


def renamed_fields(uet: str = "uet", roce: str = "uetroce") -> list[tuple[str, str]]:
    """(abbreviation, reason) of every field whose name had to be made unique."""
    out = []
    for tagged, why in plan().renamed:
        pr, suffix = tagged.split(":", 1)
        out.append((f"{uet if pr == 'uet' else roce}.{suffix}", why))
    return out


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
    for h in UET_HEADERS + ROCE_HEADERS:
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

    for h in UET_HEADERS + ROCE_HEADERS:
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
        renamed = "\n".join(f"--   {a:<34} {why}" for a, why in renamed_fields(self.name, self.name + "roce"))
        return f"""\
-- Wireshark dissector for the Ultra Ethernet Transport (UEC 1.0.x) and RoCEv2 additions.
--
-- GENERATED by `uet wireshark` (uet {__version__}) from the header schema in uet/wire/*.py.
-- Do not edit: regenerate with `uet wireshark -o uet.lua [--port N] [--name NAME]`.
--
-- Install: copy this file into Wireshark's personal Lua plugins folder
-- (~/.local/lib/wireshark/plugins/ on Linux; "About Wireshark > Folders" shows it), or run
-- `tshark -X lua_script:uet.lua ...`.
--
-- What it registers
--   * protocol "{self.name}" on UDP port {self.port} (preference {self.name}.udp_port) and, as
--     "{self.name}ip", on IP protocol {UET_IP_PROTO} (native IP mode: the 4-byte entropy header first);
--   * protocol "{self.name}roce" on UDP port {ROCE_UDP_PORT}: runs Wireshark's own RoCEv2/InfiniBand
--     dissector first, then adds what Wireshark 4.0 lacks: every header decoded from the same schema
--     (BTH with FECN/BECN, CNP = opcode 0x81 with its 16 reserved bytes), ICRC verification
--     (uet-facts G.6) and the AETH syndrome in words.
--   If a protocol name is already taken (newer Wireshark builds have a built-in "uet" dissector on
--   UDP 4793), the plugin registers as "<name>ref" instead ("uetref", fields uetref.*), says so in
--   the tree (field <name>.note) and keeps loading. It then takes UDP {self.port} over from the
--   built-in one; use Decode As to switch back.
--
-- Field names: <proto>.<json path>.<field>, exactly the keys of `uet decode --json`:
--   uet.pds.psn, uet.pds.type, uet.ses.opcode, uet.tss.sdi, uet.entropy.entropy; SES extension
--   headers nest inside ses as in the JSON: uet.ses.atomic.atomic_opcode, uet.ses.cswap.swap_value,
--   uet.ses.rendezvous.eager_length; RoCEv2: uetroce.bth.opcode, uetroce.reth.r_key, ...
--   Derived values are generated fields: uet.pds.clear_psn, start_psn, ack_psn, sack_base_psn,
--   and uet.pds.sack_bitmap.psn (one per set bit of the SACK bitmap: bit i = PSN sack_base_psn + i,
--   bit 0 = least significant bit). Enumerations are value strings (the number is the field value),
--   flags are booleans. Fields wider than 64 bits are byte strings (right-aligned when not
--   byte-aligned). Also: uet.payload_len, uet.payload, uet.crc.value, uet.crc.ok, uet.icv,
--   uetroce.payload_len, uetroce.icrc.value, uetroce.icrc.ok, uetroce.aeth.syndrome_name.
--   A name that two headers use with different types is made unique (first declaration keeps it):
{renamed}
--
-- Preferences: {self.name}.udp_port, {self.name}.trailer (auto: a CRC-32C trailer is present exactly when the
--   last 4 bytes verify, as `uet decode`; crc: always present, a wrong one is "bad CRC"; none),
--   {self.name}.ccx_layout (1.0 | xdp2), {self.name}.rsv_pdc_bit (80 | 83), {self.name}.mswap_cswap_ext.
--   CRC-32C trailer coverage: IP source and destination address, then (UDP mode) the 8-byte UDP header
--   with checksum 0 and the length as on the wire, then the UET bytes before the trailer; big-endian.
"""

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
            pref = "PN" if fd.proto == "uet" else "RN"
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
        for h in UET_HEADERS + ROCE_HEADERS:
            pp = (proto_of(h), json_path(h))
            if pp not in seen_paths:
                seen_paths.append(pp)
        for pr, path in seen_paths:
            pref = "PN" if pr == "uet" else "RN"
            out.append(f'F[{_q(pr + ":" + path)}] = ProtoField.none({pref} .. {_q("." + path)}, '
                       f'{_q(path + " header")})')
        derived: list[tuple[str, str, str]] = []
        for h in UET_HEADERS + ROCE_HEADERS:
            for d in h.derived:
                key = f"{proto_of(h)}:{json_path(h)}.{d.name}"
                if all(k != key for k, _, _ in derived):
                    derived.append((key, d.name, f"{d.doc} [uet-facts {d.ref}]" if d.ref else d.doc))
        for key, name, doc in derived:
            pr, suffix = key.split(":", 1)
            pref = "PN" if pr == "uet" else "RN"
            out.append(f'F[{_q(key)}] = ProtoField.uint32({pref} .. {_q("." + suffix)}, {_q(name)}, '
                       f'base.DEC, nil, nil, {_q(doc)})')
        return "\n".join(out)

    def headers(self) -> str:
        out = ["-- header layouts: one table per variant, chosen by if/else on the selector fields",
               "local H = {}"]
        for h in UET_HEADERS + ROCE_HEADERS:
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
            key = f"{pr}:{json_path(h)}.{d.name}"
            derived.append(f"{{n={_q(d.name)}, a={_q(d.a)}, b={_q(d.b)}, neg={'true' if d.op == '-' else 'false'}, "
                           f"m={1 << d.bits}, f=F[{_q(key)}]}}")
        sizes = [v.size for v in vars_]
        lines.append(f"  H[{_q(h.key)}] = {{ key = {_q(h.key)}, title = {_q(h.title)}, ref = {_q(h.ref)}, "
                     f"hf = F[{_q(pr + ':' + json_path(h))}], max = {max(sizes)}, vars = V,")
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
            f"local CRC_TRAILER_LEN = {U.CRC_TRAILER_LEN}",
            f"local TSS_ICV_LEN = {U.TSS_ICV_LEN}",
            f"local CNP_OPCODE = {EN.CNP_OPCODE}",
            "local ROCE_EXT = { " + ", ".join(roce) + " }",
            "local OPTIONS = {}",
            *opts,
        ])

    def render(self) -> str:
        parts = [
            self.header_comment(),
            _PRELUDE.replace("@NAME@", self.name).replace("@PORT@", str(self.port))
                    .replace("@VERSION@", __version__).replace("@IPPROTO@", str(UET_IP_PROTO))
                    .replace("@ROCEPORT@", str(ROCE_UDP_PORT))
                    .replace("@K@", ", ".join(f"{n} = {v}" for n, v in _KINDS)),
            self.enums(),
            self.fields(),
            self.headers(),
            self.tables(),
            _RUNTIME,
        ]
        text = "\n\n".join(p.strip("\n") for p in parts) + "\n"
        return text


_KINDS = (("K_RSVD", K_RSVD), ("K_FLAG", K_FLAG), ("K_UINT", K_UINT), ("K_INT", K_INT),
          ("K_NUMX", K_NUMX), ("K_U64", K_U64), ("K_U64X", K_U64X), ("K_BYTES", K_BYTES),
          ("K_BYTESX", K_BYTESX))


def generate_lua(port: int = UET_UDP_PORT, proto_name: str = "uet") -> str:
    """The Lua source of the dissector: UET on UDP ``port`` (a preference) and IP protocol 253,
    RoCEv2 additions on UDP 4791. ``proto_name`` is the protocol (and field prefix) to register;
    when Wireshark already has a protocol of that name, the script falls back to ``<name>ref``."""
    return _Emitter(port, proto_name).render()


# --- hand-written runtime: helpers, registration, the packet chain ---------------------------

_PRELUDE = r"""
local GEN_NAME = "@NAME@"
local GEN_PORT = @PORT@
local UET_IP_PROTO = @IPPROTO@
local ROCE_UDP_PORT = @ROCEPORT@
local K = { @K@ }
local K_RSVD, K_FLAG, K_UINT, K_INT, K_NUMX = K.K_RSVD, K.K_FLAG, K.K_UINT, K.K_INT, K.K_NUMX
local K_U64, K_U64X, K_BYTES, K_BYTESX = K.K_U64, K.K_U64X, K.K_BYTES, K.K_BYTESX

-- bit operations: bit32 on Lua 5.2 (Wireshark 4.0-4.2), native operators on Lua 5.3/5.4
local band, bxor, rshift
if bit32 then
  band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
  band, bxor, rshift = load("return function(a, b) return a & b end, " ..
    "function(a, b) return a ~ b end, function(a, n) return (a & 0xFFFFFFFF) >> n end")()
end
local POW2 = { [0] = 1 }
for i = 1, 53 do POW2[i] = POW2[i - 1] * 2 end
local floor, min, max, sbyte, schar, fmt = math.floor, math.min, math.max, string.byte, string.char, string.format
local OPT = {}  -- decoder options, read from the preferences

-- CRC-32C (Castagnoli, reflected 0x82F63B78) and CRC-32 (IEEE, reflected 0xEDB88320), table
-- driven. The register is kept as four bytes and the XOR of two bytes is a table lookup, so the
-- inner loop makes no function calls (about 6 MB/s on Lua 5.2; the interpreter is the limit).
local XOR8 = {}
for a = 0, 255 do
  for b = 0, 255 do XOR8[a * 256 + b] = bxor(a, b) end
end
local function crc_table(poly)
  local t0, t1, t2, t3 = {}, {}, {}, {}
  for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
      if c % 2 == 1 then c = bxor(rshift(c, 1), poly) else c = rshift(c, 1) end
    end
    t0[i], t1[i], t2[i], t3[i] = c % 256, floor(c / 256) % 256, floor(c / 65536) % 256, floor(c / 16777216)
  end
  return { t0, t1, t2, t3 }
end
local T32C, T32 = crc_table(0x82F63B78), crc_table(0xEDB88320)
-- continue a finished CRC value over the bytes of string s (crc(b, crc(a)) == crc(a .. b))
local function crc_update(t, crc, s)
  local t0, t1, t2, t3 = t[1], t[2], t[3], t[4]
  local c = bxor(crc, 0xFFFFFFFF)
  local c0, c1, c2, c3 = c % 256, floor(c / 256) % 256, floor(c / 65536) % 256, floor(c / 16777216)
  local n = #s
  local i = 1
  while i <= n do
    local j = min(i + 4095, n)
    local bytes = { sbyte(s, i, j) }
    for k = 1, #bytes do
      local x = XOR8[c0 * 256 + bytes[k]]
      c0 = XOR8[t0[x] * 256 + c1]
      c1 = XOR8[t1[x] * 256 + c2]
      c2 = XOR8[t2[x] * 256 + c3]
      c3 = t3[x]
    end
    i = j + 1
  end
  return bxor(((c3 * 256 + c2) * 256 + c1) * 256 + c0, 0xFFFFFFFF)
end

-- bits of a header held in the Lua string raw: b = first byte (0-based), nb bytes, pad = bits
-- after the field in its last byte, w = width (<= 32)
local function getv(raw, b, nb, pad, w)
  local acc = 0
  for i = b + 1, b + nb do acc = acc * 256 + sbyte(raw, i) end
  return floor(acc / POW2[pad]) % POW2[w]
end

local function field_bits(raw, b, nb, pad, w)
  local bits = {}
  for i = b + 1, b + nb do
    local byte = sbyte(raw, i)
    for j = 7, 0, -1 do bits[#bits + 1] = floor(byte / POW2[j]) % 2 end
  end
  local first = nb * 8 - pad - w + 1
  local out = {}
  for i = first, first + w - 1 do out[#out + 1] = bits[i] end
  return out
end

-- upper-case hex of any field without leading zeros, nil when zero
local function bits_hex(raw, b, nb, pad, w)
  if w <= 32 and nb <= 5 then
    local x = getv(raw, b, nb, pad, w)
    if x == 0 then return nil end
    return fmt("%X", x)
  end
  local bits = field_bits(raw, b, nb, pad, w)
  local digits = {}
  local i = #bits
  while i >= 1 do
    local nib = 0
    for k = 0, 3 do
      if i - k >= 1 then nib = nib + bits[i - k] * POW2[k] end
    end
    table.insert(digits, 1, fmt("%X", nib))
    i = i - 4
  end
  local hex = (table.concat(digits):gsub("^0+", ""))
  if hex == "" then return nil end
  return hex
end

-- a field wider than 64 bits that is not byte aligned, right-aligned into its nb container bytes
-- (Wireshark copies exactly as many value bytes as the item covers)
local function masked_bytes(raw, b, nb, pad, w)
  local bits = field_bits(raw, b, nb, pad, w)
  local lead = nb * 8 - w
  local out = {}
  local acc, cnt = 0, lead
  for _, bit in ipairs(bits) do
    acc = acc * 2 + bit
    cnt = cnt + 1
    if cnt == 8 then out[#out + 1] = schar(acc); acc, cnt = 0, 0 end
  end
  return table.concat(out)
end


-- Register a protocol under the first free name: Proto() raises when the name is taken.
local function new_proto(names, desc)
  local last
  for _, n in ipairs(names) do
    local ok, p = pcall(Proto, n, desc .. " (" .. n .. ")")
    if ok then return p, n end
    last = p
  end
  error(last)
end

local proto, PN = new_proto({ GEN_NAME, GEN_NAME .. "ref" }, "Ultra Ethernet Transport, uet reference dissector")
local proto_ip = new_proto({ PN .. "ip", PN .. "ipref" }, "UET over IP, uet reference dissector")
local proto_roce, RN = new_proto({ GEN_NAME .. "roce", GEN_NAME .. "refroce" }, "RoCEv2 additions, uet reference dissector")
local REG_NOTE = nil
if PN ~= GEN_NAME then
  REG_NOTE = "registered as '" .. PN .. "' (fields " .. PN .. ".*): the name '" .. GEN_NAME ..
             "' is taken by another dissector"
end
"""

_RUNTIME = r"""
-- extra fields
F["uet:note"] = ProtoField.string(PN .. ".note", "note")
F["uet:payload_len"] = ProtoField.uint32(PN .. ".payload_len", "payload_len", base.DEC, nil, nil,
  "bytes after the last header, trailer excluded")
F["uet:payload"] = ProtoField.bytes(PN .. ".payload", "payload")
F["uet:crc.value"] = ProtoField.uint32(PN .. ".crc.value", "crc.value", base.HEX, nil, nil,
  "CRC-32C trailer [uet-facts A.3]")
F["uet:crc.ok"] = ProtoField.bool(PN .. ".crc.ok", "crc.ok", base.NONE, nil, nil, "CRC-32C trailer verifies")
F["uet:encrypted"] = ProtoField.bytes(PN .. ".encrypted", "encrypted", base.NONE,
  "PDS, SES and payload encrypted by TSS [uet-facts F]")
F["uet:icv"] = ProtoField.bytes(PN .. ".icv", "icv", base.NONE, "TSS integrity check value (GCM tag) [uet-facts F]")
F["uet:pds.sack_bitmap.psn"] = ProtoField.uint32(PN .. ".pds.sack_bitmap.psn", "received PSN", base.DEC, nil, nil,
  "PSN sack_base_psn + i for every set bit i of the SACK bitmap [uet-facts B.8]")
F["roce:payload_len"] = ProtoField.uint32(RN .. ".payload_len", "payload_len", base.DEC, nil, nil,
  "bytes after the last header (pad included, ICRC excluded)")
F["roce:icrc.value"] = ProtoField.uint32(RN .. ".icrc.value", "icrc.value", base.HEX, nil, nil,
  "invariant CRC, least-significant byte first [uet-facts G.6]")
F["roce:icrc.ok"] = ProtoField.bool(RN .. ".icrc.ok", "icrc.ok", base.NONE, nil, nil, "ICRC verifies")
F["roce:aeth.syndrome_name"] = ProtoField.string(RN .. ".aeth.syndrome_name", "syndrome_name")

local uet_fields, roce_fields = {}, {}
local fkeys = {}
for k in pairs(F) do fkeys[#fkeys + 1] = k end
table.sort(fkeys)
for _, k in ipairs(fkeys) do
  if k:sub(1, 4) == "uet:" then uet_fields[#uet_fields + 1] = F[k] else roce_fields[#roce_fields + 1] = F[k] end
end
proto.fields = uet_fields
proto_roce.fields = roce_fields

local EF = {
  bad_crc = ProtoExpert.new(PN .. ".expert.bad_crc", "bad CRC", expert.group.CHECKSUM, expert.severity.ERROR),
  crc = ProtoExpert.new(PN .. ".expert.crc", "CRC-32C trailer", expert.group.CHECKSUM, expert.severity.WARN),
  truncated = ProtoExpert.new(PN .. ".expert.truncated", "truncated header", expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new(PN .. ".expert.reserved", "reserved bits set", expert.group.PROTOCOL, expert.severity.WARN),
  unknown = ProtoExpert.new(PN .. ".expert.unknown_value", "unknown value", expert.group.PROTOCOL, expert.severity.WARN),
  protocol = ProtoExpert.new(PN .. ".expert.protocol", "protocol violation", expert.group.PROTOCOL, expert.severity.WARN),
  malformed = ProtoExpert.new(PN .. ".expert.malformed", "not decodable", expert.group.MALFORMED, expert.severity.ERROR),
  trimmed = ProtoExpert.new(PN .. ".expert.trimmed", "trimmed packet (DSCP 11)", expert.group.SEQUENCE, expert.severity.NOTE),
}
proto.experts = { EF.bad_crc, EF.crc, EF.truncated, EF.reserved, EF.unknown, EF.protocol, EF.malformed, EF.trimmed }
local REF = {
  bad_icrc = ProtoExpert.new(RN .. ".expert.bad_icrc", "bad ICRC", expert.group.CHECKSUM, expert.severity.ERROR),
  icrc = ProtoExpert.new(RN .. ".expert.icrc", "ICRC not computed", expert.group.CHECKSUM, expert.severity.WARN),
  truncated = ProtoExpert.new(RN .. ".expert.truncated", "truncated header", expert.group.MALFORMED, expert.severity.ERROR),
  reserved = ProtoExpert.new(RN .. ".expert.reserved", "reserved bits set", expert.group.PROTOCOL, expert.severity.WARN),
  unknown = ProtoExpert.new(RN .. ".expert.unknown_value", "unknown value", expert.group.PROTOCOL, expert.severity.WARN),
  protocol = ProtoExpert.new(RN .. ".expert.protocol", "protocol note", expert.group.PROTOCOL, expert.severity.WARN),
  builtin = ProtoExpert.new(RN .. ".expert.builtin", "built-in RoCEv2 dissector failed", expert.group.MALFORMED, expert.severity.WARN),
}
proto_roce.experts = { REF.bad_icrc, REF.icrc, REF.truncated, REF.reserved, REF.unknown, REF.protocol, REF.builtin }

-- preferences
proto.prefs.udp_port = Pref.uint("UDP port", GEN_PORT, "UDP destination (or source) port that carries UET")
proto.prefs.trailer = Pref.enum("CRC-32C trailer", 1,
  "auto: present exactly when the last 4 bytes verify (as uet decode); crc: always present; none",
  { { 1, "auto", 1 }, { 2, "crc", 2 }, { 3, "none", 3 } }, true)
local TRAILER_MODES = { "auto", "crc", "none" }
proto.prefs.ccx_layout = Pref.enum("ACK_CCX/NACK_CCX layout", 1,
  "1.0: 40/32 bytes (uet-facts H.1 #2-3); xdp2: 32/24 bytes as XDP2 writes them", OPTIONS.ccx_layout.enum, true)
proto.prefs.rsv_pdc_bit = Pref.enum("use_rsv_pdc bit", 1,
  "bit of use_rsv_pdc in the SYN form: 80 (Wireshark/XDP2) or 83 (reference provider), uet-facts H.1 #4",
  OPTIONS.rsv_pdc_bit.enum, true)
proto.prefs.mswap_cswap_ext = Pref.bool("MSWAP carries the compare-swap extension", false,
  "decode AMO MSWAP (0x13) with the 36-byte compare-swap extension (uet-facts H.2)")

local function read_prefs()
  OPT.trailer = TRAILER_MODES[proto.prefs.trailer] or "auto"
  OPT.ccx_layout = OPTIONS.ccx_layout.values[proto.prefs.ccx_layout] or OPTIONS.ccx_layout.values[1]
  OPT.rsv_pdc_bit = OPTIONS.rsv_pdc_bit.values[proto.prefs.rsv_pdc_bit] or OPTIONS.rsv_pdc_bit.values[1]
  OPT.mswap_cswap_ext = proto.prefs.mswap_cswap_ext and true or false
end
read_prefs()

local function report(item, ef, range, msg, probs)
  if range then item:add_tvb_expert_info(ef, range, msg) else item:add_proto_expert_info(ef, msg) end
  if probs then probs[#probs + 1] = msg end
end

-- Add one header at off, reading no further than limit. Returns values (nil when truncated),
-- the header's size, its tree item, the values read, the field items by name.
local function add_header(h, tvb, off, limit, parent, E, probs)
  local have = max(limit - off, 0)
  local raw = have > 0 and tvb:raw(off, min(have, h.max)) or ""
  local var = h.choose(raw, have)
  local size = var.size
  local ilen = min(size, have)
  local sub = parent:add(h.hf, tvb(off, ilen))
  sub:set_text(h.title .. " [uet-facts " .. h.ref .. "]")
  local v, items, pos = {}, {}, {}
  for _, d in ipairs(var.fields) do
    if d.b + d.l > have then break end
    local k = d.k
    if k ~= K_RSVD then
      local r = tvb(off + d.b, d.l)
      pos[d.n] = r
      if k == K_UINT or k == K_FLAG then
        v[d.n] = getv(raw, d.b, d.l, d.p, d.w)
        items[d.n] = sub:add(d.f, r)
      elseif k == K_INT or k == K_NUMX then
        local x = getv(raw, d.b, d.l, d.p, d.w)
        if d.s and x >= POW2[d.w - 1] then x = x - POW2[d.w] end
        v[d.n] = x
        if k == K_INT then items[d.n] = sub:add(d.f, r) else items[d.n] = sub:add(d.f, r, x) end
      elseif k == K_U64 or k == K_BYTES then
        items[d.n] = sub:add(d.f, r)
      elseif k == K_U64X then
        local x = r:uint64():band(UInt64.new(d.mlo, d.mhi)):rshift(d.p)
        items[d.n] = sub:add(d.f, r, x)
      elseif k == K_BYTESX then
        items[d.n] = sub:add(d.f, r, masked_bytes(raw, d.b, d.l, d.p, d.w))
      end
    end
  end
  local function derive()
    for _, dv in ipairs(h.derived) do
      local a, b = v[dv.a], v[dv.b]
      if a ~= nil and b ~= nil then
        local x
        if dv.neg then x = (a - b) % dv.m else x = (a + b) % dv.m end
        v[dv.n] = x
        local it = sub:add(dv.f, pos[dv.b], x)
        it:set_generated()
        items[dv.n] = it
      end
    end
  end
  if have < size then
    derive()
    report(sub, E.truncated, tvb(off, ilen), fmt("%s: truncated: needs %d bytes, %d left", h.key, size, have), probs)
    return nil, size, sub, v, items
  end
  for _, d in ipairs(var.fields) do
    if d.k == K_RSVD then
      local hx = bits_hex(raw, d.b, d.l, d.p, d.w)
      if hx then
        report(sub, E.reserved, tvb(off + d.b, d.l),
               fmt("%s: reserved bits %d-%d are set (0x%s)", h.key, d.o, d.o + d.w - 1, hx), probs)
      end
    end
  end
  for _, d in ipairs(var.fields) do
    if d.e then
      local x = v[d.n]
      if x ~= nil and d.e[x] == nil then
        report(sub, E.unknown, pos[d.n], fmt("%s: %s = %d (0x%X) is not a known %s value", h.key, d.n, x, x, d.en), probs)
      end
    end
  end
  derive()
  return v, size, sub, v, items
end

-- the innermost instance of a field that lies before the given data-source offset
local fx = {
  ip = Field.new("ip"), ipv6 = Field.new("ipv6"), udp = Field.new("udp"), frame = Field.new("frame"),
  ip_src = Field.new("ip.src"), ip_dst = Field.new("ip.dst"),
  ip6_src = Field.new("ipv6.src"), ip6_dst = Field.new("ipv6.dst"),
  dscp4 = Field.new("ip.dsfield.dscp"), dscp6 = Field.new("ipv6.tclass.dscp"),
}
local function last_before(f, limit)
  local best
  for _, fi in ipairs({ f() }) do
    if fi.offset < limit and (best == nil or fi.offset > best.offset) then best = fi end
  end
  return best
end

-- CRC-32C seed of the trailer context (design.md "Defaults", uet/wire/trailer.py), nil if unknown
local function crc_seed(tvb, ip_mode)
  local lim = tvb:offset()
  local s4, s6 = last_before(fx.ip_src, lim), last_before(fx.ip6_src, lim)
  local src, dst
  if s4 and (s6 == nil or s4.offset > s6.offset) then
    src, dst = s4, last_before(fx.ip_dst, lim)
  elseif s6 then
    src, dst = s6, last_before(fx.ip6_dst, lim)
  end
  if src == nil or dst == nil then return nil end
  local crc = crc_update(T32C, 0, src.range:raw() .. dst.range:raw())
  if not ip_mode then
    local u = last_before(fx.udp, lim)
    if u == nil or u.len < 8 then return nil end
    crc = crc_update(T32C, crc, u.range:raw(0, 6) .. "\0\0")
  end
  return crc
end

local function dscp_of(tvb)
  local lim = tvb:offset()
  local d4, d6 = last_before(fx.dscp4, lim), last_before(fx.dscp6, lim)
  if d4 and (d6 == nil or d4.offset > d6.offset) then return d4.value end
  if d6 then return d6.value end
  return nil
end

local function sym(h, field, x)
  for _, var in ipairs(h.vars) do
    for _, d in ipairs(var.fields) do
      if d.n == field and d.e then return d.e[x] end
    end
  end
  return nil
end

local function name_or_num(tbl, x)
  if x == nil then return "?" end
  return (tbl and tbl[x]) or fmt("0x%02X", x)
end

-- Info column summary of a UET packet
local function uet_summary(ptype, pds, ses, sesh, ext, exth)
  local t = {}
  t[#t + 1] = VS.pds_type[ptype] or fmt("TYPE_%d", ptype)
  if pds then
    if ptype == 2 or ptype == 3 or ptype == 13 or ptype == 14 then
      if pds.psn then t[#t + 1] = fmt("PSN=%d", pds.psn) end
      if pds.syn == 1 then t[#t + 1] = "SYN" end
    elseif ptype == 4 or ptype == 5 then
      if pds.pkt_id then t[#t + 1] = fmt("PKT_ID=0x%08X", pds.pkt_id) end
    elseif ptype == 7 or ptype == 8 or ptype == 9 then
      if pds.cack_psn then t[#t + 1] = fmt("CACK=%d", pds.cack_psn) end
      if pds.p == 1 then t[#t + 1] = "PROBE" elseif pds.ack_psn then t[#t + 1] = fmt("ACK=%d", pds.ack_psn) end
      if pds.sack_base_psn then t[#t + 1] = fmt("SACK base=%d", pds.sack_base_psn) end
      if pds.req and pds.req ~= 0 then t[#t + 1] = "REQ=" .. name_or_num(VS.ack_req, pds.req) end
    elseif ptype == 10 or ptype == 12 then
      if pds.nack_code then t[#t + 1] = name_or_num(VS.nack_code, pds.nack_code) end
      if pds.nt == 1 and pds.pkt_id then t[#t + 1] = fmt("PKT_ID=0x%08X", pds.pkt_id)
      elseif pds.nack_psn then t[#t + 1] = fmt("PSN=%d", pds.nack_psn) end
    elseif ptype == 11 then
      if pds.ctl_type then t[#t + 1] = name_or_num(VS.ctl_type, pds.ctl_type) end
      if pds.psn then t[#t + 1] = fmt("PSN=%d", pds.psn) end
      if pds.syn == 1 then t[#t + 1] = "SYN" end
    end
    if pds.retx == 1 then t[#t + 1] = "RETX" end
  end
  if ses and ses.opcode then
    t[#t + 1] = sym(sesh, "opcode", ses.opcode) or fmt("OP_0x%02X", ses.opcode)
    if ses.return_code then t[#t + 1] = name_or_num(VS.return_code, ses.return_code) end
    if ses.som == 1 then t[#t + 1] = "SOM" end
    if ses.eom == 1 then t[#t + 1] = "EOM" end
  end
  if ext and ext.atomic_opcode then t[#t + 1] = "AMO=" .. name_or_num(VS.amo_opcode, ext.atomic_opcode) end
  return table.concat(t, " ")
end

-- The UET packet chain: [entropy] -> TSS | PDS -> SES (by next_hdr) -> SES extension (by opcode)
-- -> payload -> CRC-32C trailer; mirrors uet/wire/packet.py decode_uet().
local function dissect_uet(tvb, pinfo, root, ip_mode)
  read_prefs()
  local n = tvb:len()
  pinfo.cols.protocol = PN:upper()
  local top = root:add(proto, tvb())
  if REG_NOTE then top:add(F["uet:note"], tvb(0, 0), REG_NOTE):set_generated() end
  local probs = {}
  local info = {}
  local off = 0
  if ip_mode then
    local ent, sz = add_header(H["entropy"], tvb, 0, n, top, EF, probs)
    if ent == nil then
      pinfo.cols.info = "UET entropy header [truncated]"
      return n
    end
    off = sz
  end
  local endp = n
  local crc_value, crc_ok, crc_have, crc_msg = nil, nil, false, nil
  local crc_computed = nil
  local is_tss = off < n and floor(tvb(off, 1):uint() / 8) == 1
  local mode = OPT.trailer
  if is_tss then
    -- F: the 16-byte GCM tag replaces the CRC trailer; cut after the TSS header is read
  elseif mode ~= "none" and endp - off >= CRC_TRAILER_LEN then
    local carried = tvb(n - CRC_TRAILER_LEN, CRC_TRAILER_LEN):uint()
    local seed = crc_seed(tvb, ip_mode)
    if seed ~= nil then crc_computed = crc_update(T32C, seed, tvb:raw(0, n - CRC_TRAILER_LEN)) end
    if mode == "crc" then
      crc_have, crc_value = true, carried
      endp = endp - CRC_TRAILER_LEN
      if crc_computed == nil then
        crc_msg = "crc: no IP context, trailer not verified"
      else
        crc_ok = (crc_computed == carried)
        if not crc_ok then
          crc_msg = fmt("crc: CRC-32C trailer mismatch: carries 0x%08x, computed 0x%08x", carried, crc_computed)
        end
      end
    elseif crc_computed == carried then
      crc_have, crc_value, crc_ok = true, carried, true
      endp = endp - CRC_TRAILER_LEN
    end
  elseif mode == "crc" then
    crc_msg = "crc: packet too short to carry a CRC-32C trailer"
  end
  if crc_msg and not crc_have then report(top, EF.crc, nil, crc_msg, probs) end

  local payload_len = 0
  local ptype, pds, ses, sesh, ext, exth = nil, nil, nil, nil, nil, nil
  local tss = nil
  local pds_off, pds_items, pds_vals, ses_vals = 0, nil, nil, nil
  local truncated, malformed = false, false
  repeat
    if off >= endp then
      report(top, EF.malformed, nil, "pds: empty UET packet", probs)
      malformed = true
      payload_len = 0
      break
    end
    ptype = floor(tvb(off, 1):uint() / 8)
    if ptype == 1 then
      local v, sz, _, tv = add_header(H["tss"], tvb, off, endp, top, EF, probs)
      tss = tv
      truncated = (v == nil)
      if v then
        local after = endp - off - sz
        payload_len = max(after - TSS_ICV_LEN, 0)
        endp = n - min(after, TSS_ICV_LEN)
        if after < TSS_ICV_LEN then
          report(top, EF.malformed, nil,
                 fmt("tss: %d bytes after the header, fewer than the %d-byte ICV (F)", after, TSS_ICV_LEN), probs)
        end
        if payload_len > 0 then top:add(F["uet:encrypted"], tvb(off + sz, payload_len)) end
      else
        payload_len = 0
      end
      break
    end
    local h = PDS_BY_TYPE[ptype]
    if h == nil then
      top:add(F["uet:pds.type"], tvb(off, 1))
      local what = (ptype == 0) and "reserved" or "not assigned"
      report(top, EF.malformed, tvb(off, 1), fmt("pds: type %d is %s (B.1)", ptype, what), probs)
      malformed = true
      payload_len = endp - off
      break
    end
    local sz
    pds_off = off
    pds, sz, _, pds_vals, pds_items = add_header(h, tvb, off, endp, top, EF, probs)
    if pds == nil then
      payload_len = 0
      truncated = true
      break
    end
    off = off + sz
    if ptype == 4 and pds.m == 1 then
      report(top, EF.protocol, nil, "pds: M flag set on a RUDI request (defined for responses only, B.13)", probs)
    end
    local nh = 0
    if ptype ~= 11 then nh = pds.next_hdr or 0 end
    if nh ~= 0 then
      sesh = SES_BY_NEXT_HDR[nh]
      if sesh == nil then
        report(top, EF.malformed, nil, fmt("pds: next_hdr %d is reserved (B.2); the rest is not decoded", nh), probs)
        malformed = true
      else
        local ssz, ssub
        ses, ssz, ssub, ses_vals = add_header(sesh, tvb, off, endp, top, EF, probs)
        if ses == nil then
          off = endp
          truncated = true
        else
          off = off + ssz
          if nh == 1 or nh == 2 or nh == 3 then
            local op = ses.opcode
            if (nh == 1 or nh == 2) and not (ses.som == 1 and ses.eom == 1) then
              report(ssub, EF.protocol, nil, sesh.key .. ": single-packet header without both SOM and EOM (D.4)", probs)
            end
            if op == 7 and ptype ~= 6 then
              report(ssub, EF.protocol, nil, "ses: DATAGRAM_SEND is only legal with UUD (C.8)", probs)
            end
            if ATOMIC_OPCODES[op] then
              local amo = nil
              if off < endp then amo = tvb(off, 1):uint() end
              local cswap = amo ~= nil and (CSWAP_AMO_OPCODES[amo] or (OPT.mswap_cswap_ext and amo == MSWAP_AMO_OPCODE))
              exth = cswap and H["ses.cswap"] or H["ses.atomic"]
            elseif RENDEZVOUS_OPCODES[op] and nh == 3 then
              exth = H["ses.rendezvous"]
            end
            if exth then
              local esz
              ext, esz = add_header(exth, tvb, off, endp, ssub, EF, probs)
              if ext == nil then off = endp; truncated = true else off = off + esz end
            end
          end
        end
      end
    end
    payload_len = max(endp - off, 0)
  until true

  -- SACK bitmap as PSNs (bit i = PSN sack_base_psn + i, bit 0 = LSB of the 64-bit field)
  if pds and pds.sack_base_psn ~= nil then
    local it = nil
    for _, d in ipairs(PDS_BY_TYPE[ptype].vars[1].fields) do
      if d.n == "sack_bitmap" then it = d end
    end
    if it then
      local r = tvb(pds_off + it.b, 8)
      local hi, lo = r:range(0, 4):uint(), r:range(4, 4):uint()
      local psns = {}
      for i = 0, 63 do
        local word, bit = lo, i
        if i >= 32 then word, bit = hi, i - 32 end
        if floor(word / POW2[bit]) % 2 == 1 then psns[#psns + 1] = (pds.sack_base_psn + i) % 4294967296 end
      end
      local parent = (pds_items and pds_items.sack_bitmap) or top
      local st = parent:add(F["uet:pds.sack_bitmap.psn"], r, #psns)
      st:set_text(fmt("SACK bitmap: %d PSNs received", #psns))
      st:set_generated()
      for _, psn in ipairs(psns) do st:add(F["uet:pds.sack_bitmap.psn"], r, psn):set_generated() end
    end
  end

  top:add(F["uet:payload_len"], tvb(off < n and off or n, 0), payload_len):set_generated()
  if payload_len > 0 and off < endp and not tss then top:add(F["uet:payload"], tvb(off, payload_len)) end
  if is_tss and n - endp > 0 then top:add(F["uet:icv"], tvb(endp, n - endp)) end
  if crc_have then
    local ci = top:add(F["uet:crc.value"], tvb(n - CRC_TRAILER_LEN, CRC_TRAILER_LEN))
    if crc_ok ~= nil then
      top:add(F["uet:crc.ok"], tvb(n - CRC_TRAILER_LEN, CRC_TRAILER_LEN), crc_ok):set_generated()
    end
    if crc_ok == false then
      report(ci, EF.bad_crc, nil, crc_msg, probs)
      info[#info + 1] = "[bad CRC]"
    elseif crc_msg then
      report(ci, EF.crc, nil, crc_msg, probs)
    end
  end
  local dscp = dscp_of(tvb)
  if dscp == 11 then
    report(top, EF.trimmed, nil, "DSCP 11: packet trimmed by the fabric (C.6)", nil)
    info[#info + 1] = "[trimmed]"
  end

  local text
  if tss then
    text = fmt("TSS SDI=0x%06X AN=%d [encrypted]", tss.sdi or 0, tss.an or 0)
  elseif ptype ~= nil then
    text = uet_summary(ptype, pds_vals, ses_vals, sesh, ext, exth)
  else
    text = "UET (empty)"
  end
  if truncated then
    text = text .. " [truncated]"
  elseif malformed then
    text = text .. " [malformed]"
  end
  if #info > 0 then text = text .. " " .. table.concat(info, " ") end
  pinfo.cols.info = text
  top:append_text(", " .. text)
  return n
end

function proto.dissector(tvb, pinfo, tree)
  return dissect_uet(tvb, pinfo, tree, false)
end

function proto_ip.dissector(tvb, pinfo, tree)
  return dissect_uet(tvb, pinfo, tree, true)
end

local udp_table = DissectorTable.get("udp.port")
local current_port = 0
local function register_port()
  local p = proto.prefs.udp_port
  if p == current_port then return end
  if current_port ~= 0 then udp_table:remove(current_port, proto) end
  current_port = p
  if p ~= 0 then udp_table:add(p, proto) end
end
function proto.prefs_changed()
  read_prefs()
  register_port()
end
register_port()
pcall(function() udp_table:add_for_decode_as(proto) end)
-- UDP gives a frame to the lower port's dissector first, and the UET entropy (the source port) can
-- be any port: a heuristic that claims frames to or from the UET port lets the preference
-- udp.try_heuristic_first:TRUE win those back.
proto:register_heuristic("udp", function(tvb, pinfo, tree)
  if current_port ~= 0 and (pinfo.dst_port == current_port or pinfo.src_port == current_port) then
    dissect_uet(tvb, pinfo, tree, false)
    return true
  end
  return false
end)
DissectorTable.get("ip.proto"):add(UET_IP_PROTO, proto_ip)

-- RoCEv2 additions ----------------------------------------------------------------------------

local function aeth_syndrome_name(s)
  local kind, low = floor(s / 32), s % 32
  if kind == 0 then
    if low == 0x1F then return "ACK(credits=unlimited)" end
    return fmt("ACK(credits=%d)", low)
  elseif kind == 1 then
    return fmt("RNR_NAK(timer=%d)", low)
  elseif kind == 3 then
    local c = VS.aeth_nak[low]
    if c then return "NAK(" .. c .. ")" end
    return fmt("NAK(0x%02X)", low)
  end
  return fmt("RESERVED(0x%02X)", s)
end

-- ICRC over the IP packet (IP header to the end of the pad), uet-facts G.6 / uet.native.roce_icrc
local function roce_icrc(s)
  if #s == 0 then return nil, "ICRC: empty packet" end
  local b0 = sbyte(s, 1)
  local version = floor(b0 / 16)
  local head
  local udp
  if version == 4 then
    local ihl = (b0 % 16) * 4
    if ihl < 20 then return nil, fmt("ICRC: IPv4 IHL %d is below 5", floor(ihl / 4)) end
    if #s < ihl + 8 + 12 then return nil, "ICRC: packet too short for IPv4+UDP+BTH" end
    udp = ihl
    head = { sbyte(s, 1, udp + 20) }
    head[2] = 0xFF; head[9] = 0xFF; head[11] = 0xFF; head[12] = 0xFF
  elseif version == 6 then
    if #s < 40 + 8 + 12 then return nil, "ICRC: packet too short for IPv6+UDP+BTH" end
    udp = 40
    head = { sbyte(s, 1, udp + 20) }
    head[1] = head[1] - head[1] % 16 + 15
    head[2] = 0xFF; head[3] = 0xFF; head[4] = 0xFF; head[8] = 0xFF
  else
    return nil, fmt("ICRC: unknown IP version %d", version)
  end
  head[udp + 7] = 0xFF; head[udp + 8] = 0xFF
  head[udp + 13] = 0xFF
  local hs = {}
  for i = 1, #head do hs[i] = schar(head[i]) end
  local crc = crc_update(T32, 0, "\255\255\255\255\255\255\255\255" .. table.concat(hs))
  return crc_update(T32, crc, s:sub(udp + 21)), nil
end

local builtin_roce = udp_table:get_dissector(ROCE_UDP_PORT)

local function dissect_roce_additions(tvb, pinfo, root)
  local n = tvb:len()
  local top = root:add(proto_roce, tvb())
  top:set_text("RoCEv2 (uet schema): headers, CNP, ICRC")
  local probs = {}
  local endp = n - 4
  local icrc_value, icrc_ok, icrc_computed = nil, nil, nil
  if endp >= 0 then
    icrc_value = tvb(endp, 4):le_uint()
    local lim = tvb:offset()
    local i4, i6 = last_before(fx.ip, lim), last_before(fx.ipv6, lim)
    local ipfi = i4
    if i6 and (i4 == nil or i6.offset > i4.offset) then ipfi = i6 end
    local fr = fx.frame()
    -- the IP packet from the frame's bytes (not for reassembled data, whose offsets differ)
    if ipfi and fr and lim + endp <= fr.len and ipfi.offset < lim then
      local s = fr.range:raw(ipfi.offset, lim + endp - ipfi.offset)
      local c, err = roce_icrc(s)
      if c then
        icrc_computed = c
        icrc_ok = (c == icrc_value)
      else
        report(top, REF.icrc, nil, "icrc: not computed: " .. err, probs)
      end
    end
  end
  local body = max(endp, 0)
  local off = 0
  local bth, sz = add_header(H["roce.bth"], tvb, 0, body, top, REF, probs)
  local text = nil
  if bth then
    off = sz
    local exts = ROCE_EXT[bth.opcode]
    if exts == nil then
      report(top, REF.protocol, nil, fmt("roce.bth: opcode 0x%02x: extension headers not decoded", bth.opcode), probs)
      exts = {}
    end
    local ok = true
    for _, eh in ipairs(exts) do
      local v, esz, esub = add_header(eh, tvb, off, body, top, REF, probs)
      if v == nil then ok = false break end
      if eh.key == "roce.aeth" then
        esub:add(F["roce:aeth.syndrome_name"], tvb(off, 1), aeth_syndrome_name(v.syndrome)):set_generated()
      end
      off = off + esz
    end
    if ok then
      local payload_len = body - off
      top:add(F["roce:payload_len"], tvb(off, 0), payload_len):set_generated()
      if bth.pad_cnt > payload_len then
        report(top, REF.protocol, nil, fmt("roce.bth: pad_cnt %d exceeds the %d bytes left", bth.pad_cnt, payload_len), probs)
      end
    end
    if bth.opcode == CNP_OPCODE then
      text = fmt("RoCEv2 CNP QP=0x%06X%s", bth.dest_qp or 0, bth.becn == 1 and " BECN" or "")
    end
  end
  if icrc_value ~= nil then
    local ii = top:add_le(F["roce:icrc.value"], tvb(endp, 4))
    if icrc_ok ~= nil then
      top:add(F["roce:icrc.ok"], tvb(endp, 4), icrc_ok):set_generated()
      if not icrc_ok then
        report(ii, REF.bad_icrc, nil, fmt("icrc: mismatch: carries 0x%08x, computed 0x%08x", icrc_value, icrc_computed), probs)
      end
    end
  end
  if text then pinfo.cols.info = text end
  if icrc_ok == false then pinfo.cols.info:append(" [bad ICRC]") end
end

function proto_roce.dissector(tvb, pinfo, tree)
  local ok, err = true, nil
  local dport = pinfo.dst_port  -- read first: the InfiniBand dissector sets the ports to QPs
  if builtin_roce then
    ok, err = pcall(function() builtin_roce:call(tvb, pinfo, tree) end)
  end
  if dport == ROCE_UDP_PORT then
    dissect_roce_additions(tvb, pinfo, tree)
  end
  if not ok then
    tree:add_proto_expert_info(REF.builtin, "built-in RoCEv2 dissector: " .. tostring(err))
  end
  return tvb:len()
end
udp_table:add(ROCE_UDP_PORT, proto_roce)
"""
