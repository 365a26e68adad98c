"""The initiator side of a PDC: PSNs for the requests of the items the upper layer hands it, the
windows, ACK/NACK/control handling, close. Loss recovery is :mod:`uet.pds.recovery`; headers are
:mod:`uet.pds.packets`.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
  PDS-I1  C.1: first packets carry SYN + psn_offset (12 bits: at most ``syn_psn_range`` = 4096 PSNs
      beyond START_PSN before the first ACK); START_PSN random (seeded) in [2^16, 2^31).
  PDS-I2  C.1: the first valid ACK establishes the PDC: DPDCID := ACK.SPDCID; SYN stops.
  PDS-I3  C.2: every request carries CLEAR_PSN = send base - 1 (all PSNs up to it acknowledged),
      clamped to the signed 16-bit offset.
  PDS-I4  C.2: never send a PSN beyond min(base + tx_range, CACK + peer MPR*128).
  PDS-I5  C.3: AR on the last request of each item (the EOM packet), on every retransmission, on
      everything in per-packet mode.
  PDS-I10 B.11, the reaction table of uet/pds/reactions.py: resend at once; resend after
      NACK_RETX_TIME (PSN_OOR_WINDOW); back off on the resource codes (NO_PDC_AVAIL ...
      NO_RESOURCE) NACK_RETX_TIME x 2^k, at most ``resource_backoff_max`` each and
      ``max_resource_retx`` times (about 12 s in all: longer than the target's reaping, PDS-T3, and
      the SES's expiry of partial messages, SES-R3); close the PDC in error; re-base on NEW_START_PSN (before establishment only); ignore
      RCVD_SES_PROCG (the RTO covers it). More than ``max_nack_retx`` NACK-driven resends of one
      PSN close the PDC in error; one resend per loss however many NACKs name it. Choice: trims
      (TRIMMED, TRIMMED_LASTHOP, TRIMMED_ACK) count against ``max_trim_retx`` instead (default
      1000): a trim is congestion, not an error, and a sender in a 16-to-1 incast without
      congestion control (``--cc fixed``) sees 20 to 40 of them for one PSN; the bound still
      ends a PDC whose fabric trims everything.
  PDS-I11 C.5: a NACK or ACK naming a PSN outside [send base, next PSN - 1] changes nothing (counted).
  PDS-I12 B.4: ACK REQ = 1 -> send CLEAR (ctl 2, payload = CLEAR_PSN); REQ = 2 or CLOSE_REQ -> close.
  PDS-I13 C.1 / A.1: ACKs, NACKs and control packets for an initiator PDC count only when they come
      from the PDC's peer address (never by source port, which is only the EV an answer copies
      from its request, A.1); others are dropped and counted (``foreign_ack``, ``foreign_nack``,
      ``foreign_control``), so the first ACK establishes the PDC only from there. Within one
      address anyone can still forge: TSS (B.15, F) is the answer to that.
  PDS-I14 C.7: a NACK INV_DPDCID or CLOSING naming our CLOSE PSN means the target freed the PDC and
      its MSL ended before the CLOSE (or its retransmission) arrived; every item was
      acknowledged before the CLOSE left (PDS-C1), so the PDC closes normally, not in error.
  PDS-I15 C.3: a request that fills the send window while fewer than ACK_GEN_TRIGGER bytes are in
      flight carries AR: with a window below the target's ACK trigger (the C.3 default is
      assumed: ``ack_gen_trigger``) nothing else would make the target ACK before a timer.
  PDS-I16 E.4 (the project's extension, uet.cms.csig CMS-C4): the CSIG tags reflected in an ACK_CCX of
      ccx_type 14 reach the entropy selector (``on_signal``) and the congestion control
      (``on_signal``) before the ACK's other hooks; unasked reflections are counted, ignored.
  PDS-C1  C.7: the initiator closes only when every item is acknowledged: CONTROL CLOSE (ctl 4) with
      AR on a new PSN; the PDC is freed when an ACK covers that PSN.
  PDS-X1  C.8: each item goes as requests on this PDC, its SES bytes verbatim.
  PDS-X4  C.3: an ACK with next_hdr 4-6 carries an SES response: it goes up (``Upper.response``)
      with the token of the request at ACK_PSN, or of a request PDS-X5 still waits for; one that
      names none is a repeat, dropped and counted (``stale_ses_response``).
  PDS-X5  choice (a cumulative ACK can cover a PSN whose own ACK, carrying the response, was lost):
      when an item's requests are all CACKed and the upper layer still waits for its response
      (``Upper.pending``), ACK_REQ (ctl 1) goes for each of its PSNs after 2 RTO, then 4, 8
      and 16 RTO apart; the target answers with the stored response (PDS-X3). After 4 x
      ``max_rto_retx`` tries the item fails. Close (PDS-C1) waits for these.
  PDS-X6  C.5 / C.7: a PDC closed in error fails its items (``Upper.failed``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..cms.csig import CSIG_CCX_TYPE, reflected
from ..wire.enums import (CTL_ACK_REQ, CTL_CLEAR, CTL_CLEAR_REQ, CTL_CLOSE, CTL_CLOSE_REQ,
                          CTL_CREDIT, CTL_PROBE, ROD_CC_REQ, ROD_REQ, RUD_CC_REQ, RUD_REQ,
                          TRIM_CODES, nack_name)
from ..native.txbuild import build_requests
from ..wire.psn import M32, pdiff
from ..wire.trailer import address_bytes, udp_seed
from . import events as ev
from .datagram import DSCP_CONTROL, ECT0, NOT_ECT, DatagramMeta, seal
from .credit import InitiatorCredit
from .packets import CC_TYPE_CREDIT, Ack, Control, Nack, RequestHeader, control_bytes
from .pdc import PdcSide
from .reactions import BACKOFF, CLOSE, CLOSED_PDC_CODES, REBASE, RESEND_LATER, RESEND_NOW
from .reactions import reaction
from .recovery import ACKED, INFLIGHT, LOST, SACKED, Recovery, SentPacket
from .states import INITIATOR_TABLE, InitiatorEvent, InitiatorState

# PDC states (C.1, C.7) and their transitions: uet.pds.states
SYN_SENT, ESTABLISHED = InitiatorState.SYN_SENT, InitiatorState.ESTABLISHED
CLOSING, CLOSED = InitiatorState.CLOSING, InitiatorState.CLOSED


class _Item:
    """An upper-layer item on this PDC: how far it got."""

    __slots__ = ("item", "next", "unacked", "queued_all", "done", "psns")

    def __init__(self, item: Any):
        self.item = item
        self.next = 0          # its next request to send
        self.unacked = 0
        self.queued_all = False
        self.done = False
        self.psns: list[int] = []


class Initiator(PdcSide):
    role = "initiator"
    TABLE = INITIATOR_TABLE
    INITIAL = SYN_SENT

    def __init__(self, ep: Any, pdcid: int, peer: str, mode: str, key: tuple):
        super().__init__(ep, pdcid, peer, 0, mode, key)
        cfg = self.cfg
        self.cc = cfg.cc_factory(cfg)
        # PDS-Q1 of uet.pds.credit: a CC that wants credit (RCCC, E.2) sends the CC request forms
        self.credit = InitiatorCredit(self) if self.cc.wants_credit else None
        if self.credit is None:
            self.ptype = ROD_REQ if mode == "rod" else RUD_REQ
        else:
            self.ptype = ROD_CC_REQ if mode == "rod" else RUD_CC_REQ
        self.start_psn = ep.rng.randrange(cfg.start_psn_lo, cfg.start_psn_hi) & M32
        self.next_psn = self.start_psn
        self.base = self.start_psn
        self.peer_range = cfg.rx_window  # C.9 DEFAULT_MPR until the first ACK_CC says otherwise
        self.queue: deque[_Item] = deque()
        self.items: dict[int, _Item] = {}  # id(item) -> progress
        self.ctl_q: deque = deque()
        self.close_wanted = False
        self.close_psn: int | None = None
        # PDS-X5: token -> [PSNs, deadline, tries]; PSN -> token for those PSNs
        self.ses_wait: dict[Any, list] = {}
        self.ses_psn: dict[int, Any] = {}
        self.sel = cfg.entropy_factory(cfg, ep.rng)
        self.rec = Recovery(self)
        self.last_sack = (-1, 0)
        # bit k set <=> the packet of PSN base + k is SACKED (shifted as the base advances), so
        # that a SACK bitmap's already-known bits cost nothing
        self.sackmask = 0
        self.header = RequestHeader(self.ptype, pdcid)
        self._metas: dict[int, DatagramMeta] = {}  # entropy -> metadata of data requests
        # A.3: the addresses every trailer of this PDC covers, a constant of the PDC, so that the
        # C request builder seeds the trailers itself (uet.native.txbuild); None for addresses
        # that are not IP literals (a simulator's names): udp_seed gives the seeds then
        self.trailer_context = _trailer_context(ep.address, peer)

    @property
    def established(self) -> bool:
        return self.state != SYN_SENT

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    @property
    def packets(self) -> dict[int, SentPacket]:
        return self.rec.packets

    # --- API ------------------------------------------------------------------------------------
    def submit(self, item: Any) -> None:
        """PDS-X1: send ``item``'s requests on this PDC."""
        it = _Item(item)
        self.items[id(item)] = it
        self.queue.append(it)
        if self.credit is not None:
            self.credit.queued(item)

    def busy(self) -> bool:
        return bool(self.queue or self.rec.packets or self.ctl_q or self.ses_wait)

    def queue_control(self, ctl: int, psn: int, payload: int, retx: bool) -> None:
        self.ctl_q.append((ctl, psn, payload, retx))

    def fail(self, reason: str) -> None:
        self.ep.fail_initiator(self, reason)

    # --- timers ---------------------------------------------------------------------------------
    def deadline(self) -> float:
        t = self.rec.deadline()
        if self.credit is not None and self.credit.request_at < t:
            t = self.credit.request_at  # PDS-Q3: CREDIT_REQ again
        for w in self.ses_wait.values():
            if w[1] < t:
                t = w[1]
        return t

    def on_timer(self, now: float) -> None:
        if self.ses_wait:
            self._ses_timer(now)
        self.rec.on_timer(now)

    def _ses_timer(self, now: float) -> None:
        """PDS-X5: ask again (ACK_REQ, C.4) for the ACKs that carry an item's response."""
        up = self.ep.upper
        for token, w in list(self.ses_wait.items()):
            if not up.pending(token):
                self._ses_settle(token)
                continue
            if w[1] > now:
                continue
            if w[2] >= 4 * self.cfg.max_rto_retx:
                self._ses_settle(token)
                up.failed(token, "no SES response")
                continue
            w[2] += 1
            w[1] = now + 2 * self.rec.rto() * (1 << min(w[2], 3))
            for psn in w[0]:
                self.queue_control(CTL_ACK_REQ, psn, 0, True)

    def _ses_settle(self, token: Any) -> None:
        w = self.ses_wait.pop(token, None)
        if w is not None:
            for psn in w[0]:
                self.ses_psn.pop(psn, None)

    # --- sending --------------------------------------------------------------------------------
    def fill(self, now: float, out: list) -> None:
        """What may go out now: control packets, resends, new requests, the CLOSE."""
        while self.ctl_q:
            ctl, psn, payload, retx = self.ctl_q.popleft()
            out.append(self._control(ctl, psn, payload, retx))
        rec = self.rec
        packets = rec.packets
        rq = rec.retx_q
        while rq:
            p = packets.get(rq[0])
            if p is None or p.state != LOST:
                rq.popleft()
                continue
            if not self._may_send(p.length):
                break
            rq.popleft()
            out.append(self._transmit(p, now, retx=True))
        else:
            if self.queue:
                self._send_new(now, out)
        if self.credit is not None:
            self.credit.check(now, out)
        if (self.close_wanted and self.close_psn is None and not packets and not self.queue
                and not self.ses_wait):
            psn = self.next_psn
            self.next_psn = (psn + 1) & M32
            p = SentPacket(psn, None, 0, 0, True, CTL_CLOSE)
            packets[psn] = p
            self.close_psn = psn
            self.transition(InitiatorEvent.CLOSE_SENT)
            out.append(self._transmit(p, now, retx=False))

    def _may_send(self, nbytes: int) -> bool:
        """The congestion control's gate (with RCCC's exception PDS-Q4 of uet.pds.credit)."""
        if self.credit is not None:
            return self.credit.may_send(nbytes)
        return self.cc.can_send(self.rec.inflight, nbytes)

    def _room(self) -> int:
        """PDS-I4, C.1: how many new PSNs the windows allow now."""
        psn, base = self.next_psn, self.base
        room = min(self.cfg.tx_range - pdiff(psn, base), self.peer_range - pdiff(psn, base))
        if self.state == SYN_SENT:
            room = min(room, self.cfg.syn_psn_range - pdiff(psn, self.start_psn))
        return room

    def _send_new(self, now: float, out: list) -> None:
        """New requests while the windows (PDS-I4) and congestion control allow, decided one by one
        (AR: PDS-I5, PDS-I15; the entropy; :meth:`Recovery.on_sent`). Established and without a credit
        demand (the 12-byte header, B.5) they are built a run of one item's packets at a time
        after the loop (:meth:`_build`); otherwise (the SYN form, PDS-I1; the CC form with the
        demand of that moment, PDS-Q1) each as it is decided."""
        room = self._room()
        cfg, cc, rec, queue, credit = self.cfg, self.cc, self.rec, self.queue, self.credit
        mtu, trigger, per_packet = cfg.mtu, cfg.ack_gen_trigger, cfg.ack_per_packet
        next_ev, on_sent = self.sel.next, rec.on_sent
        batch = self.state != SYN_SENT and credit is None
        runs: list = []  # [item progress, first SentPacket, its AR flags, their entropies]
        run = None
        while queue and room > 0:
            it = queue[0]
            item = it.item
            k = it.next
            n = item.size_of(k)
            # the gate of _may_send: the congestion control's, or RCCC's credit (PDS-Q4)
            if not (cc.can_send(rec.inflight, n) if credit is None else credit.may_send(n)):
                break
            if credit is not None:
                credit.sent_new(n)
            last = k + 1 == item.count
            it.next = k + 1
            it.unacked += 1
            if last:
                queue.popleft()
                it.queued_all = True
            psn = self.next_psn
            self.next_psn = (psn + 1) & M32
            room -= 1
            p = SentPacket(psn, it, k, n, last)
            rec.packets[psn] = p
            it.psns.append(psn)
            inflight = rec.inflight + n
            # PDS-I15: this request fills the window with fewer than ACK_GEN_TRIGGER bytes out
            fills = inflight < trigger and (room == 0 or not cc.can_send(inflight, mtu))
            ev_ = next_ev(now)
            on_sent(p, now, ev_, False)
            if not batch:
                meta = self._meta(ev_)
                out.append((self._request(p, meta, ar=fills, retx=False), meta))
                continue
            if run is None or run[0] is not it:
                run = [it, p, [], []]
                runs.append(run)
            run[2].append(fills or last or per_packet)  # PDS-I5 (AR on the item's last request), PDS-I15
            run[3].append(ev_)
        for _, p, ar, evs in runs:
            self._build(p, ar, evs, out)

    def _build(self, p: SentPacket, ar: list[bool], evs: list[int], out: list) -> None:
        """The datagrams of the new requests ``p.psn``, ``p.psn + 1``, ... of an established PDC
        (packets ``p.index`` on of one item, their AR flags and entropies) in one call
        (uet.native.txbuild: C, or its Python twin, which packs as :meth:`_request` does)."""
        cfg = self.cfg
        out.extend(zip(build_requests(
            header=self.header, item=p.item.item, first=p.index, psn=p.psn,
            clear_psn=(self.base - 1) & M32, ar=ar, entropy=evs, src=self.ep.address,
            dst=self.peer, port=cfg.port, udp_seed=udp_seed, context=self.trailer_context),
            [self._metas.get(ev_) or self._meta(ev_) for ev_ in evs]))  # PDS-I3: CLEAR_PSN

    def _transmit(self, p: SentPacket, now: float, *, retx: bool) -> tuple[bytes, DatagramMeta]:
        """A resend (or the CLOSE) of ``p``."""
        sel = self.sel
        # MULTIPATH-H3 of uet.multipath: resends and control packets on an EV known to work
        ev_ = sel.next_retransmit(now) if retx or p.ctl >= 0 else sel.next(now)
        self.rec.on_sent(p, now, ev_, retx)
        if p.ctl >= 0:
            return self._control(p.ctl, p.psn, p.payload, retx, ev_=ev_)
        meta = self._meta(ev_)
        return self._request(p, meta, ar=False, retx=retx), meta

    def _meta(self, ev_: int) -> DatagramMeta:
        """The addressing of a data request on entropy ``ev_`` (one object per EV)."""
        meta = self._metas.get(ev_)
        if meta is None:
            meta = self._metas[ev_] = DatagramMeta(self.ep.address, self.peer, ev_,
                                                   self.cfg.port, ECT0, 0)
        return meta

    def _request(self, p: SentPacket, meta: DatagramMeta, *, ar: bool, retx: bool) -> bytes:
        """The datagram of request ``p`` (one packet at a time: the SYN and CC forms, resends)."""
        item = p.item.item
        head = self.header.pack(
            item.next_hdr, p.psn, pdiff((self.base - 1) & M32, p.psn),  # PDS-I3
            ar=ar or p.last or retx or self.cfg.ack_per_packet, retx=retx,  # PDS-I5
            psn_offset=None if self.established else (p.psn - self.start_psn),
            credit_target=None if self.credit is None else self.credit.demand())  # PDS-Q1
        return seal((head, item.header(p.index), item.payload_of(p.index)), meta)

    def _control(self, ctl: int, psn: int, payload: int, retx: bool,
                 ev_: int | None = None) -> tuple[bytes, DatagramMeta]:
        if ev_ is None:  # MULTIPATH-H3 of uet.multipath: a probe explores, others need their answer
            sel = self.sel
            ev_ = sel.next_probe(self.rec.last_tx) if ctl == CTL_PROBE else sel.next_retransmit(
                self.rec.last_tx)
        if ctl == CTL_ACK_REQ:
            self.ep.stats_counter["ack_req_tx"] += 1
        body = control_bytes(ctl, psn, self.pdcid, dpdcid=self.peer_pdcid,
                             psn_offset=None if self.established else psn - self.start_psn,
                             rod=self.mode == "rod", retx=retx, ar=True, payload=payload)
        meta = DatagramMeta(self.ep.address, self.peer, ev_, self.cfg.port, NOT_ECT, DSCP_CONTROL)
        return seal((body,), meta), meta

    # --- receiving ------------------------------------------------------------------------------
    def on_ack(self, a: Ack, data: bytes, end: int, meta: DatagramMeta, now: float) -> None:
        """One ACK (B.7-B.9) for this PDC; ``data[a.size:end]`` is an SES response when
        ``a.next_hdr`` says so."""
        ep = self.ep
        stats = ep.stats_counter
        if meta.src != self.peer:  # PDS-I13
            stats["foreign_ack"] += 1
            return
        cack = a.cack_psn
        # PDS-I11: a CACK beyond what was sent, or far behind the base, is bogus
        if (pdiff(cack, self.next_psn) >= 0
                or pdiff(cack, (self.base - 1) & M32) < -self.cfg.tx_range - 65536):
            stats["bad_ack"] += 1
            return
        if self.state == SYN_SENT:  # PDS-I2
            self.transition(InitiatorEvent.FIRST_ACK)
            self.peer_pdcid = a.spdcid
            self.header = RequestHeader(self.ptype, self.pdcid, a.spdcid)
            self.rec.on_established()  # PDS-I8: a longer backoff for a peer known to answer
            ep.events.append(ev.PdcEstablished(self.pdcid, a.spdcid, self.peer, "initiator",
                                               self.mode))
        elif a.spdcid != self.peer_pdcid:
            stats["bad_ack"] += 1
            return
        rec = self.rec
        packets = rec.packets
        ack_psn = None if a.p else (cack + a.ack_psn_offset) & M32
        acked = packets.get(ack_psn) if ack_psn is not None else None
        rec.rtt_sample(acked, now)  # Karn inside
        if a.mpr is not None:
            self.peer_range = max(a.mpr, 1) * 128
        if a.next_hdr:
            self._response(a, acked, ack_psn, data, end, meta, now)
        acked_bytes = 0
        progress = False
        # PDS-I6: CACK
        base = self.base
        if pdiff(cack, base) >= 0:
            while True:
                p = packets.pop(base, None)
                if p is not None:
                    if p.state != SACKED:
                        acked_bytes += p.length
                        rec.delivered(p, now)
                    p.state = ACKED
                    if p.ctl == CTL_CLOSE:
                        self.base = (base + 1) & M32
                        ep.closed_initiator(self)
                        return
                    self._acked(p, now)
                if base == cack:
                    break
                base = (base + 1) & M32
            if self.sackmask:
                self.sackmask >>= (cack + 1 - self.base) & M32
            self.base = base = (cack + 1) & M32
            progress = True
        # C.4: SACK bits of PSNs in [base, next PSN) not yet known SACKED
        if a.sack_bitmap:
            acked_bytes, found = self._sack(a, base, acked_bytes, now)
            progress = progress or found
        if progress:
            rec.progress(now)
        if a.ccx_type is not None:
            self._signals(a, now)
        elif a.cc_type == CC_TYPE_CREDIT and self.credit is not None:
            self.credit.granted(now, a.credit)  # PDS-Q2
        if a.m:
            self.cc.on_ce(now=now, size=acked_bytes)
        self.cc.on_ack(now=now, size=acked_bytes, inflight=rec.inflight, ack=a)
        self.sel.on_ack(now=now, ev=meta.sport, ce=bool(a.m))  # A.1: its source port is our EV
        if a.p and not progress:
            # PDS-I8: a probe's answer shows the base PSN still missing: if its last copy went on
            # an EV not known to work, resend it now (MULTIPATH-H3 picks the EV this answer proved)
            p = packets.get(self.base)
            if p is not None and p.state == INFLIGHT and not self.sel.known(p.ev):
                rec.mark_lost(p, now)
        rec.detect_loss(now)
        if a.req == 1:  # PDS-I12
            self.queue_control(CTL_CLEAR, 0, (self.base - 1) & M32, False)
        elif a.req == 2:
            self.close_wanted = True

    def _signals(self, a: Ack, now: float) -> None:
        """PDS-I16: the CSIG tags an ACK_CCX reflects (uet.cms.csig CMS-C4) go to the entropy selector
        and the congestion control, EV by EV; a reflection not asked for (``csig`` off) or
        another ccx_type is counted and ignored."""
        if a.ccx_type != CSIG_CCX_TYPE or self.cfg.csig is None:
            self.ep.stats_counter["csig_unasked" if a.ccx_type == CSIG_CCX_TYPE
                                  else "unknown_ccx"] += 1
            return
        sel, cc = self.sel, self.cc
        for ev_, bits in reflected(a.ccx_state):
            sel.on_signal(now=now, ev=ev_, bits=bits)
            cc.on_signal(now=now, ev=ev_, bits=bits)

    def _sack(self, a: Ack, base: int, acked_bytes: int, now: float) -> tuple[int, bool]:
        bm = a.sack_bitmap
        sbase = (a.cack_psn + a.sack_psn_offset) & M32
        lb, lbm = self.last_sack
        new = bm & ~lbm if lb == sbase else bm
        self.last_sack = (sbase, bm)
        span = (self.next_psn - base) & M32
        d0 = pdiff(base, sbase)
        if d0 > 0:
            new >>= d0  # drop the bits below the base; bit k is now PSN base + k
        elif -d0 < span:
            new <<= -d0
        else:
            new = 0
        new &= ((1 << span) - 1) & ~self.sackmask
        found = False
        packets = self.rec.packets
        while new:
            low = new & -new
            new ^= low
            p = packets.get((base + low.bit_length() - 1) & M32)
            if p is not None and p.state != SACKED:
                self.rec.delivered(p, now)
                p.state = SACKED
                self.sackmask |= low
                acked_bytes += p.length
                found = True
        return acked_bytes, found

    def _acked(self, p: SentPacket, now: float) -> None:
        """A request is CACKed: its item may be complete (PDS-X5)."""
        it = p.item
        it.unacked -= 1
        if it.unacked or not it.queued_all or it.done:
            return
        it.done = True
        self.items.pop(id(it.item), None)
        up = self.ep.upper
        token = it.item.token
        up.acked(token, now)
        if up.pending(token):  # PDS-X5: its response may have ridden an ACK that was lost
            w = self.ses_wait.get(token)
            if w is None:
                w = self.ses_wait[token] = [[], now + 2 * self.rec.rto(), 0]
            for psn in it.psns:
                w[0].append(psn)
                self.ses_psn[psn] = token

    def _response(self, a: Ack, acked: SentPacket | None, ack_psn: int | None, data: bytes,
                  end: int, meta: DatagramMeta, now: float) -> None:
        """PDS-X4: an SES response on the ACK goes up with the token of the request it answers."""
        if acked is not None and acked.item is not None:
            token = acked.item.item.token
        elif ack_psn is not None:
            token = self.ses_psn.get(ack_psn)
        else:
            token = None
        up = self.ep.upper
        if token is None or not up.pending(token):
            self.ep.stats_counter["stale_ses_response"] += 1  # it already had its response
            return
        up.response(token, a.next_hdr, memoryview(data)[a.size:end], self.peer, now)
        if token in self.ses_wait and not up.pending(token):
            self._ses_settle(token)

    def on_nack(self, n: Nack, meta: DatagramMeta, now: float) -> None:
        ep = self.ep
        stats = ep.stats_counter
        if meta.src != self.peer:  # PDS-I13
            stats["foreign_nack"] += 1
            return
        code, psn = n.nack_code, n.nack_psn
        if pdiff(psn, self.base) < 0 or pdiff(psn, self.next_psn) >= 0:  # PDS-I11
            stats["stale_nack"] += 1
            return
        p = self.rec.packets.get(psn)
        if p is None:
            stats["stale_nack"] += 1
            return
        if self.established and n.spdcid not in (0, self.peer_pdcid):
            stats["bad_nack"] += 1
            return
        if p.ctl == CTL_CLOSE and code in CLOSED_PDC_CODES:  # PDS-I14
            stats["close_nacked"] += 1
            ep.closed_initiator(self)
            return
        self.cc.on_nack(now=now, size=p.length, code=code)
        self.sel.on_nack(now=now, ev=meta.sport, code=code)  # A.1: the EV the NACK copies
        what = reaction(code).pdc
        if what in (RESEND_NOW, RESEND_LATER, BACKOFF):
            self._nack_resend(p, code, what, now)
        elif what == CLOSE:
            ep.fail_initiator(self, f"NACK {nack_name(code)}")
        elif what == REBASE and not self.established:
            self._rebase(n.payload & M32)

    def _nack_resend(self, p: SentPacket, code: int, what: str, now: float) -> None:
        """PDS-I10: resend ``p`` now, later, or after a backoff that outlasts the target's reaping."""
        if p.state in (SACKED, LOST):
            return  # it arrived after all, or its resend is already due
        cfg = self.cfg
        rec = self.rec
        if what == BACKOFF:
            p.waits += 1
            if p.waits > cfg.max_resource_retx:
                self.ep.fail_initiator(self, f"NACK {nack_name(code)} retry limit")
                return
            delay = min(cfg.nack_retx_time * (1 << min(p.waits - 1, 40)),
                        max(cfg.resource_backoff_max, cfg.nack_retx_time))
        else:
            p.nacks += 1
            if p.nacks > (cfg.max_trim_retx if code in TRIM_CODES else cfg.max_nack_retx):
                self.ep.fail_initiator(self, f"NACK {nack_name(code)} retry limit")
                return
            delay = cfg.nack_retx_time
        rec.inflight -= p.length
        p.state = LOST
        if what == RESEND_NOW:
            rec.retx_q.append(p.psn)
        else:
            rec.delayed.append((now + delay, p.psn))
            rec.delayed.sort()

    def _rebase(self, new_start: int) -> None:
        """NEW_START_PSN (C.1, B.11): shift every PSN by the delta and resend everything."""
        rec = self.rec
        delta = (new_start - self.start_psn) & M32
        old = sorted(rec.packets.values(), key=lambda p: pdiff(p.psn, self.start_psn))
        self.start_psn = new_start
        self.base = (self.base + delta) & M32
        self.next_psn = (self.next_psn + delta) & M32
        rec.packets = {}
        self.sackmask = 0
        rec.sent_q.clear()
        rec.retx_q.clear()
        rec.delayed = []
        rec.inflight = 0
        for p in old:
            p.psn = (p.psn + delta) & M32
            p.state = LOST
            rec.packets[p.psn] = p
            rec.retx_q.append(p.psn)
        for it in self.items.values():
            it.psns = [(x + delta) & M32 for x in it.psns]
        if self.close_psn is not None:
            self.close_psn = (self.close_psn + delta) & M32

    def on_control(self, c: Control, meta: DatagramMeta, now: float) -> None:
        if meta.src != self.peer:  # PDS-I13
            self.ep.stats_counter["foreign_control"] += 1
            return
        if c.ctl_type == CTL_CLEAR_REQ:  # PDS-I12
            self.queue_control(CTL_CLEAR, 0, (self.base - 1) & M32, False)
        elif c.ctl_type == CTL_CLOSE_REQ:
            self.close_wanted = True
        elif c.ctl_type == CTL_CREDIT and self.credit is not None:
            self.credit.granted(now, c.payload & 0xFFFFFF)  # PDS-Q2
        else:
            self.ep.stats_counter["unsupported"] += 1  # a CREDIT this PDC did not ask for too

    def outstanding_items(self) -> list[Any]:
        """The items not yet complete (for PDS-X6)."""
        return [it.item for it in self.items.values() if not it.done]


def _trailer_context(src: str, dst: str) -> bytes | None:
    """The addresses of the trailer context (A.3) of a PDC from ``src`` to ``dst``, or None when
    they are not two IP literals of one family."""
    try:
        a, b = address_bytes(src), address_bytes(dst)
    except (OSError, TypeError, ValueError):
        return None
    return a + b if len(a) == len(b) else None
