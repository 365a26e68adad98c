"""One captured frame -> the ``uet decode --json`` object (docs/design-notes.md "Contracts").

Link layer (Ethernet with VLAN tags and the CSIG tag, raw IP, Linux cooked v1/v2, BSD loopback) ->
IPv4/IPv6 -> UDP (UET on the configured ports, RoCEv2 on 4791) or IP protocol 253 (UET with the
entropy header). Never raises on frame contents: what cannot be decoded goes into ``problems`` and
``error``.

IP fragments (IPv4 MF or an offset; an IPv6 Fragment header, after any hop-by-hop, routing or
destination options headers) go to a :class:`uet.capture.reassembly.Reassembler` when the caller
passes one: the frame that completes a datagram decodes the whole datagram (its ``ip`` is the
rebuilt datagram's header), the others only say what fragment they are.

The CSIG tag (facts E.4, layout uet.cms.csig CMS-C1) is read like an 802.1Q tag: an EtherType (the
TPID, ``DecodeConfig.csig_ethertype``), 16 bits of tag, then the inner EtherType; VLAN tags may come
before and after it. Its fields become the frame's ``"csig"`` object.

A PFC frame (IEEE 802.1Qbb, EtherType 0x8808, opcode 0x0101: what a RoCE fabric's switches send,
``uet compare --pcap`` keeps them) has no IP: it becomes the frame's ``"pfc"`` object (``opcode``,
``class_enable``, ``pause_quanta``: the eight pause times, priority 0 first) and the frame ends
there, clean. Another MAC control opcode, or a truncated frame, is a problem and an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from socket import AF_INET6, inet_ntoa, inet_ntop
from typing import Any, Callable

from .. import ROCE_UDP_PORT, UET_IP_PROTO, UET_UDP_PORT
from ..cms.csig import CSIG_ETHERTYPE
from ..wire import codec
from ..wire.packet import Decoded, decode_roce, decode_uet
from ..wire.render import header_json
from ..wire.schema import DEFAULT_OPTIONS, Options
from ..wire.build import DSCP_TRIMMED
from ..wire.trailer import CrcContext
from .reassembly import Fragment, Reassembler

LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP = 0, 1, 101, 108
LINKTYPE_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_SLL2 = 113, 228, 229, 276
_RAW_ALIASES = (12, 14, LINKTYPE_RAW)  # DLT_RAW differs between BSDs
ETHERTYPE_IPV4, ETHERTYPE_IPV6 = 0x0800, 0x86DD
_VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
_AF_INET6 = (10, 24, 28, 30)  # Linux, NetBSD/OpenBSD, FreeBSD, macOS
#: EtherTypes the CSIG tag cannot take: the link walk reads them as IP or as VLAN tags
NOT_CSIG_ETHERTYPES = (ETHERTYPE_IPV4, ETHERTYPE_IPV6) + _VLAN_TPIDS
#: E.4 / csig CMS-C1: r is reserved; a receiver counts a tag with r set and ignores it, the decoder
#: still shows it (the Lua dissector reports the same text)
CSIG_R_SET = "csig: reserved bit r is set (E.4): a receiver ignores this tag"

_ETH, _VLAN, _SLL, _SLL2 = codec("eth"), codec("vlan"), codec("sll"), codec("sll2")
_IPV4, _IPV6, _UDP = codec("ipv4"), codec("ipv6"), codec("udp")
_IPV6_EXT_HDR, _IPV6_FRAG = codec("ipv6_ext"), codec("ipv6_frag")
_CSIG = codec("csig")
_PFC = codec("pfc")
ETHERTYPE_MAC_CONTROL, PFC_OPCODE = 0x8808, 0x0101  # IEEE 802.1Qbb (net_headers.PFC)


@dataclass
class DecodeConfig:
    """Options of ``uet decode``: which UDP ports are UET, how to treat the trailer, and which
    EtherType marks a CSIG tag (E.4: not fixed by the sources, so an option)."""

    ports: tuple[int, ...] = (UET_UDP_PORT,)
    trailer: str = "auto"
    opts: Options = field(default_factory=lambda: DEFAULT_OPTIONS)
    csig_ethertype: int = CSIG_ETHERTYPE
    #: TSS (F): an opener of uet.tss.capture (``uet decode --sd-key`` makes one)
    open_tss: Callable[[bytes, bytes, bytes, int, bool], tuple[bytes, bool] | None] | None = None


@dataclass
class FrameResult:
    """The JSON object plus the decoded transport headers (for the tree rendering)."""

    obj: dict[str, Any]
    transport: Decoded | None = None
    ip_fields: dict[str, Any] | None = None
    udp_fields: dict[str, Any] | None = None
    csig_fields: dict[str, Any] | None = None
    pfc_fields: dict[str, Any] | None = None
    #: the frame is an IP fragment (its own header says so; ``ip_fields`` stays that header's
    #: fields when the frame completes a datagram and ``uet`` shows the whole datagram)
    fragment: bool = False


class _Stop(Exception):
    pass


class _LinkOnly(Exception):
    """The frame was a link-layer frame (PFC) and is fully decoded: there is no IP to read."""


def _link_to_ip(linktype: int, raw: bytes, cfg: DecodeConfig, res: FrameResult,
                problems: list[str]) -> tuple[int, int]:
    """(offset of the IP header, IP version hint 0/4/6) or raise _Stop with a reason."""
    if linktype == LINKTYPE_ETHERNET:
        if len(raw) < 14:
            raise _Stop(f"eth: truncated: needs 14 bytes, {len(raw)} left")
        eth, off = _ETH.decode(raw, 0)
        etype = eth["ethertype"]
        while True:
            if etype in _VLAN_TPIDS:
                if len(raw) < off + 4:
                    raise _Stop("vlan: truncated tag")
                etype = _VLAN.decode(raw, off)[0]["ethertype"]
                off += 4
            elif etype == cfg.csig_ethertype:
                etype, off = _csig_tag(raw, off, res, problems)
            else:
                break
        if etype == ETHERTYPE_MAC_CONTROL:
            _pfc(raw, off, res, problems)
        if etype == ETHERTYPE_IPV4:
            return off, 4
        if etype == ETHERTYPE_IPV6:
            return off, 6
        raise _Stop(f"eth: ethertype 0x{etype:04x} is not IP")
    if linktype in _RAW_ALIASES:
        return 0, 0
    if linktype == LINKTYPE_IPV4:
        return 0, 4
    if linktype == LINKTYPE_IPV6:
        return 0, 6
    if linktype in (LINKTYPE_SLL, LINKTYPE_SLL2):
        c = _SLL if linktype == LINKTYPE_SLL else _SLL2
        if len(raw) < c.min_size:
            raise _Stop(f"{c.key}: truncated: needs {c.min_size} bytes, {len(raw)} left")
        proto = c.decode(raw, 0)[0]["protocol"]
        if proto == ETHERTYPE_MAC_CONTROL:
            _pfc(raw, c.min_size, res, problems)
        if proto in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
            return c.min_size, 4 if proto == ETHERTYPE_IPV4 else 6
        raise _Stop(f"{c.key}: protocol 0x{proto:04x} is not IP")
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(raw) < 4:
            raise _Stop("null: truncated")
        fam_be = int.from_bytes(raw[:4], "big")
        fam = fam_be if linktype == LINKTYPE_LOOP or fam_be < 0x10000 else int.from_bytes(raw[:4], "little")
        if fam == 2:
            return 4, 4
        if fam in _AF_INET6:
            return 4, 6
        raise _Stop(f"null: address family {fam} is not IP")
    raise _Stop(f"linktype {linktype} is not supported")


def _csig_tag(raw: bytes, off: int, res: FrameResult, problems: list[str]) -> tuple[int, int]:
    """The CSIG tag after its TPID at ``off`` (E.4): (inner EtherType, offset after the tag)."""
    fields, size, var = _CSIG.decode_any(raw, off)
    if var is None:  # keep the whole fields that fit, as the transport layers do
        if fields and res.csig_fields is None:
            res.csig_fields = fields
            res.obj["csig"] = header_json(_CSIG, fields)
        raise _Stop(f"csig: truncated: needs {size} bytes, {max(len(raw) - off, 0)} left")
    if res.csig_fields is None:
        res.csig_fields = fields
        res.obj["csig"] = var.to_json(fields)
    else:  # E.4 puts one tag on a packet; a second one is walked through but not shown
        problems.append("csig: a second tag; the first one is shown")
    problems.extend(var.problems(fields))
    if fields["r"]:
        problems.append(CSIG_R_SET)
    return fields["ethertype"], off + size


def pfc_json(fields: dict[str, Any]) -> dict[str, Any]:
    """The ``pfc`` object: the declaration's JSON with its ``pause_quanta_<n>`` fields folded
    into the list ``pause_quanta`` (priority n at index n), where they first appear."""
    out: dict[str, Any] = {}
    times: list[int] = []
    for k, v in header_json(_PFC, fields).items():
        if k.startswith("pause_quanta_"):
            if not times:
                out["pause_quanta"] = times
            times.append(v)
        else:
            out[k] = v
    return out


def _pfc(raw: bytes, off: int, res: FrameResult, problems: list[str]) -> None:
    """A MAC control frame at ``off`` (after its EtherType): raises _LinkOnly with the ``pfc``
    object set for PFC, _Stop otherwise. Bytes after the 20 of PFC are the minimum frame's
    padding (802.3: a frame is at least 64 bytes), not a problem."""
    fields, size, var = _PFC.decode_any(raw, off)
    opcode = fields.get("opcode", PFC_OPCODE)
    if opcode != PFC_OPCODE:  # another layout (802.3x PAUSE ...): no pfc object to show
        raise _Stop(f"mac control: opcode 0x{opcode:04x} is not PFC (0x0101); only 802.1Qbb "
                    "PFC is decoded")
    if fields:  # the whole fields that fit, as the other layers keep them
        res.obj["pfc"] = pfc_json(fields)
        res.pfc_fields = fields
    if var is None:
        raise _Stop(f"pfc: truncated: needs {size} bytes, {max(len(raw) - off, 0)} left")
    problems.extend(var.problems(fields))
    raise _LinkOnly


def decode_frame(linktype: int, raw: bytes, number: int, cfg: DecodeConfig | None = None, *,
                 reasm: Reassembler | None = None, ts: float = 0.0) -> FrameResult:
    """Decode one frame; ``number`` is its 1-based position in the file. Without ``reasm`` an IP
    fragment is only named as one; with it (:mod:`uet.capture.reassembly`, one per capture) the
    fragment is held and the frame that completes a datagram decodes the whole of it. ``ts``: the
    frame's capture timestamp (the reassembler's time limit is in capture time)."""
    cfg = cfg or DecodeConfig()
    obj: dict[str, Any] = {"frame": number}
    res = FrameResult(obj)
    problems: list[str] = []
    try:
        _decode_ip(linktype, raw, cfg, res, problems, reasm, number, ts)
    except _LinkOnly:
        pass
    except _Stop as stop:
        obj["problems"] = problems + [str(stop)]
        obj["error"] = str(stop)
        return res
    error = obj.pop("error", None)
    obj["problems"] = problems
    if error is not None:
        obj["error"] = error
    return res


def _decode_ip(linktype: int, raw: bytes, cfg: DecodeConfig, res: FrameResult, problems: list[str],
               reasm: Reassembler | None = None, number: int = 0, ts: float = 0.0) -> None:
    obj = res.obj
    off, version = _link_to_ip(linktype, raw, cfg, res, problems)
    if off >= len(raw):
        raise _Stop("ip: no bytes after the link header")
    actual = raw[off] >> 4
    if version and actual != version:
        problems.append(f"ip: version nibble {actual} disagrees with the link layer ({version})")
    if actual == 4:
        if len(raw) - off < 20:
            raise _Stop(f"ipv4: truncated: needs 20 bytes, {len(raw) - off} left")
        ip, _ = _IPV4.decode(raw, off)
        hlen = ip["ihl"] * 4
        if hlen < 20:
            raise _Stop(f"ipv4: header length {hlen} is below 20")
        total = ip["total_length"]
        proto = ip["protocol"]
        src, dst = raw[off + 12:off + 16], raw[off + 16:off + 20]
        obj["ip"] = {"version": 4, "src": inet_ntoa(src), "dst": inet_ntoa(dst), "dscp": ip["dscp"],
                     "ecn": ip["ecn"], "ttl": ip["ttl"]}
        if (ip["flags"] & 1 or ip["fragment_offset"]) and reasm is None:
            res.ip_fields = ip  # what a fragment is (uet.capture.refprov RP2)
            res.fragment = True
            problems.append("ipv4: fragment; transport not decoded")
            return
    elif actual == 6:
        if len(raw) - off < 40:
            raise _Stop(f"ipv6: truncated: needs 40 bytes, {len(raw) - off} left")
        ip, _ = _IPV6.decode(raw, off)
        hlen, total, proto = 40, 40 + ip["payload_length"], ip["next_header"]
        src, dst = raw[off + 8:off + 24], raw[off + 24:off + 40]
        obj["ip"] = {"version": 6, "src": inet_ntop(AF_INET6, src), "dst": inet_ntop(AF_INET6, dst),
                     "dscp": ip["dscp"],
                     "ecn": ip["ecn"], "ttl": ip["hop_limit"]}
    else:
        raise _Stop(f"ip: version {actual} is neither 4 nor 6")
    res.ip_fields = ip
    end = off + total
    if end > len(raw):
        problems.append(f"ip: {len(raw) - off} bytes captured of {total}")
        end = len(raw)
    elif total < hlen:
        raise _Stop(f"ip: total length {total} is shorter than the header")
    pkt = raw[off:end]  # drops Ethernet padding
    l4 = hlen
    frag: Fragment | None = None
    if actual == 4 and (ip["flags"] & 1 or ip["fragment_offset"]):
        frag = Fragment(4, bytes(src), bytes(dst), ip["identification"], proto,
                        ip["fragment_offset"] * 8, bool(ip["flags"] & 1), pkt[hlen:], pkt[:hlen],
                        ecn=ip["ecn"])
    elif actual == 6:
        proto, l4, frag = _ipv6_chain(pkt, proto, ip["ecn"])
    if frag is not None:
        res.fragment = True
        if reasm is None:
            problems.append(f"ipv{actual}: fragment; transport not decoded")
        elif end - off < total:
            problems.append(f"ipv{actual}: fragment captured in part: not reassembled")
        else:
            out = reasm.feed(frag, frame=number, ts=ts)
            problems.extend(out.problems)
            if out.packet is not None:  # the whole datagram, decoded as this frame's
                own = res.ip_fields
                _decode_ip(LINKTYPE_RAW, out.packet, cfg, res, problems)
                res.ip_fields = own
        return

    if proto == 17:
        if len(pkt) - l4 < 8:
            raise _Stop(f"udp: truncated: needs 8 bytes, {len(pkt) - l4} left")
        udp, _ = _UDP.decode(pkt, l4)
        res.udp_fields = udp
        obj["udp"] = udp
        ulen = udp["length"]
        payload_end = l4 + ulen
        if ulen < 8 or payload_end > len(pkt):
            problems.append(f"udp: length {ulen} does not match the {len(pkt) - l4} bytes present")
            payload_end = len(pkt)
        payload = pkt[l4 + 8:payload_end]
        if udp["dport"] in cfg.ports or udp["sport"] in cfg.ports:
            ctx = CrcContext(bytes(src), bytes(dst), bytes(pkt[l4:l4 + 8]))
            opener = None
            if cfg.open_tss is not None:  # DSCP 11: trimmed, the tag is gone (TSS-K2 of uet.tss.capture)
                def opener(uet: bytes, _o: Any = cfg.open_tss, _s: bytes = bytes(src),
                           _d: bytes = bytes(dst), _p: int = udp["sport"],
                           _t: bool = ip["dscp"] == DSCP_TRIMMED) -> tuple[bytes, bool] | None:
                    return _o(uet, _s, _d, _p, _t)
            _attach(obj, res, problems, "uet", decode_uet(payload, ctx, trailer=cfg.trailer,
                                                          opts=cfg.opts, open_tss=opener))
        elif udp["dport"] == ROCE_UDP_PORT:
            _attach(obj, res, problems, "roce", decode_roce(pkt[:payload_end], l4 + 8, opts=cfg.opts))
    elif proto == UET_IP_PROTO:
        ctx = CrcContext(bytes(src), bytes(dst), None)
        _attach(obj, res, problems, "uet",
                decode_uet(pkt[l4:], ctx, trailer=cfg.trailer, opts=cfg.opts, entropy_header=True))


_IPV6_EXT = (0, 43, 60)  # hop-by-hop, routing, destination options: (length + 1) * 8 bytes
IPV6_FRAGMENT = 44       # RFC 8200 4.5


def _ipv6_chain(pkt: bytes, proto: int, ecn: int) -> tuple[int, int, Fragment | None]:
    """Walk the IPv6 extension headers before the transport: (its protocol, its offset, the
    fragment when a Fragment header says the packet is one; an atomic fragment, offset 0 and no
    more, is a whole packet: RFC 6946)."""
    l4 = 40
    while proto in _IPV6_EXT:
        if len(pkt) - l4 < 8:
            raise _Stop(f"ipv6: truncated extension header {proto}")
        ext, _ = _IPV6_EXT_HDR.decode(pkt, l4)
        proto, l4 = ext["next_header"], l4 + (ext["hdr_ext_len"] + 1) * 8
    if l4 > len(pkt):
        raise _Stop(f"ipv6: extension headers end at byte {l4}, beyond the {len(pkt)} present")
    if proto != IPV6_FRAGMENT:
        return proto, l4, None
    if len(pkt) - l4 < 8:
        raise _Stop("ipv6: truncated fragment header")
    frag, size = _IPV6_FRAG.decode(pkt, l4)
    end = l4 + size
    nh, offset, more = frag["next_header"], frag["fragment_offset"] * 8, frag["m"]
    if not offset and not more:
        return nh, end, None
    return nh, end, Fragment(6, bytes(pkt[8:24]), bytes(pkt[24:40]), frag["identification"], nh,
                             offset, more, pkt[end:], pkt[:40], extra=l4 - 40, ecn=ecn)


def _attach(obj: dict[str, Any], res: FrameResult, problems: list[str], key: str, d: Decoded) -> None:
    res.transport = d
    obj[key] = d.layer
    problems.extend(d.problems)
    if d.error is not None:
        obj["error"] = d.error
