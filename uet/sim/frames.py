"""Ethernet/IPv4/UDP framing for the simulated fabric, and a pcap writer.

The frames are byte-for-byte what :func:`uet.wire.build.udp_frame` builds (fixed locally
administered MACs, IPv4 DF, TTL 64, identification 0, UDP checksum 0) - the tests check that -
but precomputed per address pair, because the simulator frames every datagram.

A CSIG tag (facts E.4, uet.cms.csig CMS-C1) is an L2 tag between the MAC addresses and the
EtherType, as an 802.1Q tag is: :func:`insert_tag` puts the TPID and the 16 tag bits after the
12 MAC bytes (the frame's own EtherType follows as the inner one), :func:`strip_tag` takes them out.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, BinaryIO, Callable

from ..cms.csig import CSIG_ETHERTYPE, TAG_LEN
from ..pds.datagram import DatagramMeta

from ..wire.build import trim as _wire_trim
from ..wire.build import udp_headers

ETH_LEN, IP_LEN, UDP_LEN = 14, 20, 8
HDRS = ETH_LEN + IP_LEN + UDP_LEN
_UDP = struct.Struct("!HHHH")  # sport, dport, length, checksum (0)


def _fold(s: int) -> int:
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


class Framer:
    """Builds and parses frames between two hosts' addresses (IPv4).

    The 42 header bytes depend only on (addresses, ports, DSCP, ECN, payload length), so they are
    built once per such tuple and cached; a frame is then one concatenation. The Ethernet and IP
    part does not depend on the ports (UDP checksum 0), so it is built once per the rest and the
    8 UDP bytes added: a host sprays over tens of entropy values (source ports)."""

    def __init__(self) -> None:
        self._names: dict[bytes, str] = {}
        self._hdrs: dict[tuple, bytes] = {}
        self._ip: dict[tuple, bytes] = {}  # Ethernet + IPv4 headers per (src, dst, dscp, ecn, len)

    def header(self, src: str, dst: str, sport: int, dport: int, dscp: int, ecn: int,
               payload_len: int) -> bytes:
        """Ethernet + IPv4 + UDP header of a frame carrying ``payload_len`` UDP payload bytes."""
        k = (src, dst, sport, dport, dscp, ecn, payload_len)
        h = self._hdrs.get(k)
        if h is None:
            ik = (src, dst, dscp, ecn, payload_len)
            ip = self._ip.get(ik)
            if ip is None:
                full = udp_headers(payload_len, src=src, dst=dst, sport=sport, dport=dport,
                                   dscp=dscp, ecn=ecn)
                ip = full[:ETH_LEN + IP_LEN]
                self._names[full[26:30]] = src
                self._names[full[30:34]] = dst
                if len(self._ip) >= 1 << 14:
                    self._ip.clear()
                self._ip[ik] = ip
            h = ip + _UDP.pack(sport, dport, UDP_LEN + payload_len, 0)
            if len(self._hdrs) >= 1 << 16:
                self._hdrs.clear()
            self._hdrs[k] = h
        return h

    def frame(self, payload: bytes, src: str, dst: str, sport: int, dport: int, dscp: int,
              ecn: int) -> bytes:
        return self.header(src, dst, sport, dport, dscp, ecn, len(payload)) + payload

    def parse(self, frame: bytes) -> tuple[str, str, int, int, int, int, bytes]:
        """(src, dst, sport, dport, dscp, ecn, udp payload) of a frame built by :meth:`frame`."""
        tos = frame[15]
        sp, dp = frame[26:30], frame[30:34]
        src = self._names.get(sp) or socket.inet_ntoa(sp)
        dst = self._names.get(dp) or socket.inet_ntoa(dp)
        return (src, dst, (frame[34] << 8) | frame[35], (frame[36] << 8) | frame[37], tos >> 2,
                tos & 3, frame[HDRS:])


class FrameCache:
    """A simulator's two framing memos. Out: per metadata object (an endpoint reuses one per
    entropy value and direction and never changes it), what the driver derives from it
    (``facts(meta, header)``: its link, its path hash ...) and its headers by payload length. In:
    the metadata of an arriving frame per its 42 header bytes.

    A driver may carry a frame as its two parts, the 42 header bytes and the UDP payload, and join
    them only when it must (a capture, a change to the whole frame): :meth:`headers` and
    :meth:`meta` take the parts, so that a datagram is not copied into a frame and back out of it
    on its way from one host to the other."""

    def __init__(self, facts: Callable[[DatagramMeta, bytes], Any]):
        self.framer = Framer()
        self._facts = facts
        self._out: dict[int, tuple[DatagramMeta, Any, dict[int, bytes]]] = {}
        self._rx: dict[bytes, DatagramMeta] = {}

    def headers(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, Any]:
        """The 42 header bytes of the frame carrying ``data`` as ``meta`` says, and the driver's
        facts of ``meta``. The same header object comes back for the same (meta, length), so a
        dict keyed by it (:meth:`meta`) finds it by its cached hash."""
        e = self._out.get(id(meta))
        if e is None or e[0] is not meta:
            h = self.framer.header(meta.src, meta.dst, meta.sport, meta.dport, meta.dscp,
                                   meta.ecn, len(data))
            e = (meta, self._facts(meta, h), {len(data): h})
            # an entry per entropy value and direction of each PDC: 1,024 hosts spraying on 64
            # EVs both ways (fattree:16) must not thrash it
            if len(self._out) >= 1 << 18:
                self._out.clear()
            self._out[id(meta)] = e  # e holds meta, so its id cannot be reused while cached
        headers = e[2]
        h = headers.get(len(data))
        if h is None:
            h = headers[len(data)] = self.framer.header(meta.src, meta.dst, meta.sport,
                                                        meta.dport, meta.dscp, meta.ecn,
                                                        len(data))
        return h, e[1]

    def frame(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, Any]:
        """The frame carrying ``data`` as ``meta`` says, and the driver's facts of ``meta``."""
        h, facts = self.headers(data, meta)
        return h + data, facts

    def meta(self, header: bytes) -> DatagramMeta:
        """The metadata of an arriving frame, parsed from its ``header`` (its first 42 bytes:
        the IP and UDP headers count; memoized)."""
        m = self._rx.get(header)
        if m is None:
            src, dst, sport, dport, dscp, ecn, _ = self.framer.parse(header)
            m = DatagramMeta(src, dst, sport, dport, ecn, dscp)
            if len(self._rx) >= 1 << 14:
                self._rx.clear()
            self._rx[header] = m
        return m


def set_ce(frame: bytes) -> bytes:
    """Mark ECN CE (11) and fix the IPv4 header checksum (incrementally, RFC 1624: only the word
    holding the TOS byte changes)."""
    old = frame[15]
    new = old | 3
    if new == old:
        return frame
    # HC' = ~(~HC + ~m + m'), m = the 16-bit word of version/IHL and TOS
    hi = frame[14] << 8
    s = (~((frame[24] << 8) | frame[25]) & 0xFFFF) + (~(hi | old) & 0xFFFF) + (hi | new)
    csum = ~_fold(s) & 0xFFFF
    return b"".join((frame[:15], bytes((new,)), frame[16:24], csum.to_bytes(2, "big"), frame[26:]))


def trim(frame: bytes, keep: int = 256) -> bytes:
    """docs/design-notes.md "Defaults": keep the first ``keep`` bytes of the UDP payload, DSCP 11."""
    return _wire_trim(frame, keep)


def insert_tag(frame: bytes, bits: int, ethertype: int = CSIG_ETHERTYPE) -> bytes:
    """The frame with a CSIG tag (TPID ``ethertype``, then ``bits``) after its 12 MAC bytes."""
    return b"".join((frame[:12], ((ethertype << 16) | bits).to_bytes(TAG_LEN, "big"), frame[12:]))


def strip_tag(frame: bytes) -> tuple[bytes, int]:
    """(the frame without the tag :func:`insert_tag` put in, the tag's 16 bits)."""
    return frame[:12] + frame[12 + TAG_LEN:], (frame[14] << 8) | frame[15]


class PcapWriter:
    """Classic pcap with nanosecond timestamps, Ethernet linktype 1 (Scapy's raw writer)."""

    def __init__(self, fh: BinaryIO):
        from scapy.utils import RawPcapWriter

        self._w = RawPcapWriter(fh, linktype=1, nano=True, snaplen=1 << 18)
        self._w.write_header(None)

    def write(self, t: float, frame: bytes) -> None:
        ns = int(round(t * 1e9))
        self._w._write_packet(frame, linktype=1, sec=ns // 1_000_000_000, usec=ns % 1_000_000_000)

    def flush(self) -> None:
        self._w.flush()
