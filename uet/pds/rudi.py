"""RUDI: reliable unordered delivery for idempotent operations, connectionless and sans-IO.

One :class:`RudiEndpoint` per host plays both roles. Datagrams are the UET bytes of a UDP
payload (CRC-32C trailer included, same coverage as the PDS core) with a
:class:`uet.pds.config.DatagramMeta`; the caller moves them (:meth:`RudiEndpoint.datagrams_to_send`,
:meth:`RudiEndpoint.receive_datagram`), drives time (:meth:`get_timer`, :meth:`handle_timer`) and
reads events (:meth:`next_event`). The SES header bytes ride opaque: the target hands each request
up as a :class:`RudiRequest` and the SES answers with :meth:`RudiEndpoint.respond`.

RULES (each names its docs/facts.md row; "choice" marks a project decision)
==========================================================================
  PDS-U1  B.13: request type 4, response type 5; 8-byte header: next_hdr (the SES header type),
      RETX, pkt_id. Responses set M when the request arrived CE-marked.
  PDS-U2  C.8: no PDC and no ACK: every request gets exactly one response (type 5, same pkt_id),
      carrying the SES response. The target keeps no state between requests: a repeated request
      is executed again, which is why RUDI carries idempotent operations only (the SES refuses
      the others with OP_VIOLATION).
  PDS-U3  C.8: the initiator holds all state: a per-packet RTO (``rto`` = C.9 RTO_INIT_TIMER 1 ms,
      doubled per resend up to ``rto_max``, choice); on expiry the request is resent with RETX;
      after ``max_retx`` (C.9 MAX_RTO_RETX_CNT 5) resends it fails (RudiRequestFailed). Entropy
      values (UDP source ports) come from an :class:`uet.multipath.EntropySelector` shared by
      every request, with its path health (MULTIPATH-H1 to MULTIPATH-H4 of uet.multipath): a response or NACK proves
      its EV, a timeout counts against the request's EV, and a resend goes on the EV proven
      last, else an unexplored one, so that failed paths cannot eat every copy of a request
      (found by ``uet sim --mode rudi --fail-path``).
  PDS-U4  B.13 "not sequential": pkt_ids are drawn at random (seeded, docs/design-notes.md principle 5), unique
      among this endpoint's outstanding requests.
  PDS-U5  B.10 / B.11: a NACK with NT = 1 names the pkt_id, SPDCID = DPDCID = 0. The initiator reacts
      per the B.11 reaction column: resend now (TRIMMED, TRIMMED_LASTHOP, TRIMMED_ACK,
      PKT_NOT_RCVD, ACK_WITH_DATA, RCVR_INFER_LOSS, EXP_NACK_NORMAL/ERR), resend after
      ``nack_retx_time`` (resource codes, PSN_OOR_WINDOW), ignore (RCVD_SES_PROCG: the RTO
      covers it), fail the request (every "close PDC" code: with no PDC, the request is what
      ends). More than ``max_nack_retx`` NACK-driven resends fail it.
  PDS-U6  C.6 / docs/design-notes.md Defaults: a request with DSCP 11 (trimmed) gets NACK TRIMMED (NT = 1) for
      its pkt_id; a trimmed response or NACK is dropped (the RTO resends the request).
  PDS-U7  A.3: the CRC-32C trailer must verify; a bad one is dropped and counted (``bad_crc``).
  PDS-U8  a response or NACK for a pkt_id not outstanding (a late duplicate) is dropped and counted
      (``unknown_response`` / ``unknown_nack``); one from another address than the request's
      destination is dropped and counted too (``foreign_response`` / ``foreign_nack``, as PDS-I13
      of uet/pds/endpoint.py), the request staying outstanding.
  PDS-U9  docs/design-notes.md principle 6: nothing raises out of receive_datagram; malformed input is counted.
  PDS-U10 A.2 / docs/design-notes.md Defaults: requests and responses DSCP 0 with ECT(0); NACKs DSCP 46, Not-ECT.
  PDS-U11 A.1, H.1 #19: a response or NACK goes to the request's source address at the UET port the
      request went to, from the request's EV (its source port, copied); the initiator reads the
      EV an answer proves from the answer's source port.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from .. import UET_UDP_PORT
from ..errors import DecodeError
from ..multipath import EntropySelector, RoundRobinSpray
from ..wire.enums import NACK_CODE
from ..wire.psn import M32
from ..wire.trailer import TRAILER_LEN as TRAILER
from .datagram import CE, DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0, NOT_ECT, DatagramMeta, seal
from .datagram import Outbox, trailer_ok

RUDI_REQ, RUDI_RESP, UUD_REQ, NACK = 4, 5, 6, 10

_N = {name: code for code, name in NACK_CODE.table.items()}
NACK_RETX_NOW = frozenset(_N[k] for k in (
    "TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK", "PKT_NOT_RCVD", "ACK_WITH_DATA",
    "RCVR_INFER_LOSS", "EXP_NACK_NORMAL", "EXP_NACK_ERR"))
NACK_RETX_LATER = frozenset(_N[k] for k in (
    "NO_PDC_AVAIL", "NO_CCC_AVAIL", "NO_BITMAP", "NO_PKT_BUFFER", "NO_GTD_DEL_AVAIL",
    "NO_SES_MSG_AVAIL", "NO_RESOURCE", "PSN_OOR_WINDOW", "ROD_OOO"))
NACK_IGNORE = frozenset({_N["RCVD_SES_PROCG"]})


# --- events ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RudiRequest:
    """Target: a request to hand to the SES (answer with :meth:`RudiEndpoint.respond`)."""
    meta: DatagramMeta
    pkt_id: int
    next_hdr: int
    ses: bytes
    retx: bool
    ce: bool


@dataclass(frozen=True, slots=True)
class RudiResponse:
    """Initiator: the one response to request ``pkt_id`` (``tag`` as given to send_request)."""
    pkt_id: int
    tag: Any
    next_hdr: int
    ses: bytes
    m: bool


@dataclass(frozen=True, slots=True)
class RudiRequestFailed:
    pkt_id: int
    tag: Any
    reason: str


@dataclass
class RudiConfig:
    port: int = UET_UDP_PORT        # A.1
    rto: float = 1e-3               # C.9 RTO_INIT_TIMER
    rto_max: float = 64e-3          # choice: cap of the per-packet backoff
    max_retx: int = 5               # C.9 MAX_RTO_RETX_CNT
    nack_retx_time: float = 1e-3    # C.9 NACK_RETX_TIME
    max_nack_retx: int = 5          # C.9 MAX_NACK_RETX_CNT
    entropy_base: int = 49152       # UDP source port = entropy (docs/design-notes.md Defaults) ...
    entropy_values: int = 64        # ... these many, sprayed round-robin (unless a selector is
                                    # given to RudiEndpoint)
    seed: int = 0


@dataclass
class _Out:
    pkt_id: int
    dst: str
    dport: int
    next_hdr: int
    ses: bytes
    tag: Any
    sport: int
    deadline: float = 0.0
    rto: float = 0.0
    retx: int = 0
    nack_retx: int = 0
    gen: int = 0
    nack_wait: bool = False  # the next timer is a delayed NACK resend, not an RTO


class RudiEndpoint(Outbox):
    """Sans-IO RUDI initiator and target for the host at ``address``."""

    def __init__(self, address: str, config: RudiConfig | None = None, *,
                 selector: EntropySelector | None = None):
        self.address = address
        self.config = config or RudiConfig()
        c = self.config
        self.sel = selector if selector is not None else RoundRobinSpray(
            range(c.entropy_base, c.entropy_base + max(1, c.entropy_values)))
        self.stats: Counter[str] = Counter()
        self._rng = random.Random(self.config.seed)
        self._out: dict[int, _Out] = {}
        self._timers: list[tuple[float, int, int]] = []  # (deadline, pkt_id, gen)
        self._tx: list[tuple[bytes, DatagramMeta]] = []
        self._events: deque[Any] = deque()

    # --- plumbing ---------------------------------------------------------------------------------

    def get_timer(self) -> float | None:
        while self._timers:
            t, pid, gen = self._timers[0]
            o = self._out.get(pid)
            if o is None or o.gen != gen:
                heapq.heappop(self._timers)
                continue
            return t
        return None

    def handle_timer(self, now: float) -> None:
        while self._timers and self._timers[0][0] <= now:
            _, pid, gen = heapq.heappop(self._timers)
            o = self._out.get(pid)
            if o is None or o.gen != gen:
                continue
            if o.nack_wait:
                o.nack_wait = False
                self._transmit(o, now, retx=True)
                continue
            if o.retx >= self.config.max_retx:  # PDS-U3
                self._fail(o, f"no response after {o.retx} retransmissions (RTO)")
                continue
            o.retx += 1
            self.stats["rto_retransmissions"] += 1
            self.sel.on_loss(now=now, ev=o.sport)
            o.rto = min(o.rto * 2, self.config.rto_max)
            self._transmit(o, now, retx=True)

    @property
    def outstanding(self) -> int:
        return len(self._out)

    # --- initiator --------------------------------------------------------------------------------

    def send_request(self, dst: str, next_hdr: int, ses: bytes, now: float, *, tag: Any = None,
                     dport: int | None = None) -> int:
        """Queue one RUDI request carrying ``ses`` (SES header + payload); returns its pkt_id."""
        self.used = True
        while True:  # PDS-U4
            pid = self._rng.randrange(1, M32 + 1)
            if pid not in self._out:
                break
        sport = self.sel.next(now)
        o = _Out(pid, dst, self.config.port if dport is None else dport, next_hdr & 0xF,
                 bytes(ses), tag, sport, rto=self.config.rto)
        self._out[pid] = o
        self._transmit(o, now, retx=False)
        return pid

    def cancel(self, pkt_id: int) -> bool:
        return self._out.pop(pkt_id, None) is not None

    def _transmit(self, o: _Out, now: float, *, retx: bool, delay: float = 0.0) -> None:
        if delay:
            o.gen += 1
            o.deadline = now + delay
            heapq.heappush(self._timers, (o.deadline, o.pkt_id, o.gen))
            o.nack_wait = True
            return
        if retx:  # PDS-U3: a resend goes on a path known to work, or explores
            o.sport = self.sel.next_retransmit(now)
        hdr = bytes((RUDI_REQ << 3 | o.next_hdr >> 1, (o.next_hdr & 1) << 7 | (0x10 if retx else 0),
                     0, 0)) + o.pkt_id.to_bytes(4, "big")
        meta = DatagramMeta(self.address, o.dst, o.sport, o.dport, ECT0, DSCP_DATA)
        self._tx.append((seal(hdr + o.ses, meta), meta))
        self.stats["requests_sent"] += 1
        o.gen += 1
        o.deadline = now + o.rto
        heapq.heappush(self._timers, (o.deadline, o.pkt_id, o.gen))

    def _fail(self, o: _Out, reason: str) -> None:
        self._out.pop(o.pkt_id, None)
        self.stats["failed"] += 1
        self._events.append(RudiRequestFailed(o.pkt_id, o.tag, reason))

    # --- target -----------------------------------------------------------------------------------

    def respond(self, req: RudiRequest, next_hdr: int, ses: bytes) -> None:
        """PDS-U2: the one response to ``req`` (SES response header + data)."""
        m = req.meta
        hdr = bytes((RUDI_RESP << 3 | (next_hdr & 0xF) >> 1,
                     (next_hdr & 1) << 7 | (0x20 if req.ce else 0), 0, 0)) + req.pkt_id.to_bytes(4, "big")
        meta = DatagramMeta(self.address, m.src, m.sport, m.dport, ECT0, DSCP_DATA)  # PDS-U11
        self._tx.append((seal(hdr + bytes(ses), meta), meta))
        self.stats["responses_sent"] += 1

    def nack(self, meta: DatagramMeta, pkt_id: int, code: int, payload: int = 0) -> None:
        """PDS-U5: NACK with NT = 1 for ``pkt_id`` back to the request's source (PDCIDs 0)."""
        hdr = bytes((NACK << 3, 0x08, code & 0xFF, 0)) + (pkt_id & M32).to_bytes(4, "big") \
            + bytes(4) + (payload & M32).to_bytes(4, "big")
        out = DatagramMeta(self.address, meta.src, meta.sport, meta.dport, NOT_ECT, DSCP_CONTROL)
        self._tx.append((seal(hdr, out), out))
        self.stats["nacks_sent"] += 1

    # --- receive ----------------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        self.used = True
        try:
            self._receive(bytes(data), meta, now)
        except DecodeError:
            self.stats["malformed"] += 1
        except Exception as exc:  # noqa: BLE001 - PDS-U9: a bug must not take the endpoint down
            self._internal_error(exc, data)

    def _receive(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        if len(data) < 4 + TRAILER:
            self.stats["malformed"] += 1
            return
        ptype = data[0] >> 3
        trimmed = meta.dscp == DSCP_TRIMMED
        if trimmed:  # PDS-U6, before the CRC (a trimmed packet's CRC cannot verify)
            if ptype == RUDI_REQ and len(data) >= 8:
                self.stats["trimmed"] += 1
                self.nack(meta, int.from_bytes(data[4:8], "big"), _N["TRIMMED"])
            else:
                self.stats["trimmed_dropped"] += 1
            return
        if not trailer_ok(data, meta):  # PDS-U7
            self.stats["bad_crc"] += 1
            return
        body = data[:-TRAILER]
        nh = ((data[0] & 7) << 1) | (data[1] >> 7)
        if ptype == RUDI_REQ:
            if len(body) < 8:
                self.stats["malformed"] += 1
                return
            self.stats["requests_received"] += 1
            self._events.append(RudiRequest(meta, int.from_bytes(body[4:8], "big"), nh, body[8:],
                                            bool(data[1] & 0x10), meta.ecn == CE))
        elif ptype == RUDI_RESP:
            if len(body) < 8:
                self.stats["malformed"] += 1
                return
            pid = int.from_bytes(body[4:8], "big")
            o = self._answered(pid, meta, "response")
            if o is None:
                return
            del self._out[pid]
            self.sel.on_delivered(now=now, ev=meta.sport)  # PDS-U3: this EV works both ways (PDS-U11)
            self.sel.on_ack(now=now, ev=meta.sport, ce=bool(data[1] & 0x20))
            self.stats["responses_received"] += 1
            self._events.append(RudiResponse(pid, o.tag, nh, body[8:], bool(data[1] & 0x20)))
        elif ptype == NACK:
            if len(body) < 16 or not data[1] & 0x08:
                self.stats["nack_not_rudi"] += 1
                return
            self._on_nack(body[2], int.from_bytes(body[4:8], "big"), meta, now)
        else:
            self.stats["unsupported_type"] += 1

    def _answered(self, pid: int, meta: DatagramMeta, what: str) -> _Out | None:
        """PDS-U8: the outstanding request an answer names, if it came from the request's peer
        (else counted: ``unknown_<what>``, ``foreign_<what>``)."""
        o = self._out.get(pid)
        if o is None:
            self.stats["unknown_" + what] += 1
        elif meta.src != o.dst:
            self.stats["foreign_" + what] += 1
            o = None
        return o

    def _on_nack(self, code: int, pid: int, meta: DatagramMeta, now: float) -> None:
        o = self._answered(pid, meta, "nack")
        if o is None:
            return
        self.sel.on_nack(now=now, ev=meta.sport, code=code)  # PDS-U11: the EV the NACK copies
        self.stats["nacks_received"] += 1
        name = NACK_CODE.symbol(code) or f"0x{code:02X}"
        if code in NACK_IGNORE:
            return
        if code not in NACK_RETX_NOW and code not in NACK_RETX_LATER:
            self._fail(o, f"NACK {name}")
            return
        o.nack_retx += 1
        if o.nack_retx > self.config.max_nack_retx:
            self._fail(o, f"NACK {name}: more than {self.config.max_nack_retx} NACK-driven resends")
            return
        self.stats["nack_retransmissions"] += 1
        if code in NACK_RETX_NOW:
            self._transmit(o, now, retx=True)
        else:
            self._transmit(o, now, retx=True, delay=self.config.nack_retx_time)
