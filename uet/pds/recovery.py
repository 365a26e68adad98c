"""Loss recovery of one initiator PDC: the packets in flight, the RTT estimate, loss detection
(RACK-like, from SACKs), the retransmission timeout with its backoff and probes, and tail-loss
probes - over the map of sent packets, in the manner of aioquic's ``recovery.py``. The initiator
(uet/pds/initiator.py) sends what this decides; congestion control and the entropy selector hear
every event through their interfaces (uet.cms, uet.multipath), never by special case.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
  PDS-I6  C.2: CACK_PSN acknowledges every PSN up to it; C.4: SACK bits mark PSNs as arrived (SACKED),
      not completed. Each packet newly known to have arrived is reported to the entropy selector
      (``on_delivered``, its EV works) and its bytes to congestion control (``on_ack``).
  PDS-I7  choice (RACK-like, needed for sprayed traffic): a PSN not SACKed while a packet sent after it
      was is lost once it is older than the recent maximum RTT (paths differ in queueing, so the
      latest RTT alone would call every slower path lossy) + a reorder window (``reorder_window``
      x min RTT, grown when a retransmission turns out spurious: ACKed sooner than
      SPURIOUS_RTT_FRACTION x min RTT after it went out). "Recent maximum" is a windowed
      maximum: the largest RTT delivered in the current window of RTT_WINDOW_SRTTS srtt or in
      the one before it (a window ends only by time, never by a smaller sample).
  PDS-I8  C.5: RTO (initial ``rto_initial``, C.9 RTO_INIT_TIMER 1 ms; choice: srtt + RTO_K rttvar,
      floor ``rto_min``, once sampled) with exponential backoff (at most x BACKOFF_CAP, and
      ``rto_max``); on expiry, packets older than the RTO are resent; when only SACKed-but-not-
      CACKed packets remain, an ACK_REQ control (ctl 1) for the lowest of them is sent instead
      (C.4). The k-th timeout in a row also sends CONTROL PROBE (B.12, payload the base PSN) on
      2^k EVs not tried since the last progress (choice: ECMP hashes requests and answers on
      the entropy, so a sender whose paths failed must find EVs that work both ways; the answer,
      an ACK with P = 1, comes back on the probe's EV and makes it known, MULTIPATH-H3 of uet.multipath); an
      answer that shows the base PSN still missing while its last copy went on an EV not known to
      work resends it at once. After a timeout the next one is at least one (backed-off) RTO
      later, however spread out in time the packets still in flight were sent. More than
      ``max_rto_retx`` consecutive timeouts without progress close the PDC in error. Choice: once
      the PDC is established (its peer has answered), the backoff is capped by
      ``rto_max_established`` and the give-up comes after ``max_rto_retx_established``
      timeouts instead (each when set, and larger), so that they span a longer silence: a peer
      that answered before is more likely slow (a loaded host, a queue behind a SYN flood) than
      gone, and a give-up after a fixed few seconds of silence would kill a transfer that only
      waits. No RTO runs while everything outstanding waits for a NACK-driven resend (PDS-I10).
  PDS-I9  C.9 TAIL_LOSS_TIME: tail-loss probe: with packets outstanding and nothing sent or heard
      for the probe time (choice: 2 srtt, min ``tlp_min``; restarted on progress), ACK_REQ for the
      newest outstanding PSN; the target answers an ACK (with SACK) or NACK PKT_NOT_RCVD. At most
      ``max_tail_loss_retx`` probes in a row.
  Karn: an RTT sample comes only from a packet sent once (never from a retransmission).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from ..wire.enums import CTL_ACK_REQ, CTL_PROBE
from ..wire.psn import pdiff

INF = float("inf")

# --- named constants (RFC 6298's estimator; the rest are choices, see the rules above) ----------
RTT_ALPHA = 0.125            # srtt gain
RTT_BETA = 0.25              # rttvar gain
RTO_K = 4                    # rto = srtt + RTO_K x rttvar
BACKOFF_CAP = 1 << 10        # the RTO doubles per timeout up to this factor
RTT_WINDOW_SRTTS = 4         # PDS-I7: the windowed maximum RTT keeps a window of this many srtt
SPURIOUS_RTT_FRACTION = 0.75  # PDS-I7: a resend ACKed sooner than this x min RTT was spurious
TLP_SRTTS = 2                # PDS-I9: probe time = TLP_SRTTS x srtt (at least tlp_min)

# packet states
INFLIGHT, SACKED, LOST, ACKED = 0, 1, 2, 3


class SentPacket:
    """One PSN the initiator sent and has not seen CACKed: a request (``item`` and its packet
    ``index``) or a tracked control packet (``ctl`` >= 0: CLOSE)."""

    __slots__ = ("psn", "item", "index", "length", "last", "ctl", "payload", "sent", "xmits",
                 "seq", "state", "nacks", "waits", "ev")

    def __init__(self, psn: int, item: Any, index: int, length: int, last: bool, ctl: int = -1):
        self.psn = psn
        self.item = item
        self.index = index
        self.length = length
        self.last = last          # the item's last request (C.3: AR)
        self.ctl = ctl
        self.payload = 0
        self.sent = 0.0
        self.xmits = 0
        self.seq = 0
        self.state = INFLIGHT
        self.nacks = 0            # NACK-driven resends (PDS-I10)
        self.waits = 0            # resource NACKs (PDS-I10)
        self.ev = 0


class Owner(Protocol):
    """What recovery asks of and takes from its initiator."""

    base: int  # the lowest PSN not CACKed
    cfg: Any   # its PdsConfig
    cc: Any    # its congestion control (uet.cms)
    sel: Any   # its entropy selector (uet.multipath)
    ep: Any    # its endpoint (``stats_counter``)

    def queue_control(self, ctl: int, psn: int, payload: int, retx: bool) -> None: ...

    def fail(self, reason: str) -> None: ...


class Recovery:
    """Sent packets, RTT, loss detection and timers of one initiator PDC."""

    def __init__(self, owner: Owner):
        self.owner = owner
        self.cfg, self.cc, self.sel = owner.cfg, owner.cc, owner.sel
        self.stats = owner.ep.stats_counter
        self.packets: dict[int, SentPacket] = {}
        self.sent_q: deque = deque()  # (seq, packet) per transmission; stale once either changed
        self.retx_q: deque = deque()  # PSNs to resend now
        self.delayed: list[tuple[float, int]] = []  # (when, PSN): NACK-driven resends (PDS-I10)
        self.inflight = 0
        self.seq = 0
        self.srtt = 0.0
        self.rttvar = 0.0
        self.min_rtt = INF
        self.rack_seq = 0
        self.rack_rtt = 0.0
        self.rtt_hi = 0.0    # largest RTT delivered in the current window (PDS-I7) ...
        self.rtt_hi_t = 0.0  # ... which started then ...
        self.rtt_prev = 0.0  # ... and the largest of the window before it
        self.reo_steps = 1
        self.rto_cap = self.cfg.rto_max  # PDS-I8: rto_max_established once the peer answered ...
        self.rto_retx = self.cfg.max_rto_retx  # ... and max_rto_retx_established
        self.last_tx = 0.0
        self.rack_at = INF
        self.progress(0.0)  # the timers' state: nothing sent yet

    # --- sending -------------------------------------------------------------------------------
    def on_sent(self, p: SentPacket, now: float, ev: int, retx: bool) -> None:
        """``p`` went out on ``ev`` (every transmission, new or resent, comes here)."""
        seq = self.seq = self.seq + 1
        p.seq = seq
        p.xmits += 1
        p.sent = now
        p.state = INFLIGHT
        p.ev = ev
        self.inflight += p.length
        self.sent_q.append((seq, p))
        self.last_tx = now
        if self.last_progress == 0.0:
            self.last_progress = now
        if retx:
            self.stats["retransmissions"] += 1
        self.cc.on_send(now=now, size=p.length, retx=retx)

    # --- timers --------------------------------------------------------------------------------
    def rto(self) -> float:
        cfg = self.cfg
        if cfg.rto_adaptive and self.srtt > 0:
            r = max(self.srtt + RTO_K * self.rttvar, cfg.rto_min)
        else:
            r = cfg.rto_initial
        return min(r * self.backoff, self.rto_cap)

    def on_established(self) -> None:
        """PDS-I8: the peer answered (the PDC is established): the backoff may grow to
        ``rto_max_established``, the give-up wait for ``max_rto_retx_established`` timeouts."""
        cap, retx = self.cfg.rto_max_established, self.cfg.max_rto_retx_established
        if cap is not None and cap > self.rto_cap:
            self.rto_cap = cap
        if retx is not None and retx > self.rto_retx:
            self.rto_retx = retx

    def pto(self) -> float:
        cfg = self.cfg
        if cfg.tail_loss_time is not None:
            return cfg.tail_loss_time
        if self.srtt > 0:
            return max(cfg.tlp_min, TLP_SRTTS * self.srtt)
        return cfg.rto_initial

    def oldest_inflight(self) -> SentPacket | None:
        """The in-flight packet sent longest ago (stale ``sent_q`` entries are dropped)."""
        q = self.sent_q
        while q:
            seq, p = q[0]
            if p.seq != seq or p.state != INFLIGHT:
                q.popleft()
                continue
            return p
        return None

    def deadline(self) -> float:
        t = self.delayed[0][0] if self.delayed else INF
        if not self.packets:
            return t
        if self.rack_at < t:
            t = self.rack_at
        p = self.oldest_inflight()
        if p is not None or not (self.delayed or self.retx_q):  # PDS-I10: a wait, not a loss
            at = max((p.sent if p is not None else self.last_progress) + self.rto(),
                     self.rto_not_before)
            if at < t:
                t = at
        if not self.tlp_pending and p is not None and self.tlp_count < self.cfg.max_tail_loss_retx:
            at = max(self.last_tx, self.last_progress) + self.pto()  # PDS-I9
            if at < t:
                t = at
        return t

    def on_timer(self, now: float) -> None:
        if self.delayed and self.delayed[0][0] <= now:
            keep = []
            for at, psn in self.delayed:
                if at <= now:
                    p = self.packets.get(psn)
                    if p is not None and p.state == LOST:
                        self.retx_q.append(psn)
                else:
                    keep.append((at, psn))
            self.delayed = keep
        if not self.packets:
            return
        if self.rack_at <= now:
            self.rack_at = INF
            self.detect_loss(now)
        p = self.oldest_inflight()
        rto = self.rto()
        if ((p is not None or not (self.delayed or self.retx_q))
                and (p.sent if p is not None else self.last_progress) + rto <= now
                and self.rto_not_before <= now):
            self._on_rto(now, rto)
        elif (p is not None and not self.tlp_pending
              and self.tlp_count < self.cfg.max_tail_loss_retx
              and max(self.last_tx, self.last_progress) + self.pto() <= now):
            self._on_tlp(now)

    def _on_rto(self, now: float, rto: float) -> None:
        self.stats["rto"] += 1
        self.rto_count += 1
        if self.rto_count > self.rto_retx:
            self.owner.fail("retransmission limit (RTO)")
            return
        marked = 0
        for seq, p in list(self.sent_q):
            if p.seq != seq or p.state != INFLIGHT:
                continue
            if p.sent + rto > now:
                break
            self.mark_lost(p, now)
            marked += 1
        if not marked:
            # C.4: only SACKed-but-not-CACKed packets left: ask for an ACK instead of resending
            low = None
            for p in self.packets.values():
                if p.state == SACKED and (low is None or pdiff(p.psn, low.psn) < 0):
                    low = p
            if low is not None:
                self.owner.queue_control(CTL_ACK_REQ, low.psn, 0, True)
        base = self.owner.base
        for _ in range(min(1 << self.rto_count, len(self.sel.values))):  # PDS-I8: EV probes
            self.owner.queue_control(CTL_PROBE, base, base, True)
        self.last_progress = now
        self.backoff = min(self.backoff * 2, BACKOFF_CAP)
        self.rto_not_before = now + self.rto()  # PDS-I8
        self.cc.on_timeout(now=now)
        self.sel.on_timeout(now=now)

    def _on_tlp(self, now: float) -> None:
        newest = None  # PDS-I9: ACK_REQ for the newest outstanding PSN
        for seq, p in reversed(self.sent_q):
            if p.seq == seq and p.state == INFLIGHT:
                newest = p
                break
        self.tlp_pending = True
        self.tlp_count += 1
        if newest is not None:
            self.stats["tlp"] += 1
            self.owner.queue_control(CTL_ACK_REQ, newest.psn, 0, False)

    # --- loss ------------------------------------------------------------------------------------
    def mark_lost(self, p: SentPacket, now: float) -> None:
        if p.state == INFLIGHT:
            self.inflight -= p.length
        p.state = LOST
        self.retx_q.append(p.psn)
        self.cc.on_loss(now=now, size=p.length)
        self.sel.on_loss(now=now, ev=p.ev)

    def _reorder_window(self) -> float:
        m = self.min_rtt if self.min_rtt < INF else self.cfg.rto_initial
        return m * min(self.cfg.reorder_window * self.reo_steps, self.cfg.reorder_window_max)

    def detect_loss(self, now: float) -> None:
        """PDS-I7: packets sent before the newest delivered one and older than the threshold."""
        if not self.rack_seq:
            return
        q = self.sent_q
        threshold = max(self.rtt_hi, self.rtt_prev, self.rack_rtt) + self._reorder_window()
        while q:
            seq, p = q[0]
            if p.seq != seq or p.state != INFLIGHT:
                q.popleft()
                continue
            if seq >= self.rack_seq:
                break
            due = p.sent + threshold
            if due > now:
                self.rack_at = due
                return
            q.popleft()
            self.mark_lost(p, now)
        self.rack_at = INF

    def delivered(self, p: SentPacket, now: float) -> None:
        """PDS-I6 / PDS-I7: ``p`` newly known to have arrived (CACKed or SACKed)."""
        if p.state == INFLIGHT:
            self.inflight -= p.length
        self.sel.on_delivered(now=now, ev=p.ev)
        rtt = now - p.sent
        if p.xmits > 1 and self.min_rtt < INF and rtt < SPURIOUS_RTT_FRACTION * self.min_rtt:
            # spurious: the original arrived; widen the reorder window (PDS-I7)
            self.stats["spurious_detected"] += 1
            if self.cfg.reorder_window * self.reo_steps < self.cfg.reorder_window_max:
                self.reo_steps += 1
            return
        if now - self.rtt_hi_t > RTT_WINDOW_SRTTS * self.srtt:
            self.rtt_prev = self.rtt_hi
            self.rtt_hi = rtt
            self.rtt_hi_t = now
        elif rtt > self.rtt_hi:
            self.rtt_hi = rtt
        if p.seq > self.rack_seq:
            self.rack_seq = p.seq
            self.rack_rtt = rtt

    def rtt_sample(self, p: SentPacket | None, now: float) -> None:
        """The ACK named ``p`` (its ACK_PSN): an RTT sample, unless it was resent (Karn) or is a
        control packet."""
        if p is None or p.xmits != 1 or p.state == LOST or p.ctl >= 0:
            return
        rtt = now - p.sent
        if rtt <= 0:
            return
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        if self.srtt == 0:
            self.srtt = rtt
            self.rttvar = rtt / 2
        else:
            self.rttvar += RTT_BETA * (abs(self.srtt - rtt) - self.rttvar)
            self.srtt += RTT_ALPHA * (rtt - self.srtt)
        self.cc.on_rtt_sample(now=now, rtt=rtt)

    def progress(self, now: float) -> None:
        """Something new arrived: the timers start over."""
        self.rto_count = 0
        self.rto_not_before = 0.0
        self.backoff = 1
        self.tlp_count = 0
        self.tlp_pending = False
        self.last_progress = now
