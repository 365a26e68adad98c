"""Raw IP sockets for native IP (facts A.1 "Native IP"; ``--encap ip``): one socket of IP
protocol 253 (``ip_proto``) per endpoint, for the live endpoint (uet.io.native_ip) and the
conformance peer alike.

  RAWIP-R1  the socket is bound to the endpoint's own address: a raw socket receives every datagram of
      its protocol to the host, and the bound address makes the kernel hand it only those to
      that address (several processes on one host: distinct addresses, uet.ownaddr);
  RAWIP-R2  the kernel builds the IP header: DF (uet.mtu.set_dont_fragment: never fragments, A.1), the
      TOS / traffic class per datagram by control message, the bound source address;
  RAWIP-R3  IPv4 hands over the IP header with each datagram (:func:`uet.wire.ipencap.parse_ipv4`);
      IPv6 does not: destination and traffic class come as ancillary data (IPV6_RECVPKTINFO,
      IPV6_RECVTCLASS);
  RAWIP-R4  without root or CAP_NET_RAW, :func:`raw_socket` raises :class:`RawDenied`, whose message
      is the one line the commands print (exit 2).
"""

from __future__ import annotations

import socket
import struct
from typing import Iterator

from . import UET_IP_PROTO
from .addresses import canonical, family_of
from .errors import UetError
from .mtu import set_dont_fragment
from .sockopt import set_buffer
from .native.sockbatch import ANC_SIZE, parse_anc
from .wire.ipencap import parse_ipv4

SO_RCVBUFFORCE, SO_SNDBUFFORCE = 33, 32
IP_TOS = socket.IP_TOS
IPV6_RECVPKTINFO, IPV6_RECVTCLASS, IPV6_TCLASS = 49, 66, 67


class RawDenied(UetError, PermissionError):
    """Raw sockets need root or CAP_NET_RAW (RAWIP-R4)."""


def raw_socket(local: str, *, ip_proto: int = UET_IP_PROTO, rcvbuf: int = 8 << 20,
               sndbuf: int = 4 << 20, tos: int = 46 << 2) -> socket.socket:
    """A non-blocking raw socket of protocol ``ip_proto`` bound to ``local`` (RAWIP-R1) with DF, the
    receive metadata (IPv6: destination and traffic class as ancillary data; IPv4: the header
    comes with the datagram) and large buffers; :class:`RawDenied` without the privilege (RAWIP-R4)."""
    fam = family_of(local)
    try:
        s = socket.socket(fam, socket.SOCK_RAW, ip_proto)
    except PermissionError:
        raise RawDenied("--encap ip needs root or CAP_NET_RAW (raw sockets)") from None
    try:
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVTCLASS, 1)
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_TCLASS, tos)
        else:
            s.setsockopt(socket.IPPROTO_IP, IP_TOS, tos)
        set_dont_fragment(s)
        set_buffer(s, rcvbuf, SO_RCVBUFFORCE, socket.SO_RCVBUF)
        set_buffer(s, sndbuf, SO_SNDBUFFORCE, socket.SO_SNDBUF)
        s.bind((local, 0))
        s.setblocking(False)
    except BaseException:
        s.close()
        raise
    return s


def recv_raw(sock: socket.socket, *, local: str,
             bufsize: int = 65535 + 60) -> tuple[str, str, int, bytes | memoryview] | None:
    """One datagram of ``sock`` (non-blocking): (source, destination, TOS, IP payload), None when
    none waits; a datagram that is not IPv4 comes out with empty addresses (RAWIP-R3). ``local`` is the
    destination when an IPv6 datagram names none."""
    try:
        if sock.family == socket.AF_INET6:
            data, anc, _flags, addr = sock.recvmsg(bufsize, ANC_SIZE)
            tos, dst = parse_anc(anc)
            return canonical(addr[0].split("%", 1)[0]), dst or local, tos, data
        pkt = sock.recv(bufsize)
    except (BlockingIOError, InterruptedError):
        return None
    got = parse_ipv4(pkt)
    return got if got is not None else ("", "", 0, b"")


class RawBatch:
    """Up to ``limit`` non-blocking reads of one raw socket, each as :func:`recv_raw` gives it,
    for a ``for`` loop (the one read loop of the endpoint's and the relay's raw sockets). It stops
    when nothing waits, after ``limit`` reads, or when the socket was closed under it (then
    ``closed``); a failed read is counted in ``errors`` and uses up a read. ``reads``: the reads
    made so far, failed ones included."""

    def __init__(self, sock: socket.socket, *, local: str, bufsize: int, limit: int) -> None:
        self.sock, self.local, self.bufsize, self.limit = sock, local, bufsize, limit
        self.reads = self.errors = 0
        self.closed = False

    def __iter__(self) -> Iterator[tuple[str, str, int, bytes | memoryview]]:
        while self.reads < self.limit:
            try:
                got = recv_raw(self.sock, local=self.local, bufsize=self.bufsize)
            except OSError:
                if self.sock.fileno() == -1:
                    self.closed = True
                    return
                self.errors += 1
                self.reads += 1
                continue
            if got is None:
                return
            self.reads += 1
            yield got


def tos_cmsg(family: int, tos: int) -> tuple[int, int, bytes]:
    """The control message that sets one datagram's TOS / traffic class (RAWIP-R2)."""
    if family == socket.AF_INET6:
        return (socket.IPPROTO_IPV6, IPV6_TCLASS, struct.pack("i", tos))
    return (socket.IPPROTO_IP, IP_TOS, struct.pack("i", tos))
