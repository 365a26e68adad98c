"""The target side of a PDC: the PSN window, delivery to the upper layer (in PSN order for ROD),
ACK generation with the SACK base tracker, the responses that ride on ACKs, and close.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
PSN window, C.2 / C.5
  PDS-W1  PSN in (CACK, CACK + MPR*128] and not yet received: accept (after the upper layer admits
      it), record it, advance CACK over the contiguous run.
  PDS-W2  C.5: PSN already received in the current window, or at most one window behind CACK ->
      answer with an ACK of the current state whose ACK_PSN is that PSN (the "stored ACK": ours
      is regenerated, which carries the same or newer CACK/SACK, and the stored response, PDS-X3).
      Not delivered again.
  PDS-W3  C.5: PSN beyond the window (or more than one window behind) -> NACK PSN_OOR_WINDOW (0x0B)
      (INVALID_SYN 0x15 when SYN is set), payload = CACK + 1.
  PDS-W4  C.8: ROD delivers in PSN order: an early PSN is buffered (RP behaviour, ``rod_buffer``) and
      released when CACK passes it; with ``rod_buffer=False`` it gets NACK ROD_OOO (0x0D). RUD
      delivers each request as it arrives.
  PDS-W5  admission (the seam to the SES, uet/pds/upper.py): the upper layer may refuse a request for
      want of a resource with a NACK code (NO_SES_MSG_AVAIL 0x09, NO_PKT_BUFFER 0x07, SES-R2 of
      uet/ses/endpoint.py); the PSN then stays unreceived and the initiator resends.
  PDS-X3  C.3 / D.7: the response the upper layer returns for a PSN is kept (the last 2 x window of
      them, choice) and rides on every ACK whose ACK_PSN is that PSN: the first, a PDS-W2
      duplicate's, an ACK_REQ's (C.4). A response made when ROD releases a buffered PSN goes at
      once on an ACK of that PSN.

ACK generation, C.3 / C.4
  PDS-A1  C.3: ACK when the request has AR or SYN, when it has a response (PDS-X3), when CE-marked and
      ACK_ON_ECN, when the byte count since the last ACK reaches ACK_GEN_TRIGGER (16384; each
      request adds max(payload, ACK_GEN_MIN_PKT_ADD=1024)), in per-packet mode, or when CACK
      passes a PSN that asked for an ACK earlier (the newest AR PSN is now covered).
  PDS-A2  docs/design-notes.md Defaults: ACK_CC with cc_type 0 (NSCC state: rcvd_bytes, ooo_count) by default;
      M = the acked packet was CE; RETX = it was a retransmission; MPR = ``mpr`` (units of 128,
      H.1 #14). ACK_PSN offset = triggering PSN - CACK.
  PDS-A3  C.4: SACK base tracker: starts at CACK, is pulled up to CACK when CACK passes it, and jumps by
      64 while the highest received PSN is beyond base + 63. Bit i = PSN base + i received.
      Choice: a PSN that arrives below the tracker base (late, reordered) would never be reported,
      so the next ACK uses it as its base once; the tracker itself is unchanged.
  PDS-A4  A.1, H.1 #19 / docs/design-notes.md: ACKs and NACKs go to the request's source address at the UET
      port (the request's destination port), from the request's EV (its source port, copied),
      DSCP 46, Not-ECT.
  PDS-A5  B.8 / E.1: the NSCC state of ACK_CC. rcvd_bytes: the running count of request bytes (SES
      header and payload: what the PDS carries) accepted (24 bits, wrapping); ooo_count: requests accepted out of PSN order. Choices (the
      facts give no units and no receiver policy, H.2): service_time 0 (in ns: this target
      answers in the call that received the request); rcv_cwnd_pend rises linearly from 0 when
      the upper layer's receive resources for the peer are half full (``Upper.pressure``) to
      127 when they are full; restore_cwnd is set on the first ACK after a penalty ends.

Control at the target, B.12 / C.4
  PDS-K1  ACK_REQ (ctl 1): an ACK for that PSN if it arrived, else NACK PKT_NOT_RCVD (0x12). PROBE
      (ctl 6): an ACK with P = 1 echoing probe_opaque. CLEAR (ctl 2): CLEAR_PSN := its payload.

Close, C.7
  PDS-C2  the target records the CLOSE PSN, ACKs it and frees the PDC once CACK reaches it; for one
      MSL (``close_msl``) it keeps answering: a repeated CLOSE or old PSN is ACKed again, a PSN
      beyond the CLOSE PSN gets NACK CLOSING (0x10).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

from .. import native
from ..native.rxlane import (PdcState, ip_bytes, lane_field, optional_lane_field,
                             set_ack_const)
from ..wire.enums import CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_CREDIT_REQ, CTL_PROBE, NACK_BY_NAME
from ..wire.psn import M32, pdiff
from .datagram import CE, DatagramMeta
from . import credit
from .packets import CC_REQUEST_SIZE, AckEncoder, Control, Request
from .pdc import PdcSide
from .states import TARGET_TABLE, TargetEvent, TargetState

PEND_FROM = 0.5   # PDS-A5: receive resources this full start the receiver penalty ...
PEND_MAX = 127    # ... which is 7 bits (B.8) and at its largest when they are full

N = NACK_BY_NAME
# PDC states (uet.pds.states): HALF_OPEN until a packet without SYN names us (the initiator
# learned our PDCID: PDS-T3 reaps half-open PDCs first), OPEN, CLOSING once a CLOSE arrived (PDS-C2)
HALF_OPEN, OPEN, CLOSING = TargetState.HALF_OPEN, TargetState.OPEN, TargetState.CLOSING


def _kept(name: str, on_set: Callable[[Any, Any], None], doc: str) -> property:
    """An attribute kept in ``_<name>`` whose every change also calls ``on_set(target, value)``
    (what tells the C receive lane)."""
    private = "_" + name

    def put(self: Any, value: Any) -> None:
        setattr(self, private, value)
        on_set(self, value)

    return property(attrgetter(private), put, doc=doc)


class Target(PdcSide):
    role = "target"
    TABLE = TARGET_TABLE
    INITIAL = HALF_OPEN

    # What the C receive lane (uet.native.rxlane) only reads is told to it as it changes:
    # whether the PDC is open to it (_entered), whether it may build the ACKs (refresh_quick)
    penalised = _kept("penalised", lambda t, v: t.refresh_quick(),
                      "PDS-A5: the last ACK carried rcv_cwnd_pend > 0")
    credited = _kept("credited", lambda t, v: t.refresh_quick(),
                     "PDS-Q5 of uet.pds.credit: RCCC credit flows on this PDC")
    # The fields a request on an open PDC changes live in the PDC's lane: the C lane's while
    # one is registered (the endpoint's ``lanes``), a plain PdcState otherwise - one copy,
    # whichever path takes the packet
    bytes_since_ack = lane_field("bytes_since_ack")
    rcvd_bytes = lane_field("rcvd_bytes")
    ooo_count = lane_field("ooo_count")
    sack_base = lane_field("sack_base")
    clear_psn = lane_field("clear_psn")
    last_rx = lane_field("last_rx")
    next_deliver = lane_field("next_deliver")  # PDS-W4 (ROD)

    def __init__(self, ep: Any, pdcid: int, peer: str, local: str, peer_pdcid: int,
                 rod: bool, start_psn: int, key: tuple):
        super().__init__(ep, pdcid, peer, peer_pdcid, "rod" if rod else "rud", key)
        cfg = self.cfg
        self.local = local
        self.rod = rod
        self.start_psn = start_psn
        self.win = native.PsnWindow(start_psn, cfg.rx_window)
        self.size = cfg.rx_window
        self._lanes: Any = None
        self._lane: Any = PdcState()
        self._laned = False  # the C lane may take this PDC's requests once it is OPEN
        lanes = ep.lanes
        peer_ip = ip_bytes(peer) if lanes is not None else None
        if peer_ip is not None:  # the C lane: RUD and ROD, IPv4 and IPv6 peers (uet.native.rxlane)
            lane = self._lane = lanes.add_pdc(pdcid)
            self._lanes, self._laned = lanes, True
            lane.win, lane.peer_pdcid, lane.rod = self.win.handle, peer_pdcid, int(rod)
            lane.peer, lane.peer_len = peer_ip, len(peer_ip)
            lane.size, lane.ack_per_packet = self.size, int(bool(cfg.ack_per_packet))
            lane.ack_gen_trigger = cfg.ack_gen_trigger
            lane.ack_gen_min_pkt_add = cfg.ack_gen_min_pkt_add
        self._entered(HALF_OPEN)
        self.bytes_since_ack = 0
        self.pending_ar: int | None = None
        self.sack_base = self.win.cack
        self.late: int | None = None
        self.rcvd_bytes = 0
        self.ooo_count = 0
        self._penalised = False  # PDS-A5 (the property tells the lane)
        self._credited = False   # PDS-Q5
        self.grant_due = 0      # PDS-Q7: bytes the scheduler granted that the next ACK carries
        self.last_meta: DatagramMeta | None = None  # PDS-Q8: where CONTROL CREDIT goes
        self.rod_buf: dict[int, Any] = {}   # PDS-W4: PSN -> (next_hdr, SES bytes) or None
        self.next_deliver = start_psn
        self.responses: dict[int, tuple[int, bytes]] = {}  # PDS-X3: PSN -> (next_hdr, bytes)
        self.late_responses: list[int] = []  # PDS-X3: PSNs whose response came with a ROD release
        self.clear_psn = (start_psn - 1) & M32
        self.close_psn: int | None = None
        self.last_rx = 0.0
        self.acks = AckEncoder(cfg.ack_type, pdcid, peer_pdcid, cfg.mpr)
        if self._laned:
            set_ack_const(self._lane, self.acks.const_bytes())
            self._lane.ack_on_ecn = int(bool(cfg.ack_on_ecn))
            self.refresh_quick()

    def _entered(self, state: TargetState) -> None:
        self._lane.open = int(state == OPEN and self._laned)

    def refresh_quick(self) -> None:
        """Whether the C lane may build this PDC's ACKs (uet.native.rxlane): when
        :meth:`send_ack` would make a plain ACK_CC of the NSCC state - no receiver penalty to
        send or end (PDS-A5: the upper layer's resources for the peer at most PEND_FROM full), no
        credit (PDS-Q7), no CSIG reflection (PDS-G2). Kept up to date as those change."""
        if self._laned:
            acks = getattr(self, "acks", None)
            self._lane.ack_quick = int(
                acks is not None and not acks.plain and not self._penalised
                and not self._credited and self.ep.reflector is None
                and self.ep.upper.pressure(self.peer) <= PEND_FROM)

    pending_ar = optional_lane_field(
        "pending_ar", "PDS-A1: the newest PSN that asked for an ACK before CACK covered it (the C "
        "lane sets and clears it as the reference does when it builds the ACKs)")
    late = optional_lane_field(
        "late", "PDS-A3: a PSN that arrived below the SACK base, reported once by the next ACK")

    def release_lane(self) -> None:
        """The PDC is forgotten: its C lane (if any) is freed, its fields kept in a PdcState."""
        if self._lanes is not None:
            self._lane = self._lanes.remove_pdc(self._lane)
            self._lanes = None
            self._laned = False
            self._lane.open = 0

    @property
    def cack(self) -> int:
        return self.win.cack

    @property
    def open(self) -> bool:
        return self.state != HALF_OPEN

    # --- requests ---------------------------------------------------------------------------------
    def on_request(self, r: Request, data: bytes, end: int, meta: DatagramMeta,
                   now: float) -> None:
        """PDS-W1 to PDS-W5, PDS-A1, PDS-C2 for a request that names this PDC."""
        ep = self.ep
        psn = r.psn
        win = self.win
        cack = win.cack
        d = pdiff(psn, cack)
        self.last_rx = now
        ce = meta.ecn == CE
        if d <= 0 or (d <= self.size and win.test(psn)):
            if d <= -self.size:  # PDS-W3
                ep.send_nack(meta, N["PSN_OOR_WINDOW"], psn, self.pdcid, self.peer_pdcid,
                             retx=r.retx, payload=(cack + 1) & M32)
                return
            ep.stats_counter["dup_rx"] += 1  # PDS-W2
            if r.retx:
                ep.stats_counter["retx_dup_rx"] += 1  # PDS-R4 of uet/pds/endpoint.py
            self.send_ack(meta, psn, retx=r.retx, ce=ce)
            return
        if d > self.size:  # PDS-W3
            ep.send_nack(meta, N["INVALID_SYN"] if r.syn else N["PSN_OOR_WINDOW"], psn,
                         self.pdcid, self.peer_pdcid, retx=r.retx, payload=(cack + 1) & M32)
            return
        if self.close_psn is not None and pdiff(psn, self.close_psn) > 0:  # PDS-C2
            ep.send_nack(meta, N["CLOSING"], psn, self.pdcid, self.peer_pdcid, retx=r.retx)
            return
        if self.rod and d != 1 and not self.cfg.rod_buffer:  # PDS-W4
            ep.send_nack(meta, N["ROD_OOO"], psn, self.pdcid, self.peer_pdcid, retx=r.retx)
            return
        ses = memoryview(data)[r.size:end]
        if ep.credits is not None:  # PDS-Q5
            self.last_meta = meta
            credit.target_request(self, r.credit_target, r.size == CC_REQUEST_SIZE, now)
        code = ep.upper.admit(self.peer, r.next_hdr, ses) if r.next_hdr else 0  # PDS-W5
        if code:
            ep.send_nack(meta, code, psn, self.pdcid, self.peer_pdcid, retx=r.retx)
            return
        rsp = self.accept(psn, d, r.next_hdr, ses, r.clear_psn_offset, now)
        if self.credited:
            credit.target_arrived(self, min(len(ses), self.cfg.mtu), now)  # PDS-Q6, PDS-Q8
        self.acknowledge(meta, psn, len(ses), rsp, ar=r.ar, syn=r.syn, retx=r.retx, ce=ce,
                         now=now)

    def accept(self, psn: int, d: int, next_hdr: int, ses: memoryview, clear_psn_offset: int,
               now: float) -> tuple[int, bytes] | None:
        """PDS-W1, PDS-W4: record a new PSN (``d`` beyond CACK) and deliver its SES bytes; returns the
        response of its PSN (PDS-X3), if any."""
        self.record(psn, d, len(ses), clear_psn_offset)
        if self.rod:
            self._rod_deliver(psn, (next_hdr, ses) if next_hdr else None, now)
            return self.responses.get(psn)
        return self._deliver(psn, next_hdr, ses, now) if next_hdr else None

    def record(self, psn: int, d: int, plen: int, clear_psn_offset: int) -> None:
        """PDS-W1: a new PSN (``d`` beyond CACK) of ``plen`` bytes arrived."""
        self.win.set(psn)
        self.rcvd_bytes += plen
        if d != 1:
            self.ooo_count += 1
            if pdiff(psn, self.sack_base) < 0 and (self.late is None or pdiff(psn, self.late) < 0):
                self.late = psn
        if clear_psn_offset:
            self.clear_psn = (psn + clear_psn_offset) & M32

    def acknowledge(self, meta: DatagramMeta, psn: int, plen: int,
                    rsp: tuple[int, bytes] | None, *, ar: int, syn: int, retx: int, ce: bool,
                    now: float) -> None:
        """PDS-A1 (and PDS-C2's close) after a new PSN of ``plen`` bytes was accepted."""
        cfg = self.cfg
        self.bytes_since_ack += max(plen, cfg.ack_gen_min_pkt_add)
        newcack = self.win.cack
        if self.late_responses:
            # PDS-X3: responses made now for PSNs other than this one (ROD released them from the
            # reorder buffer) go at once, each on an ACK of its own PSN
            late, self.late_responses = self.late_responses, []
            for lp in late:
                if lp != psn:
                    self.send_ack(meta, lp)
        if (ar or syn or rsp is not None or (ce and cfg.ack_on_ecn)
                or self.bytes_since_ack >= cfg.ack_gen_trigger or cfg.ack_per_packet
                or self.grant_due):  # PDS-Q7: credit due goes on an ACK at once
            self.send_ack(meta, psn, retx=retx, ce=ce)
            if ar and pdiff(psn, newcack) > 0:
                self.pending_ar = psn
        elif self.pending_ar is not None and pdiff(newcack, self.pending_ar) >= 0:
            self.send_ack(meta, psn, retx=retx, ce=ce)
        elif ar:
            self.pending_ar = psn
        if self.close_psn is not None and newcack == self.close_psn:
            self.ep.close_target(self, now)

    def _deliver(self, psn: int, next_hdr: int, ses: memoryview,
                 now: float) -> tuple[int, bytes] | None:
        """Hand one request up; keep its response for the ACKs of its PSN (PDS-X3)."""
        rsp = self.ep.upper.deliver(self.peer, psn, next_hdr, ses, now)
        if rsp is not None:
            store = self.responses
            store[psn] = rsp
            if len(store) > 2 * self.size:
                del store[next(iter(store))]
        return rsp

    def _rod_deliver(self, psn: int, item: tuple[int, memoryview] | None, now: float) -> None:
        """PDS-W4, ROD: deliver ``item`` (None: nothing to hand up) in PSN order."""
        if psn != self.next_deliver:
            # a buffered request keeps its bytes (the datagram may be reused by the caller)
            self.rod_buf[psn] = None if item is None else (item[0], bytes(item[1]))
            self._lane.rod_held = 1  # the C lane leaves this PDC to the reference (PDS-W4)
            return
        if item is not None:
            self._deliver(psn, item[0], item[1], now)
        nd = (psn + 1) & M32
        buf = self.rod_buf
        while nd in buf:
            it = buf.pop(nd)
            if it is not None and self._deliver(nd, it[0], memoryview(it[1]), now) is not None:
                self.late_responses.append(nd)
            nd = (nd + 1) & M32
        self.next_deliver = nd
        self._lane.rod_held = int(bool(buf))

    # --- ACKs ------------------------------------------------------------------------------------
    def send_ack(self, meta: DatagramMeta, psn: int, *, retx: bool = False, ce: bool = False,
                 probe: int | None = None) -> None:
        """PDS-A2 to PDS-A4: an ACK of the current state whose ACK_PSN is ``psn`` (with its stored
        response, PDS-X3)."""
        win = self.win
        cack = win.cack
        sb = self.sack_base  # PDS-A3
        if pdiff(cack, sb) > 0:
            sb = cack
        hi = win.highest
        while pdiff(hi, sb) > 63:
            sb = (sb + 64) & M32
        self.sack_base = sb
        late = self.late
        if late is not None:
            self.late = None
            if pdiff(late, cack) > 0:
                sb = late  # report a PSN that arrived below the tracker base (PDS-A3)
        self.bytes_since_ack = 0
        if self.pending_ar is not None and pdiff(cack, self.pending_ar) >= 0:
            self.pending_ar = None
        rsp = self.responses.get(psn) if self.responses else None
        acks = self.acks
        pend = restore = 0
        if not acks.plain:  # PDS-A5
            pressure = self.ep.upper.pressure(self.peer)
            if pressure > PEND_FROM:
                pend = min(PEND_MAX, int(PEND_MAX * (pressure - PEND_FROM) / (1 - PEND_FROM)))
            if pend:
                self.penalised = True
            elif self.penalised:
                self.penalised = False
                restore = 1
        grant = credit.ack_grant(self, self.ep._now) if self.credited else None  # PDS-Q7
        reflector = self.ep.reflector  # PDS-G2 of uet.pds.signals: the CSIG reflection
        body = acks.pack(cack, pdiff(psn, cack), ce, retx, rsp[0] if rsp is not None else 0,
                         pdiff(sb, cack), 0 if acks.plain else win.sack_word(sb),
                         self.rcvd_bytes, self.ooo_count, probe, rcv_cwnd_pend=pend,
                         restore_cwnd=restore,
                         ccx_state=None if reflector is None or acks.plain or grant is not None
                         else reflector.state(meta.src, meta.sport), credit=grant)
        self.ep.send_answer(meta, body if rsp is None else body + rsp[1])

    # --- control ---------------------------------------------------------------------------------
    def on_control(self, c: Control, meta: DatagramMeta, now: float) -> None:
        """PDS-K1, PDS-C2 for a control packet that names this PDC."""
        ep = self.ep
        self.last_rx = now
        psn = c.psn
        ctl = c.ctl_type
        if ctl == CTL_ACK_REQ:
            if self.win.test(psn):  # PSNs at or before CACK count as received
                self.send_ack(meta, psn, retx=c.retx)
            else:
                ep.send_nack(meta, N["PKT_NOT_RCVD"], psn, self.pdcid, self.peer_pdcid,
                             retx=c.retx)
        elif ctl == CTL_PROBE:
            self.send_ack(meta, psn, retx=c.retx, probe=c.probe_opaque)
        elif ctl == CTL_CLEAR:
            self.clear_psn = c.payload & M32
        elif ctl == CTL_CREDIT_REQ:  # PDS-Q8
            self.last_meta = meta
            credit.target_credit_request(self, c.payload & 0xFFFFFF, now)
        elif ctl == CTL_CLOSE:
            win = self.win
            d = pdiff(psn, win.cack)
            if d > self.size:
                ep.send_nack(meta, N["PSN_OOR_WINDOW"], psn, self.pdcid, self.peer_pdcid,
                             retx=c.retx)
                return
            if d > 0:
                win.set(psn)
                self.close_psn = psn
                self.transition(TargetEvent.CLOSE_RCVD)
                if self.rod and self.next_deliver == psn:
                    self.next_deliver = (psn + 1) & M32
                elif self.rod:
                    self.rod_buf[psn] = None
                    self._lane.rod_held = 1
            self.send_ack(meta, psn, retx=c.retx)
            if self.close_psn is not None and win.cack == self.close_psn:
                ep.close_target(self, now)
