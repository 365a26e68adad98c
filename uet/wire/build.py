"""Building whole packets from header dicts: UET bytes, then UDP/IP/Ethernet around them.

The header chain follows the same rules the decoder reads (:mod:`uet.wire.packet`): the PDS header
is chosen by ``type`` (B.1), the SES header by ``next_hdr`` (B.2) and the SES extension by opcode
(D.5, D.6). Frames use the fixed, locally administered MACs of docs/design-notes.md; UDP checksum 0 and the
CRC-32C trailer by default (docs/design-notes.md "Defaults").
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Any, Mapping

from .. import UET_IP_PROTO, UET_UDP_PORT
from . import uet_headers as U
from .codec import codec
from .enums import DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0  # noqa: F401 (re-exported)
from .schema import DEFAULT_OPTIONS, Options
from .trailer import TRAILER_LEN, CrcContext, roce_icrc_bytes, with_trailer

SRC_MAC = bytes.fromhex("020000000001")  # locally administered (bit 1 of the first octet)
DST_MAC = bytes.fromhex("020000000002")
DSCP_DEFAULT = DSCP_DATA  # A.2, docs/design-notes.md "Defaults" (uet.wire.enums)


def uet_bytes(pds: Mapping[str, Any], ses: Mapping[str, Any] | None = None,
              ext: Mapping[str, Any] | None = None, payload: bytes = b"", *,
              tss: Mapping[str, Any] | None = None, opts: Options = DEFAULT_OPTIONS) -> bytes:
    """PDS (+ SES + extension) + payload, without any trailer. With ``tss`` the TSS header comes
    first and ``pds`` may be empty (the caller supplies already-encrypted bytes as payload)."""
    out = bytearray()
    if tss is not None:
        out += codec(U.TSS).encode(tss, opts)
    if pds:
        ptype = int(pds["type"])
        out += codec(U.PDS_BY_TYPE[ptype]).encode(pds, opts)
        if ses is not None:
            nh = int(pds.get("next_hdr", 0))
            if ptype == 11 or nh not in U.SES_BY_NEXT_HDR:
                raise ValueError(f"PDS type {ptype} with next_hdr {nh} carries no SES header")
            out += codec(U.SES_BY_NEXT_HDR[nh]).encode(ses, opts)
            if ext is not None:
                out += codec(extension_for(int(ses["opcode"]), ext, opts, next_hdr=nh)).encode(ext, opts)
    out += payload
    return bytes(out)


def extension_for(opcode: int, ext: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS,
                  next_hdr: int = 3) -> str:
    """Header key of the SES extension that ``opcode`` carries after a request header of
    ``next_hdr`` (D.5: rendezvous follows the standard header only; D.6: atomics follow any)."""
    if next_hdr not in (1, 2, 3):
        raise ValueError(f"next_hdr {next_hdr} is not a request header; no extension follows")
    if opcode in U.ATOMIC_OPCODES:
        amo = int(ext.get("atomic_opcode", 0))
        cswap = amo in U.CSWAP_AMO_OPCODES or (opts.mswap_cswap_ext and amo == U.MSWAP_AMO_OPCODE)
        return U.SES_CSWAP.key if cswap else U.SES_ATOMIC.key
    if opcode in U.RENDEZVOUS_OPCODES and next_hdr == 3:
        return U.SES_RENDEZVOUS.key
    raise ValueError(f"SES opcode 0x{opcode:02x} carries no extension header")


def ip_header(src: str, dst: str, proto: int, payload_len: int, dscp: int, ecn: int, ttl: int,
               ident: int = 0) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version != b.version:
        raise ValueError("source and destination must be the same IP version")
    if a.version == 4:
        fields = {"version": 4, "ihl": 5, "dscp": dscp, "ecn": ecn, "total_length": 20 + payload_len,
                  "identification": ident, "flags": 2, "ttl": ttl, "protocol": proto,
                  "src": int(a), "dst": int(b)}
        hdr = codec("ipv4").encode(fields)
        fields["checksum"] = ipv4_checksum(hdr)
        return codec("ipv4").encode(fields)
    fields = {"version": 6, "dscp": dscp, "ecn": ecn, "payload_length": payload_len,
              "next_header": proto, "hop_limit": ttl, "src": int(a), "dst": int(b)}
    return codec("ipv6").encode(fields)


def ipv4_checksum(header: bytes) -> int:
    s = sum(struct.unpack(f"!{len(header) // 2}H", header[:len(header) & ~1]))
    if len(header) & 1:
        s += header[-1]  # as it always was (an IPv4 header is a multiple of 4 bytes)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_headers(payload_len: int, *, src: str = "10.0.0.1", dst: str = "10.0.0.2",
                sport: int = 49152, dport: int = UET_UDP_PORT, dscp: int = DSCP_DEFAULT,
                ecn: int = ECT0, ttl: int = 64, ethernet: bool = True) -> bytes:
    """The Ethernet (optional), IP and UDP headers (checksum 0) in front of ``payload_len`` bytes of
    UDP payload - what :func:`udp_frame` puts before the payload."""
    ulen = 8 + payload_len
    udp = codec("udp").encode({"sport": sport, "dport": dport, "length": ulen, "checksum": 0})
    ip = ip_header(src, dst, 17, ulen, dscp, ecn, ttl)
    return ethernet_header(ip, ethernet) + ip + udp


def udp_frame(payload: bytes, *, src: str = "10.0.0.1", dst: str = "10.0.0.2", sport: int = 49152,
              dport: int = UET_UDP_PORT, dscp: int = DSCP_DEFAULT, ecn: int = ECT0, ttl: int = 64,
              trailer: bool = True, ethernet: bool = True) -> bytes:
    """Ethernet/IP/UDP frame around a UET packet; with ``trailer`` the CRC-32C trailer is appended
    over the coverage of facts A.3 / docs/design-notes.md (the UDP length counts it). A TSS packet never
    gets one: its 16-byte ICV, part of ``payload``, replaces the CRC (A.3, F)."""
    if payload and payload[0] >> 3 == 1:
        trailer = False
    tl = TRAILER_LEN if trailer else 0
    hdrs = udp_headers(len(payload) + tl, src=src, dst=dst, sport=sport, dport=dport, dscp=dscp,
                       ecn=ecn, ttl=ttl, ethernet=ethernet)
    if trailer:
        a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
        payload = with_trailer(CrcContext(a.packed, b.packed, hdrs[-8:]), payload)
    return hdrs + payload


def native_ip_frame(payload: bytes, entropy: int, *, src: str = "10.0.0.1", dst: str = "10.0.0.2",
                    dscp: int = DSCP_DEFAULT, ecn: int = ECT0, ttl: int = 64, trailer: bool = True,
                    ethernet: bool = True) -> bytes:
    """UET directly over IP (protocol 253) with the 4-byte entropy header (A.1); no CRC trailer on
    a TSS packet (its ICV replaces it)."""
    if payload and payload[0] >> 3 == 1:
        trailer = False
    body = codec(U.ENTROPY).encode({"entropy": entropy}) + payload
    if trailer:
        a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
        body = with_trailer(CrcContext(a.packed, b.packed, None), body)
    ip = ip_header(src, dst, UET_IP_PROTO, len(body), dscp, ecn, ttl)
    return ethernet_header(ip, ethernet) + ip + body


def roce_frame(bth: Mapping[str, Any], exts: list[tuple[str, Mapping[str, Any]]] = (),  # type: ignore[assignment]
               payload: bytes = b"", *, src: str = "10.0.0.1", dst: str = "10.0.0.2",
               sport: int = 49152, dscp: int = 26, ecn: int = ECT0, ttl: int = 64,
               ethernet: bool = True) -> bytes:
    """Ethernet/IP/UDP 4791/BTH/extensions/payload/pad/ICRC (G.1, G.6). ``pad_cnt`` is set from the
    payload length unless given."""
    pad = (-len(payload)) % 4
    b = dict(bth)
    b.setdefault("pad_cnt", pad)
    body = codec("roce.bth").encode(b) + b"".join(codec(k).encode(f) for k, f in exts) + payload + bytes(pad)
    ulen = 8 + len(body) + 4
    udp = codec("udp").encode({"sport": sport, "dport": 4791, "length": ulen, "checksum": 0})
    ip = ip_header(src, dst, 17, ulen, dscp, ecn, ttl)
    pkt = ip + udp + body
    return ethernet_header(ip, ethernet) + pkt + roce_icrc_bytes(pkt)


def ethernet_header(ip: bytes, ethernet: bool) -> bytes:
    if not ethernet:
        return b""
    etype = b"\x08\x00" if ip[0] >> 4 == 4 else b"\x86\xdd"
    return DST_MAC + SRC_MAC + etype


def trim(frame: bytes, keep: int = 256, *, ethernet: bool = True) -> bytes:
    """What a trimming switch does (C.6, docs/design-notes.md "Defaults"): keep the first ``keep`` bytes of the
    UDP payload, rewrite the DSCP to 11, fix the lengths and the IPv4 checksum."""
    off = 14 if ethernet else 0
    if len(frame) <= off or frame[off] >> 4 != 4:
        raise ValueError("trim() handles IPv4 frames")
    hl = (frame[off] & 0xF) * 4
    ip = bytearray(frame[off:off + hl + 8 + keep])  # only what is kept is copied
    ip[1] = (DSCP_TRIMMED << 2) | (ip[1] & 3)
    ip[2:4] = len(ip).to_bytes(2, "big")
    ip[hl + 4:hl + 6] = (len(ip) - hl).to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    ip[10:12] = ipv4_checksum(bytes(ip[:hl])).to_bytes(2, "big")
    return frame[:off] + bytes(ip)
