"""The conformance peer: plain UDP sockets, crafted packets out, bounded reads in.

What this module owns
  * building the packets a check sends, from the header declarations (:func:`uet.wire.build.uet_bytes`)
    with the CRC-32C trailer of the 5-tuple (:func:`uet.wire.trailer.seal_udp`, facts A.3 and
    docs/design-notes.md "Defaults"); nothing here uses the project's PDS/SES core (``uet.pds``, ``uet.host``):
    the target is seen through the wire only;
  * sending with a chosen DSCP/ECN (an ``IP_TOS`` / ``IPV6_TCLASS`` control message per datagram);
  * keeping, per PSN, what was sent and what the target answered (:mod:`.ledger`), so that an
    ACK and a NACK of one PSN are caught whichever of them a check waited for;
  * reading the answers with two bounds: time (``timeout`` per wait) and count (``max_datagrams``
    per check, so that a flooding target cannot keep a check reading forever). Every datagram from
    the target's address is classified: a UET packet whose trailer verifies (an :class:`Answer`), a
    datagram whose trailer does not verify (``bad_crc``) or one that does not decode (``garbage``).
    Datagrams from other addresses are counted as ``foreign`` and otherwise ignored.

Ports (facts A.1, H.1 #19): every UET datagram goes to the UET port, and an answer copies its
request's EV into its source port. The suite receives every answer on one socket at (its own
address, the UET port: ``--bind``, or the first free loopback address when the target is on this
host, uet.ownaddr), the :class:`Inbox`, which sorts them by PDCID to the check's :class:`Peer`. A
check that needs a fresh entropy value (UDP source port) opens a fresh :class:`Peer`, whose EV
socket sends; an answer that arrives there instead was sent to the request's source port, which
``answers_to_uet_port`` reports as a must failure.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import random
import select
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..mtu import EMSGSIZE, DatagramTooBig, set_dont_fragment, too_big_line
from .. import UET_IP_PROTO
from ..ownaddr import bind_own, route_source
from ..rawip import raw_socket, recv_raw, tos_cmsg
from ..wire.build import uet_bytes
from ..wire.enums import DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0
from ..wire.ipencap import from_ip_payload, to_ip_payload_as_is
from ..wire.packet import decode_uet
from ..wire.trailer import TRAILER_LEN, seal_udp, udp_trailer_ok
from .ledger import Ledger

TOS_DATA = DSCP_DATA << 2 | ECT0
TOS_CONTROL = DSCP_CONTROL << 2
TOS_TRIMMED = DSCP_TRIMMED << 2 | ECT0
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
IPV6_RECVTCLASS = getattr(socket, "IPV6_RECVTCLASS", 66)
IPV6_TCLASS = getattr(socket, "IPV6_TCLASS", 67)
UDP_NO_CHECK6_RX = 102   # Linux SOL_UDP option: take IPv6 datagrams with checksum 0
MAX_DATAGRAMS = 512   # per check: a flooding target gets a verdict after this many


class Flooded(Exception):
    """More than ``max_datagrams`` datagrams arrived during one check."""


@dataclass
class Answer:
    """One datagram from the target whose CRC-32C trailer verified and whose headers decoded."""

    pds: dict[str, Any]
    ses: dict[str, Any] | None
    payload: bytes
    tos: int
    src: tuple[str, int]
    raw: bytes
    dport: int = 0   # the port it came to: the UET port, unless misdirected (A.1)

    @property
    def type_name(self) -> str:
        return str(self.pds.get("type_name"))

    @property
    def is_ack(self) -> bool:
        return self.type_name in ("ACK", "ACK_CC", "ACK_CCX")

    @property
    def is_nack(self) -> bool:
        return self.type_name in ("NACK", "NACK_CCX")

    def brief(self) -> str:
        """A short readable description, for check details."""
        p = self.pds
        t = self.type_name
        if self.is_ack:
            s = f"{t} ack_psn={p.get('ack_psn')} cack={p.get('cack_psn')} dpdcid={p.get('dpdcid')}"
        elif self.is_nack:
            s = f"{t} {p.get('nack_code_name') or hex(p.get('nack_code', 0))} psn={p.get('nack_psn', p.get('pkt_id'))}"
        elif t in ("RUDI_REQ", "RUDI_RESP"):
            s = f"{t} pkt_id={p.get('pkt_id')}"
        else:
            s = t
        if self.ses is not None and "return_code_name" in self.ses:
            s += f" + SES {self.ses.get('opcode_name')} {self.ses.get('return_code_name')}"
        return s


@dataclass
class Seen:
    """What one :class:`Peer` received, for the details of a verdict."""

    answers: list[Answer] = field(default_factory=list)
    bad_crc: int = 0
    garbage: int = 0
    foreign: int = 0
    misdirected: int = 0   # came to the EV socket, not to the UET port (A.1)

    @property
    def total(self) -> int:
        return len(self.answers) + self.bad_crc + self.garbage

    def describe(self, limit: int = 4, since: int = 0) -> str:
        answers = self.answers[since:]
        parts = [a.brief() for a in answers[:limit]]
        if len(answers) > limit:
            parts.append(f"... {len(answers) - limit} more")
        if self.bad_crc:
            parts.append(f"{self.bad_crc} with a bad CRC-32C trailer")
        if self.garbage:
            parts.append(f"{self.garbage} undecodable")
        if self.misdirected:
            parts.append(f"{self.misdirected} to the request's source port, not the UET port")
        return "; ".join(parts) if parts else "nothing"


_pdcids = itertools.count(random.Random(os.getpid() ^ time.time_ns()).randrange(0x1000, 0x8000))


def fresh_spdcid() -> int:
    """A PDCID (1..65535) this process has not used yet: each check opens its own PDC."""
    return next(_pdcids) % 0xFFFF + 1


def local_address_for(host: str) -> str:
    """The source address the route towards ``host`` uses (no packet is sent)."""
    return route_source(host, 9)


def _udp_socket(v6: bool, addr: str, port: int) -> socket.socket:
    """A blocking UDP socket on (``addr``, ``port``) that reports each datagram's TOS, takes the
    zero UDP checksum UET sends (docs/design-notes.md "Defaults") and sets DF (A.1)."""
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((addr, port))
        if v6:
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVTCLASS, 1)
            try:
                s.setsockopt(socket.IPPROTO_UDP, UDP_NO_CHECK6_RX, 1)
            except OSError:
                pass
        else:
            s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        set_dont_fragment(s)  # A.1: no IP fragments
    except OSError:
        s.close()
        raise
    return s


def _read(sock: socket.socket) -> tuple[bytes, int, tuple[str, int]] | None:
    """One datagram that is there now: (bytes, TOS, source), or None (none, or an ICMP error:
    a port unreachable surfaces as ECONNREFUSED on the next read, which is no answer)."""
    try:
        data, anc, _flags, addr = sock.recvmsg(65535, 64, socket.MSG_DONTWAIT)
    except OSError:
        return None
    tos = 0
    for lvl, kind, d in anc:
        if kind in (socket.IP_TOS, IPV6_TCLASS) and d:
            tos = d[0] if len(d) == 1 else struct.unpack("i", d[:4])[0]
    return data, tos, (str(ipaddress.ip_address(addr[0].split("%")[0])), int(addr[1]))


class Inbox:
    """The suite's one socket at (its own address, the UET port): A.1, every answer arrives here.
    It sorts what arrives to the :class:`Peer` it belongs to: by PDCID (an answer's DPDCID is the
    SPDCID its peer's requests named), else by the EV an answer copies into its source port, else
    to the newest peer (a check runs alone); what belongs to a peer already closed (a late answer
    of an earlier check) is dropped and counted (``stale``)."""

    def __init__(self, target: tuple[str, int], *, local: str | None = None,
                 encap: str = "udp", ip_proto: int = UET_IP_PROTO):
        self.target = (str(ipaddress.ip_address(target[0])), int(target[1]))
        self.port = self.target[1]
        v6 = ipaddress.ip_address(self.target[0]).version == 6
        self.sock, self.local = bind_own(lambda a: _udp_socket(v6, a, self.port), port=self.port,
                                         local=local, peer=self.target[0], option="--bind",
                                         who="the conformance suite")
        # --encap ip (A.1 "Native IP"): requests leave in IP protocol ``ip_proto`` and answers
        # come to this raw socket, bound to our address (uet.rawip RAWIP-R1), as well as over UDP
        self.raw: socket.socket | None = None
        if encap == "ip":
            try:
                self.raw = raw_socket(self.local, ip_proto=ip_proto)
            except BaseException:
                self.sock.close()
                raise
        self.socks = [self.sock] + ([self.raw] if self.raw is not None else [])
        self.peers: list[Peer] = []
        self.by_pdcid: dict[int, Peer] = {}
        self.by_ev: dict[int, Peer] = {}
        self.retired: set[tuple[str, int]] = set()  # ("pdcid" | "ev", value) of closed peers
        self.stale = 0

    def close(self) -> None:
        for s in self.socks:
            s.close()

    def add(self, peer: "Peer") -> None:
        self.peers.append(peer)
        self.by_ev[peer.sport] = peer

    def claim(self, peer: "Peer", pdcid: int) -> None:
        self.by_pdcid[pdcid] = peer

    def remove(self, peer: "Peer") -> None:
        if peer in self.peers:
            self.peers.remove(peer)
        for key, table in (("pdcid", self.by_pdcid), ("ev", self.by_ev)):
            for k in [k for k, p in table.items() if p is peer]:
                del table[k]
                self.retired.add((key, k))

    def _read_raw(self) -> tuple[bytes, int, tuple[str, int]] | None:
        """One native-IP datagram from the target as the UDP form reads it (uet.wire.ipencap
        WIRE-I2: the EV as its source port), or None; others are dropped."""
        while self.raw is not None and (got := recv_raw(self.raw, local=self.local)) is not None:
            src, dst, tos, payload = got
            dg = from_ip_payload(payload, src, dst, self.port) if dst == self.local else None
            if dg is not None:
                return dg[0], tos, (src, dg[1])
        return None

    def pump(self) -> None:
        """Read what is there now and hand each datagram to its peer."""
        while (got := _read(self.sock) or self._read_raw()) is not None:
            data, tos, src = got
            peer = None
            if src[0] == self.target[0] and udp_trailer_ok(data, src[0], self.local, src[1],
                                                           self.port):
                d = decode_uet(data, None, trailer="crc")
                pdcid = (d.layer.get("pds") or {}).get("dpdcid")
                peer = self.by_pdcid.get(pdcid) if pdcid else None
                if peer is None and pdcid and ("pdcid", pdcid) in self.retired:
                    self.stale += 1
                    continue
            if peer is None:
                peer = self.by_ev.get(src[1])
                if peer is None and ("ev", src[1]) in self.retired:
                    self.stale += 1
                    continue
            if peer is None:
                if not self.peers:
                    self.stale += 1
                    continue
                peer = self.peers[-1]
            peer.queue.append((data, tos, src, self.port))


class Peer:
    """A fresh entropy value towards ``target``: an EV socket whose port is the source port of
    what it sends; the answers come through the :class:`Inbox` at the UET port (A.1). An answer
    that comes to the EV socket instead (a target answering to the request's source port, the
    rule A.1 replaced) is read too, marked ``misdirected``, so that the other rules can still be
    judged while ``answers_to_uet_port`` fails."""

    def __init__(self, target: tuple[str, int], *, inbox: Inbox, port: int = 0,
                 max_datagrams: int = MAX_DATAGRAMS, mtu: int | None = None):
        self.target = (str(ipaddress.ip_address(target[0])), int(target[1]))
        self.v6 = ipaddress.ip_address(self.target[0]).version == 6
        self.inbox = inbox
        self.local = inbox.local
        self.sock = _udp_socket(self.v6, self.local, port)
        self.sport = self.sock.getsockname()[1]
        self.max_datagrams = max_datagrams
        self.mtu = mtu  # the --mtu in force, for the EMSGSIZE line
        self.seen = Seen()
        self.ledger = Ledger()   # what was sent and answered per PSN: contradictions
        self.queue: deque = deque()  # (bytes, TOS, source, the port it came to), from the inbox
        self._wait_from = 0   # answers before the latest wait began (see recent())
        inbox.add(self)

    def close(self) -> None:
        self.inbox.remove(self)
        self.sock.close()

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- sending ---------------------------------------------------------------------------------
    def seal(self, body: bytes) -> bytes:
        """``body`` followed by its CRC-32C trailer for this socket and the target (A.3)."""
        return seal_udp(body, self.local, self.target[0], self.sport, self.target[1])

    def send_raw(self, data: bytes, tos: int = TOS_DATA) -> None:
        level, opt = ((socket.IPPROTO_IPV6, IPV6_TCLASS) if self.v6
                      else (socket.IPPROTO_IP, socket.IP_TOS))
        self.ledger.on_send(data)
        raw = self.inbox.raw
        try:
            if raw is not None:  # native IP: the same datagram behind the entropy header (I1)
                host, port = self.target
                payload = to_ip_payload_as_is(data, src=self.local, dst=host, ev=self.sport,
                                              uet_port=port)
                raw.sendmsg([payload], [tos_cmsg(raw.family, tos)], 0, (host, 0))
                return
            try:
                self.sock.sendmsg([data], [(level, opt, struct.pack("i", tos))], 0, self.target)
            except OSError as exc:
                if exc.errno == EMSGSIZE:
                    raise
                self.sock.sendto(data, self.target)  # a stack without per-datagram TOS
        except OSError as exc:
            if exc.errno == EMSGSIZE:  # A.1: DF set, the route's MTU is smaller
                raise DatagramTooBig(too_big_line(len(data), self.target[0],
                                                  payload=self.mtu)) from None
            raise

    def send(self, body: bytes, tos: int = TOS_DATA) -> bytes:
        """Seal and send ``body``; returns the sealed datagram. Its SPDCID (if it names one) is
        claimed at the inbox: the answers name it as their DPDCID."""
        if len(body) >= 12 and body[0] >> 3 != 1:  # not under TSS
            pds = decode_uet(body, None, trailer="none").layer.get("pds") or {}
            if pds.get("spdcid"):
                self.inbox.claim(self, int(pds["spdcid"]))
        pkt = self.seal(body)
        self.send_raw(pkt, tos)
        return pkt

    # --- receiving -------------------------------------------------------------------------------
    def _next(self, timeout: float) -> tuple[bytes, int, tuple[str, int], int] | None:
        """The next datagram for this peer within ``timeout``: from the inbox (sorted there) or
        at the EV socket (misdirected)."""
        deadline = time.monotonic() + timeout
        while not self.queue:
            got = _read(self.sock)
            if got is not None:
                return (*got, self.sport)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([*self.inbox.socks, self.sock], [], [], left)
            if any(s in ready for s in self.inbox.socks):
                self.inbox.pump()
            elif not ready:
                return None
        return self.queue.popleft()

    def _read_one(self, timeout: float) -> Answer | None | bool:
        """One datagram within ``timeout``: an Answer, None (not one: counted), False (none came)."""
        got = self._next(timeout)
        if got is None:
            return False
        data, tos, src, dport = got
        if src[0] != self.target[0]:
            self.seen.foreign += 1
            return None
        if self.seen.total >= self.max_datagrams:
            raise Flooded(f"more than {self.max_datagrams} datagrams arrived in one check")
        misdirected = dport != self.inbox.port
        if misdirected:
            self.seen.misdirected += 1
        if not udp_trailer_ok(data, src[0], self.local, src[1], dport):
            self.seen.bad_crc += 1
            return None
        d = decode_uet(data, None, trailer="crc")
        pds = d.layer.get("pds")
        if d.error is not None or not pds or pds.get("type_name") in (None, "TSS"):
            self.seen.garbage += 1
            return None
        n = int(d.layer.get("payload_len") or 0)
        end = len(data) - TRAILER_LEN
        a = Answer(pds, d.layer.get("ses"), bytes(data[end - n:end]), tos, src, bytes(data),
                   dport)
        self.seen.answers.append(a)
        self.ledger.on_answer(a)
        return a

    def expect(self, match: Callable[[Answer], bool], timeout: float) -> Answer | None:
        """The first answer for which ``match`` is true, reading for at most ``timeout`` seconds
        (others are kept in :attr:`seen`); None when none came. What arrives after it is read
        by the check's next wait or, once the check ended, by the runner
        (:meth:`uet.conformance.checks.Context.settle_peers`), and judged by :attr:`ledger`."""
        deadline = time.monotonic() + timeout
        self._wait_from = len(self.seen.answers)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            a = self._read_one(left)
            if isinstance(a, Answer) and match(a):
                return a

    def recent(self) -> str:
        """What arrived since the latest :meth:`expect` began (for a verdict's detail)."""
        return self.seen.describe(since=self._wait_from)

    def collect(self, quiet: float) -> list[Answer]:
        """Every answer until ``quiet`` seconds passed (a fixed wait from now, not from the last
        datagram, so that a chatty target cannot stretch it)."""
        out: list[Answer] = []
        deadline = time.monotonic() + quiet
        while (left := deadline - time.monotonic()) > 0:
            a = self._read_one(left)
            if a is False:
                break
            if isinstance(a, Answer):
                out.append(a)
        return out

    def anything(self, quiet: float) -> int:
        """How many datagrams from the target (of any kind) arrive within ``quiet`` seconds."""
        before = self.seen.total
        self.collect(quiet)
        return self.seen.total - before


# --- packets -------------------------------------------------------------------------------------

def send_ses(*, opcode: int = 5, message_id: int = 1, length: int = 0, job_id: int = 0,
             memory_key: int = 0, offset: int = 0, som: bool = True, eom: bool = True,
             message_offset: int = 0, payload_length: int | None = None) -> dict[str, Any]:
    """The fields of a standard SES request header (D.2, D.3): by default a single-packet SEND."""
    ses: dict[str, Any] = {"opcode": opcode, "message_id": message_id, "request_length": length,
                           "job_id": job_id, "som": som, "eom": eom, "memory_key": memory_key,
                           "buffer_offset": offset}
    if not som:
        ses["payload_length"] = length if payload_length is None else payload_length
        ses["message_offset"] = message_offset
    return ses


def request(psn: int, *, spdcid: int, start: int | None = None, dpdcid: int = 0,
            ar: bool = True, retx: bool = False, rod: bool = False, payload: bytes = b"",
            ses: dict[str, Any] | None = None, ext: dict[str, Any] | None = None,
            clear_psn_offset: int = 0) -> bytes:
    """A RUD/ROD request (B.5), SYN form when ``start`` is given (psn_offset = PSN - start, C.1),
    with a standard SES header (default: a single-packet SEND of ``payload``). No trailer."""
    pds: dict[str, Any] = {"type": 3 if rod else 2, "next_hdr": 3, "retx": retx, "ar": ar,
                           "syn": start is not None, "psn": psn & 0xFFFFFFFF, "spdcid": spdcid,
                           "clear_psn_offset": clear_psn_offset}
    if start is not None:
        pds["psn_offset"] = (psn - start) & 0xFFF
    else:
        pds["dpdcid"] = dpdcid
    if ses is None:
        ses = send_ses(length=len(payload))
    return uet_bytes(pds, ses, ext, payload)


def control(ctl: int, psn: int, *, spdcid: int, dpdcid: int = 0, ar: bool = True,
            payload: int = 0, rod: bool = False) -> bytes:
    """A CONTROL packet (B.12) of an established PDC."""
    return uet_bytes({"type": 11, "ctl_type": ctl, "isrod": rod, "ar": ar, "syn": False,
                      "psn": psn & 0xFFFFFFFF, "spdcid": spdcid, "dpdcid": dpdcid,
                      "payload": payload})


def rudi_request(pkt_id: int, ses: dict[str, Any], payload: bytes = b"", *,
                 retx: bool = False) -> bytes:
    """A RUDI request (B.13) carrying a standard SES header."""
    return uet_bytes({"type": 4, "next_hdr": 3, "retx": retx, "pkt_id": pkt_id}, ses, None, payload)


def uud_request(ses: dict[str, Any], payload: bytes = b"") -> bytes:
    """A UUD request (B.14) carrying a standard SES header."""
    return uet_bytes({"type": 6, "next_hdr": 3}, ses, None, payload)
