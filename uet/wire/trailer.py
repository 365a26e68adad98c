"""The UET CRC-32C trailer (uet-facts.md A.3) and the RoCEv2 ICRC (G.6) at packet level.

Coverage of the CRC-32C trailer (design.md "Defaults", a documented choice because H.2 leaves the
UDP case open): the IPv4 (or IPv6) source and destination addresses, then - in UDP mode - the
8-byte UDP header with its checksum taken as 0 and its length counting the trailer, then the UET
bytes before the trailer. In native-IP mode the addresses are followed directly by the IP payload
(entropy header onwards), as the reference provider does. The 32-bit result is stored big-endian.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import native

TRAILER_LEN = 4


@dataclass(frozen=True)
class CrcContext:
    """What the trailer covers besides the UET bytes: addresses and (UDP mode) the UDP header."""

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
    if len(packet) < TRAILER_LEN:
        return False
    return trailer_crc(ctx, memoryview(packet)[:-TRAILER_LEN]) == int.from_bytes(packet[-TRAILER_LEN:], "big")


def with_trailer(ctx: CrcContext, body: bytes) -> bytes:
    """``body`` followed by its trailer. ``ctx.udp_header`` must already count the 4 extra bytes."""
    return body + trailer_crc(ctx, body).to_bytes(TRAILER_LEN, "big")


def roce_icrc_bytes(ip_packet_without_icrc: bytes | bytearray | memoryview) -> bytes:
    """The 4 ICRC bytes as they go on the wire: least-significant byte first (G.6 step 3)."""
    return native.roce_icrc(ip_packet_without_icrc).to_bytes(4, "little")
