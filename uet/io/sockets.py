"""UDP socket plumbing for the live endpoint (no trio here): options, per-packet TOS, receive
metadata. Linux constants that the :mod:`socket` module does not export are spelled out.

What the options do, and what was measured on this machine (Linux 6.x):

* IPv4 zero checksum (docs/design-notes.md "Defaults"): ``SO_NO_CHECK`` (SOL_SOCKET, 11) makes the kernel send
  UDP checksum 0. Receiving a zero checksum needs nothing on IPv4 (RFC 768: 0 = not computed).
* IPv6 zero checksum: ``UDP_NO_CHECK6_TX`` (SOL_UDP, 101) sends checksum 0. RFC 8200 forbids it
  unless the receiver opts in (RFC 6936), and Linux enforces that even on loopback: a zero-checksum
  datagram to ``::1`` is dropped (counted in Udp6 InCsumErrors) unless the *receiving* socket set
  ``UDP_NO_CHECK6_RX`` (SOL_UDP, 102). Our sockets set both, so two uet endpoints talk with checksum 0.
  A peer that does not opt in drops our zero-checksum datagrams; ``zero_checksum=False`` then lets
  the kernel compute a real checksum ("a computed checksum where zero is not allowed"). The
  CRC-32C trailer is unaffected: it takes the UDP checksum as 0 whatever is on the wire.
* DSCP and ECN per packet: a socket's default TOS/TCLASS is set with ``IP_TOS``/``IPV6_TCLASS``
  to the value most of its packets use (data sockets: DSCP 0 + ECT(0); the UET-port socket:
  DSCP 46 + Not-ECT); a packet that needs another value goes out with ``sendmsg`` and an
  ``IP_TOS``/``IPV6_TCLASS`` control message (Linux keeps the ECN bits for UDP).
* DSCP and ECN on receive: ``IP_RECVTOS``/``IPV6_RECVTCLASS`` give the TOS byte of each datagram
  as ancillary data of ``recvmsg``.
* Receive address of a wildcard-bound socket: ``IP_PKTINFO``/``IPV6_RECVPKTINFO`` give the
  destination address (the CRC-32C trailer covers it); answers then name their source address
  with the same control message so that the peer sees (and checks the trailer against) the address
  it sent to.
* Buffers: ``SO_RCVBUFFORCE``/``SO_SNDBUFFORCE`` (root) or ``SO_RCVBUF``/``SO_SNDBUF`` (capped by
  net.core.rmem_max/wmem_max) so that a whole send window fits in the receive queue.
* No IP fragments (facts A.1): every socket sets DF (``uet.mtu.set_dont_fragment``: IPv4
  ``IP_MTU_DISCOVER = IP_PMTUDISC_DO``, IPv6 ``IPV6_DONTFRAG``), so a datagram longer than the
  route's MTU fails with EMSGSIZE (uet.io.engine IO-M1) instead of leaving in fragments.
* Batches (issue 15): the engine reads with ``recvmmsg`` and sends with ``sendmmsg`` (one system
  call per batch, through cffi) where :mod:`uet.native.sockbatch` has its C twin (IPv4); the
  reference there is the per-datagram ``recvmsg`` / ``sendto`` / ``sendmsg`` above.
"""

from __future__ import annotations

import socket
import struct

from ..addresses import canonical, family_of, is_wildcard, loopback_of, parse_hostport  # noqa: F401
# the local address the kernel would use to reach a destination (a connected socket sends nothing)
from ..ownaddr import route_source as source_for  # noqa: F401
from ..mtu import set_dont_fragment
from ..sockopt import set_buffer
# (TOS byte, destination address or None) from recvmsg ancillary data: one reader, with the
# batched receive that uses it (uet.native.sockbatch)
from ..native.sockbatch import ANC_SIZE, parse_anc  # noqa: F401

SO_NO_CHECK = 11
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
SOL_UDP = 17
UDP_NO_CHECK6_TX = 101
UDP_NO_CHECK6_RX = 102
IP_TOS = socket.IP_TOS  # 1
IP_PKTINFO = 8
IP_RECVTOS = 13
IPV6_RECVPKTINFO = 49
IPV6_PKTINFO = 50
IPV6_RECVTCLASS = 66
IPV6_TCLASS = 67
IPPROTO_IP = socket.IPPROTO_IP
IPPROTO_IPV6 = socket.IPPROTO_IPV6


def udp_socket(host: str, port: int, *, tos: int = 0, rcvbuf: int = 0, sndbuf: int = 0,
               zero_checksum: bool = True, reuse: bool = False) -> socket.socket:
    """A non-blocking UDP socket bound to (host, port) with the options above. ``tos`` is the
    default TOS byte (DSCP << 2 | ECN) of what it sends."""
    fam = family_of(host)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            # v4-mapped addresses would change what the CRC-32C trailer covers: IPv6 sockets
            # speak IPv6 only
            s.setsockopt(IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.setsockopt(IPPROTO_IPV6, IPV6_RECVTCLASS, 1)
            s.setsockopt(IPPROTO_IPV6, IPV6_TCLASS, tos)
            if zero_checksum:
                s.setsockopt(SOL_UDP, UDP_NO_CHECK6_TX, 1)
            # accept zero checksums from peers in any case (RFC 6936 opt-in)
            s.setsockopt(SOL_UDP, UDP_NO_CHECK6_RX, 1)
            if is_wildcard(host):
                s.setsockopt(IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
        else:
            s.setsockopt(IPPROTO_IP, IP_RECVTOS, 1)
            s.setsockopt(IPPROTO_IP, IP_TOS, tos)
            if zero_checksum:
                s.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
            if is_wildcard(host):
                s.setsockopt(IPPROTO_IP, IP_PKTINFO, 1)
        set_dont_fragment(s)
        set_buffer(s, rcvbuf, SO_RCVBUFFORCE, socket.SO_RCVBUF)
        set_buffer(s, sndbuf, SO_SNDBUFFORCE, socket.SO_SNDBUF)
        s.bind((host, port))
        s.setblocking(False)
    except BaseException:
        s.close()
        raise
    return s


def tos_cmsg(family: int, tos: int) -> tuple[int, int, bytes]:
    """The control message that sets one datagram's TOS / traffic class."""
    if family == socket.AF_INET6:
        return (IPPROTO_IPV6, IPV6_TCLASS, struct.pack("i", tos))
    return (IPPROTO_IP, IP_TOS, struct.pack("i", tos))


def src_cmsg(family: int, src: str) -> tuple[int, int, bytes]:
    """The control message that names one datagram's source address (wildcard-bound sockets)."""
    if family == socket.AF_INET6:
        return (IPPROTO_IPV6, IPV6_PKTINFO, socket.inet_pton(socket.AF_INET6, src) + bytes(4))
    return (IPPROTO_IP, IP_PKTINFO, bytes(4) + socket.inet_pton(socket.AF_INET, src) + bytes(4))
