"""The frames a capture is mostly made of, decoded for ``uet decode --json`` in one straight pass.

:func:`uet.capture.frame.decode_frame` (with :mod:`uet.wire.packet`) is the reference: it walks any
frame, keeps what decodes and words every problem. Most frames of a capture give it nothing to say:
Ethernet without tags or raw IP, an unfragmented IPv4 or IPv6 packet (no IPv6 extension header)
captured whole, UDP, then UET (a PDS header and at most one SES header without an extension, a
trailer that verifies or none) or RoCEv2 (a BTH and its extension headers, an ICRC that verifies).
:class:`QuickDecoder` builds the same object for those with fewer steps and returns None for every
other frame (an IP fragment among them), which the reference then decodes. It words no problem
itself: a frame with one, however small, is the reference's.

Where the time goes in the reference, and what is done here instead: a header's variant is found
by walking its switch tree (here: cached by the bits of its selector fields); a header is decoded as
one big int shifted once per field into a dict of fields, then rendered into a second dict (here:
one ``struct.unpack_from`` of the words that hold the fields, for a PDS header and its SES header
together, and the JSON objects built from those small ints in one generated function); problems
are collected as text (here: only whether there is any). Field positions, names, enum symbols and
derived values all come from the schema, through :mod:`uet.wire.fast` and the variants of
:mod:`uet.wire.codec`; the fields that choose a variant (and a PDS header's type and next_hdr, a
BTH's opcode) are constants of the function compiled for it. A kind of header is compiled when it
is seen the third time, and at most :data:`_COMPILE_BUDGET` kinds are: the frames before, and the
kinds after, are the reference's (a capture of random bytes is no slower than before).
Differential tests (tests/capture/test_fast_reader.py) hold the two paths to the same JSON on every
header variant, on random frames and on the golden captures.
"""

from __future__ import annotations

import struct
from functools import partial
from socket import AF_INET6, inet_ntoa, inet_ntop
from typing import Any, Callable, Sequence

from .. import ROCE_UDP_PORT, native
from ..wire import codec
from ..wire import uet_headers as U
from ..wire.codec import Variant, display_value
from ..wire.enums import aeth_syndrome_name
from ..wire.fast import Layout, reader_source
from ..wire.roce_headers import BTH, extension_headers
from ..wire.schema import Header, Switch
from .frame import (ETHERTYPE_IPV4, ETHERTYPE_IPV6, LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6,
                    DecodeConfig, _RAW_ALIASES)

_LINK = {LINKTYPE_IPV4: 4, LINKTYPE_IPV6: 6, **{lt: 0 for lt in _RAW_ALIASES}}
_ETH_IPV4, _ETH_IPV6 = ETHERTYPE_IPV4.to_bytes(2, "big"), ETHERTYPE_IPV6.to_bytes(2, "big")
_ETH_IPV4_NO_OPTIONS = _ETH_IPV4 + b"\x45"
_crc32c = native.crc32c
_roce_icrc = native.roce_icrc
_ZERO_CHECKSUM = b"\x00\x00"
_CACHE_LIMIT = 1 << 16
_COMPILE_BUDGET = 256
_IPV6_CHAIN = frozenset({0, 43, 44, 60})  # extension headers the reference walks (and fragments)

Compiled = Callable[[bytes, int], Any]


def _only(key: str) -> Variant:
    (var,) = codec(key).variants.values()
    return var


def compile_headers(variants: Sequence[Variant], *, modes: Sequence[str] | None = None,
                    fields: dict[str, Sequence[str]] | None = None,
                    consts: Sequence[dict[str, Any]] | None = None) -> Compiled:
    """``fn(buf, off)`` for headers that follow each other from ``buf[off]`` (the caller makes sure
    the bytes are there and select these variants), one ``struct.unpack_from`` for all of them.

    Per header, by its mode: ``"json"`` (the default) gives its object as the reference renders
    it - ``var.to_json(var.decode_int(...))`` - and makes the whole result None when the reference
    has something to report on it (``Variant.problems``: reserved bits set, an enum value nobody
    named); ``"fields"`` gives its decoded fields (``var.decode_int``: every field, reserved ones
    as ``rsvd_<offset>``); ``"none"`` gives no object. ``fields`` names, by header key, fields whose
    plain values follow the objects. One value in all is returned as it is, several as a tuple.
    ``consts`` gives, per header, fields whose value the caller knows (the bits that chose the
    variant): they are not read, and their names are looked up once, here."""
    modes = ["json"] * len(variants) if modes is None else list(modes)
    fields = fields or {}
    consts = consts or [{}] * len(variants)
    fmt, lines, exprs = reader_source([(Layout(v), v.names) for v in variants])
    ns: dict[str, Any] = {"_unpack": struct.Struct(fmt).unpack_from, "_from_bytes": int.from_bytes,
                          "_display": display_value}
    body = [f"    {line}" for line in lines]
    out: list[str] = []
    extra: list[str] = []
    i = 0
    for var, mode, known in zip(variants, modes, consts):
        local = {}  # field name -> its value, as the reference's decoder gives it
        for p in var.placed:
            if p.name in known:
                local[p.name] = repr(known[p.name])
            else:
                local[p.name] = f"({exprs[i]} == 1)" if p.field.flag else exprs[i]
            i += 1
        wanted = fields.get(var.header.key, ())
        if mode == "fields":
            out.append("{" + ", ".join(f"{p.name!r}: {local[p.name]}" for p in var.placed) + "}")
        elif mode == "json":
            out.append(_json_object(var, local, known, set(wanted), body, ns))
        elif mode != "none":
            raise ValueError(f"mode {mode!r}")
        extra.extend(local[n] for n in wanted)
    out += extra
    ret = out[0] if len(out) == 1 else "(" + ", ".join(out) + ",)"
    src = "def _quick(b, o):\n" + "\n".join(body + [f"    return {ret}"]) + "\n"
    keys = "+".join(v.header.key for v in variants)
    exec(compile(src, f"<uet.capture.quick {keys}>", "exec"), ns)
    fn = ns["_quick"]
    fn.source = src  # type: ignore[attr-defined]
    return fn


def _json_object(var: Variant, local: dict[str, str], known: dict[str, Any], used: set[str],
                 body: list[str], ns: dict[str, Any]) -> str:
    """The expression of ``var``'s JSON object (codec's ``_compile_json``: every field that is not
    reserved, in wire order, ``<field>_name`` after each enumerated one, the derived values last),
    with the checks that return None added to ``body``; values used more than once become locals
    (and ``local`` names them)."""
    bad = [local[p.name] for p in var.placed if p.field.reserved]
    if bad:
        body.append(f"    if {' or '.join(bad)}:\n        return None")
    names = {p.name for p in var.placed if not p.field.reserved}
    derived = [dv for dv in var.header.derived if dv.a in names and dv.b in names]
    used = used | {n for dv in derived for n in (dv.a, dv.b)}
    parts = []
    for p in var.placed:
        f = p.field
        if f.reserved:
            continue
        v = local[p.name]
        if p.name not in known and (f.enum is not None or p.name in used):
            local[p.name] = name = f"v{len(body)}"
            body.append(f"    {name} = {v}")
            v = name
        parts.append(f"{p.name!r}: _display({f.display!r}, {v})" if f.display in ("ipv4", "ipv6")
                     else f"{p.name!r}: {v}")
        if f.enum is not None and p.name in known:
            symbol = f.enum.table.get(known[p.name]) or f.enum.symbol(known[p.name])
            if symbol is None:
                body.append("    return None")
            parts.append(f"{p.name + '_name'!r}: {symbol!r}")
        elif f.enum is not None:
            t, s = f"T{len(ns)}", f"S{len(ns)}"
            ns[t], ns[s] = dict(f.enum.table), f.enum.symbol
            body.append(f"    n{v} = {t}.get({v}) or {s}({v})")
            body.append(f"    if n{v} is None:\n        return None")
            parts.append(f"{p.name + '_name'!r}: n{v}")
    for dv in derived:
        parts.append(f"{dv.name!r}: ({local[dv.a]} {dv.op} {local[dv.b]}) & {(1 << dv.bits) - 1}")
    return "{" + ", ".join(parts) + "}"


# IPv4 without options and the UDP header after it, in one read: (udp fields, ip fields ...)
_IPV4_FIELDS = ("dscp", "ecn", "total_length", "flags", "fragment_offset", "ttl", "protocol")
_IPV4_UDP = compile_headers([_only("ipv4"), _only("udp")], modes=["none", "fields"],
                            fields={"ipv4": _IPV4_FIELDS})
_IPV4 = compile_headers([_only("ipv4")], modes=["none"], fields={"ipv4": ("ihl",) + _IPV4_FIELDS})
_IPV6 = compile_headers([_only("ipv6")], modes=["none"],
                        fields={"ipv6": ("dscp", "ecn", "payload_length", "next_header", "hop_limit")})
_UDP = compile_headers([_only("udp")], modes=["fields"])


def _selector_names(items: tuple[Any, ...], out: set[str]) -> set[str]:
    for it in items:
        if isinstance(it, Switch):
            if not it.is_option:
                out.add(it.on)
            for i in range(len(it.cases) + 1):
                _selector_names(it.arm_items(i), out)
    return out


class _Sightings(dict):  # type: ignore[type-arg]
    """How often each key was seen before it was worth compiling for."""

    def __init__(self, warmup: int):
        super().__init__()
        self.warmup = warmup

    def enough(self, key: Any) -> bool:
        n = self.get(key, 0) + 1
        if n >= self.warmup:
            self.pop(key, None)
            return True
        self[key] = n
        return False


class _Header:
    """One header's variants, found by the bits of its selector fields (the decoder options are
    fixed per instance), and of the fields named ``also``: ``cache`` maps those bits to an entry,
    made by ``entry(this, variant, buf, off)`` from the ``warmup``-th header that has them (the
    ones before are left to the reference: a key seen once or twice is not worth compiling)."""

    __slots__ = ("codec", "opts", "need", "mask", "cache", "short", "entry", "seen")

    def __init__(self, h: Header, opts: Any, entry: Callable[..., tuple[Any, ...]],
                 also: tuple[str, ...] = (), warmup: int = 1):
        self.codec = c = codec(h)
        self.opts = opts
        self.short = h.short
        self.entry = entry
        self.seen = _Sightings(warmup)
        names = _selector_names(h.items, set(also))
        spans = {(p.offset, p.end) for v in c.variants.values() for p in v.placed if p.name in names}
        self.need = max((end + 7) // 8 for _, end in spans) if spans else 0
        self.mask = 0
        for start, end in spans:
            self.mask |= ((1 << (end - start)) - 1) << (self.need * 8 - end)
        self.cache: dict[int, tuple[Any, ...]] = {}

    def find(self, buf: bytes, off: int, end: int) -> tuple[Any, ...] | None:
        """The entry of the header at ``off``; None when its selectors lie past ``end``."""
        need = self.need
        if off + need > end:
            return None
        k = int.from_bytes(buf[off:off + need], "big") & self.mask
        e = self.cache.get(k)
        if e is None:
            if not self.seen.enough(k):
                return None
            var = self.codec.variant_for_bytes(buf[off:end], 0, self.opts)
            e = self.cache[k] = self.entry(self, var, buf, off) or ()  # (): left to the reference
        return e or None

    def known(self, var: Variant, buf: bytes, off: int) -> dict[str, Any]:
        """The fields of ``var`` that lie wholly in the key's bits, with their values at ``off``
        (the same for every header this entry is found for), as the reference decodes them."""
        bits = self.need * 8
        v = int.from_bytes(buf[off:off + self.need], "big")
        out: dict[str, Any] = {}
        for p in var.placed:
            f = p.field
            span = f.mask << (bits - p.end) if p.end <= bits else -1
            if f.reserved or span < 0 or self.mask & span != span:
                continue
            x = (v >> (bits - p.end)) & f.mask
            if f.signed and x >> (f.width - 1):
                x -= 1 << f.width
            out[p.name] = x == 1 if f.flag else x
        return out


class _Compiler:
    """:func:`compile_headers` with the fields the key fixes as constants, one function per kind
    of header, for the first :data:`_COMPILE_BUDGET` kinds (a capture has a few dozen); the kinds
    after those are left to the reference (a capture of random bytes finds a new kind in every
    other frame, and a compilation costs as much as decoding a hundred frames)."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, variants: list[Variant], known: list[dict[str, Any]]) -> Compiled | None:
        if self.made >= _COMPILE_BUDGET:
            return None
        self.made += 1
        return compile_headers(variants, consts=known)

    def alone(self, h: _Header, var: Variant, buf: bytes, off: int) -> tuple[int, Compiled] | None:
        """The entry of a header decoded on its own: (size, compiled object)."""
        fn = self([var], [h.known(var, buf, off)])
        return None if fn is None else (var.size, fn)


def _ip_head(linktype: int, raw: bytes, n: int) -> tuple[Any, ...] | None:
    """The link and IP layers of any other frame that can be plain: (offset of the IP header, IP
    version, its length, the UDP header's fields when they were read with it (else None), dscp,
    ecn, total length, flags, fragment offset, ttl, protocol, the addresses' bytes)."""
    if linktype == LINKTYPE_ETHERNET:
        etype = raw[12:14]
        if etype == _ETH_IPV4:
            off, link = 14, 4
        elif etype == _ETH_IPV6:
            off, link = 14, 6
        else:
            return None
    elif linktype in _LINK:
        off, link = 0, _LINK[linktype]
    else:
        return None
    if off >= n:
        return None
    version = raw[off] >> 4
    if link and version != link:
        return None
    if version == 4:
        if n - off < 20:
            return None
        ihl, dscp, ecn, total, flags, frag, ttl, proto = _IPV4(raw, off)
        if ihl < 5:
            return None
        return off, 4, ihl * 4, None, dscp, ecn, total, flags, frag, ttl, proto, raw[off + 12:off + 20]
    if version == 6:
        if n - off < 40:
            return None
        dscp, ecn, plen, proto, ttl = _IPV6(raw, off)
        return off, 6, 40, None, dscp, ecn, 40 + plen, 0, 0, ttl, proto, raw[off + 8:off + 40]
    return None


class _Lazy(dict):  # type: ignore[type-arg]
    """A dict that makes a missing value with ``make(key)`` (headers are compiled when a frame
    first needs them, so that startup stays short)."""

    def __init__(self, make: Callable[[int], Any]):
        super().__init__()
        self.make = make

    def __missing__(self, key: int) -> Any:
        value = self[key] = self.make(key)
        return value


class QuickDecoder:
    """``decoder(linktype, raw, number)``: the ``uet decode --json`` object of a plain frame, the
    one :func:`uet.capture.frame.decode_frame` gives, or None when the frame is not plain."""

    def __init__(self, cfg: DecodeConfig, warmup: int = 3):
        """``warmup``: the frame of one kind (the same header variants, and the same values of
        the fields that name them) at which this decoder compiles that kind; the reference decodes
        the ones before it."""
        self.opts = opts = cfg.opts
        self.warmup = warmup
        self.ports = frozenset(cfg.ports)
        self.trailer = cfg.trailer
        # a CSIG EtherType that shadows IP (a DecodeConfig built by hand) leaves all to the reference
        self.off = cfg.csig_ethertype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6) or cfg.trailer not in (
            "auto", "crc", "none")
        self.compile = _Compiler()
        # by PDS type: keyed by next_hdr too; by next_hdr: read with their PDS header (see _uet)
        self.pds = _Lazy(lambda t: _Header(U.PDS_BY_TYPE[t], opts, partial(self._pds_entry, t),
                                           also=("type", "next_hdr"), warmup=warmup)
                         if t in U.PDS_BY_TYPE else None)
        self.ses = _Lazy(lambda nh: _Header(U.SES_BY_NEXT_HDR[nh], opts, self.compile.alone)
                         if nh in U.SES_BY_NEXT_HDR else None)
        self.bth = _Header(BTH, opts, self._bth_entry, also=("opcode",), warmup=warmup)
        self._names: dict[bytes, tuple[str, str]] = {}  # address strings by the addresses' bytes
        self._seeds: dict[bytes, int] = {}  # CRC-32C seeds by addresses and UDP header

    def __call__(self, linktype: int, raw: bytes, number: int) -> dict[str, Any] | None:
        n = len(raw)
        if linktype == LINKTYPE_ETHERNET and raw[12:15] == _ETH_IPV4_NO_OPTIONS and n >= 42:
            # the usual frame: Ethernet, IPv4 without options, room for the UDP header
            off, version, hlen = 14, 4, 20
            udp, dscp, ecn, total, flags, frag, ttl, proto = _IPV4_UDP(raw, 14)
            addrs = raw[26:34]
        elif self.off:
            return None
        else:
            head = _ip_head(linktype, raw, n)
            if head is None:
                return None
            off, version, hlen, udp, dscp, ecn, total, flags, frag, ttl, proto, addrs = head
        if flags & 1 or frag or self.off:  # a fragment: the reference says so
            return None
        names = self._names.get(addrs)
        if names is None:
            names = self._name(addrs)
        ip = {"version": version, "src": names[0], "dst": names[1], "dscp": dscp, "ecn": ecn,
              "ttl": ttl}
        end = off + total
        if end > n or total < hlen:
            return None
        if proto != 17:
            if proto == 253 or (version == 6 and proto in _IPV6_CHAIN):
                return None  # UET with the entropy header, IPv6 extension headers: the reference
            return {"frame": number, "ip": ip, "problems": []}
        u = off + hlen
        if end - u < 8:
            return None
        if udp is None:
            udp = _UDP(raw, u)
        ulen = udp["length"]
        lim = u + ulen
        if ulen < 8 or lim > end:
            return None
        dport = udp["dport"]
        if dport in self.ports or udp["sport"] in self.ports:
            ctx = addrs + raw[u:u + 6]
            seed = self._seeds.get(ctx)
            if seed is None:
                seed = self._seed(ctx)
            layer = self._uet(raw, u + 8, lim, seed)
            if layer is None:
                return None
            return {"frame": number, "ip": ip, "udp": udp, "uet": layer, "problems": []}
        if dport == ROCE_UDP_PORT:
            layer = self._roce(raw, off, u + 8, lim)
            if layer is None:
                return None
            return {"frame": number, "ip": ip, "udp": udp, "roce": layer, "problems": []}
        return {"frame": number, "ip": ip, "udp": udp, "problems": []}

    def _pds_entry(self, ptype: int, h: _Header, var: Variant, buf: bytes, off: int) -> tuple[Any, ...]:
        """A PDS header (its type and next_hdr are part of the key): (size, its object alone,
        next_hdr, the SES header's variants, the compiled PDS + SES pairs by the SES selector bits,
        the variant, its known fields)."""
        known = h.known(var, buf, off)
        nh = known.get("next_hdr", 0) if ptype != 11 else 0  # CONTROL: the slot holds ctl_type (B.12)
        fn = self.compile([var], [known])
        if fn is None:
            return None
        return var.size, fn, nh, self.ses[nh] if nh else None, {}, var, known, _Sightings(self.warmup)

    def _bth_entry(self, h: _Header, var: Variant, buf: bytes, off: int) -> tuple[Any, ...]:
        """A BTH (its opcode is the key): (size, its object, the extension headers that follow,
        None when the reference does not decode them)."""
        known = h.known(var, buf, off)
        found = extension_headers(known["opcode"])
        exts = None if found is None else tuple(_Header(x, self.opts, self.compile.alone) for x in found)
        fn = self.compile([var], [known])
        return None if fn is None else (var.size, fn, exts)

    def _name(self, addrs: bytes) -> tuple[str, str]:
        if len(addrs) == 8:
            src, dst = inet_ntoa(addrs[:4]), inet_ntoa(addrs[4:])
        else:
            src, dst = inet_ntop(AF_INET6, addrs[:16]), inet_ntop(AF_INET6, addrs[16:])
        if len(self._names) >= _CACHE_LIMIT:
            self._names.clear()
        names = self._names[addrs] = (src, dst)
        return names

    def _seed(self, ctx: bytes) -> int:
        """The CRC-32C register after the trailer's context (``CrcContext.seed``): the addresses,
        then the UDP header with its checksum taken as 0."""
        if len(self._seeds) >= _CACHE_LIMIT:
            self._seeds.clear()
        seed = self._seeds[ctx] = _crc32c(ctx + _ZERO_CHECKSUM)
        return seed

    def _uet(self, raw: bytes, u: int, lim: int, seed: int) -> dict[str, Any] | None:
        """The ``uet`` layer of the UDP payload ``raw[u:lim]`` (``decode_uet`` without an entropy
        header), whose trailer's context leaves the CRC register at ``seed``."""
        if u >= lim:
            return None
        ptype = raw[u] >> 3
        if ptype == 1:  # TSS: encrypted, the reference
            return None
        end = lim
        crc: dict[str, Any]
        trailer = self.trailer
        if trailer != "none" and lim - u >= 4:
            carried = int.from_bytes(raw[lim - 4:lim], "big")
            if _crc32c(raw[u:lim - 4], seed) == carried:
                crc = {"value": carried, "ok": True}
                end = lim - 4
            elif trailer == "crc":
                return None
            else:
                crc = {"value": None, "ok": None}
        elif trailer == "crc":
            return None
        else:
            crc = {"value": None, "ok": None}
        h = self.pds[ptype]
        if h is None:
            return None
        need = h.need  # _Header.find, inline: the hot path
        if u + need > end:
            return None
        e = h.cache.get(int.from_bytes(raw[u:u + need], "big") & h.mask) or h.find(raw, u, end)
        if e is None:  # a kind of header not seen often enough yet
            return None
        size, alone, nh, sh, pairs, pds_var, known, seen = e
        off = u + size
        if off > end:
            return None
        if not nh:
            pds = alone(raw, u)
            if pds is None or ptype == 4 and pds.get("m"):
                return None
            return {"pds": pds, "payload_len": end - off, "crc": crc}
        if sh is None:  # a reserved next_hdr: the reference
            return None
        need = sh.need
        if off + need > end:
            return None
        k = int.from_bytes(raw[off:off + need], "big") & sh.mask
        pair = pairs.get(k)
        if pair is None:
            if not seen.enough(k):
                return None
            ses_var = sh.codec.variant_for_bytes(raw[off:end], 0, self.opts)
            fn = self.compile([pds_var, ses_var], [known, sh.known(ses_var, raw, off)])
            pair = pairs[k] = () if fn is None else (ses_var.size, fn)
        if not pair or off + pair[0] > end:
            return None
        got = pair[1](raw, u)
        if got is None:
            return None
        pds, ses = got
        if ptype == 4 and pds.get("m"):
            return None
        if nh < 4:  # requests (1-3): the reference's checks, and the extensions it decodes
            op = ses["opcode"]
            if nh != 3 and not (ses["som"] and ses["eom"]):
                return None
            if op == 0x07 and ptype != 6:
                return None
            if op in U.ATOMIC_OPCODES or (op in U.RENDEZVOUS_OPCODES and nh == 3):
                return None  # an extension header follows: the reference
        return {"pds": pds, "ses": ses, "payload_len": end - off - pair[0], "crc": crc}

    def _roce(self, raw: bytes, ip: int, at: int, lim: int) -> dict[str, Any] | None:
        """The ``roce`` layer (``decode_roce`` of ``raw[ip:lim]`` with the BTH at ``at``)."""
        end = lim - 4
        if end < at:
            return None
        value = int.from_bytes(raw[end:lim], "little")
        try:
            if _roce_icrc(raw[ip:end]) != value:
                return None
        except ValueError:
            return None
        e = self.bth.find(raw, at, end)
        if e is None or at + e[0] > end:
            return None
        size, fn, exts = e
        if exts is None:
            return None
        bth = fn(raw, at)
        if bth is None:
            return None
        layer = {"bth": bth}
        off = at + size
        for h in exts:
            e = h.find(raw, off, end)
            if e is None or off + e[0] > end:
                return None
            ext = e[1](raw, off)
            if ext is None:
                return None
            if h.short == "aeth":
                ext["syndrome_name"] = aeth_syndrome_name(ext["syndrome"])
            layer[h.short] = ext
            off += e[0]
        left = end - off
        if bth["pad_cnt"] > left:
            return None
        layer["payload_len"] = left
        layer["icrc"] = {"value": value, "ok": True}
        return layer
