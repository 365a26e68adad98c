"""The sans-IO PDS core for RUD and ROD: one :class:`Endpoint` per host, the registry of its PDCs
and a packet-type to handler table. The PDC's two sides are :mod:`uet.pds.initiator` and
:mod:`uet.pds.target` (their rules are written there), loss recovery :mod:`uet.pds.recovery`,
headers :mod:`uet.pds.packets`, NACK reactions :mod:`uet.pds.reactions`; the SES bytes the PDS
carries belong to the upper layer (:mod:`uet.pds.upper`).

The endpoint never touches a socket or a clock (docs/design-notes.md principle 2): datagrams (the UET bytes
of the UDP payload, CRC-32C trailer included) come in through :meth:`Endpoint.receive_datagram`
with a :class:`DatagramMeta` and ``now``; datagrams to send come out of
:meth:`Endpoint.datagrams_to_send`; :meth:`Endpoint.get_timer` / :meth:`Endpoint.handle_timer`
drive retransmission; :meth:`Endpoint.next_event` hands PDC events to the layer above.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================

Receive, before anything else
  PDS-R1  docs/design-notes.md Defaults, C.6: DSCP 11 means trimmed, whatever the CRC says -> NACK TRIMMED (0x01)
      for the packet's PSN (spdcid = our PDC if known, else 0). TRIMMED_LASTHOP is never sent.
  PDS-R2  A.3 / docs/design-notes.md Defaults: the CRC-32C trailer (addresses, UDP header with checksum 0, UET
      bytes) must verify; a bad one is dropped and counted (``stats['bad_crc']``).
  PDS-R3  principle 6: nothing raises out of the core. A datagram the wire layer cannot decode is a
      counted drop (``malformed``); a type this endpoint does not serve (TSS, RUDI, UUD) is
      counted as ``unsupported``. Anything else that goes wrong is a bug, not bad input: it is
      counted as ``internal_errors`` and kept (``last_error``, ``last_error_datagram`` in hex).
  PDS-R4  counters for drivers and tests (no rule of the facts): ``retx_rx`` counts every request
      that arrives with RETX set (trimmed, damaged or not), ``retx_dup_rx`` those of them the
      target already had (PDS-W2 of uet/pds/target.py): the live demo's spurious retransmissions.
  PDS-R5  choice (issue 28): every datagram goes one of two paths, decided in one place
      (:meth:`Endpoint._offer`): the C receive lane (uet.native.rxlane) or the reference below.
      ``rx_lane`` counts the datagrams the lane took, ``rx_reference`` those the reference did;
      together they are ``rx_datagrams``. A datagram is offered to the lane once, and its
      trailer checked once (the lane's verdict goes with a datagram it leaves).

PDC identity and establishment (target)
  PDS-T1  C.1: PDCID 0 is reserved; PDCIDs come from one 16-bit space per endpoint (initiator and
      target PDCs alike), never reusing one that is live or still in its close MSL.
  PDS-T2  C.1: a SYN request with no PDC for (source, destination, SPDCID): allocate a PDC,
      DPDCID := packet SPDCID, START_PSN := PSN - psn_offset, CACK := START_PSN - 1; the mode
      (RUD/ROD) is the request type's.
  PDS-T3  bounded state: with ``max_pdcs`` PDCs live, a new SYN first frees the half-open target PDCs
      (never named without SYN) idle for ``target_idle_reap`` (choice, like C.1's New_PDC_Time for
      a PENDING PDC) and the established ones idle for ``target_idle_reap_open`` (choice: much
      longer, so that a SYN flood cannot take a PDC that is only quiet between messages, or whose
      requests the flood crowds out for a while); if none is, it gets NACK NO_PDC_AVAIL (0x04)
      with SPDCID 0 and allocates nothing; PDCs in use are unaffected. One peer address holds at
      most ``max_pdcs_per_peer`` target PDCs (beyond: its own idle ones are reaped first, else
      NO_PDC_AVAIL), so one flooding address cannot take the table. Reaping frees half-open
      PDCs before established ones, scans at most once per reaping time
      while nothing can have become idle, and the refusing NACKs are rate-limited per peer
      (``refusal_nack_rate``): a SYN flood at a full table stays cheap. The first PDCID is
      seeded-random (``first_pdcid`` fixes it), so two endpoints sharing an address do not collide
      in the target's (source, destination, SPDCID) key.
  PDS-T4  C.5: a request without SYN whose DPDCID names no target PDC -> NACK INV_DPDCID (0x0E),
      SPDCID 0 (RP-PR #125). A SYN that names an existing PDC with another start PSN, or a SYN
      beyond the window -> NACK INVALID_SYN (0x15).
  PDS-T5  C.5: SPDCID (or source address) not the PDC's peer -> NACK PDC_HDR_MISMATCH (0x0F).
  PDS-T6  C.5 / C.8: RUD request on a ROD PDC or the reverse -> NACK PDC_MODE_MISMATCH (0x16).

Dispatch (the table ``Endpoint._handlers``, B.1): requests (types 2, 3, 13, 14) to the target
side, ACKs (7, 8, 9) and NACKs (10, 12; NT = 0) to the initiator named by DPDCID, CONTROL (11) by
its type: CLEAR_REQ and CLOSE_REQ to an initiator, the rest to a target.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from typing import Any, Callable

from ..errors import DecodeError
from ..wire.enums import (ACK_TYPES, CONTROL_TYPE, CTL_ACK_REQ, CTL_CLEAR, CTL_CLEAR_REQ,
                          CTL_CREDIT, CTL_CREDIT_REQ,
                          CTL_CLOSE, CTL_CLOSE_REQ, CTL_NOOP, CTL_PROBE, NACK_BY_NAME,
                          NACK_TYPES, REQUEST_TYPES, ROD_REQ, ROD_TYPES, RUD_REQ, nack_name)
from ..wire.psn import M32, pdiff
from ..wire.trailer import TRAILER_LEN, UDP_HEADER_LEN
from ..wire.trailer import address_bytes as _addr, udp_seed
from .. import native
from ..native import rxlane
from . import credit
from . import events as ev
from .config import PdsConfig
from .datagram import CE, DSCP_CONTROL, DSCP_TRIMMED, NOT_ECT, DatagramMeta, seal
from .initiator import Initiator
from .packets import (REQUEST_SIZE, ack_bytes, nack_bytes, read_ack, read_control, read_nack,
                      read_request, read_request_fields)
from .recovery import ACKED
from .states import InitiatorEvent, TargetEvent
from .target import OPEN, PEND_FROM, Target
from .signals import Reflector
from .lanes import new_lanes
from .upper import Accepting, Outgoing, Upper

N = NACK_BY_NAME
INF = float("inf")
_crc_prefix = native.crc32c_prefix
_INT = int.from_bytes
# the C lane's statuses (uet.native.rxlane): 1-3 taken (0 < status < _LEFT), and the trailer
# verdict of one it left
_LEFT = 4
_TRAILER_GOOD, _TRAILER_BAD = 4, 5


class _Tomb:
    """A closed PDC during its MSL (PDS-C2): what it takes to answer for it."""

    __slots__ = ("peer", "peer_pdcid", "close_psn", "expire", "role")

    def __init__(self, peer: str, peer_pdcid: int, close_psn: int | None, expire: float, role: str):
        self.peer = peer
        self.peer_pdcid = peer_pdcid
        self.close_psn = close_psn
        self.expire = expire
        self.role = role


class Endpoint:
    """One host's PDS: its PDCs, PDCID allocator and limits, in the aioquic style."""

    def __init__(self, address: str, config: PdsConfig | None = None, *, seed: int | None = None,
                 upper: Upper | None = None):
        self.address = address
        self.config = config or PdsConfig()
        seed = self.config.seed if seed is None else seed
        self.rng = random.Random(seed)
        self.stats_counter: Counter = Counter()
        self.upper: Upper = Accepting()
        self.lanes: Any = None
        self.attach(upper if upper is not None else self.upper)
        self.nacks_sent: Counter = Counter()
        self.nacks_rcvd: Counter = Counter()
        self.last_error: BaseException | None = None
        self.last_error_datagram = ""
        self.events: deque[ev.Event] = deque()
        self._pdcs: dict[int, Initiator | Target] = {}
        self._inits: dict[int, Initiator] = {}
        self._tgts: dict[int, Target] = {}
        self._init_by_key: dict[tuple, Initiator] = {}
        self._tgt_by_key: dict[tuple, Target] = {}
        self._tombs: dict[int, _Tomb] = {}
        self._peer_targets: dict[str, dict[int, Target]] = {}  # per peer address (PDS-T3, PDS-A5)
        self._calm: dict[object, bool] = {}  # PDS-A5: per peer, pressure at most PEND_FROM
        self._reap_after: dict[str | None, float] = {}  # PDS-T3: no idle target before then
        self._nack_tokens: dict[str, tuple[float, float]] = {}  # PDS-T3: per peer (tokens, time)
        first = self.config.first_pdcid
        # a generator of its own, so that the start PSNs drawn from self.rng stay as they were
        self._next_pdcid = (first if first is not None
                            else random.Random(f"pdcid:{seed}").randrange(1, 0x10000))
        self._out: list[tuple[bytes, DatagramMeta]] = []
        self._now = 0.0
        sig = self.config.csig
        self.reflector = Reflector(sig, self.stats_counter) if sig is not None else None
        # PDS-Q5 to PDS-Q8 of uet.pds.credit: the RCCC scheduler of this endpoint's targets, if any
        factory = self.config.credit_scheduler_factory
        self.credits = factory(self.config) if factory is not None else None
        self._reply_meta: dict[tuple, DatagramMeta] = {}
        self._handlers: dict[int, Callable[[bytes, int, int, DatagramMeta, float], None]] = {}
        for t in REQUEST_TYPES:
            self._handlers[t] = self._on_request
        for t in ACK_TYPES:
            self._handlers[t] = self._on_ack
        for t in NACK_TYPES:
            self._handlers[t] = self._on_nack
        self._handlers[CONTROL_TYPE] = self._on_control

    # --- public API -------------------------------------------------------------------------------
    @property
    def stats(self) -> Counter:
        """Counters of what happened (``rx_datagrams``, ``bad_crc``, ``retransmissions``, ...),
        with what the C receive lane counted folded in (uet.native.rxlane)."""
        lanes = self.lanes
        if lanes is not None and lanes.dirty:
            lanes.fold()
        return self.stats_counter

    def attach(self, upper: Upper) -> None:
        """The layer above: it admits and takes the SES bytes of requests, and hears about the
        items it submitted (uet/pds/upper.py). Attach it before the first datagram: the C
        receive lane's tables (uet.pds.lanes), made here when the C backend runs and the upper
        layer gives its half of their layout, are this endpoint's and handed to it."""
        self.upper = upper
        self.lanes = new_lanes(upper.lane_fields())
        if self.lanes is not None:
            self.lanes.pds_stats = self.stats_counter
            upper.use_lanes(self.lanes)
            upper.watch_pressure(self._pressure_changed)

    def _pressure_changed(self, peer: object) -> None:
        """The upper layer's receive resources for ``peer`` changed: whether the C lane may
        build the ACKs of its targets (PDS-A5) is decided again - only when the pressure crossed
        PEND_FROM, and only for that peer's targets: this runs for every message delivered,
        and a SYN flood's one-packet messages must not cost a scan of the PDC table each."""
        calm = self.upper.pressure(peer) <= PEND_FROM
        if self._calm.get(peer) is calm:
            return
        if len(self._calm) >= 4096:
            self._calm.clear()  # forgetting only costs one more refresh
        self._calm[peer] = calm
        for t in self._peer_targets.get(peer, {}).values():  # type: ignore[call-overload]
            t.refresh_quick()

    def submit(self, dst: str, item: Outgoing, *, mode: str = "rud", job_id: int = 0,
               tc: int = 0) -> None:
        """PDS-X1: send ``item``'s requests to ``dst`` over the PDC of (mode, job, source,
        destination, TC) (C.1), created on first use. Raises RuntimeError at the PDC limit."""
        if mode not in ("rud", "rod"):
            raise ValueError("mode must be 'rud' or 'rod'")
        key = (mode, job_id, self.address, dst, tc)
        p = self._init_by_key.get(key)
        if p is None:
            pdcid = self._alloc_pdcid()
            if pdcid is None:
                raise RuntimeError("PDC limit reached")
            p = Initiator(self, pdcid, dst, mode, key)
            self._pdcs[pdcid] = p
            self._inits[pdcid] = p
            self._init_by_key[key] = p
        p.submit(item)

    def close(self, dst: str | None = None, *, pdcid: int | None = None) -> None:
        """Close initiator PDCs (to ``dst``, or the one ``pdcid``) once everything is acknowledged
        (C.7); a PdcClosed event follows."""
        for p in list(self._inits.values()):
            if (pdcid is None or p.pdcid == pdcid) and (dst is None or p.peer == dst):
                p.close_wanted = True

    def request_close(self, pdcid: int) -> None:
        """Target side: ask the initiator to close (CONTROL CLOSE_REQ, C.7)."""
        t = self._tgts.get(pdcid)
        if t is not None:
            from .packets import control_bytes

            meta = DatagramMeta(t.local, t.peer, self.config.port, self.config.port, NOT_ECT,
                                DSCP_CONTROL)
            body = control_bytes(CTL_CLOSE_REQ, 0, t.pdcid, dpdcid=t.peer_pdcid, rod=t.rod)
            self._out.append((seal((body,), meta), meta))

    def pdcs(self) -> list:
        return list(self._pdcs.values())

    def next_event(self) -> ev.Event | None:
        return self.events.popleft() if self.events else None

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, DatagramMeta]]:
        """The datagrams to put on the wire now. The metadata objects may be shared between
        datagrams (one per entropy value or reply direction): treat them as read-only."""
        self._now = now
        out = self._out
        self._out = []
        for p in tuple(self._inits.values()):
            if not p.closed:
                p.fill(now, out)
        if out:
            self.stats_counter["tx_datagrams"] += len(out)
        return out

    def get_timer(self) -> float | None:
        """The earliest deadline of the endpoint's timers (None: none)."""
        t = INF
        for p in self._inits.values():
            d = p.deadline()
            if d < t:
                t = d
        if self._tombs:
            first = next(iter(self._tombs.values()))
            if first.expire < t:
                t = first.expire
        return None if t == INF else t

    def handle_timer(self, now: float) -> None:
        self._now = now
        try:
            for p in tuple(self._inits.values()):
                if not p.closed and p.deadline() <= now:
                    p.on_timer(now)
            self._purge_tombs(now)
        except Exception as exc:  # PDS-R3: a bug, counted and kept, never raised to the caller
            self._internal_error(exc, b"")

    # --- receive ----------------------------------------------------------------------------------
    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float, *,
                         csig: int | None = None, lane: int | None = None) -> None:
        """One arriving datagram; ``csig``: the 16 bits of the CSIG tag it came with (E.4; the
        driver strips the tag), kept for reflection (PDS-G1 of uet.pds.signals). ``lane``: the
        status the C lane gave it when the driver offered it already (:meth:`receive_area`):
        it is not offered again, and the lane's trailer verdict stands (PDS-R5)."""
        self._now = now
        stats = self.stats_counter
        stats["rx_datagrams"] += 1
        if csig is not None:
            if self.reflector is not None:
                self.reflector.record(meta.src, meta.sport, csig)
            else:
                stats["csig_unasked"] += 1  # a tag this endpoint did not ask to reflect
        try:
            if type(data) is not bytes:
                data = bytes(data)
            if lane is None:
                lane = self._offer(data, meta, now)
            if not 0 < lane < _LEFT:
                self._receive(data, meta, now, lane)
        except DecodeError:
            stats["malformed"] += 1  # PDS-R3: what the wire layer cannot decode
        except Exception as exc:  # PDS-R3: a bug, counted and kept, never raised to the caller
            self._internal_error(exc, data)

    def receive_datagrams(self, items: list[tuple[bytes, DatagramMeta]], now: float) -> None:
        """:meth:`receive_datagram` for each ``(data, meta)`` of ``items``, in order, at ``now``
        (none with a CSIG tag): the same steps in one loop (the driver's batch, docs/design-notes.md
        "Performance")."""
        self._now = now
        stats = self.stats_counter
        stats["rx_datagrams"] += len(items)
        offer, rx = self._offer, self._receive
        for data, meta in items:
            try:
                if type(data) is not bytes:
                    data = bytes(data)
                lane = offer(data, meta, now)
                if not 0 < lane < _LEFT:
                    rx(data, meta, now, lane)
            except DecodeError:
                stats["malformed"] += 1  # PDS-R3
            except Exception as exc:  # PDS-R3
                self._internal_error(exc, data)

    def _offer(self, data: bytes, meta: DatagramMeta, now: float) -> int:
        """PDS-R5, the one place that decides which path takes an arriving datagram: the C receive
        lane (uet.native.rxlane, native/rxlane.c) when all of these hold, else the reference
        (:meth:`_receive`, then uet.pds.target and the upper layer's admit and deliver):

        * the C backend runs and the upper layer gave its half of the lane's layout, so this
          endpoint has lane tables (:meth:`attach`), and ``uet.native.rxlane.ENABLED`` (the
          differential tests turn it off);
        * the datagram is a plain RUD or ROD request (RUD_REQ, ROD_REQ: the 12-byte header of
          B.5; the CC forms are the reference's), between two IPv4 or two IPv6 addresses;

        and, checked in C, in this order (the first that fails leaves the datagram untouched):

        * not trimmed (PDS-R1), at least a request header and a trailer long, no SYN;
        * its DPDCID names a target PDC with a lane: peer address an IP literal, OPEN (a packet
          without SYN named it, no CLOSE seen, PDS-C2), whose peer address, SPDCID and mode are the
          packet's (PDS-T4 to PDS-T6);
        * its PSN is new and inside the window (PDS-W1); for ROD the next to deliver with nothing
          buffered (PDS-W4: delivered at once, as RUD is);
        * the CRC-32C trailer verifies (PDS-R2: checked here once; a datagram the lane leaves after
          this point carries the verdict to the reference);
        * the upper layer's message lane takes it: a middle packet of a SEND or TAGGED_SEND in
          reassembly, landing in storage already in use, not completing its message (what
          :meth:`Upper.use_lanes` registers; uet/ses/target.py is the reference).

        The lane then does what the reference does (PDS-W1 record, PDS-W4, PDS-R4, PDS-A1, and the ACK where it
        is a plain ACK_CC, PDS-A2 to PDS-A4). Returns the lane's status: 1-3 taken (2 and 3: its ACK is
        due or built, :meth:`acknowledge_lane`), else not taken (0: trailer not checked, 4:
        good, 5: bad)."""
        lanes = self.lanes
        if lanes is None or not rxlane.ENABLED or not data:
            return 0
        ptype = data[0] >> 3
        if ptype != RUD_REQ and ptype != ROD_REQ:
            return 0
        try:
            src, dst = _addr(meta.src), _addr(meta.dst)
        except (OSError, TypeError, ValueError):
            return 0  # not an IP literal: no PDC of it has a lane
        if len(src) != len(dst):
            return 0
        up = self.upper
        clock = up.clock
        r = lanes.take(data, src, dst, meta.sport, meta.dport, meta.dscp, meta.ecn, now, clock)
        if 0 < r < _LEFT:
            lanes.dirty = True
            if now > clock:
                up.advance(now)
            if r != 1:
                self.acknowledge_lane(meta, r, now)
        return r

    def acknowledge_lane(self, meta: DatagramMeta, status: int, now: float) -> None:
        """PDS-A1 for the request the C lane just took and found asking for an ACK: status 3, the
        lane built the ACK (PDS-A2 to PDS-A4), which goes back as :meth:`send_answer` sends one; status 2,
        the reference's :meth:`Target.acknowledge` decides."""
        if status == 3:
            r = self._reply_to(meta)
            self._out.append((self.lanes.built_ack(), r))  # acks_tx: counted by the lane
            return
        a = self.lanes.ack
        self._tgts[a.pdcid].acknowledge(meta, a.psn, a.plen, None, ar=a.ar, syn=0, retx=a.retx,
                                        ce=bool(a.ce), now=now)

    def receive_area(self, area: Any, start: int, n: int, local4: bytes, dport: int,
                     now: float) -> tuple[int, int]:
        """The C lane over datagrams ``start``..``n - 1`` of a receive area (the live engine's
        ``recvmmsg``, uet.native.sockbatch.RxArea, IPv4), read in place: what it takes is as if
        :meth:`receive_datagram` had taken it (PDS-R5: the conditions of :meth:`_offer`). Returns
        ``(k, status)``: datagram ``k`` is the first it did not simply take - status 2 or 3:
        taken with an ACK due or built (the caller calls :meth:`acknowledge_lane` with its
        meta); 0, 4 or 5: not taken (the caller hands it to :meth:`receive_datagram` with
        ``lane=status``) - or ``(n, 0)``. Without lanes: ``(start, 0)``."""
        lanes = self.lanes
        if lanes is None or not rxlane.ENABLED:
            return start, 0
        self._now = now
        up = self.upper
        clock = up.clock
        k, status = lanes.take_area(area, start, n, local4, dport, now, clock)
        taken = k - start + (0 < status < _LEFT)
        if taken:
            lanes.dirty = True
            self.stats_counter["rx_datagrams"] += taken
            if now > clock:
                up.advance(now)
        return k, status

    def _receive(self, data: bytes, meta: DatagramMeta, now: float, lane: int = 0) -> None:
        """The reference: PDS-R1, PDS-R2 and the dispatch of a datagram the C lane did not take (PDS-R3 is
        the caller's); ``lane``: the lane's status for it (PDS-R5: 4 or 5, its trailer verdict)."""
        stats = self.stats_counter
        stats["rx_reference"] += 1
        n = len(data)
        if n >= REQUEST_SIZE and data[0] >> 3 in REQUEST_TYPES and read_request_fields(data)[1]:
            stats["retx_rx"] += 1  # PDS-R4: every request that came with RETX, whatever follows
        if meta.dscp == DSCP_TRIMMED:  # PDS-R1
            self._on_trimmed(data, meta)
            return
        if n < 4 + TRAILER_LEN:
            stats["bad_crc" if n >= TRAILER_LEN else "malformed"] += 1
            return
        end = n - TRAILER_LEN  # PDS-R2, once per datagram (PDS-R5)
        if lane == _TRAILER_BAD or (lane != _TRAILER_GOOD and _crc_prefix(
                data, end, udp_seed(meta.src, meta.dst, meta.sport, meta.dport,
                                    UDP_HEADER_LEN + n)) != _INT(data[end:], "big")):
            stats["bad_crc"] += 1
            return
        ptype = data[0] >> 3
        handler = self._handlers.get(ptype)
        if handler is None:
            stats["unsupported"] += 1
            return
        handler(data, end, ptype, meta, now)

    def _internal_error(self, exc: BaseException, data: bytes) -> None:
        self.stats_counter["internal_errors"] += 1
        self.last_error = exc
        self.last_error_datagram = bytes(data).hex()

    def _on_request(self, data: bytes, end: int, ptype: int, meta: DatagramMeta,
                    now: float) -> None:
        r = read_request(ptype, data, end)
        t = self._target_for(r.syn, r.spdcid, r.dpdcid, r.psn, r.psn_offset, ptype in ROD_TYPES,
                             meta, is_request=True, retx=r.retx)
        if t is not None:
            t.on_request(r, data, end, meta, now)

    def _on_ack(self, data: bytes, end: int, ptype: int, meta: DatagramMeta, now: float) -> None:
        a = read_ack(ptype, data, end)
        p = self._inits.get(a.dpdcid)
        if p is None:
            self.stats_counter["stale_ack"] += 1
            return
        p.on_ack(a, data, end, meta, now)

    def _on_nack(self, data: bytes, end: int, ptype: int, meta: DatagramMeta, now: float) -> None:
        n = read_nack(data, end)
        if n.nt:
            self.stats_counter["unsupported"] += 1  # a RUDI NACK (B.10): the host's RUDI takes it
            return
        self.nacks_rcvd[nack_name(n.nack_code)] += 1
        p = self._inits.get(n.dpdcid)
        if p is None:
            self.stats_counter["stale_nack"] += 1
            return
        p.on_nack(n, meta, now)

    def _on_control(self, data: bytes, end: int, ptype: int, meta: DatagramMeta,
                    now: float) -> None:
        c = read_control(data, end)
        ctl = c.ctl_type
        if ctl in (CTL_CLEAR_REQ, CTL_CLOSE_REQ, CTL_CREDIT):  # to an initiator
            p = self._inits.get(c.dpdcid) if not c.syn else None
            if p is None or (p.established and c.spdcid != p.peer_pdcid):
                self.stats_counter["stale_control"] += 1
                return
            p.on_control(c, meta, now)
            return
        if ctl not in (CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_PROBE, CTL_NOOP, CTL_CREDIT_REQ):
            self.stats_counter["unsupported"] += 1  # NEGOTIATION: B.12
            return
        if ctl == CTL_ACK_REQ and c.syn and (meta.src, meta.dst, c.spdcid) not in self._tgt_by_key:
            self.send_nack(meta, N["PKT_NOT_RCVD"], c.psn, 0, c.spdcid, retx=c.retx)
            return
        t = self._target_for(c.syn, c.spdcid, c.dpdcid, c.psn, c.psn_offset, bool(c.isrod), meta,
                             is_request=False, retx=c.retx)
        if t is not None:
            t.on_control(c, meta, now)

    def _target_for(self, syn: int, spdcid: int, dpdcid: int, psn: int, psn_offset: int,
                    rod: bool, meta: DatagramMeta, *, is_request: bool,
                    retx: int) -> Target | None:
        """PDS-T1 to PDS-T6: find (or, on a SYN request, create) the target PDC; sends the NACK when
        there is none."""
        if syn:
            key = (meta.src, meta.dst, spdcid)
            t = self._tgt_by_key.get(key)
            start = (psn - psn_offset) & M32
            if t is None:
                if not is_request:
                    return None
                if spdcid == 0:
                    self.send_nack(meta, N["PDC_HDR_MISMATCH"], psn, 0, spdcid, retx=retx)
                    return None
                t = self._new_target(key, meta, spdcid, rod, start)
                if t is None:  # PDS-T3
                    if self._nack_allowed(meta.src):
                        self.send_nack(meta, N["NO_PDC_AVAIL"], psn, 0, spdcid, retx=retx)
                    return None
            elif start != t.start_psn:  # PDS-T4
                self.send_nack(meta, N["INVALID_SYN"], psn, t.pdcid, spdcid, retx=retx)
                return None
        else:
            t = self._tgts.get(dpdcid)
            if t is None:
                tomb = self._tombs.get(dpdcid)
                if tomb is not None and tomb.role == "target" and tomb.peer == meta.src:
                    self._answer_tomb(dpdcid, tomb, psn, retx, meta)
                    return None
                self.send_nack(meta, N["INV_DPDCID"], psn, 0, spdcid, retx=retx)  # PDS-T4
                return None
            if t.peer_pdcid != spdcid or t.peer != meta.src:  # PDS-T5
                self.send_nack(meta, N["PDC_HDR_MISMATCH"], psn, t.pdcid, spdcid, retx=retx)
                return None
            if t.state != OPEN and t.close_psn is None:
                t.transition(TargetEvent.NAMED)
        if t.rod != rod:  # PDS-T6
            self.send_nack(meta, N["PDC_MODE_MISMATCH"], psn, t.pdcid, spdcid, retx=retx)
            return None
        return t

    def _new_target(self, key: tuple, meta: DatagramMeta, spdcid: int, rod: bool,
                    start: int) -> Target | None:
        """PDS-T2, PDS-T3: a target PDC for a SYN, within the per-peer and total limits."""
        if (len(self._peer_targets.get(meta.src, ())) >= self.config.max_pdcs_per_peer
                and not self._reap_idle_targets(self._now, meta.src)):
            return None
        pdcid = self._alloc_pdcid()
        if pdcid is None:
            return None
        t = Target(self, pdcid, meta.src, meta.dst, spdcid, rod, start, key)
        self._pdcs[pdcid] = t
        self._tgts[pdcid] = t
        self._tgt_by_key[key] = t
        self._peer_targets.setdefault(meta.src, {})[pdcid] = t
        self.events.append(ev.PdcEstablished(pdcid, spdcid, meta.src, "target", t.mode))
        return t

    # --- answers ----------------------------------------------------------------------------------
    def _reply_to(self, meta: DatagramMeta) -> DatagramMeta:
        """PDS-A4: the metadata of an ACK/NACK answering a datagram that came with ``meta``: the
        addresses swapped, the ports kept (A.1: to the UET port the request went to, from the
        request's EV)."""
        k = (meta.src, meta.dst, meta.sport, meta.dport)
        r = self._reply_meta.get(k)
        if r is None:
            r = DatagramMeta(meta.dst, meta.src, meta.sport, meta.dport, NOT_ECT, DSCP_CONTROL)
            if len(self._reply_meta) >= 1 << 16:
                self._reply_meta.clear()
            self._reply_meta[k] = r
        return r

    def send_answer(self, meta: DatagramMeta, body: bytes) -> None:
        """An ACK or NACK (its UET bytes) back to where ``meta`` came from (PDS-A4)."""
        r = self._reply_to(meta)
        self._out.append((seal((body,), r), r))
        if body and body[0] >> 3 in ACK_TYPES:
            self.stats_counter["acks_tx"] += 1

    def send_nack(self, meta: DatagramMeta, code: int, psn: int, spdcid: int, dpdcid: int, *,
                  retx: int = 0, payload: int = 0) -> None:
        self.send_answer(meta, nack_bytes(code, psn, spdcid, dpdcid, m=meta.ecn == CE,
                                          retx=bool(retx), payload=payload))
        self.nacks_sent[nack_name(code)] += 1

    def _on_trimmed(self, data: bytes, meta: DatagramMeta) -> None:
        """PDS-R1: NACK TRIMMED for the PSN of a trimmed request."""
        self.stats_counter["trimmed_rx"] += 1
        ptype = data[0] >> 3 if data else 0
        if ptype not in REQUEST_TYPES:
            self.stats_counter["malformed"] += 1
            return
        r = read_request(ptype, data, len(data))
        if r.syn:
            t = self._tgt_by_key.get((meta.src, meta.dst, r.spdcid))
        else:
            t = self._tgts.get(r.dpdcid)
            if t is not None and t.peer_pdcid != r.spdcid:
                t = None
        self.send_nack(meta, N["TRIMMED"], r.psn, t.pdcid if t is not None else 0, r.spdcid,
                       retx=r.retx)
        if t is not None and t.credited:
            credit.target_arrived(t, self.config.mtu, self._now)  # PDS-Q6: its credit was spent

    def _answer_tomb(self, pdcid: int, tomb: _Tomb, psn: int, retx: int,
                     meta: DatagramMeta) -> None:
        """PDS-C2: after close, ACK what the PDC had, NACK CLOSING beyond the CLOSE PSN."""
        if tomb.close_psn is not None and pdiff(psn, tomb.close_psn) > 0:
            self.send_nack(meta, N["CLOSING"], psn, pdcid, tomb.peer_pdcid, retx=retx)
            return
        cack = tomb.close_psn if tomb.close_psn is not None else psn
        off = max(-32768, min(32767, pdiff(psn, cack)))
        fields = {"retx": bool(retx), "ack_psn_offset": off, "cack_psn": cack, "spdcid": pdcid,
                  "dpdcid": tomb.peer_pdcid}
        if self.config.ack_type != "ack":
            fields["mpr"] = self.config.mpr
        self.send_answer(meta, ack_bytes(self.config.ack_type, **fields))

    # --- PDC lifecycle ----------------------------------------------------------------------------
    def _alloc_pdcid(self) -> int | None:
        if len(self._pdcs) >= self.config.max_pdcs and not self._reap_idle_targets(self._now):
            return None
        self._purge_tombs(self._now)
        for _ in range(65536):
            c = self._next_pdcid
            self._next_pdcid = c + 1 if c < 0xFFFF else 1
            if c not in self._pdcs and c not in self._tombs:
                return c
        return None

    def _reap_idle_targets(self, now: float, peer: str | None = None) -> bool:
        """PDS-T3 under pressure: free target PDCs (of ``peer``, or any) that heard nothing for
        ``target_idle_reap`` s (half-open) or ``target_idle_reap_open`` s (established),
        half-open ones first. True if any was freed."""
        if now < self._reap_after.get(peer, -INF):
            return False  # nothing can have become idle since the last scan found nobody
        cfg = self.config
        wait_half, wait_open = cfg.target_idle_reap, max(cfg.target_idle_reap_open,
                                                         cfg.target_idle_reap)
        idle, half_open = [], []
        first = INF  # the earliest any of the others can be reaped
        mine = self._tgts if peer is None else self._peer_targets.get(peer, {})
        for t in mine.values():
            due = t.last_rx + (wait_open if t.open else wait_half)
            if due <= now:
                (idle if t.open else half_open).append(t)
            elif due < first:
                first = due
        if half_open:  # an established PDC may only be starved, not gone
            idle = half_open
        if not idle:
            # a flood of SYNs at a full table costs one scan per reaping time, not one per SYN
            if len(self._reap_after) >= 4096:
                self._reap_after.clear()
            self._reap_after[peer] = first
            return False
        for t in idle:
            self._forget_target(t)
            self.events.append(ev.PdcClosed(t.pdcid, t.peer, "target", True,
                                            "idle, reaped at the PDC limit"))
        self.stats_counter["pdcs_reaped"] += len(idle)
        return True

    def _nack_allowed(self, peer: str) -> bool:
        """PDS-T3: the NACKs that refuse SYNs (NO_PDC_AVAIL) are limited per peer address to
        ``refusal_nack_rate`` a second (a token bucket of one second's worth), like ICMP rate
        limits: a SYN flood then costs us our answers only up to that rate. A refused initiator
        hears within 1/rate s, or resends on its RTO."""
        rate = self.config.refusal_nack_rate
        if rate <= 0:
            return True
        now = self._now
        tokens, last = self._nack_tokens.get(peer, (rate, now))
        tokens = min(rate, tokens + (now - last) * rate)
        if len(self._nack_tokens) >= 4096 and peer not in self._nack_tokens:
            self._nack_tokens.clear()
        if tokens < 1:
            self._nack_tokens[peer] = (tokens, now)
            self.stats_counter["refusal_nacks_suppressed"] += 1
            return False
        self._nack_tokens[peer] = (tokens - 1, now)
        return True

    def target(self, pdcid: int) -> Target | None:
        """The open target PDC ``pdcid`` (PDS-Q8 of uet.pds.credit: credit to waiting senders)."""
        return self._tgts.get(pdcid)

    def _forget_target(self, t: Target) -> None:
        if t.credited and self.credits is not None:
            self.credits.done(t.pdcid)  # PDS-Q8: its share returns to the others
        self._pdcs.pop(t.pdcid, None)
        self._tgts.pop(t.pdcid, None)
        t.release_lane()
        self._tgt_by_key.pop(t.key, None)
        mine = self._peer_targets.get(t.peer)
        if mine is not None:
            mine.pop(t.pdcid, None)
            if not mine:
                del self._peer_targets[t.peer]

    def _tomb(self, pdcid: int, tomb: _Tomb) -> None:
        self._tombs[pdcid] = tomb
        while len(self._tombs) > self.config.max_pdcs:
            del self._tombs[next(iter(self._tombs))]

    def _purge_tombs(self, now: float) -> None:
        tombs = self._tombs
        while tombs:
            k = next(iter(tombs))
            if tombs[k].expire > now:
                break
            del tombs[k]

    def close_target(self, t: Target, now: float) -> None:
        """PDS-C2: the CLOSE was CACKed; answer for the PDC for one MSL."""
        self._forget_target(t)
        self._tomb(t.pdcid, _Tomb(t.peer, t.peer_pdcid, t.close_psn, now + self.config.close_msl,
                                  "target"))
        self.events.append(ev.PdcClosed(t.pdcid, t.peer, "target", False, "closed by initiator"))

    def closed_initiator(self, p: Initiator) -> None:
        """PDS-C1: the CLOSE was acknowledged (or answered for a freed PDC, PDS-I14)."""
        self._remove_initiator(p, InitiatorEvent.CLOSE_ACKED)
        self.events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", False, "closed"))

    def _remove_initiator(self, p: Initiator, event: InitiatorEvent) -> None:
        p.transition(event)
        self._pdcs.pop(p.pdcid, None)
        if self._inits.get(p.pdcid) is p:
            del self._inits[p.pdcid]
        if self._init_by_key.get(p.key) is p:
            del self._init_by_key[p.key]
        self._tomb(p.pdcid, _Tomb(p.peer, p.peer_pdcid, None, self._now + self.config.close_msl,
                                  "initiator"))

    def fail_initiator(self, p: Initiator, reason: str) -> None:
        """PDS-X6: the PDC closes in error; its items fail."""
        if p.closed:
            return
        self._remove_initiator(p, InitiatorEvent.FAILED)
        up = self.upper
        tokens = [item.token for item in p.outstanding_items()] + list(p.ses_wait)
        p.ses_wait.clear()
        p.ses_psn.clear()
        for pk in p.rec.packets.values():
            pk.state = ACKED
        p.rec.packets.clear()
        p.queue.clear()
        p.items.clear()
        for token in dict.fromkeys(tokens):
            up.failed(token, reason)
        self.events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", True, reason))
