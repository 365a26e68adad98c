"""Payload size per packet and the route's MTU: no IP fragments, ever (facts A.1).

What this module owns
  * ``packet_overhead``: the worst-case bytes a datagram adds around its payload, from the
    schema's header sizes (B.16, D.3-D.6, A.3, F, E.4), and ``payload_for_mtu``: the largest of
    the reference provider's payload sizes (``PAYLOAD_SIZES``: 1024, 2048, 4096, 8192) whose
    whole datagram fits a link MTU (A.1: 1024 at 1500, 8192 at 9000; loopback, MTU 65536, 8192);
  * the MTU of the route towards a peer (``route_mtu``, read from a connected UDP socket: nothing
    is sent) and of the interfaces that hold a local address (``local_mtu``, for a receiver that
    has no peer yet); ``default_payload`` puts them together for the commands' ``--mtu`` default;
  * ``set_dont_fragment``: DF on a socket (IPv4 ``IP_MTU_DISCOVER = IP_PMTUDISC_DO``, IPv6
    ``IPV6_DONTFRAG`` and ``IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DO``), so that a datagram too big for
    the route fails with EMSGSIZE instead of leaving in fragments;
  * ``too_big_line``: the one line a command prints when that happens (it names the route's MTU
    and ``--mtu``; the command exits 2, uet.io.engine IO-M1).

Choices
  * ``--mtu`` counts payload bytes per packet, as the reference's ``UET_MAX_PAYLOAD`` does (A.1):
    at least ``MIN_PAYLOAD`` (256), at most the 14-bit payload_length (D.3); every FEP of a fabric
    should use the same value (A.1).
  * A receiver bound to a wildcard address has no route yet: it takes the largest MTU of the
    interfaces that are up (what it can be sent); what it sends itself with data (read responses)
    then fails with the EMSGSIZE line on a smaller route, which ``--mtu`` settles.
  * ``uet sim`` has no interface and keeps ``SIM_PAYLOAD`` (4096) unless ``--mtu`` says otherwise.
"""

from __future__ import annotations

import errno
import os
import socket

from .addresses import canonical, family_of, is_wildcard
from .cms.csig import TAG_LEN as CSIG_TAG_LEN
from .errors import UetError
from .wire.codec import codec
from .wire.trailer import TRAILER_LEN
from .wire.uet_headers import TSS_ICV_LEN

PAYLOAD_SIZES = (1024, 2048, 4096, 8192)  # A.1: the reference provider's payload MTUs
MIN_PAYLOAD = 256                          # --mtu's floor (a payload that still fits a trim)
MAX_PAYLOAD = (1 << 14) - 1                # D.3: payload_length is 14 bits
SIM_PAYLOAD = 4096                         # uet sim: no interface to ask
IPV4_LEN, IPV6_LEN, UDP_LEN = 20, 40, 8
ENTROPY_LEN = 4  # A.1: native IP's entropy header, where UDP's 8 bytes were
EMSGSIZE = errno.EMSGSIZE

# Linux socket options the socket module does not export everywhere (linux/in.h, linux/in6.h)
IP_MTU_DISCOVER, IP_PMTUDISC_DO, IP_MTU = 10, 2, 14
IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO, IPV6_MTU, IPV6_DONTFRAG = 23, 2, 24, 62
IFF_UP = 0x1
SYS_NET = "/sys/class/net"

# what may follow the UDP header ahead of the payload: the largest of each kind (B.16)
_PDS_REQUESTS = ("pds.rud_rod_req", "pds.rud_rod_cc_req", "pds.rudi", "pds.uud")
_SES_EXTENSIONS = ("ses.atomic", "ses.cswap", "ses.rendezvous")


class MtuError(UetError, ValueError):
    """No payload size of ``PAYLOAD_SIZES`` fits the link's MTU (give ``--mtu``)."""


class DatagramTooBig(UetError):
    """A datagram the kernel refused as longer than the route's MTU (EMSGSIZE, DF set); the
    message is :func:`too_big_line`'s one line."""


def packet_overhead(*, ipv6: bool = False, tss: bool = False, csig: bool = False,
                    native_ip: bool = False) -> int:
    """The worst-case bytes of one datagram beyond its payload, from the schema's header sizes:
    the IP header (20, or 40 for IPv6), UDP (8), the CSIG tag a live fabric puts ahead of the UET
    bytes (4, E.4, when ``csig``), the largest PDS request header (16: RUD/ROD with CC state,
    B.6), the standard SES header (44, D.3) with its largest extension (36: compare-and-swap,
    D.6), and the integrity: the CRC-32C trailer (4, A.3) or, with ``tss``, the largest TSS
    header (16, with SSI, B.15) and its ICV (16, F). IPv4 without TSS: 128 bytes.
    ``native_ip``: the entropy header (4, A.1) instead of UDP's 8 (``--encap ip``)."""
    ip = IPV6_LEN if ipv6 else IPV4_LEN
    pds = max(codec(k).max_size for k in _PDS_REQUESTS)
    ses = codec("ses.std").max_size + max(codec(k).max_size for k in _SES_EXTENSIONS)
    integrity = codec("tss").max_size + TSS_ICV_LEN if tss else TRAILER_LEN
    return ip + (ENTROPY_LEN if native_ip else UDP_LEN) + (CSIG_TAG_LEN if csig else 0) + pds + ses + integrity


def payload_for_mtu(link_mtu: int, *, ipv6: bool = False, tss: bool = False,
                    csig: bool = False, native_ip: bool = False) -> int:
    """A.1: the largest of ``PAYLOAD_SIZES`` whose whole datagram (``packet_overhead`` plus the
    payload) fits ``link_mtu``: 1024 at 1500, 8192 at 9000 and on loopback (65536), 1024 at
    IPv6's minimum 1280. Raises :class:`MtuError` when not even 1024 fits (an IPv4 link of 576)."""
    room = link_mtu - packet_overhead(ipv6=ipv6, tss=tss, csig=csig, native_ip=native_ip)
    fits = [p for p in PAYLOAD_SIZES if p <= room]
    if not fits:
        raise MtuError(f"no payload size of {', '.join(map(str, PAYLOAD_SIZES))} fits an MTU of "
                       f"{link_mtu} (at most {max(room, 0)} payload bytes per packet): give --mtu "
                       f"N, at least {MIN_PAYLOAD}")
    return fits[-1]


# --- the route and the interfaces -----------------------------------------------------------

def route_mtu(peer: str, port: int = 4793) -> int:
    """The MTU of the route towards ``peer`` (its path MTU if the kernel learned a smaller one),
    read from a connected UDP socket after ``connect``: nothing is sent."""
    fam = family_of(peer)
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.connect((canonical(peer), port))
        if fam == socket.AF_INET6:
            return s.getsockopt(socket.IPPROTO_IPV6, IPV6_MTU)
        return s.getsockopt(socket.IPPROTO_IP, IP_MTU)


def _sys(name: str, what: str) -> str | None:
    try:
        with open(os.path.join(SYS_NET, name, what)) as fh:
            return fh.read().strip()
    except OSError:
        return None


def interfaces() -> list[tuple[str, int]]:
    """(name, MTU) of every interface that is up."""
    out = []
    for _, name in socket.if_nameindex():
        flags, mtu = _sys(name, "flags"), _sys(name, "mtu")
        if flags is not None and mtu is not None and int(flags, 0) & IFF_UP:
            out.append((name, int(mtu)))
    return out


def interface_addresses() -> list[tuple[str, str]]:
    """(interface name, address) of every IPv4 and IPv6 address of this host (``getifaddrs``,
    secondary addresses and addresses on loopback included; empty where libc lacks it)."""
    import ctypes
    import ctypes.util

    class _Ifaddrs(ctypes.Structure):
        pass

    _Ifaddrs._fields_ = [("next", ctypes.POINTER(_Ifaddrs)), ("name", ctypes.c_char_p),
                         ("flags", ctypes.c_uint), ("addr", ctypes.c_void_p),
                         ("netmask", ctypes.c_void_p), ("ifu", ctypes.c_void_p),
                         ("data", ctypes.c_void_p)]
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        head = ctypes.POINTER(_Ifaddrs)()
        if libc.getifaddrs(ctypes.byref(head)) != 0:
            return []
    except (OSError, AttributeError):
        return []
    out = []
    try:
        p = head
        while p:
            ifa = p.contents
            if ifa.addr:
                fam = int.from_bytes(ctypes.string_at(ifa.addr, 2), "little")  # sa_family
                name = (ifa.name or b"").decode(errors="replace").split(":", 1)[0]  # eth0:1
                if fam == socket.AF_INET:  # sockaddr_in: family, port, 4 address bytes
                    out.append((name, socket.inet_ntop(fam, ctypes.string_at(ifa.addr, 8)[4:])))
                elif fam == socket.AF_INET6:  # sockaddr_in6: family, port, flowinfo, 16 bytes
                    out.append((name, socket.inet_ntop(fam, ctypes.string_at(ifa.addr, 24)[8:])))
            p = ifa.next
    finally:
        libc.freeifaddrs(head)
    return out


def local_mtu(addr: str) -> int | None:
    """The MTU for a receiver bound to ``addr``: the interface that holds it, or for a wildcard
    the largest MTU of the interfaces that are up (module docstring); None when unknown."""
    up = dict(interfaces())
    if is_wildcard(addr):
        return max(up.values(), default=None)
    want = canonical(addr)
    return next((up[name] for name, a in interface_addresses() if a == want and name in up),
                None)


def default_payload(*, peer: str | None = None, bind: str | None = None, tss: bool = False,
                    csig: bool = False, port: int = 4793,
                    native_ip: bool = False) -> tuple[int, int]:
    """(payload bytes per packet, the link MTU it was chosen for): ``payload_for_mtu`` of the
    route towards ``peer``, or of the interface of ``bind`` (:func:`local_mtu`) when there is no
    peer. Raises :class:`MtuError` (``--mtu`` settles it) or OSError (no route)."""
    addr = peer if peer is not None else bind
    if addr is None:
        raise ValueError("give a peer or a bind address")
    mtu = route_mtu(addr, port) if peer is not None else local_mtu(addr)
    if mtu is None:
        raise MtuError(f"cannot tell the MTU of the interface of {addr}: give --mtu N")
    return payload_for_mtu(mtu, ipv6=family_of(addr) == socket.AF_INET6, tss=tss, csig=csig,
                           native_ip=native_ip), mtu


# --- sockets ----------------------------------------------------------------------------------

def set_dont_fragment(sock: socket.socket) -> None:
    """DF on every datagram of ``sock`` (A.1): a datagram longer than the route's MTU fails with
    EMSGSIZE; the kernel never fragments it."""
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO)
        sock.setsockopt(socket.IPPROTO_IPV6, IPV6_DONTFRAG, 1)
    else:
        sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)


def too_big_line(size: int, dest: str, *, payload: int | None, tss: bool = False,
                 csig: bool = False) -> str:
    """The one line for a datagram of ``size`` bytes (UDP payload) that did not fit the route to
    ``dest`` (EMSGSIZE): the route's MTU, the ``--mtu`` in force and what would fit."""
    try:
        mtu: int | None = route_mtu(dest)
    except OSError:
        mtu = None
    v6 = family_of(dest) == socket.AF_INET6
    whole = size + (IPV6_LEN if v6 else IPV4_LEN) + UDP_LEN
    where = f"the MTU {mtu} of the route to {dest}" if mtu else f"the route to {dest}"
    hint = ""
    if mtu:
        try:
            hint = f" ({payload_for_mtu(mtu, ipv6=v6, tss=tss, csig=csig)} fits)"
        except MtuError:
            hint = ""
    now = f"--mtu {payload}" if payload else "--mtu"
    return (f"a datagram of {whole} bytes does not fit {where} (DF, no IP fragments, A.1): "
            f"{now} is too large for this route; give a smaller --mtu{hint}")
