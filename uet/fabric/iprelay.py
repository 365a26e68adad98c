"""The live fabric for native IP (facts A.1 "Native IP", A.3; issue 27 item 1; ``uet fabric
--encap ip``, ``uet demo --encap ip``): the relay of :mod:`uet.fabric.relay` with UET directly in
IP protocol 253 behind the 4-byte entropy header, on raw sockets (uet.rawip).

  FABRIC-V1  The relay stands between two addresses as the UDP one does: it receives on a raw socket
      bound to its front address (senders send there) and one bound to its back address (the
      receiver's answers come there; the same socket when they are one address), and sends from
      its own address on the other side to the other end's address. It still binds the UDP
      sockets of the UDP relay at the UET port (never read here): they hold its addresses
      against another process (uet.ownaddr) and a UDP datagram is not relayed.
  FABRIC-V2  A flow is one sender (address, EV); the EV comes from the entropy header and picks the
      path, in both directions, as the UDP source port does for UDP. On the back side the flows
      are told apart by the EV alone: a flow whose EV another flow already has there gets another
      one (``entropy_remapped``), written into the entropy header on the way to the receiver and
      mapped back in its answers' (the trailer changed by the same difference, CRC being affine).
  FABRIC-V3  What leaves is the IP payload as it arrived, after what its path did to it (loss, trim:
      the first ``trim_bytes`` of the IP payload and DSCP 11, ECN, duplication, corruption), its
      trailer recomputed for the hop it leaves on (A.3's native coverage: source and destination
      addresses, then the IP payload) when it verified for the hop it came on (else unchanged,
      ``crc_bad``); TSS packets (their ICV replaces it) and trimmed ones carry none
      (``crc_skipped``). The TOS (DSCP and ECN) is kept, set per datagram by control message.
  FABRIC-V4  The capture shows Ethernet + IPv4/IPv6 protocol 253 frames (what
      :func:`uet.wire.build.native_ip_frame` builds), at the same tap as the UDP relay's.
  FABRIC-V5  Not here: CSIG tags (the endpoint's native-IP path reads none; a ValueError) and a wildcard
      front (a raw socket bound to it would take every protocol-253 datagram of the host).
"""

from __future__ import annotations

import socket
from functools import partial
from typing import Any, Callable

import trio

from .. import UET_IP_PROTO, native
from ..addresses import canonical as _canon
from ..addresses import family_of
from ..rawip import RawBatch, raw_socket
from ..wire.build import DSCP_TRIMMED, ethernet_header, ip_header
from ..wire.ipencap import ENTROPY_LEN, native_ip_seed, entropy_header, entropy_of
from ..wire.trailer import TRAILER_LEN
from .paths import ETH_LEN, FWD, REV, UDP_LEN, FabricConfig, Link, flow_rng
from .relay import BATCH, RECV_SIZE, RELEASE_EVERY, TOS_CONTROL, Fabric, Flow, Hop

IP_HEADER = {socket.AF_INET: 20, socket.AF_INET6: 40}


def _is_tss(data: bytes) -> bool:
    return len(data) > ENTROPY_LEN and data[ENTROPY_LEN] >> 3 == 1  # B.15: no trailer


def with_entropy(data: bytes, ev: int) -> bytes:
    """FABRIC-V2: ``data`` (an IP payload) with entropy value ``ev``; a trailer it carries changes by
    the same difference (CRC is affine), so a right one stays right and a wrong one wrong."""
    head = entropy_header(ev)[:2]
    out = head + data[2:]
    if _is_tss(data) or len(data) < ENTROPY_LEN + TRAILER_LEN:
        return out
    n = len(data) - TRAILER_LEN
    diff = bytes(a ^ b for a, b in zip(head, data[:2])) + bytes(n - 2)
    mask = native.crc32c(diff) ^ native.crc32c(bytes(n))
    t = int.from_bytes(data[-TRAILER_LEN:], "big") ^ mask
    return out[:-TRAILER_LEN] + t.to_bytes(TRAILER_LEN, "big")


class IpHop(Hop):
    """One direction of one flow over native IP: the trailer's context is the two addresses
    (A.3), and ``ev_out`` the EV the datagram leaves with (FABRIC-V2)."""

    __slots__ = ("ev_out",)

    def _seeds(self, host: str, port: int, n: int) -> tuple[int, int]:
        """A.3, native coverage: the two addresses alone (the EV is in the payload)."""
        return native_ip_seed(host, self.in_dst), native_ip_seed(self.src, self.dst)

    def as_arrived(self, data: bytes, tos: int) -> bytes:
        """``data`` (as sent on) with the EV and the trailer it arrived with, for the capture."""
        n = len(data)
        ev = self.src_addr[1] if self.src_addr else self.ev_out
        if tos >> 2 == DSCP_TRIMMED or _is_tss(data) or n < ENTROPY_LEN + TRAILER_LEN:
            return data if ev == self.ev_out else ev.to_bytes(2, "big") + data[2:]
        e = self.crc.get((self.src_addr, n))
        if e is not None:
            data = data[:-4] + (int.from_bytes(data[-4:], "big") ^ e[1]).to_bytes(4, "big")
        return data if ev == self.ev_out else with_entropy(data, ev)


def ip_hop(sock: socket.socket, dest: str, link: Link, rng: Any, *, ev_out: int, in_dst: str,
           src: str, uet_port: int, verify: bool) -> IpHop:
    hop = IpHop(sock, (dest, 0), link, rng, TOS_CONTROL, in_dst=in_dst, in_dport=uet_port,
                src=src, sport=ev_out, verify=verify)
    hop.ev_out = ev_out
    return hop


class IpFabric(Fabric):
    """The live fabric over native IP (FABRIC-V1 to FABRIC-V5); used as :class:`Fabric` is (``open_fabric``
    with ``encap="ip"``)."""

    def __init__(self, listen: tuple[str | None, int] | None, to: tuple[str, int],
                 config: FabricConfig | None = None, capture: Any = None, *,
                 ip_proto: int = UET_IP_PROTO):
        if config is not None and config.csig:
            raise ValueError("--csig: the native-IP relay carries no CSIG tags (--encap udp)")
        super().__init__(listen, to, config, capture)  # FABRIC-V1: the UDP sockets hold the addresses
        self.raw_back: socket.socket | None = None
        try:
            if self._front_wild:
                raise ValueError(f"--listen {self.listen_host}: the native-IP relay needs an "
                                 "address of its own, not the wildcard (FABRIC-V5)")
            self.raw_front = raw_socket(self.listen_host, ip_proto=ip_proto, tos=TOS_CONTROL,
                                        rcvbuf=self.cfg.rcvbuf or (8 << 20))
            if self.back_host != self.listen_host:
                self.raw_back = raw_socket(self.back_host, ip_proto=ip_proto, tos=TOS_CONTROL,
                                           rcvbuf=self.cfg.rcvbuf or (8 << 20))
        except BaseException:
            super().close()
            raise
        self.ip_proto = ip_proto
        for d in (FWD, REV):  # the IP payload's overhead: Ethernet and IP, no UDP header
            fam = family_of(self.to[0] if d == FWD else self.listen_host)
            for link in self.links[d]:
                link.overhead = ETH_LEN + IP_HEADER[fam]
        self.max_ip = self.max_udp + UDP_LEN  # the same MTU: no UDP header, the entropy one in
        self.stats["ip_short"] = 0

    def _start_receivers(self, nursery: trio.Nursery) -> None:
        nursery.start_soon(self._raw_loop, self.raw_front)
        if self.raw_back is not None:
            nursery.start_soon(self._raw_loop, self.raw_back)

    def close(self) -> None:
        if not self._closed:
            self.raw_front.close()
            if self.raw_back is not None:
                self.raw_back.close()
        super().close()

    def _frame(self, src: str, dst: str, sport: int, dport: int, tos: int, data: bytes,
               link: Link) -> bytes:
        """FABRIC-V4: Ethernet + IP (protocol ``ip_proto``) + the IP payload."""
        ip = ip_header(src, dst, self.ip_proto, len(data), tos >> 2, tos & 3, 64)
        return ethernet_header(ip, True) + ip + data

    async def _raw_loop(self, sock: socket.socket) -> None:
        """As :meth:`Fabric._recv_loop`, one ``recv`` per datagram (a raw socket hands IPv4's
        header over with it, uet.rawip RAWIP-R3)."""
        clock = self._clock
        stats = self.stats
        local = self.listen_host if sock is self.raw_front else self.back_host
        while True:
            try:
                await trio.lowlevel.wait_readable(sock)
            except (OSError, trio.ClosedResourceError):
                return
            batch = RawBatch(sock, local=local, bufsize=RECV_SIZE + 60, limit=BATCH)
            for src, dst, tos, payload in batch:
                if not src or len(payload) < ENTROPY_LEN:
                    stats["ip_short"] += 1
                    continue
                if len(payload) > self.max_ip:
                    stats["too_big"] += 1
                    continue
                self._on_ip(bytes(payload), tos, dst, _canon(src), clock())
                if batch.reads % RELEASE_EVERY == 0:
                    self._release(clock())
            stats["recv_errors"] += batch.errors
            if batch.closed:
                return
            self._release(clock())

    def _on_ip(self, data: bytes, tos: int, dst: str, src: str, now: float) -> None:
        """One datagram at a raw socket: from the receiver's address an answer (found by its EV
        on the back side), from anyone else a sender's (found by address and EV)."""
        ev = entropy_of(data)
        if src == self.to[0]:
            flow = self._by_back_port.get(ev) or self._receiver_flow(ev)
            if flow is None:
                return
            hop = flow.rev
        else:
            flow = self.flows.get((src, ev)) or self._new_flow((src, ev), dst)
            if flow is None:
                return
            hop = flow.fwd
        hop.src_addr = (src, ev)
        if hop.ev_out != ev:  # FABRIC-V2: remapped on the back side
            data = with_entropy(data, hop.ev_out)
        skip = (tos >> 2) == DSCP_TRIMMED or _is_tss(data)
        hop.link.forward(now, data, tos, hop, hop.rng, None if skip else hop.rewrite, None)

    def _new_flow(self, addr: tuple, dst: str | None) -> Flow | None:
        cfg = self.cfg
        if not self._room_for_flow():
            return None
        host, ev = _canon(addr[0]), addr[1]
        back_ev = ev
        if back_ev in self._by_back_port:  # FABRIC-V2: another flow has this EV on the back side
            back_ev = next((e for e in range(1, 1 << 16) if e not in self._by_back_port), None)
            if back_ev is None:
                self.stats["flow_errors"] += 1
                return None
            self.stats["entropy_remapped"] += 1
        path = self.ecmp.entropy_path(ev)  # uet.net: ECMP on the EV, both directions
        index = self.stats["flows_opened"]
        common = {"uet_port": self.port, "verify": cfg.verify_crc}
        fwd = ip_hop(self.raw_back or self.raw_front, self.to[0], self.links[FWD][path],
                     flow_rng(cfg.seed, FWD, index), ev_out=back_ev, in_dst=self.listen_host,
                     src=self.back_host, **common)
        rev = ip_hop(self.raw_front, host, self.links[REV][path], flow_rng(cfg.seed, REV, index),
                     ev_out=ev, in_dst=self.back_host, src=self.listen_host, **common)
        return self._register(Flow(addr, ev, path, back_ev, fwd, rev), host)


def fabric_kind(encap: str, ip_proto: int = UET_IP_PROTO) -> Callable[..., Fabric]:
    """What ``open_fabric(kind=...)`` makes for ``--encap udp|ip``."""
    return partial(IpFabric, ip_proto=ip_proto) if encap == "ip" else Fabric
