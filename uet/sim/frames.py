"""Ethernet/IPv4/UDP framing for the simulated fabric, and a pcap writer.

The frames are byte-for-byte what :func:`uet.wire.build.udp_frame` builds (fixed locally
administered MACs, IPv4 DF, TTL 64, identification 0, UDP checksum 0) - the tests check that -
but precomputed per address pair, because the simulator frames every datagram.
"""

from __future__ import annotations

import socket
import struct
from typing import BinaryIO

from ..wire.build import DST_MAC, SRC_MAC, trim as _wire_trim

ETH_LEN, IP_LEN, UDP_LEN = 14, 20, 8
HDRS = ETH_LEN + IP_LEN + UDP_LEN
_ETH = DST_MAC + SRC_MAC + b"\x08\x00"
_IPUDP = struct.Struct("!BBHHHBBH4s4sHHHH")


def _fold(s: int) -> int:
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


class Framer:
    """Builds and parses frames between two hosts' addresses (IPv4)."""

    def __init__(self) -> None:
        self._const: dict[tuple[bytes, bytes], int] = {}
        self._names: dict[bytes, str] = {}

    def frame(self, payload: bytes, src: str, dst: str, sport: int, dport: int, dscp: int,
              ecn: int) -> bytes:
        sp, dp = socket.inet_aton(src), socket.inet_aton(dst)
        k = (sp, dp)
        c = self._const.get(k)
        if c is None:
            c = 0x4000 + (64 << 8 | 17)
            for i in (0, 2):
                c += (sp[i] << 8 | sp[i + 1]) + (dp[i] << 8 | dp[i + 1])
            self._const[k] = c
            self._names[sp] = src
            self._names[dp] = dst
        ulen = UDP_LEN + len(payload)
        tot = IP_LEN + ulen
        tos = (dscp << 2) | ecn
        csum = ~_fold(c + (0x4500 | tos) + tot) & 0xFFFF
        return b"".join((_ETH, _IPUDP.pack(0x45, tos, tot, 0, 0x4000, 64, 17, csum, sp, dp,
                                           sport, dport, ulen, 0), payload))

    def parse(self, frame: bytes) -> tuple[str, str, int, int, int, int, bytes]:
        """(src, dst, sport, dport, dscp, ecn, udp payload) of a frame built by :meth:`frame`."""
        tos = frame[15]
        sp, dp = frame[26:30], frame[30:34]
        src = self._names.get(sp) or socket.inet_ntoa(sp)
        dst = self._names.get(dp) or socket.inet_ntoa(dp)
        return (src, dst, (frame[34] << 8) | frame[35], (frame[36] << 8) | frame[37], tos >> 2,
                tos & 3, frame[HDRS:])


def set_ce(frame: bytes) -> bytes:
    """Mark ECN CE (11) and fix the IPv4 header checksum."""
    b = bytearray(frame)
    b[15] |= 3
    b[24:26] = b"\0\0"
    s = sum((b[i] << 8) | b[i + 1] for i in range(ETH_LEN, ETH_LEN + IP_LEN, 2))
    b[24:26] = (~_fold(s) & 0xFFFF).to_bytes(2, "big")
    return bytes(b)


def trim(frame: bytes, keep: int = 256) -> bytes:
    """design.md "Defaults": keep the first ``keep`` bytes of the UDP payload, DSCP 11."""
    return _wire_trim(frame, keep)


class PcapWriter:
    """Classic pcap, nanosecond timestamps (magic 0xa1b23c4d), Ethernet linktype 1."""

    def __init__(self, fh: BinaryIO):
        self.fh = fh
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 1 << 18, 1))

    def write(self, t: float, frame: bytes) -> None:
        ns = int(round(t * 1e9))
        self.fh.write(struct.pack("<IIII", ns // 1_000_000_000, ns % 1_000_000_000, len(frame),
                                  len(frame)))
        self.fh.write(frame)
