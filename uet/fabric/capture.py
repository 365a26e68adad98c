"""Capture of what the live fabric forwards: Ethernet/IP/UDP frames around the actual UDP payload,
with the addresses and ports of the hop the datagram is sent on, and a pcap writer.

Headers are encoded with the schema's codecs (``eth``, ``ipv4``/``ipv6``, ``udp``), with the fixed
values :func:`uet.wire.build.udp_frame` uses: the project's locally administered MACs, IPv4
identification 0, DF set, TTL (hop limit) 64, UDP checksum 0 (design.md "Defaults"). A frame is
byte-for-byte what ``udp_frame(payload, ..., trailer=False)`` builds; headers are cached per
(addresses, ports, TOS, length) because the fabric frames every datagram it forwards.

pcaps: linktype 1 (Ethernet), microsecond timestamps from the wall clock, written with scapy's
:class:`~scapy.utils.RawPcapWriter`.
"""

from __future__ import annotations

import ipaddress
import os
from typing import IO, Any, Callable, Union

from ..wire.build import DST_MAC, SRC_MAC, ipv4_checksum
from ..wire.codec import codec

CaptureFn = Callable[[float, bytes], None]
_ETH4 = codec("eth").encode({"dst": int.from_bytes(DST_MAC, "big"), "src": int.from_bytes(SRC_MAC, "big"),
                             "ethertype": 0x0800})
_ETH6 = _ETH4[:12] + b"\x86\xdd"


class FrameBuilder:
    """Ethernet + IP + UDP headers for (src, dst, sport, dport, tos, udp payload length)."""

    def __init__(self, cache_size: int = 4096):
        self._cache: dict[tuple, bytes] = {}
        self._max = cache_size

    def header(self, src: str, dst: str, sport: int, dport: int, tos: int, n: int) -> bytes:
        key = (src, dst, sport, dport, tos, n)
        h = self._cache.get(key)
        if h is None:
            if len(self._cache) >= self._max:
                self._cache.clear()
            h = self._cache[key] = _headers(src, dst, sport, dport, tos, n)
        return h

    def frame(self, src: str, dst: str, sport: int, dport: int, tos: int, payload: bytes) -> bytes:
        return self.header(src, dst, sport, dport, tos, len(payload)) + payload


def _headers(src: str, dst: str, sport: int, dport: int, tos: int, n: int) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    ulen = 8 + n
    udp = codec("udp").encode({"sport": sport, "dport": dport, "length": ulen, "checksum": 0})
    if a.version == 4 and b.version == 4:
        f = {"version": 4, "ihl": 5, "dscp": tos >> 2, "ecn": tos & 3, "total_length": 20 + ulen,
             "identification": 0, "flags": 2, "ttl": 64, "protocol": 17, "src": int(a), "dst": int(b)}
        f["checksum"] = ipv4_checksum(codec("ipv4").encode(f))
        return _ETH4 + codec("ipv4").encode(f) + udp
    if a.version == 4:
        a = ipaddress.IPv6Address(f"::ffff:{a}")
    if b.version == 4:
        b = ipaddress.IPv6Address(f"::ffff:{b}")
    f = {"version": 6, "dscp": tos >> 2, "ecn": tos & 3, "payload_length": ulen, "next_header": 17,
         "hop_limit": 64, "src": int(a), "dst": int(b)}
    return _ETH6 + codec("ipv6").encode(f) + udp


class PcapCapture:
    """A capture callback writing a pcap (linktype 1). ``target`` is a path or a binary file
    object (left open); use as a context manager or call :meth:`close`."""

    def __init__(self, target: Union[str, os.PathLike, IO[bytes]]):
        from scapy.utils import RawPcapWriter

        self._own = isinstance(target, (str, os.PathLike))
        self._w: Any = RawPcapWriter(os.fspath(target) if self._own else target, linktype=1,
                                     snaplen=65535, bufsz=1 << 16)
        self._w.write_header(None)  # a valid pcap even when nothing was forwarded
        self.frames = 0

    def __call__(self, ts: float, frame: bytes) -> None:
        sec = int(ts)
        self._w.write_packet(frame, sec=sec, usec=int((ts - sec) * 1e6))
        self.frames += 1

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        if self._own:
            self._w.close()
        else:
            self._w.flush()

    def __enter__(self) -> "PcapCapture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
