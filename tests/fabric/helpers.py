"""Plain UDP sockets and hand-built UET packets for the live-fabric tests."""

from __future__ import annotations

import socket
import struct

import trio

from uet.wire.build import uet_bytes
from uet.wire.trailer import CrcContext, trailer_ok, with_trailer

LO = "127.0.0.1"   # the receivers'
S = "127.0.0.20"   # the senders' (facts A.1: every endpoint an address of its own; the relay
                   # takes the first free of 127.0.0.2, 127.0.0.3, ...)
IP_RECVTOS = 13


def fam(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def udp(host: str = LO, tos: int | None = None, rcvbuf: int = 4 << 20,
        port: int = 0) -> socket.socket:
    """A non-blocking UDP socket on (``host``, ``port``) that reports the TOS of what it
    receives."""
    s = socket.socket(fam(host), socket.SOCK_DGRAM)
    if fam(host) == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, 66, 1)  # IPV6_RECVTCLASS
        s.setsockopt(socket.SOL_UDP, 102, 1)      # UDP_NO_CHECK6_RX: the relay sends checksum 0
        if tos is not None:
            s.setsockopt(socket.IPPROTO_IPV6, 67, tos)
    else:
        s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        if tos is not None:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)  # SO_RCVBUFFORCE (root)
    s.bind((host, port))
    s.setblocking(False)
    return s


def send_tos(s: socket.socket, data: bytes, dest: tuple, tos: int) -> None:
    if s.family == socket.AF_INET6:
        s.sendmsg([data], [(socket.IPPROTO_IPV6, 67, struct.pack("i", tos))], 0, dest)
    else:
        s.sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))], 0, dest)


def ctx(src: str, sport: int, dst: str, dport: int, n: int) -> CrcContext:
    """The trailer coverage of an n-byte UET datagram (trailer included) on this hop."""
    hdr = struct.pack("!HHHH", sport, dport, 8 + n, 0)
    return CrcContext(socket.inet_pton(fam(src), src), socket.inet_pton(fam(dst), dst), hdr)


def sealed(body: bytes, src: tuple, dst: tuple) -> bytes:
    """``body`` + its CRC-32C trailer for the hop src -> dst (addresses and ports)."""
    return with_trailer(ctx(src[0], src[1], dst[0], dst[1], len(body) + 4), body)


def crc_ok(data: bytes, src: tuple, dst: tuple) -> bool:
    return trailer_ok(ctx(src[0], src[1], dst[0], dst[1], len(data)), data)


def request(psn: int, payload: int) -> bytes:
    """A RUD request (B.5) without SES header, ``payload`` bytes after it; psn marks it."""
    return uet_bytes({"type": 2, "next_hdr": 0, "psn": psn, "spdcid": 1, "dpdcid": 2},
                     payload=bytes(range(256)) * (payload // 256) + bytes(payload % 256))


def ack(cack: int) -> bytes:
    return uet_bytes({"type": 7, "cack_psn": cack, "spdcid": 2, "dpdcid": 1})


def psn_of(data: bytes) -> int:
    return int.from_bytes(data[4:8], "big")


def tos_of(anc: list) -> int:
    for level, kind, d in anc:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            return d[0]
        if level == socket.IPPROTO_IPV6 and kind == 67:
            return struct.unpack("i", d[:4])[0] & 0xFF
    raise AssertionError(f"no TOS in {anc}")


def drain(s: socket.socket) -> list[tuple[bytes, int, tuple]]:
    """Everything queued on ``s`` now: (data, tos, source)."""
    out = []
    while True:
        try:
            d, anc, _, a = s.recvmsg(70000, 128)
        except BlockingIOError:
            return out
        out.append((d, tos_of(anc), a))


#: how long a relay test may wait before it is called hung: a guard, not a budget (a loaded
#: machine may take many times what a quiet one does)
HANG_GUARD_S = 60.0


async def collect(s: socket.socket, n: int) -> list[tuple[bytes, int, tuple]]:
    """Wait for ``n`` datagrams on ``s`` (the caller bounds it with fail_after)."""
    out: list = []
    while len(out) < n:
        await trio.lowlevel.wait_readable(s)
        out += drain(s)
    return out


async def until(pred, poll: float = 0.005) -> None:
    while not pred():
        await trio.sleep(poll)
