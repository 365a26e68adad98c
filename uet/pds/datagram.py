"""What travels beside the UET bytes of a datagram (addresses, ports, ECN, DSCP), the code points
the PDS uses, and the CRC-32C trailer sealed and checked for that addressing (A.3, through the one
trailer context of :mod:`uet.wire.trailer`)."""

from __future__ import annotations

from typing import Iterable

from .. import UET_UDP_PORT
from ..wire.trailer import seal_udp, udp_trailer_ok

DSCP_DATA, DSCP_CONTROL, DSCP_TRIMMED = 0, 46, 11  # A.2, design.md "Defaults"
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3


class DatagramMeta:
    """What travels beside the UET bytes: addresses, UDP ports (sport = entropy), ECN, DSCP."""

    __slots__ = ("src", "dst", "sport", "dport", "ecn", "dscp")

    def __init__(self, src: str, dst: str, sport: int, dport: int = UET_UDP_PORT, ecn: int = 0,
                 dscp: int = 0):
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.ecn = ecn
        self.dscp = dscp

    def __repr__(self) -> str:
        return (f"DatagramMeta({self.src}:{self.sport} -> {self.dst}:{self.dport}, dscp={self.dscp}, "
                f"ecn={self.ecn})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatagramMeta) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)



def seal(parts: Iterable[bytes] | bytes, meta: DatagramMeta) -> bytes:
    """The UET bytes (``parts`` joined) and their CRC-32C trailer for ``meta``'s addressing."""
    return seal_udp(parts, meta.src, meta.dst, meta.sport, meta.dport)


def trailer_ok(data: bytes | bytearray | memoryview, meta: DatagramMeta) -> bool:
    """Whether ``data`` ends in the right trailer for ``meta``'s addressing."""
    return udp_trailer_ok(data, meta.src, meta.dst, meta.sport, meta.dport)
