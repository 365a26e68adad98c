"""An endpoint's own address on one host: the UET-port rule of facts A.1 (H.1 #19) for the
commands that initiate (``uet send``, ``uet conformance``, ``uet demo``, ``uet fabric``).

Every UET datagram, requests and answers alike, goes to UDP destination port = the UET port; so
every endpoint, initiators included, receives on (its own address, UET port), and two endpoints on
one host need two addresses. What this module owns:

  OWNADDR-O1  :func:`bind_own`: the socket an endpoint receives on, bound to ``local`` when the caller
      names one, else - when the peer is on this host (or none is named) - to the first free
      loopback address: 127.0.0.2, 127.0.0.3, ... 127.0.0.254 (IPv6: ::2, ::3, ... as far as they
      exist), the peer's own address skipped; else to the route's source address towards the
      peer. Each candidate is tried by the real bind, without SO_REUSEADDR, so two processes
      never share an address and UET port silently and no other process can take the address
      between a test and the bind.
  OWNADDR-O2  a bind that fails says why in one line (:class:`LocalAddressError`, an OSError): a socket
      bound to the wildcard address holds the UET port on every address, so nobody else on this
      host can bind it ("bind the receiver to one address"); IPv6 loopback has only ::1 until
      another address is added (``ip -6 addr add ::2/128 dev lo``, root); an address in use,
      named with its port and the option that gives another (``uet recv --bind``, ``uet fabric
      --listen`` and ``--back``, ``uet send --local``), never a bare "[Errno 98]".

No trio here: the live endpoint (uet.io), the relay (uet.fabric) and the conformance peer (plain
sockets) all bind through it.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Callable, Iterator

from .addresses import canonical, family_of, is_wildcard

LOOPBACK_LAST = 254   # candidates 127.0.0.2 .. 127.0.0.254, ::2 .. ::fe
IPV6_ADD_HINT = "ip -6 addr add ::2/128 dev lo"


class LocalAddressError(OSError):
    """No address of its own could be bound for an endpoint; the message is one line (OWNADDR-O2)."""

    def __str__(self) -> str:
        return str(self.strerror)


def route_source(dest: str, port: int = 4793) -> str:
    """The local address the kernel would use to reach ``dest`` (a connected UDP socket sends
    nothing)."""
    with socket.socket(family_of(dest), socket.SOCK_DGRAM) as s:
        s.connect((dest, port))
        return canonical(s.getsockname()[0])


def is_loopback(host: str) -> bool:
    return ipaddress.ip_address(host).is_loopback


def on_this_host(host: str) -> bool:
    """Whether ``host`` is an address of this host (loopback, or one the kernel would send from
    itself: ::2 added to lo, an interface's own address)."""
    if is_loopback(host):
        return True
    try:
        return route_source(host) == canonical(host)
    except OSError:
        return False


def loopback_candidates(family: int, skip: tuple[str, ...] = ()) -> Iterator[str]:
    """OWNADDR-O1: the loopback addresses an endpoint may take, in order (127.0.0.1 and ::1 are the
    usual receivers' and are not offered)."""
    for i in range(2, LOOPBACK_LAST + 1):
        a = (str(ipaddress.IPv6Address(i)) if family == socket.AF_INET6
             else f"127.0.0.{i}")
        if a not in skip:
            yield a


def wildcard_holder(port: int, family: int) -> bool:
    """Whether a socket of this host is bound to the wildcard address at UDP ``port``
    (``/proc/net/udp`` or ``udp6``; False where that cannot be read)."""
    name = "/proc/net/udp6" if family == socket.AF_INET6 else "/proc/net/udp"
    zero = "0" * (32 if family == socket.AF_INET6 else 8)
    try:
        with open(name) as fh:
            lines = fh.read().splitlines()[1:]
    except OSError:
        return False
    want = f"{zero}:{port:04X}"
    return any(len(f := line.split()) > 1 and f[1] == want for line in lines)


def _fmt(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _wildcard_message(port: int, family: int) -> str:
    wild, lo = ("[::]", "[::1]") if family == socket.AF_INET6 else ("0.0.0.0", "127.0.0.1")
    return (f"UDP port {port} is held on every address of this host by a socket bound to "
            f"{wild}:{port} (a receiver bound to the wildcard address): bind the receiver to one "
            f"address (uet recv --bind {lo}:{port}), since every endpoint receives on its own "
            "address at the UET port (facts A.1)")


def bind_own(make: Callable[[str], socket.socket], *, port: int, local: str | None = None,
             peer: str | None = None, family: int | None = None, option: str = "--local",
             who: str = "this endpoint") -> tuple[socket.socket, str]:
    """OWNADDR-O1, OWNADDR-O2: ``(socket, its address)``; ``make(address)`` opens the socket and binds it to
    (address, ``port``), raising OSError. ``option`` names the command-line option that gives an
    address (for the messages), ``who`` the endpoint."""
    if local is not None:
        local = canonical(local)
        try:
            return make(local), local
        except OSError as exc:
            fam = family_of(local)
            if exc.errno == errno.EADDRINUSE and is_wildcard(local):
                raise LocalAddressError(exc.errno, f"{_fmt(local, port)}: UDP port {port} is "
                                        f"already bound on an address of this host (another uet "
                                        f"process?), so {who} cannot hold it on every address: "
                                        f"stop that process, or give one address or another "
                                        f"port with {option}") from None
            if exc.errno == errno.EADDRINUSE:
                if wildcard_holder(port, fam):
                    raise LocalAddressError(exc.errno, _wildcard_message(port, fam)) from None
                raise LocalAddressError(exc.errno, f"{_fmt(local, port)} is in use (another uet "
                                        f"process on this host?): {who} receives on its own "
                                        f"address at the UET port (facts A.1); stop that "
                                        f"process, or give another address with {option}") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                hint = (f" (add it as root: ip -6 addr add {local}/128 dev lo)"
                        if fam == socket.AF_INET6 and is_loopback(local) else "")
                raise LocalAddressError(exc.errno, f"{local} is not an address of this host"
                                        f"{hint}") from None
            raise
    fam = family if family is not None else (family_of(peer) if peer else socket.AF_INET)
    if peer is not None and not on_this_host(peer):
        return bind_own(make, port=port, local=route_source(peer, port or 4793), option=option,
                        who=who)
    skip = (canonical(peer),) if peer is not None else ()
    for addr in loopback_candidates(fam, skip):
        try:
            return make(addr), addr
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                if wildcard_holder(port, fam):
                    raise LocalAddressError(exc.errno, _wildcard_message(port, fam)) from None
                continue
            if exc.errno == errno.EADDRNOTAVAIL and fam == socket.AF_INET6:
                break  # only the IPv6 loopback addresses that were added exist
            raise
    if fam == socket.AF_INET6:
        raise LocalAddressError(errno.EADDRNOTAVAIL,
                                f"IPv6 loopback has only ::1 here, and {who} needs a second "
                                f"address of its own to receive at UET port {port} (facts "
                                f"A.1): add one as root ({IPV6_ADD_HINT}) or give one with "
                                f"{option}")
    raise LocalAddressError(errno.EADDRINUSE, f"no free loopback address from 127.0.0.2 to "
                            f"127.0.0.{LOOPBACK_LAST} at UDP port {port}: give one with {option}")
