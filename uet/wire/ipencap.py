"""Native-IP framing (facts A.1 "Native IP", A.3): UET directly in IP protocol 253 behind
the 4-byte entropy header, and its translation from and to the UDP form (the UET bytes with the
trailer of a UDP 5-tuple whose source port is the EV), in which the rest of the project speaks.

  WIRE-I1  UDP form -> IP payload: the entropy header (the EV, reserved 0), the UET bytes, and a
      CRC-32C trailer over the IP source and destination addresses and the IP payload before it
      (A.3's native-IP coverage: what :func:`uet.wire.build.native_ip_frame` builds). A TSS
      packet (B.15) carries no trailer: its ICV covers F's native-IP AAD (addresses, the entropy
      header, the security header).
  WIRE-I2  IP payload -> UDP form, the EV as the source port and the UET port as the destination
      port; a trailer that does not verify comes out as one that does not verify either.
"""

from __future__ import annotations

import socket

from .. import native
from .codec import codec
from .trailer import TRAILER_LEN, address_bytes, seal_udp
from .uet_headers import ENTROPY

ENTROPY_LEN = 4  # A.1: entropy (16 bits), reserved (16 bits)
_ENTROPY, _IPV4 = codec(ENTROPY), codec("ipv4")
_SEEDS: dict[tuple[str, str], int] = {}


def native_ip_seed(src: str, dst: str) -> int:
    """The CRC-32C register after the native-IP context (A.3): source, then destination."""
    k = (src, dst)
    s = _SEEDS.get(k)
    if s is None:
        if len(_SEEDS) >= 4096:
            _SEEDS.clear()
        s = _SEEDS[k] = native.crc32c(address_bytes(src) + address_bytes(dst))
    return s


def _is_tss(data: bytes | bytearray | memoryview) -> bool:
    return bool(data) and data[0] >> 3 == 1  # B.15: TSS, no trailer (its ICV replaces it)


def entropy_header(ev: int) -> bytes:
    """A.1: the entropy value, then 16 reserved bits (0): the schema's ``entropy`` header."""
    return _ENTROPY.encode({"entropy": ev & 0xFFFF})


def entropy_of(payload: bytes | bytearray | memoryview) -> int:
    """The EV in the entropy header that starts ``payload`` (at least ENTROPY_LEN bytes)."""
    return _ENTROPY.decode(payload, 0)[0]["entropy"]


def to_ip_payload(data: bytes | bytearray | memoryview, *, src: str, dst: str, ev: int) -> bytes:
    """WIRE-I1: the IP payload for the UDP-form datagram ``data`` from ``src`` to ``dst`` with entropy
    value ``ev``."""
    head = entropy_header(ev)
    if _is_tss(data):
        return head + bytes(data)
    body = head + bytes(data[:-TRAILER_LEN])
    return body + native.crc32c(body, native_ip_seed(src, dst)).to_bytes(TRAILER_LEN, "big")


def from_ip_payload(payload: bytes | bytearray | memoryview, src: str, dst: str,
                    uet_port: int) -> tuple[bytes, int] | None:
    """WIRE-I2: (the datagram in UDP form: its trailer that of (``src``, ``dst``, the EV, ``uet_port``)
    when the native trailer verifies, else one that does not verify either; the EV), or None
    when ``payload`` is shorter than the entropy header."""
    n = len(payload)
    if n < ENTROPY_LEN:
        return None
    ev = entropy_of(payload)
    rest = bytes(payload[ENTROPY_LEN:])
    if _is_tss(rest) or n < ENTROPY_LEN + TRAILER_LEN:
        return rest, ev
    end = n - TRAILER_LEN
    got = int.from_bytes(payload[end:], "big")
    body = rest[:-TRAILER_LEN]
    sealed = seal_udp(body, src, dst, ev, uet_port)
    if native.crc32c_prefix(payload, end, native_ip_seed(src, dst)) != got:
        # a trailer that did not verify: a UDP-form reader must not find it right
        bad = int.from_bytes(sealed[-TRAILER_LEN:], "big") ^ 1
        sealed = body + bad.to_bytes(TRAILER_LEN, "big")
    return sealed, ev


def parse_ipv4(pkt: bytes) -> tuple[str, str, int, memoryview] | None:
    """(source, destination, TOS, IP payload) of an IPv4 datagram as a raw socket reads it."""
    if len(pkt) < 20:
        return None
    ip, _ = _IPV4.decode(pkt, 0)
    ihl, total = ip["ihl"] * 4, ip["total_length"]
    if ip["version"] != 4 or ihl < 20 or total < ihl or len(pkt) < total:
        return None
    return (socket.inet_ntop(socket.AF_INET, ip["src"].to_bytes(4, "big")),
            socket.inet_ntop(socket.AF_INET, ip["dst"].to_bytes(4, "big")),
            ip["dscp"] << 2 | ip["ecn"], memoryview(pkt)[ihl:total])


def to_ip_payload_as_is(data: bytes | bytearray | memoryview, *, src: str, dst: str, ev: int,
                        uet_port: int) -> bytes:
    """WIRE-I1 for a crafted datagram (the conformance suite's damaged or trimmed packets): a trailer
    that was wrong for the UDP form is wrong by the same difference in the native form (CRC is
    affine), and a right one stays right."""
    if _is_tss(data) or len(data) < TRAILER_LEN:
        return entropy_header(ev) + bytes(data)
    right = seal_udp(bytes(data[:-TRAILER_LEN]), src, dst, ev, uet_port)[-TRAILER_LEN:]
    delta = int.from_bytes(data[-TRAILER_LEN:], "big") ^ int.from_bytes(right, "big")
    out = to_ip_payload(data, src=src, dst=dst, ev=ev)
    crc = int.from_bytes(out[-TRAILER_LEN:], "big") ^ delta
    return out[:-TRAILER_LEN] + crc.to_bytes(TRAILER_LEN, "big")
