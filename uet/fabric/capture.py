"""Capture of what the live fabric forwards: Ethernet/IP/UDP frames around the actual UDP payload,
with the addresses and ports of the hop the datagram is sent on, and a pcap writer.

Headers are encoded with the schema's codecs (``eth``, ``ipv4``/``ipv6``, ``udp``), with the fixed
values :func:`uet.wire.build.udp_frame` uses: the project's locally administered MACs, IPv4
identification 0, DF set, TTL (hop limit) 64, UDP checksum 0 (docs/design-notes.md "Defaults"). A frame is
byte-for-byte what ``udp_frame(payload, ..., trailer=False)`` builds; headers are cached per
(addresses, ports, TOS, length) because the fabric frames every datagram it forwards.

With CSIG (E.4) the relay's datagrams start with a 4-byte tag; :meth:`FrameBuilder.tagged_frame`
shows it as the L2 tag it stands for (TPID, 16 bits, then the inner EtherType), as the simulator's
pcaps do.

pcaps: linktype 1 (Ethernet), microsecond timestamps from the wall clock, written with scapy's
:class:`~scapy.utils.RawPcapWriter`.
"""

from __future__ import annotations

import ipaddress
import os
from typing import IO, Any, Callable, Union

from ..cms.csig import TAG_LEN
from ..wire.build import udp_headers

CaptureFn = Callable[[float, bytes], None]
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

    def tagged_frame(self, src: str, dst: str, sport: int, dport: int, tos: int,
                     data: bytes) -> bytes:
        """The frame of ``data`` = a CSIG tag (TPID and 16 bits, uet.cms.csig CMS-C1) then the UDP
        payload, as the relay sends it: the tag becomes an L2 tag after the 12 MAC bytes, the
        frame's EtherType its inner one, and IP and UDP carry the payload alone."""
        h = self.header(src, dst, sport, dport, tos, len(data) - TAG_LEN)
        return b"".join((h[:12], data[:TAG_LEN], h[12:], data[TAG_LEN:]))


def _headers(src: str, dst: str, sport: int, dport: int, tos: int, n: int) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version != b.version:  # a v4 sender behind a v6 relay: show both as IPv6 (v4-mapped)
        src, dst = (str(x if x.version == 6 else ipaddress.IPv6Address(f"::ffff:{x}")) for x in (a, b))
    return udp_headers(n, src=src, dst=dst, sport=sport, dport=dport, dscp=tos >> 2, ecn=tos & 3)


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
