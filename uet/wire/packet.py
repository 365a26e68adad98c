"""Packet-level decoding: the chain of headers after UDP (or IP) for UET and for RoCEv2.

UET (docs/facts.md A.1, B.1, B.2, D.5, D.6): [entropy] -> TSS | PDS -> SES (by next_hdr) -> SES
extension (by opcode) -> payload -> CRC-32C trailer (A.3). RoCEv2 (G.1-G.6): BTH -> extension headers
(by opcode) -> payload and pad -> ICRC.

Every function here takes arbitrary bytes. What decodes is kept even when a later header fails; what
does not fit is reported in ``problems`` and ``error`` rather than raised.

TSS (B.15, F): without a key the security header is shown and the rest is reported as encrypted.
With ``open_tss`` (a function from the UET bytes to the plaintext after the security header, or
None when no key opens it; uet.capture builds it from the secure-domain keys, as Wireshark
decrypts TLS with a key log) the PDS, SES and payload inside are decoded as if they had come in
the clear, and ``tss.decrypted`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import native
from . import uet_headers as U
from .codec import Codec, codec
from .enums import PDS_TYPE, RSP_OPCODE, SES_OPCODE, aeth_syndrome_name
from .render import header_json
from .roce_headers import BTH, extension_headers
from .schema import DEFAULT_OPTIONS, Header, Options
from .trailer import TRAILER_LEN, CrcContext, trailer_crc

TRAILER_MODES = ("auto", "crc", "none")


@dataclass
class Decoded:
    """The result of decoding one transport payload: the JSON layer, problems, an error if stopped,
    and the decoded headers in wire order (for tree rendering)."""

    layer: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    headers: list[tuple[Codec, dict[str, Any]]] = field(default_factory=list)

    def stop(self, message: str) -> None:
        self.error = message
        self.problems.append(message)


def _take(d: Decoded, h: Header, buf: bytes, off: int, into: dict[str, Any], key: str,
          opts: Options, unknown: Callable[[str, str, int], str | None] | None = None
          ) -> tuple[dict[str, Any], int] | None:
    """Decode ``h`` at ``off`` into ``into[key]``; on a short buffer keep the whole fields and stop.
    ``unknown`` words undefined enum values more precisely (see :meth:`Variant.problems`)."""
    c = codec(h)
    fields, size, var = c.decode_any(buf, off, opts)
    d.headers.append((c, fields))
    if var is None:
        into[key] = header_json(c, fields, opts) if fields else {}
        d.stop(f"{h.key}: truncated: needs {size} bytes, {max(len(buf) - off, 0)} left")
        return None
    into[key] = var.to_json(fields)
    probs = var.problems(fields, unknown)
    if probs:
        d.problems.extend(probs)
    return fields, size


def decode_uet(data: bytes | bytearray | memoryview, ctx: CrcContext | None = None, *,
               trailer: str = "auto", opts: Options = DEFAULT_OPTIONS,
               entropy_header: bool = False,
               open_tss: Callable[[bytes], tuple[bytes, bool] | None] | None = None) -> Decoded:
    """Decode a UET packet: the UDP payload, or the IP payload in native-IP mode
    (``entropy_header=True``). ``ctx`` gives the addresses (and UDP header) that the CRC-32C trailer
    covers; without it a trailer can be shown but not verified."""
    if trailer not in TRAILER_MODES:
        raise ValueError(f"trailer must be one of {TRAILER_MODES}")
    buf = bytes(data)
    d = Decoded()
    uet = d.layer
    off = 0
    if entropy_header:
        got = _take(d, U.ENTROPY, buf, 0, uet, "entropy", opts)
        if got is None:
            return d
        off = got[1]

    end = len(buf)
    crc: dict[str, Any] = {"value": None, "ok": None}
    is_tss = off < end and buf[off] >> 3 == 1
    if is_tss:
        pass  # F: the 16-byte GCM tag replaces the CRC trailer; see _decode_uet_chain
    elif trailer != "none" and end - off >= TRAILER_LEN:
        carried = int.from_bytes(buf[-TRAILER_LEN:], "big")
        computed = trailer_crc(ctx, memoryview(buf)[:-TRAILER_LEN]) if ctx is not None else None
        if trailer == "crc":
            crc = {"value": carried, "ok": None if computed is None else computed == carried}
            end -= TRAILER_LEN
            if computed is None:
                d.problems.append("crc: no IP context, trailer not verified")
            elif computed != carried:
                d.problems.append(f"crc: CRC-32C trailer mismatch: carries 0x{carried:08x}, "
                                  f"computed 0x{computed:08x}")
        elif computed == carried:  # auto: a trailer is there exactly when it verifies
            crc = {"value": carried, "ok": True}
            end -= TRAILER_LEN
    elif trailer == "crc":
        d.problems.append("crc: packet too short to carry a CRC-32C trailer")
    pkt = buf[:end]

    try:
        _decode_uet_chain(d, pkt, off, opts, open_tss)
    finally:
        uet["crc"] = crc
    return d


def _decode_uet_chain(d: Decoded, pkt: bytes, off: int, opts: Options,
                      open_tss: Callable[[bytes], tuple[bytes, bool] | None] | None = None
                      ) -> None:
    uet = d.layer
    if off >= len(pkt):
        uet["payload_len"] = 0
        d.stop("pds: empty UET packet")
        return
    ptype = pkt[off] >> 3
    if ptype == 1:
        got = _take(d, U.TSS, pkt, off, uet, "tss", opts)
        if got is None:
            uet["payload_len"] = 0
            return
        opened = open_tss(pkt[off:]) if open_tss is not None else None
        if open_tss is not None:  # only with a key: the output without one stays as it was
            uet["tss"]["decrypted"] = opened is not None
        if opened is not None:
            plain, authenticated = opened
            uet["tss"]["authenticated"] = authenticated
            if not authenticated:
                d.problems.append("tss: trimmed: the tag is gone, so what follows was decrypted "
                                  "without being authenticated (F)")
            _decode_uet_chain(d, plain, 0, opts)
            return
        encrypted = len(pkt) - off - got[1] - U.TSS_ICV_LEN
        uet["payload_len"] = max(encrypted, 0)
        if encrypted < 0:
            d.problems.append(f"tss: {len(pkt) - off - got[1]} bytes after the header, fewer than "
                              f"the {U.TSS_ICV_LEN}-byte ICV (F)")
        elif open_tss is not None:
            d.problems.append("tss: no key given opens this packet (unknown SDI, wrong key or a "
                              "changed byte): its payload stays encrypted (F)")
        return  # without a key the PDS and everything after it stay encrypted (F)
    hdr = U.PDS_BY_TYPE.get(ptype)
    if hdr is None:
        uet["pds"] = {"type": ptype, "type_name": PDS_TYPE.symbol(ptype)}
        uet["payload_len"] = len(pkt) - off
        d.stop(f"pds: type {ptype} is {'reserved' if ptype == 0 else 'not assigned'} (B.1)")
        return
    got = _take(d, hdr, pkt, off, uet, "pds", opts)
    if got is None:
        uet["payload_len"] = 0
        return
    pds, size = got
    off += size
    if ptype == 4 and pds.get("m"):
        d.problems.append("pds: M flag set on a RUDI request (defined for responses only, B.13)")

    nh = pds.get("next_hdr", 0) if ptype != 11 else 0  # CONTROL: the slot holds ctl_type (B.12)
    if nh:
        off = _decode_ses(d, pkt, off, nh, ptype, opts)
    uet["payload_len"] = max(len(pkt) - off, 0)


def response_opcode_problem(key: str, name: str, value: int) -> str | None:
    """D.7: the opcode of a SES response header (next_hdr 4, 5, 6, whatever PDS type carries it:
    a RUDI response, an ACK, a NACK) that is no response opcode but a request opcode (D.1), e.g.
    SEND (5) in a RUDI response. Only values D.7 leaves undefined get here: 0-3 are response opcodes
    (2 is RESPONSE_W_DATA), 0x30-0x3F vendor ones."""
    if name != "opcode" or RSP_OPCODE.symbol(value) is not None or value not in SES_OPCODE.table:
        return None
    return (f"{key}: opcode = {value} (0x{value:X}) is the request opcode {SES_OPCODE.table[value]} "
            f"(D.1), not a response opcode (D.7)")


def _decode_ses(d: Decoded, pkt: bytes, off: int, nh: int, ptype: int, opts: Options) -> int:
    uet = d.layer
    sh = U.SES_BY_NEXT_HDR.get(nh)
    if sh is None:
        d.stop(f"pds: next_hdr {nh} is reserved (B.2); the rest is not decoded")
        return off
    # responses (next_hdr 4-6) are decoded here and nowhere else: the D.7 opcode check
    got = _take(d, sh, pkt, off, uet, "ses", opts, None if nh in (1, 2, 3) else response_opcode_problem)
    if got is None:
        return len(pkt)
    ses, size = got
    off += size
    if nh not in (1, 2, 3):
        return off
    op = ses["opcode"]
    if nh in (1, 2) and not (ses["som"] and ses["eom"]):
        d.problems.append(f"{sh.key}: single-packet header without both SOM and EOM (D.4)")
    if op == 0x07 and ptype != 6:
        d.problems.append("ses: DATAGRAM_SEND is only legal with UUD (C.8)")
    ext: Header | None = None
    if op in U.ATOMIC_OPCODES:
        amo = pkt[off] if off < len(pkt) else None
        cswap = U.CSWAP_AMO_OPCODES | ({U.MSWAP_AMO_OPCODE} if opts.mswap_cswap_ext else set())
        ext = U.SES_CSWAP if amo in cswap else U.SES_ATOMIC
    elif op in U.RENDEZVOUS_OPCODES and nh == 3:
        ext = U.SES_RENDEZVOUS
    if ext is not None:
        got = _take(d, ext, pkt, off, uet["ses"], ext.short, opts)
        if got is None:
            return len(pkt)
        off += got[1]
    return off


def decode_roce(ip_packet: bytes | bytearray | memoryview, bth_offset: int, *,
                opts: Options = DEFAULT_OPTIONS) -> Decoded:
    """Decode RoCEv2 from the BTH at ``bth_offset`` of ``ip_packet`` (which starts at the IP header
    and ends with the ICRC, so that the ICRC can be checked, G.6)."""
    pkt = bytes(ip_packet)
    d = Decoded()
    roce = d.layer
    end = len(pkt) - 4
    icrc: dict[str, Any] = {"value": None, "ok": None}
    if end >= bth_offset:
        icrc["value"] = int.from_bytes(pkt[end:], "little")
        try:
            computed = native.roce_icrc(pkt[:end])
            icrc["ok"] = computed == icrc["value"]
            if not icrc["ok"]:
                d.problems.append(f"icrc: mismatch: carries 0x{icrc['value']:08x}, computed 0x{computed:08x}")
        except ValueError as exc:
            d.problems.append(f"icrc: not computed: {exc}")
    body = pkt[:max(end, bth_offset)]
    try:
        got = _take(d, BTH, body, bth_offset, roce, "bth", opts)
        if got is None:
            return d
        bth, off = got[0], bth_offset + got[1]
        exts = extension_headers(bth["opcode"])
        if exts is None:
            d.problems.append(f"roce.bth: opcode 0x{bth['opcode']:02x}: extension headers not decoded")
            exts = ()
        for h in exts:
            got = _take(d, h, body, off, roce, h.short, opts)
            if got is None:
                return d
            if h.short == "aeth":
                roce["aeth"]["syndrome_name"] = aeth_syndrome_name(got[0]["syndrome"])
            off += got[1]
        roce["payload_len"] = len(body) - off
        if bth["pad_cnt"] > roce["payload_len"]:
            d.problems.append(f"roce.bth: pad_cnt {bth['pad_cnt']} exceeds the {roce['payload_len']} bytes left")
    finally:
        roce["icrc"] = icrc
    return d
