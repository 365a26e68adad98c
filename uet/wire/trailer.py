"""The UET CRC-32C trailer (docs/facts.md A.3) and the RoCEv2 ICRC (G.6) at packet level: the one
trailer context every sender and checker uses (PDS, RUDI, UUD, the relay, the simulator, decode).

Coverage of the CRC-32C trailer (docs/design-notes.md "Defaults", a documented choice because H.2 leaves the
UDP case open): the IPv4 (or IPv6) source and destination addresses, then - in UDP mode - the
8-byte UDP header with its checksum taken as 0 and its length counting the trailer, then the UET
bytes before the trailer. In native-IP mode the addresses are followed directly by the IP payload
(entropy header onwards), as the reference provider does. The 32-bit result is stored big-endian.

The context's part of the CRC depends only on the 5-tuple and the length, so :func:`udp_seed`
caches the CRC register after it; a trailer is then one CRC pass over the UET bytes. A relay that
rewrites addresses or ports keeps the UDP length, and CRC is affine, so the new trailer is the old
one XOR a constant per (old context, new context, length): :func:`rewrite_mask`.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Iterable

from .. import native

TRAILER_LEN = 4
UDP_HEADER_LEN = 8

_crc32c = native.crc32c
_CACHE_LIMIT = 1 << 16
_addresses: dict[str, bytes] = {}
_seeds: dict[tuple[str, str, int, int, int], int] = {}


def address_bytes(addr: str) -> bytes:
    """The 4 or 16 bytes of an IP address literal (cached)."""
    b = _addresses.get(addr)
    if b is None:
        try:
            b = socket.inet_pton(socket.AF_INET, addr)
        except OSError:
            b = socket.inet_pton(socket.AF_INET6, addr)
        if len(_addresses) >= 4096:
            _addresses.clear()
        _addresses[addr] = b
    return b


def udp_seed(src: str, dst: str, sport: int, dport: int, udp_len: int) -> int:
    """The CRC-32C register after the context of a UDP datagram: addresses, then the UDP header
    with checksum 0 (``udp_len`` counts the header, the UET bytes and the trailer). Cached."""
    k = (src, dst, sport, dport, udp_len)
    s = _seeds.get(k)
    if s is None:
        s = native.crc32c(address_bytes(src) + address_bytes(dst) + bytes((
            (sport >> 8) & 255, sport & 255, (dport >> 8) & 255, dport & 255,
            (udp_len >> 8) & 255, udp_len & 255, 0, 0)))
        if len(_seeds) >= _CACHE_LIMIT:
            _seeds.clear()
        _seeds[k] = s
    return s


def seal_udp(parts: Iterable[bytes] | bytes, src: str, dst: str, sport: int, dport: int) -> bytes:
    """The UET bytes (``parts`` joined) followed by their trailer for this 5-tuple."""
    # one join and one CRC pass: cheaper than a CRC call per part for the usual three parts
    body = parts if type(parts) is bytes else b"".join(
        (parts,) if isinstance(parts, (bytearray, memoryview)) else parts)
    crc = _crc32c(body, udp_seed(src, dst, sport, dport, UDP_HEADER_LEN + len(body) + TRAILER_LEN))
    return body + crc.to_bytes(TRAILER_LEN, "big")


def udp_trailer_ok(data: bytes | bytearray | memoryview, src: str, dst: str, sport: int,
                   dport: int) -> bool:
    """Whether the last 4 bytes of ``data`` (a UDP payload) are its trailer for this 5-tuple."""
    n = len(data)
    if n < TRAILER_LEN:
        return False
    seed = udp_seed(src, dst, sport, dport, UDP_HEADER_LEN + n)
    end = n - TRAILER_LEN
    return native.crc32c_prefix(data, end, seed) == int.from_bytes(data[end:], "big")


def rewrite_mask(seed_in: int, seed_out: int, n: int) -> int:
    """What to XOR into the trailer of an ``n``-byte UDP payload (trailer included) that moves
    from the context of ``seed_in`` to that of ``seed_out`` (same length): CRC is affine, so the
    difference does not depend on the UET bytes."""
    zeros = bytes(n - TRAILER_LEN)
    return native.crc32c(zeros, seed_in) ^ native.crc32c(zeros, seed_out)


@dataclass(frozen=True)
class CrcContext:
    """What the trailer covers besides the UET bytes, as bytes: addresses and (UDP mode) the UDP
    header as it was on the wire (its checksum is taken as 0). For captures and hand-built
    packets; live code uses :func:`udp_seed` with the 5-tuple."""

    src: bytes
    dst: bytes
    udp_header: bytes | None = None

    def seed(self) -> int:
        crc = native.crc32c(self.src + self.dst)
        if self.udp_header is not None:
            crc = native.crc32c(self.udp_header[:6] + b"\x00\x00", crc)
        return crc


def trailer_crc(ctx: CrcContext, body: bytes | bytearray | memoryview) -> int:
    """CRC-32C over the context and ``body`` (the UET bytes without the trailer)."""
    return native.crc32c(body, ctx.seed())


def trailer_ok(ctx: CrcContext, packet: bytes | bytearray | memoryview) -> bool:
    """Whether the last 4 bytes of ``packet`` are the right trailer for the bytes before them."""
    n = len(packet)
    if n < TRAILER_LEN:
        return False
    return (native.crc32c_prefix(packet, n - TRAILER_LEN, ctx.seed())
            == int.from_bytes(packet[n - TRAILER_LEN:], "big"))


def with_trailer(ctx: CrcContext, body: bytes) -> bytes:
    """``body`` followed by its trailer. ``ctx.udp_header`` must already count the 4 extra bytes."""
    return body + trailer_crc(ctx, body).to_bytes(TRAILER_LEN, "big")


def roce_icrc_bytes(ip_packet_without_icrc: bytes | bytearray | memoryview) -> bytes:
    """The 4 ICRC bytes as they go on the wire: least-significant byte first (G.6 step 3)."""
    return native.roce_icrc(ip_packet_without_icrc).to_bytes(4, "little")
