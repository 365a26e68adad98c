"""IP address literals and ``ADDR:PORT`` text, as every part of ``uet`` writes them: the command
line, the live endpoint, the relay. No sockets are opened here."""

from __future__ import annotations

import ipaddress
import socket

from . import UET_UDP_PORT


def family_of(host: str) -> int:
    return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET


def is_wildcard(host: str) -> bool:
    return ipaddress.ip_address(host).is_unspecified


def canonical(host: str) -> str:
    """The address text the PDS core uses (and the kernel reports): compressed, no scope."""
    return str(ipaddress.ip_address(host.split("%", 1)[0]))


def loopback_of(family: int) -> str:
    return "::1" if family == socket.AF_INET6 else "127.0.0.1"


def parse_hostport(text: str, default_port: int = UET_UDP_PORT) -> tuple[str, int]:
    """``ADDR:PORT``, ``[V6ADDR]:PORT``, ``ADDR`` or a bare IPv6 address -> (address, port). A
    host name is resolved."""
    t = text.strip()
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else default_port
    elif t.count(":") == 1:
        host, p = t.split(":")
        port = int(p)
    else:
        host, port = t, default_port
    if host in ("", "*"):
        host = "0.0.0.0"
    elif host == "localhost":
        host = "127.0.0.1"
    try:
        host = canonical(host)
    except ValueError:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        host = canonical(infos[0][4][0])
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range: {port}")
    return host, port
