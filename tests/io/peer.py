"""A hand-built UET peer on a plain UDP socket: what another implementation would send, built with
the schema codecs (uet.wire.build.uet_bytes) and the CRC-32C trailer (uet.wire.trailer), and
what it receives, decoded with uet.wire.packet.decode_uet and checked against the trailer.

Nothing here uses uet.pds or uet.io: the peer sees the live endpoint only through the wire. It
keeps facts A.1 (H.1 #19): it sends from an EV socket (its port is the entropy value) to the
server's UET port, and receives every answer on the UET port at an address of its own
(uet.ownaddr: the first free loopback address unless ``local`` names one).
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from uet import wire
from uet.ownaddr import bind_own
from uet.wire.build import uet_bytes
from uet.wire.packet import decode_uet
from uet.wire.trailer import CrcContext, with_trailer

IP_RECVTOS = 13
_spdcids = itertools.count(0x100)


def fresh_spdcid() -> int:
    """A PDC id no other test of this session uses (the target keys PDCs on address + SPDCID)."""
    return next(_spdcids)


def _udp(sport: int, dport: int, length: int) -> bytes:
    return wire.encode("udp", {"sport": sport, "dport": dport, "length": length, "checksum": 0})


@dataclass
class Answer:
    layer: dict[str, Any]      # decode_uet layer: pds, ses, crc, payload_len
    raw: bytes
    tos: int
    src: tuple[str, int]
    dst_port: int

    @property
    def pds(self) -> dict[str, Any]:
        return self.layer["pds"]

    @property
    def type_name(self) -> str:
        return self.pds["type_name"]


def _udp_socket(addr: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((addr, port))
        s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    except OSError:
        s.close()
        raise
    return s


class Peer:
    """An EV socket that sends (its port is the entropy value of everything it sends) and the
    socket at (own address, the server's UET port) that receives (A.1)."""

    def __init__(self, server: tuple[str, int], local: str | None = None):
        self.server = server
        self.uet_port = server[1]
        self.rsock, self.local = bind_own(lambda a: _udp_socket(a, server[1]), port=server[1],
                                          local=local, peer=server[0])
        self.sock = _udp_socket(self.local, 0)
        self.sport = self.sock.getsockname()[1]
        self.ctx_src = socket.inet_aton(self.local)
        self.ctx_dst = socket.inet_aton(server[0])

    def close(self) -> None:
        self.sock.close()
        self.rsock.close()

    # --- building ------------------------------------------------------------------------
    def seal(self, body: bytes) -> bytes:
        """``body`` + the CRC-32C trailer over our addresses and UDP header (docs/design-notes.md Defaults)."""
        ctx = CrcContext(self.ctx_src, self.ctx_dst, _udp(self.sport, self.server[1], 8 + len(body) + 4))
        return with_trailer(ctx, body)

    @staticmethod
    def request(psn: int, *, spdcid: int, start: int | None = None, dpdcid: int | None = None,
                ar: bool = True, retx: bool = False, rod: bool = False, payload: bytes = b"x" * 64,
                message_id: int = 1, offset: int = 0, total: int | None = None,
                job_id: int = 0) -> bytes:
        """A RUD/ROD request (B.5) with a standard SES SEND header (D.3); SYN form when ``start``
        is given (psn_offset = PSN - start), else DPDCID = ``dpdcid``. No trailer."""
        pds: dict[str, Any] = {"type": 3 if rod else 2, "next_hdr": 3, "retx": retx, "ar": ar,
                               "syn": start is not None, "psn": psn, "spdcid": spdcid}
        if start is not None:
            pds["psn_offset"] = (psn - start) & 0xFFF
        else:
            pds["dpdcid"] = dpdcid or 0
        total = len(payload) if total is None else total
        ses: dict[str, Any] = {"opcode": 5, "message_id": message_id, "request_length": total,
                               "job_id": job_id, "som": offset == 0,
                               "eom": offset + len(payload) >= total}
        if offset:
            ses["payload_length"] = len(payload)
            ses["message_offset"] = offset
        return uet_bytes(pds, ses, None, payload)

    @staticmethod
    def control(ctl: int, psn: int, *, spdcid: int, dpdcid: int | None = None,
                start: int | None = None, ar: bool = True, payload: int = 0, rod: bool = False) -> bytes:
        f: dict[str, Any] = {"type": 11, "ctl_type": ctl, "isrod": rod, "ar": ar,
                             "syn": start is not None, "psn": psn, "spdcid": spdcid, "payload": payload}
        if start is not None:
            f["psn_offset"] = (psn - start) & 0xFFF
        else:
            f["dpdcid"] = dpdcid or 0
        return uet_bytes(f)

    # --- I/O -----------------------------------------------------------------------------
    def send_raw(self, data: bytes, tos: int = 0) -> None:
        if tos:
            self.sock.sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))], 0,
                               self.server)
        else:
            self.sock.sendto(data, self.server)

    def send(self, body: bytes, tos: int = 2) -> bytes:
        """Seal and send with DSCP 0 + ECT(0) by default; returns the sealed bytes (for replays)."""
        pkt = self.seal(body)
        self.send_raw(pkt, tos)
        return pkt

    def recv(self, timeout: float = 2.0) -> Answer:
        """The next datagram at our UET port, decoded; asserts that its CRC-32C trailer
        verifies."""
        self.rsock.settimeout(timeout)
        data, anc, _flags, addr = self.rsock.recvmsg(65535, 64)
        tos = next((d[0] for lvl, kind, d in anc if lvl == socket.IPPROTO_IP and kind == socket.IP_TOS), 0)
        return self._answer(data, tos, addr)

    def _answer(self, data: bytes, tos: int, addr: tuple) -> Answer:
        ctx = CrcContext(socket.inet_aton(addr[0]), self.ctx_src,
                         _udp(addr[1], self.uet_port, 8 + len(data)))
        d = decode_uet(data, ctx, trailer="crc")
        assert d.error is None, d.error
        assert d.layer["crc"]["ok"] is True, f"bad CRC-32C trailer on {d.layer}"
        return Answer(d.layer, data, tos, addr, self.uet_port)

    def recv_all(self, quiet: float = 0.3, limit: int = 10000) -> list[Answer]:
        """Every datagram until none arrives for ``quiet`` seconds."""
        out = []
        for _ in range(limit):
            try:
                out.append(self.recv(quiet))
            except (socket.timeout, TimeoutError):
                break
        return out

    def expect(self, type_name: str, timeout: float = 2.0, **fields: Any) -> Answer:
        """The next answer of ``type_name`` whose fields match (others, e.g. coalesced ACKs, are
        skipped); fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {type_name} {fields}; saw {[a.pds for a in seen]}")
            try:
                a = self.recv(left)
            except (socket.timeout, TimeoutError):
                continue
            if a.type_name == type_name and all(a.pds.get(k) == v for k, v in fields.items()):
                return a
            seen.append(a)


async def arecv_all(peer: Peer, quiet: float = 0.3, limit: int = 100000) -> list[Answer]:
    """``Peer.recv_all`` for a test running inside trio (the endpoint shares the thread)."""
    import trio

    out: list[Answer] = []
    peer.rsock.setblocking(False)
    while len(out) < limit:
        with trio.move_on_after(quiet) as cs:
            await trio.lowlevel.wait_readable(peer.rsock)
        if cs.cancelled_caught:
            break
        while len(out) < limit:
            try:
                data, anc, _f, addr = peer.rsock.recvmsg(65535, 64)
            except BlockingIOError:
                break
            tos = next((d[0] for lvl, kind, d in anc if lvl == socket.IPPROTO_IP and kind == socket.IP_TOS), 0)
            out.append(peer._answer(data, tos, addr))
    return out


def trim(pkt: bytes, keep: int = 256) -> bytes:
    """What a trimming switch leaves of the UDP payload (C.6, docs/design-notes.md Defaults: 256 bytes)."""
    return pkt[:keep]
