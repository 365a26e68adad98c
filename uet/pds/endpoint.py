"""The sans-IO PDS core: one :class:`Endpoint` per host, owning initiator and target PDCs.

The endpoint never touches a socket or a clock (design.md principle 2): datagrams (the UET bytes
of the UDP payload, CRC-32C trailer included) come in through :meth:`Endpoint.receive_datagram`
with a :class:`DatagramMeta` and ``now``; datagrams to send come out of
:meth:`Endpoint.datagrams_to_send`; :meth:`Endpoint.get_timer` / :meth:`Endpoint.handle_timer`
drive retransmission; :meth:`Endpoint.next_event` hands events to the layer above.

RULES (each names its uet-facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================

Receive, before anything else
  R1  design.md Defaults, C.6: DSCP 11 means trimmed, whatever the CRC says -> NACK TRIMMED (0x01)
      for the packet's PSN (spdcid = our PDC if known, else 0). TRIMMED_LASTHOP is never sent.
  R2  A.3 / design.md Defaults: the CRC-32C trailer (addresses, UDP header with checksum 0, UET
      bytes) must verify; a bad one is dropped and counted (``stats['bad_crc']``).
  R3  principle 6: nothing raises out of the core; undecodable input is a counted drop
      (``stats['malformed']``); an unsupported PDS type (TSS, RUDI, UUD here) likewise.

PDC identity and establishment (target)
  T1  C.1: PDCID 0 is reserved; PDCIDs come from one 16-bit space per endpoint (initiator and
      target PDCs alike), never reusing one that is live or still in its close MSL.
  T2  C.1: a SYN request with no PDC for (source, destination, SPDCID): allocate a PDC,
      DPDCID := packet SPDCID, START_PSN := PSN - psn_offset, CACK := START_PSN - 1; the mode
      (RUD/ROD) is the request type's.
  T3  bounded state: with ``max_pdcs`` PDCs live, a new SYN gets NACK NO_PDC_AVAIL (0x04) with
      SPDCID 0 and allocates nothing; existing PDCs are unaffected.
  T4  C.5: a request without SYN whose DPDCID names no target PDC -> NACK INV_DPDCID (0x0E),
      SPDCID 0 (RP-PR #125). A SYN that names an existing PDC with another start PSN, or a SYN
      beyond the window -> NACK INVALID_SYN (0x15).
  T5  C.5: SPDCID (or source address) not the PDC's peer -> NACK PDC_HDR_MISMATCH (0x0F).
  T6  C.5 / C.8: RUD request on a ROD PDC or the reverse -> NACK PDC_MODE_MISMATCH (0x16).

PSN window (target), C.2 / C.5
  W1  PSN in (CACK, CACK + MPR*128] and not yet received: accept (after the message layer admits
      it), record it, advance CACK over the contiguous run.
  W2  C.5: PSN already received in the current window, or at most one window behind CACK ->
      answer with an ACK of the current state whose ACK_PSN is that PSN (the "stored ACK": ours
      is regenerated, which carries the same or newer CACK/SACK). Not delivered again.
  W3  C.5: PSN beyond the window (or more than one window behind) -> NACK PSN_OOR_WINDOW (0x0B)
      (INVALID_SYN 0x15 when SYN is set), payload = CACK + 1.
  W4  C.8: ROD delivers in PSN order: an early PSN is buffered (RP behaviour, ``rod_buffer``) and
      released when CACK passes it; with ``rod_buffer=False`` it gets NACK ROD_OOO (0x0D). RUD
      delivers each request as it arrives.
  W5  message layer admission (seam to SES): a resource shortage is a NACK (NO_SES_MSG_AVAIL 0x09,
      NO_PKT_BUFFER 0x07) and the PSN stays unreceived; a semantic error is accepted and answered
      at once by an ACK carrying a SES response (next_hdr 4) with the return code (C.3, D.7/D.8).

ACK generation (target), C.3 / C.4
  A1  C.3: ACK when the request has AR or SYN, when CE-marked and ACK_ON_ECN, when the byte count
      since the last ACK reaches ACK_GEN_TRIGGER (16384; each request adds
      max(payload, ACK_GEN_MIN_PKT_ADD=1024)), in per-packet mode, or when CACK passes a PSN that
      asked for an ACK earlier (the newest AR PSN is now covered).
  A2  design.md Defaults: ACK_CC with cc_type 0 (NSCC state: rcvd_bytes, ooo_count) by default;
      M = the acked packet was CE; RETX = it was a retransmission; MPR = ``mpr`` (units of 128,
      H.1 #14). ACK_PSN offset = triggering PSN - CACK.
  A3  C.4: SACK base tracker: starts at CACK, is pulled up to CACK when CACK passes it, and jumps by
      64 while the highest received PSN is beyond base + 63. Bit i = PSN base + i received.
      Choice: a PSN that arrives below the tracker base (late, reordered) would never be reported,
      so the next ACK uses it as its base once; the tracker itself is unchanged.
  A4  A.1 / design.md: ACKs and NACKs go to the request's source address and port (its entropy)
      from the UET port, DSCP 46, Not-ECT.

Initiator
  I1  C.1: first packets carry SYN + psn_offset (12 bits: at most ``syn_psn_range`` = 4096 PSNs
      beyond START_PSN before the first ACK); START_PSN random (seeded) in [2^16, 2^31).
  I2  C.1: the first valid ACK establishes the PDC: DPDCID := ACK.SPDCID; SYN stops.
  I3  C.2: every request carries CLEAR_PSN = send base - 1 (all PSNs up to it acknowledged),
      clamped to the signed 16-bit offset.
  I4  C.2: never send a PSN beyond min(base + tx_range, CACK + peer MPR*128).
  I5  C.3: AR on the EOM packet of each message, on every retransmission, on everything in
      per-packet mode.
  I6  C.2: CACK_PSN acknowledges every PSN up to it; a message completes (SendComplete) when all
      its PSNs are CACKed. C.4: SACK bits mark PSNs as arrived, not completed.
  I7  choice (RACK-like, needed for sprayed traffic): a PSN not SACKed while a packet sent after it
      was is lost once it is older than the recent maximum RTT (paths differ in queueing, so the
      latest RTT alone would call every slower path lossy) + a reorder window (``reorder_window``
      x min RTT, grown when a retransmission turns out spurious: ACKed sooner than 3/4 min RTT
      after it went out). That is the SACK-driven fast retransmit of holes.
  I8  C.5: RTO (initial ``rto_initial`` 1 ms; choice: srtt + 4 rttvar, floor ``rto_min``, once
      sampled) with exponential backoff; on expiry, packets older than the RTO are resent; when
      only SACKed-but-not-CACKed packets remain, an ACK_REQ control (ctl 1) for the lowest of them
      is sent instead (C.4). More than ``max_rto_retx`` consecutive timeouts without progress
      close the PDC in error and fail its messages.
  I9  C.9 TAIL_LOSS_TIME: tail-loss probe: with packets outstanding and nothing heard for the
      probe time (choice: 2 srtt, min ``tlp_min``), send ACK_REQ for the newest outstanding PSN;
      the target answers an ACK (with SACK) or NACK PKT_NOT_RCVD. At most ``max_tail_loss_retx``
      probes in a row.
  I10 B.11 reaction column: retransmit at once on TRIMMED, TRIMMED_LASTHOP, TRIMMED_ACK, ROD_OOO,
      PKT_NOT_RCVD, ACK_WITH_DATA, RCVR_INFER_LOSS, EXP_NACK_NORMAL/ERR; retransmit after
      NACK_RETX_TIME on the resource codes (NO_PDC_AVAIL ... NO_RESOURCE) and PSN_OOR_WINDOW;
      close the PDC in error on INV_DPDCID, PDC_HDR_MISMATCH, CLOSING, CLOSING_IN_ERR,
      GTD_RESP_UNAVAIL, INVALID_SYN, PDC_MODE_MISMATCH, UNEXP_EVENT, EXP_NACK_FATAL; re-base every
      PSN and resend on NEW_START_PSN (only before establishment); ignore RCVD_SES_PROCG (RTO).
      More than ``max_nack_retx`` NACK-driven resends of one PSN close the PDC in error.
  I11 C.5: a NACK or ACK naming a PSN outside [send base, next PSN - 1] changes nothing (counted).
  I12 B.4: ACK REQ = 1 -> send CLEAR (ctl 2, payload = CLEAR_PSN); REQ = 2 or CLOSE_REQ -> close.

Close, C.7
  C1  the initiator closes only when every message is acknowledged: CONTROL CLOSE (ctl 4) with AR
      on a new PSN; the PDC is freed when an ACK covers that PSN.
  C2  the target records the CLOSE PSN, ACKs it and frees the PDC once CACK reaches it; for one
      MSL (``close_msl``) it keeps answering: a repeated CLOSE or old PSN is ACKed again, a PSN
      beyond the CLOSE PSN gets NACK CLOSING (0x10).
"""

from __future__ import annotations

import random
import socket
from collections import Counter, deque
from typing import Any, Iterable

from .. import native
from ..wire.enums import NACK_CODE
from . import events as ev
from .config import CE, DSCP_CONTROL, DSCP_TRIMMED, ECT0, NOT_ECT, DatagramMeta, PdsConfig
from .fastwire import fast
from .messages import MessageLayer, OutMessage

M32 = 0xFFFFFFFF
INF = float("inf")
TRAILER = 4

# PDS types (B.1)
RUD_REQ, ROD_REQ, ACK, ACK_CC, ACK_CCX, NACK, CONTROL, NACK_CCX, RUD_CC_REQ, ROD_CC_REQ = (
    2, 3, 7, 8, 9, 10, 11, 12, 13, 14)
REQ_TYPES = frozenset((RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ))
ROD_TYPES = frozenset((ROD_REQ, ROD_CC_REQ))
# control types (B.12)
CTL_NOOP, CTL_ACK_REQ, CTL_CLEAR, CTL_CLEAR_REQ, CTL_CLOSE, CTL_CLOSE_REQ, CTL_PROBE = range(7)

# NACK codes (B.11)
N = {name: code for code, name in NACK_CODE.table.items()}
NACK_RETX_NOW = frozenset(N[k] for k in (
    "TRIMMED", "TRIMMED_LASTHOP", "TRIMMED_ACK", "ROD_OOO", "PKT_NOT_RCVD", "ACK_WITH_DATA",
    "RCVR_INFER_LOSS", "EXP_NACK_NORMAL", "EXP_NACK_ERR"))
NACK_RETX_LATER = frozenset(N[k] for k in (
    "NO_PDC_AVAIL", "NO_CCC_AVAIL", "NO_BITMAP", "NO_PKT_BUFFER", "NO_GTD_DEL_AVAIL",
    "NO_SES_MSG_AVAIL", "NO_RESOURCE", "PSN_OOR_WINDOW"))
NACK_CLOSE = frozenset(N[k] for k in (
    "INV_DPDCID", "PDC_HDR_MISMATCH", "CLOSING", "CLOSING_IN_ERR", "GTD_RESP_UNAVAIL",
    "INVALID_SYN", "PDC_MODE_MISMATCH", "UNEXP_EVENT", "EXP_NACK_FATAL"))


def nack_name(code: int) -> str:
    return NACK_CODE.table.get(code, f"0x{code:02X}")


def pdiff(a: int, b: int) -> int:
    """Signed 32-bit serial difference a - b (C.2)."""
    d = (a - b) & M32
    return d - 0x100000000 if d & 0x80000000 else d


def _clamp16(x: int) -> int:
    return -32768 if x < -32768 else (32767 if x > 32767 else x)


_REQ = fast("pds.rud_rod_req")
_REQ_CC = fast("pds.rud_rod_cc_req")
_ACK = fast("pds.ack")
_ACK_CC = fast("pds.ack_cc")
_ACK_CCX = fast("pds.ack_ccx")
_NACK = fast("pds.nack")
_NACK_CCX = fast("pds.nack_ccx")
_CTL = fast("pds.control")
_RSP = fast("ses.rsp")
_REQ_L = (_REQ.layout(syn=0), _REQ.layout(syn=1))
_ACKCC_VAR = _ACK_CC.layout(p=0, cc_type=0).variant
_ACKCC_P_VAR = _ACK_CC.layout(p=1, cc_type=0).variant
_ACK_VAR = _ACK.layout(p=0).variant
_ACK_P_VAR = _ACK.layout(p=1).variant
_INT_FROM = int.from_bytes
_crc32c = native.crc32c

_PACKED: dict[str, bytes] = {}


def packed_addr(addr: str) -> bytes:
    p = _PACKED.get(addr)
    if p is None:
        try:
            p = socket.inet_pton(socket.AF_INET, addr)
        except OSError:
            p = socket.inet_pton(socket.AF_INET6, addr)
        if len(_PACKED) > 4096:
            _PACKED.clear()
        _PACKED[addr] = p
    return p


def crc_seed(src: str, dst: str, sport: int, dport: int, udp_len: int) -> int:
    """CRC-32C register after the trailer's context (design.md "Defaults", uet.wire.trailer):
    source and destination address, then the UDP header with checksum 0."""
    return _crc32c(packed_addr(src) + packed_addr(dst)
                   + bytes(((sport >> 8) & 255, sport & 255, (dport >> 8) & 255, dport & 255,
                            (udp_len >> 8) & 255, udp_len & 255, 0, 0)))


def seal(parts: Iterable[bytes], meta: DatagramMeta) -> bytes:
    """Join ``parts`` and append the CRC-32C trailer computed for ``meta``'s addresses/ports."""
    parts = list(parts)
    n = sum(len(p) for p in parts)
    crc = crc_seed(meta.src, meta.dst, meta.sport, meta.dport, 8 + n + TRAILER)
    for p in parts:
        crc = _crc32c(p, crc)
    parts.append(crc.to_bytes(4, "big"))
    return b"".join(parts)


def trailer_ok(data: bytes, meta: DatagramMeta) -> bool:
    n = len(data)
    if n < TRAILER:
        return False
    seed = crc_seed(meta.src, meta.dst, meta.sport, meta.dport, 8 + n)
    return _crc32c(memoryview(data)[:n - TRAILER], seed) == _INT_FROM(data[n - TRAILER:], "big")


# ------------------------------------------------------------------------------------------------
# initiator
# ------------------------------------------------------------------------------------------------

INFLIGHT, SACKED, LOST = 0, 1, 2


class _Rec:
    """One PSN the initiator sent and has not seen CACKed."""

    __slots__ = ("psn", "msg", "off", "ln", "eom", "ctl", "payload", "sent", "xmits", "seq",
                 "state", "nacks", "ev")

    def __init__(self, psn: int, msg: OutMessage | None, off: int, ln: int, eom: bool,
                 ctl: int = -1, payload: int = 0):
        self.psn = psn
        self.msg = msg
        self.off = off
        self.ln = ln
        self.eom = eom
        self.ctl = ctl
        self.payload = payload
        self.sent = 0.0
        self.xmits = 0
        self.seq = 0
        self.state = INFLIGHT
        self.nacks = 0
        self.ev = 0


class Initiator:
    role = "initiator"

    def __init__(self, ep: "Endpoint", pdcid: int, peer: str, mode: str, key: tuple):
        cfg = ep.config
        self.ep = ep
        self.cfg = cfg
        self.pdcid = pdcid
        self.peer = peer
        self.mode = mode
        self.key = key
        self.ptype = ROD_REQ if mode == "rod" else RUD_REQ
        self.peer_pdcid = 0
        self.established = False
        self.start_psn = ep.rng.randrange(cfg.start_psn_lo, cfg.start_psn_hi) & M32
        self.next_psn = self.start_psn
        self.base = self.start_psn
        self.peer_range = cfg.rx_window  # C.9 DEFAULT_MPR until the first ACK_CC says otherwise
        self.recs: dict[int, _Rec] = {}
        self.sent_q: deque = deque()
        self.retx_q: deque = deque()
        self.delayed: list[tuple[float, int]] = []
        self.ctl_q: deque = deque()
        self.queue: deque = deque()
        self.msgs: dict[int, OutMessage] = {}
        self.next_mid = 1
        self.inflight = 0
        self.cc = cfg.cc_factory(cfg)
        self.sel = cfg.entropy_factory(cfg, ep.rng)
        self.srtt = 0.0
        self.rttvar = 0.0
        self.min_rtt = INF
        self.rack_seq = 0
        self.rack_rtt = 0.0
        self.rtt_hi = 0.0
        self.rtt_hi_t = 0.0
        self.reo_steps = 1
        self.seq = 0
        self.last_tx = 0.0
        self.last_progress = 0.0
        self.rto_count = 0
        self.backoff = 1
        self.tlp_count = 0
        self.tlp_pending = False
        self.rack_at = INF
        self.close_wanted = False
        self.close_psn: int | None = None
        self.closed = False
        self.last_sack = (-1, 0)
        self.src = ep.address
        self.port = cfg.port
        self._req_const = (0, 0)
        self._set_req_const()

    # --- header templates -----------------------------------------------------------------
    def _set_req_const(self) -> None:
        nh = 3
        l0, l1 = _REQ_L
        c0 = l0.const({"type": self.ptype, "next_hdr": nh, "syn": 0, "spdcid": self.pdcid,
                       "dpdcid": self.peer_pdcid})
        c1 = l1.const({"type": self.ptype, "next_hdr": nh, "syn": 1, "spdcid": self.pdcid})
        self._req_const = (c0, c1)

    # --- API ------------------------------------------------------------------------------
    def add_message(self, msg: OutMessage) -> None:
        msg.message_id = self.next_mid
        self.next_mid = (self.next_mid + 1) & 0xFFFF or 1
        msg.prepare(self.cfg)
        self.msgs[msg.handle] = msg
        self.queue.append(msg)

    def busy(self) -> bool:
        return bool(self.queue or self.recs or self.ctl_q)

    # --- timers ---------------------------------------------------------------------------
    def _rto(self) -> float:
        cfg = self.cfg
        if cfg.rto_adaptive and self.srtt > 0:
            r = max(cfg.rto_min, self.srtt + 4 * self.rttvar)
        else:
            r = cfg.rto_initial
        return min(r * self.backoff, cfg.rto_max)

    def _pto(self) -> float:
        cfg = self.cfg
        if cfg.tail_loss_time is not None:
            return cfg.tail_loss_time
        if self.srtt > 0:
            return max(cfg.tlp_min, 2 * self.srtt)
        return cfg.rto_initial

    def _oldest_inflight(self) -> tuple | None:
        q = self.sent_q
        recs = self.recs
        while q:
            e = q[0]
            r = recs.get(e[1])
            if r is None or r.xmits != e[2] or r.state != INFLIGHT:
                q.popleft()
                continue
            return e
        return None

    def deadline(self) -> float:
        t = INF
        if self.delayed:
            t = self.delayed[0][0]
        if self.recs:
            if self.rack_at < t:
                t = self.rack_at
            e = self._oldest_inflight()
            rto = self._rto()
            at = (e[3] if e is not None else self.last_progress) + rto
            if at < t:
                t = at
            if not self.tlp_pending and self.tlp_count < self.cfg.max_tail_loss_retx and e is not None:
                at = self.last_tx + self._pto()
                if at < t:
                    t = at
        return t

    def on_timer(self, now: float) -> None:
        if self.delayed and self.delayed[0][0] <= now:
            keep = []
            for at, psn in self.delayed:
                if at <= now:
                    r = self.recs.get(psn)
                    if r is not None and r.state == LOST:
                        self.retx_q.append(psn)
                else:
                    keep.append((at, psn))
            self.delayed = keep
        if not self.recs:
            return
        if self.rack_at <= now:
            self.rack_at = INF
            self._detect_loss(now)
        e = self._oldest_inflight()
        rto = self._rto()
        if (e[3] if e is not None else self.last_progress) + rto <= now:
            self._on_rto(now, rto)
        elif (e is not None and not self.tlp_pending and self.tlp_count < self.cfg.max_tail_loss_retx
              and self.last_tx + self._pto() <= now):
            self._on_tlp(now)

    def _on_rto(self, now: float, rto: float) -> None:
        ep = self.ep
        ep.stats["rto"] += 1
        self.rto_count += 1
        if self.rto_count > self.cfg.max_rto_retx:
            ep._fail_initiator(self, "retransmission limit (RTO)")
            return
        marked = 0
        recs = self.recs
        for e in list(self.sent_q):
            r = recs.get(e[1])
            if r is None or r.xmits != e[2] or r.state != INFLIGHT:
                continue
            if e[3] + rto <= now:
                self._mark_lost(r, now)
                marked += 1
            else:
                break
        if not marked:
            # C.4: only SACKed-but-not-CACKed packets left: ask for an ACK instead of resending.
            low = None
            for psn in (self.base,):
                r = recs.get(psn)
                if r is not None and r.state == SACKED:
                    low = r
            if low is None:
                for r in recs.values():
                    if r.state == SACKED and (low is None or pdiff(r.psn, low.psn) < 0):
                        low = r
            if low is not None:
                self.ctl_q.append((CTL_ACK_REQ, low.psn, 0, True))
        self.last_progress = now
        self.backoff = min(self.backoff * 2, 1 << 10)
        self.cc.on_timeout(now)
        self.sel.on_timeout(now)

    def _on_tlp(self, now: float) -> None:
        # I9: ACK_REQ for the newest outstanding PSN
        newest = None
        for e in reversed(self.sent_q):
            r = self.recs.get(e[1])
            if r is not None and r.xmits == e[2] and r.state == INFLIGHT:
                newest = r
                break
        self.tlp_pending = True
        self.tlp_count += 1
        if newest is not None:
            self.ep.stats["tlp"] += 1
            self.ctl_q.append((CTL_ACK_REQ, newest.psn, 0, False))

    # --- loss bookkeeping -----------------------------------------------------------------
    def _mark_lost(self, r: _Rec, now: float) -> None:
        if r.state == INFLIGHT:
            self.inflight -= r.ln
        r.state = LOST
        self.retx_q.append(r.psn)
        self.cc.on_loss(now, r.ln)
        self.sel.on_loss(r.ev, now)

    def _reo_wnd(self) -> float:
        m = self.min_rtt if self.min_rtt < INF else self.cfg.rto_initial
        w = self.cfg.reorder_window * self.reo_steps
        return m * min(w, self.cfg.reorder_window_max)

    def _detect_loss(self, now: float) -> None:
        q = self.sent_q
        recs = self.recs
        thr = (self.rtt_hi if self.rtt_hi > self.rack_rtt else self.rack_rtt) + self._reo_wnd()
        rseq = self.rack_seq
        while q:
            e = q[0]
            r = recs.get(e[1])
            if r is None or r.xmits != e[2] or r.state != INFLIGHT:
                q.popleft()
                continue
            if e[0] >= rseq:
                break
            dl = e[3] + thr
            if dl > now:
                self.rack_at = dl
                return
            q.popleft()
            self._mark_lost(r, now)
        self.rack_at = INF

    def _delivered(self, r: _Rec, now: float) -> None:
        """RACK state update for a PSN newly known to have arrived (CACK or SACK)."""
        rtt = now - r.sent
        if r.xmits > 1:
            if self.min_rtt < INF and rtt < 0.75 * self.min_rtt:
                # spurious: the original arrived; widen the reorder window (I7)
                self.ep.stats["spurious_detected"] += 1
                if self.cfg.reorder_window * self.reo_steps < self.cfg.reorder_window_max:
                    self.reo_steps += 1
                return
        if rtt >= self.rtt_hi or now - self.rtt_hi_t > 4 * self.srtt:
            self.rtt_hi = rtt
            self.rtt_hi_t = now
        if r.seq > self.rack_seq:
            self.rack_seq = r.seq
            self.rack_rtt = rtt

    def _rtt_sample(self, rtt: float, now: float) -> None:
        if rtt <= 0:
            return
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        if self.srtt == 0:
            self.srtt = rtt
            self.rttvar = rtt / 2
        else:
            self.rttvar += 0.25 * (abs(self.srtt - rtt) - self.rttvar)
            self.srtt += 0.125 * (rtt - self.srtt)
        self.cc.on_rtt_sample(now, rtt)

    # --- sending --------------------------------------------------------------------------
    def fill(self, now: float, out: list) -> None:
        ep = self.ep
        while self.ctl_q:
            ctl, psn, payload, retx = self.ctl_q.popleft()
            out.append(self._control(ctl, psn, payload, retx, True))
            if ctl == CTL_ACK_REQ:
                ep.stats["ack_req_tx"] += 1
        cc = self.cc
        recs = self.recs
        rq = self.retx_q
        while rq:
            r = recs.get(rq[0])
            if r is None or r.state != LOST:
                rq.popleft()
                continue
            if not cc.can_send(self.inflight, r.ln):
                return
            rq.popleft()
            out.append(self._transmit(r, now, True))
        queue = self.queue
        if queue:
            cfg = self.cfg
            mtu = cfg.mtu
            tx_range = cfg.tx_range
            while queue:
                psn = self.next_psn
                if (pdiff(psn, self.base) >= tx_range or pdiff(psn, self.base - 1) > self.peer_range
                        or (not self.established and pdiff(psn, self.start_psn) >= cfg.syn_psn_range)):
                    return
                msg = queue[0]
                off = msg.next_off
                ln = msg.length - off
                if ln > mtu:
                    ln = mtu
                if not cc.can_send(self.inflight, ln):
                    return
                eom = off + ln >= msg.length
                r = _Rec(psn, msg, off, ln, eom)
                msg.next_off = off + ln
                msg.unacked += 1
                if eom:
                    queue.popleft()
                    msg.all_queued = True
                recs[psn] = r
                self.next_psn = (psn + 1) & M32
                out.append(self._transmit(r, now, False))
        if self.close_wanted and self.close_psn is None and not self.recs and not self.queue:
            psn = self.next_psn
            self.next_psn = (psn + 1) & M32
            r = _Rec(psn, None, 0, 0, True, CTL_CLOSE)
            recs[psn] = r
            self.close_psn = psn
            out.append(self._transmit(r, now, False))

    def _transmit(self, r: _Rec, now: float, retx: bool) -> tuple:
        ep = self.ep
        self.seq += 1
        r.seq = self.seq
        r.xmits += 1
        r.sent = now
        r.state = INFLIGHT
        self.inflight += r.ln
        self.sent_q.append((self.seq, r.psn, r.xmits, now))
        self.last_tx = now
        if self.last_progress == 0.0:
            self.last_progress = now
        ev_ = self.sel.next(now)
        r.ev = ev_
        if retx:
            ep.stats["retransmissions"] += 1
        self.cc.on_send(now, r.ln, retx)
        if r.ctl >= 0:
            return self._control(r.ctl, r.psn, r.payload, retx, True, ev_)
        psn = r.psn
        syn = 0 if self.established else 1
        lay = _REQ_L[syn]
        sh = lay.shift
        v = self._req_const[syn] | (psn << sh["psn"]) | (
            (_clamp16(pdiff(self.base - 1, psn)) & 0xFFFF) << sh["clear_psn_offset"])
        if r.eom or retx or self.cfg.ack_per_packet:
            v |= 1 << sh["ar"]
        if retx:
            v |= 1 << sh["retx"]
        if syn:
            v |= ((psn - self.start_psn) & 0xFFF) << sh["psn_offset"]
        msg = r.msg
        ses = msg.ses_header(r.off, r.ln, r.eom)
        if msg.nh != 3:
            v ^= (3 ^ msg.nh) << sh["next_hdr"]
        pds = v.to_bytes(12, "big")
        payload = msg.view[r.off:r.off + r.ln]
        meta = DatagramMeta(self.src, self.peer, ev_, self.port, ECT0, 0)
        n = 12 + len(ses) + r.ln
        crc = crc_seed(self.src, self.peer, ev_, self.port, 8 + n + TRAILER)
        crc = _crc32c(payload, _crc32c(pds + ses, crc))
        return (b"".join((pds, ses, payload, crc.to_bytes(4, "big"))), meta)

    def _control(self, ctl: int, psn: int, payload: int, retx: bool, ar: bool,
                 ev_: int | None = None) -> tuple:
        syn = not self.established
        f = {"type": CONTROL, "ctl_type": ctl, "isrod": self.mode == "rod", "retx": retx, "ar": ar,
             "syn": syn, "psn": psn, "spdcid": self.pdcid, "payload": payload & M32}
        if syn:
            f["psn_offset"] = (psn - self.start_psn) & 0xFFF
        else:
            f["dpdcid"] = self.peer_pdcid
        if ev_ is None:
            ev_ = self.sel.next(self.last_tx)
        meta = DatagramMeta(self.src, self.peer, ev_, self.port, NOT_ECT, DSCP_CONTROL)
        return (seal((_CTL.encode(f),), meta), meta)

    # --- receiving ------------------------------------------------------------------------
    def on_ack(self, f: dict, data: bytes, off: int, meta: DatagramMeta, now: float) -> None:
        ep = self.ep
        cack = f["cack_psn"]
        # I11: a CACK beyond what was sent, or far behind the base, is bogus
        if pdiff(cack, self.next_psn) >= 0 or pdiff(cack, self.base - 1) < -self.cfg.tx_range - 65536:
            ep.stats["bad_ack"] += 1
            return
        if not self.established:
            # I2 / C.1
            self.established = True
            self.peer_pdcid = f["spdcid"]
            self._set_req_const()
            ep._events.append(ev.PdcEstablished(self.pdcid, self.peer_pdcid, self.peer,
                                                "initiator", self.mode))
        elif f["spdcid"] != self.peer_pdcid:
            ep.stats["bad_ack"] += 1
            return
        recs = self.recs
        progress = False
        acked_bytes = 0
        p = f["p"]
        ack_rec = None
        if not p:
            ack_psn = (cack + f["ack_psn_offset"]) & M32
            ack_rec = recs.get(ack_psn)
            if ack_rec is not None and ack_rec.xmits == 1 and ack_rec.state != LOST and ack_rec.ctl < 0:
                self._rtt_sample(now - ack_rec.sent, now)
        if "mpr" in f:
            mpr = f["mpr"]
            self.peer_range = max(1, mpr) * 128
        # SES response carried by the ACK (W5): fail the message it names
        if f.get("next_hdr") == 4:
            try:
                rsp, _ = _RSP.decode(data, off)
                rc = rsp["return_code"]
                if rc not in (0, 1):
                    msg = ack_rec.msg if ack_rec is not None else None
                    if msg is None:
                        msg = next((m for m in self.msgs.values()
                                    if m.message_id == rsp["message_id"]), None)
                    if msg is not None and not msg.failed:
                        msg.failed = True
                        ep._events.append(ev.MessageFailed(msg.handle, self.pdcid, msg.message_id,
                                                           f"SES return code 0x{rc:02X}"))
            except Exception:
                ep.stats["malformed"] += 1
        # CACK (I6)
        base = self.base
        if pdiff(cack, base) >= 0:
            while True:
                r = recs.pop(base, None)
                if r is not None:
                    if r.state == INFLIGHT:
                        self.inflight -= r.ln
                        acked_bytes += r.ln
                        self._delivered(r, now)
                    elif r.state == LOST:
                        acked_bytes += r.ln
                        self._delivered(r, now)
                    msg = r.msg
                    if msg is not None:
                        msg.unacked -= 1
                        if msg.unacked == 0 and msg.all_queued:
                            ep._message_done(self, msg)
                    elif r.ctl == CTL_CLOSE:
                        ep._closed_initiator(self)
                        return
                if base == cack:
                    break
                base = (base + 1) & M32
            self.base = (cack + 1) & M32
            progress = True
        # SACK (C.4)
        bm = f.get("sack_bitmap", 0)
        if bm:
            sbase = (cack + f["sack_psn_offset"]) & M32
            lb, lbm = self.last_sack
            if lb == sbase:
                new = bm & ~lbm
            else:
                new = bm
            self.last_sack = (sbase, bm)
            d0 = pdiff(self.base, sbase)
            if d0 > 0:
                new &= ~((1 << min(d0, 64)) - 1) if d0 < 64 else 0
            while new:
                low = new & -new
                i = low.bit_length() - 1
                new ^= low
                r = recs.get((sbase + i) & M32)
                if r is not None and r.state != SACKED:
                    if r.state == INFLIGHT:
                        self.inflight -= r.ln
                    r.state = SACKED
                    acked_bytes += r.ln
                    self._delivered(r, now)
                    progress = True
        if progress:
            self.rto_count = 0
            self.backoff = 1
            self.tlp_count = 0
            self.tlp_pending = False
            self.last_progress = now
        if ack_rec is not None and ack_rec.state == SACKED:
            pass
        if f["m"]:
            self.cc.on_ce(now, acked_bytes)
        self.cc.on_ack(now, acked_bytes, self.inflight, f)
        self.sel.on_ack(meta.dport, bool(f["m"]), now)
        if self.rack_seq:
            self._detect_loss(now)
        req = f["req"]
        if req == 1:
            self.ctl_q.append((CTL_CLEAR, 0, (self.base - 1) & M32, False))
        elif req == 2:
            self.close_wanted = True

    def on_nack(self, f: dict, meta: DatagramMeta, now: float) -> None:
        ep = self.ep
        code = f["nack_code"]
        psn = f["nack_psn"]
        # I11
        if pdiff(psn, self.base) < 0 or pdiff(psn, self.next_psn) >= 0:
            ep.stats["stale_nack"] += 1
            return
        r = self.recs.get(psn)
        if r is None:
            ep.stats["stale_nack"] += 1
            return
        if self.established and f["spdcid"] not in (0, self.peer_pdcid):
            ep.stats["bad_nack"] += 1
            return
        self.cc.on_nack(now, code, r.ln)
        self.sel.on_nack(meta.dport, code, now)
        if code in NACK_RETX_NOW or code in NACK_RETX_LATER:
            if r.state == SACKED:
                return  # a NACK for a copy of something that already arrived
            r.nacks += 1
            if r.nacks > self.cfg.max_nack_retx:
                ep._fail_initiator(self, f"NACK {nack_name(code)} retry limit")
                return
            if r.state == INFLIGHT:
                self.inflight -= r.ln
            r.state = LOST
            if code in NACK_RETX_NOW:
                self.retx_q.append(psn)
            else:
                self.delayed.append((now + self.cfg.nack_retx_time, psn))
                self.delayed.sort()
        elif code in NACK_CLOSE:
            ep._fail_initiator(self, f"NACK {nack_name(code)}")
        elif code == N["NEW_START_PSN"]:
            if not self.established:
                self._rebase(f["payload"] & M32, now)
        # RCVD_SES_PROCG and unknown codes: no state change; the RTO covers it

    def _rebase(self, new_start: int, now: float) -> None:
        """NEW_START_PSN (C.1, B.11): shift every PSN by the delta and resend everything."""
        delta = (new_start - self.start_psn) & M32
        old = sorted(self.recs.values(), key=lambda r: pdiff(r.psn, self.start_psn))
        self.start_psn = new_start
        self.base = (self.base + delta) & M32
        self.next_psn = (self.next_psn + delta) & M32
        self.recs = {}
        self.sent_q.clear()
        self.retx_q.clear()
        self.delayed = []
        self.inflight = 0
        for r in old:
            r.psn = (r.psn + delta) & M32
            r.state = LOST
            self.recs[r.psn] = r
            self.retx_q.append(r.psn)
        if self.close_psn is not None:
            self.close_psn = (self.close_psn + delta) & M32

    def on_control(self, f: dict, now: float) -> None:
        ctl = f["ctl_type"]
        if ctl == CTL_CLEAR_REQ:
            self.ctl_q.append((CTL_CLEAR, 0, (self.base - 1) & M32, False))
        elif ctl == CTL_CLOSE_REQ:
            self.close_wanted = True
        else:
            self.ep.stats["unsupported"] += 1


# ------------------------------------------------------------------------------------------------
# target
# ------------------------------------------------------------------------------------------------

class Target:
    role = "target"

    def __init__(self, ep: "Endpoint", pdcid: int, peer: str, local: str, peer_pdcid: int,
                 rod: bool, start_psn: int, key: tuple):
        self.ep = ep
        self.pdcid = pdcid
        self.peer = peer
        self.local = local
        self.peer_pdcid = peer_pdcid
        self.rod = rod
        self.mode = "rod" if rod else "rud"
        self.start_psn = start_psn
        self.key = key
        self.win = native.PsnWindow(start_psn, ep.config.rx_window)
        self.size = ep.config.rx_window
        self.bytes_since_ack = 0
        self.pending_ar: int | None = None
        self.sack_base = self.win.cack
        self.late: int | None = None
        self.rcvd_bytes = 0
        self.ooo_count = 0
        self.rod_buf: dict[int, Any] = {}
        self.next_deliver = start_psn
        self.rx_msgs: dict[int, Any] = {}
        self.clear_psn = (start_psn - 1) & M32
        self.close_psn: int | None = None
        self.last_rx = 0.0


class _Tomb:
    __slots__ = ("peer", "peer_pdcid", "close_psn", "expire", "role")

    def __init__(self, peer: str, peer_pdcid: int, close_psn: int | None, expire: float, role: str):
        self.peer = peer
        self.peer_pdcid = peer_pdcid
        self.close_psn = close_psn
        self.expire = expire
        self.role = role


# ------------------------------------------------------------------------------------------------
# endpoint
# ------------------------------------------------------------------------------------------------

class Endpoint:
    """One host's PDS: its PDCs, PDCID allocator and PDC limit, in the aioquic style."""

    def __init__(self, address: str, config: PdsConfig | None = None, *, seed: int | None = None):
        self.address = address
        self.config = config or PdsConfig()
        self.rng = random.Random(self.config.seed if seed is None else seed)
        self.stats: Counter = Counter()
        self.nacks_sent: Counter = Counter()
        self.nacks_rcvd: Counter = Counter()
        self.last_error: BaseException | None = None
        self._pdcs: dict[int, Initiator | Target] = {}
        self._init_by_key: dict[tuple, Initiator] = {}
        self._tgt_by_key: dict[tuple, Target] = {}
        self._tombs: dict[int, _Tomb] = {}
        self._next_pdcid = 1
        self._out: list = []
        self._events: deque = deque()
        self._handles = 0
        self._now = 0.0
        self.ses = MessageLayer(self)

    # --- public API -----------------------------------------------------------------------
    def send_message(self, dst: str, data: bytes, *, mode: str = "rud", job_id: int = 0,
                     pid_on_fep: int = 0, resource_index: int = 0, tc: int = 0) -> int:
        """Queue one message (SES SEND) to ``dst``; returns a handle named by the SendComplete or
        MessageFailed event. The PDC (C.1 key: mode, job, source, destination, TC) is created on
        first use. Raises RuntimeError when the PDC limit is reached."""
        if mode not in ("rud", "rod"):
            raise ValueError("mode must be 'rud' or 'rod'")
        key = (mode, job_id, self.address, dst, tc)
        pdc = self._init_by_key.get(key)
        if pdc is None:
            pdcid = self._alloc_pdcid()
            if pdcid is None:
                raise RuntimeError("PDC limit reached")
            pdc = Initiator(self, pdcid, dst, mode, key)
            self._pdcs[pdcid] = pdc
            self._init_by_key[key] = pdc
        self._handles += 1
        msg = OutMessage(self._handles, bytes(data) if not isinstance(data, bytes) else data,
                         job_id, pid_on_fep, resource_index)
        pdc.add_message(msg)
        return msg.handle

    def close(self, dst: str | None = None, *, pdcid: int | None = None) -> None:
        """Close initiator PDCs (to ``dst``, or the one ``pdcid``) once everything is acknowledged
        (C.7); a PdcClosed event follows."""
        for p in list(self._pdcs.values()):
            if isinstance(p, Initiator) and (pdcid is None or p.pdcid == pdcid) and (
                    dst is None or p.peer == dst):
                p.close_wanted = True

    def request_close(self, pdcid: int) -> None:
        """Target side: ask the initiator to close (CONTROL CLOSE_REQ, C.7)."""
        t = self._pdcs.get(pdcid)
        if isinstance(t, Target):
            f = {"type": CONTROL, "ctl_type": CTL_CLOSE_REQ, "isrod": t.rod, "psn": 0,
                 "spdcid": t.pdcid, "dpdcid": t.peer_pdcid}
            meta = DatagramMeta(t.local, t.peer, self.config.port, self.config.port, NOT_ECT,
                                DSCP_CONTROL)
            self._out.append((seal((_CTL.encode(f),), meta), meta))

    def pdcs(self) -> list:
        return list(self._pdcs.values())

    def next_event(self) -> ev.Event | None:
        return self._events.popleft() if self._events else None

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, DatagramMeta]]:
        self._now = now
        out = self._out
        self._out = []
        for p in list(self._pdcs.values()):
            if p.role == "initiator" and not p.closed:
                p.fill(now, out)
        self.stats["tx_datagrams"] += len(out)
        return out

    def get_timer(self) -> float | None:
        t = INF
        for p in self._pdcs.values():
            if p.role == "initiator":
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
            for p in list(self._pdcs.values()):
                if p.role == "initiator" and not p.closed and p.deadline() <= now:
                    p.on_timer(now)
            self._purge_tombs(now)
        except Exception as exc:  # pragma: no cover - a bug, counted, never raised to the caller
            self.stats["internal_error"] += 1
            self.last_error = exc

    # --- receive --------------------------------------------------------------------------
    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        self._now = now
        self.stats["rx_datagrams"] += 1
        try:
            self._receive(data, meta, now)
        except (ValueError, IndexError, KeyError, OverflowError):
            self.stats["malformed"] += 1
        except Exception as exc:  # principle 6: never escape; counted so tests can see it
            self.stats["internal_error"] += 1
            self.last_error = exc

    def _receive(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        if not isinstance(data, bytes):
            data = bytes(data)
        n = len(data)
        if meta.dscp == DSCP_TRIMMED:  # R1
            self._on_trimmed(data, meta)
            return
        if n < 4 + TRAILER or not trailer_ok(data, meta):  # R2
            self.stats["bad_crc" if n >= TRAILER else "malformed"] += 1
            return
        end = n - TRAILER
        ptype = data[0] >> 3
        if ptype in REQ_TYPES:
            self._on_request(data, end, ptype, meta, now)
        elif ptype == ACK_CC or ptype == ACK or ptype == ACK_CCX:
            codec = _ACK_CC if ptype == ACK_CC else (_ACK if ptype == ACK else _ACK_CCX)
            f, size = codec.decode(data[:end])
            p = self._pdcs.get(f["dpdcid"])
            if p is None or p.role != "initiator":
                self.stats["stale_ack"] += 1
                return
            p.on_ack(f, data[:end], size, meta, now)
        elif ptype == NACK or ptype == NACK_CCX:
            f, _ = (_NACK if ptype == NACK else _NACK_CCX).decode(data[:end])
            if f["nt"]:
                self.stats["unsupported"] += 1
                return
            self.nacks_rcvd[nack_name(f["nack_code"])] += 1
            p = self._pdcs.get(f["dpdcid"])
            if p is None or p.role != "initiator":
                self.stats["stale_nack"] += 1
                return
            p.on_nack(f, meta, now)
        elif ptype == CONTROL:
            self._on_control(data, end, meta, now)
        else:
            self.stats["unsupported"] += 1

    # --- target side ----------------------------------------------------------------------
    def _lookup_target(self, f: dict, ptype_rod: bool, meta: DatagramMeta, data: bytes,
                       end: int, is_req: bool) -> Target | None:
        """T1-T6: find (or, on SYN, create) the target PDC; sends the NACK when there is none."""
        spdcid = f["spdcid"]
        psn = f["psn"]
        if f["syn"]:
            key = (meta.src, meta.dst, spdcid)
            t = self._tgt_by_key.get(key)
            start = (psn - f["psn_offset"]) & M32
            if t is None:
                if not is_req:
                    return None
                if spdcid == 0:
                    self._send_nack(meta, N["PDC_HDR_MISMATCH"], psn, 0, spdcid, f)
                    return None
                pdcid = self._alloc_pdcid()
                if pdcid is None:  # T3
                    self._send_nack(meta, N["NO_PDC_AVAIL"], psn, 0, spdcid, f)
                    return None
                t = Target(self, pdcid, meta.src, meta.dst, spdcid, ptype_rod, start, key)
                self._pdcs[pdcid] = t
                self._tgt_by_key[key] = t
                self._events.append(ev.PdcEstablished(pdcid, spdcid, meta.src, "target", t.mode))
            elif start != t.start_psn:  # T4
                self._send_nack(meta, N["INVALID_SYN"], psn, t.pdcid, spdcid, f)
                return None
        else:
            dp = f["dpdcid"]
            t = self._pdcs.get(dp)
            if t is None or t.role != "target":
                tomb = self._tombs.get(dp)
                if tomb is not None and tomb.role == "target" and tomb.peer == meta.src:
                    self._answer_tomb(dp, tomb, f, meta)
                    return None
                self._send_nack(meta, N["INV_DPDCID"], psn, 0, spdcid, f)  # T4
                return None
            if t.peer_pdcid != spdcid or t.peer != meta.src:  # T5
                self._send_nack(meta, N["PDC_HDR_MISMATCH"], psn, t.pdcid, spdcid, f)
                return None
        if t.rod != ptype_rod:  # T6
            self._send_nack(meta, N["PDC_MODE_MISMATCH"], psn, t.pdcid, spdcid, f)
            return None
        return t

    def _on_request(self, data: bytes, end: int, ptype: int, meta: DatagramMeta, now: float) -> None:
        codec = _REQ if ptype <= ROD_REQ else _REQ_CC
        var = codec.variant(data)
        hsize = var.size
        if hsize > end:
            self.stats["malformed"] += 1
            return
        f = var.decode_int(_INT_FROM(data[:hsize], "big"))
        t = self._lookup_target(f, ptype in ROD_TYPES, meta, data, end, True)
        if t is None:
            return
        self._target_request(t, f, data, hsize, end, meta, now)

    def _target_request(self, t: Target, f: dict, data: bytes, hoff: int, end: int,
                        meta: DatagramMeta, now: float) -> None:
        psn = f["psn"]
        win = t.win
        cack = win.cack
        d = pdiff(psn, cack)
        t.last_rx = now
        ce = meta.ecn == CE
        if d <= 0 or (d <= t.size and win.test(psn)):
            if d <= -t.size:  # W3
                self._send_nack(meta, N["PSN_OOR_WINDOW"], psn, t.pdcid, t.peer_pdcid, f,
                                payload=(cack + 1) & M32)
                return
            self.stats["dup_rx"] += 1  # W2
            self._send_ack(t, meta, psn, f["retx"], ce)
            return
        if d > t.size:  # W3
            code = N["INVALID_SYN"] if f["syn"] else N["PSN_OOR_WINDOW"]
            self._send_nack(meta, code, psn, t.pdcid, t.peer_pdcid, f, payload=(cack + 1) & M32)
            return
        if t.close_psn is not None and pdiff(psn, t.close_psn) > 0:  # C2
            self._send_nack(meta, N["CLOSING"], psn, t.pdcid, t.peer_pdcid, f)
            return
        if t.rod and d != 1 and not self.config.rod_buffer:  # W4
            self._send_nack(meta, N["ROD_OOO"], psn, t.pdcid, t.peer_pdcid, f)
            return
        # W5: message-layer admission
        code, item = self.ses.admit(t, data, hoff, end, f["next_hdr"])
        if code > 0:
            self._send_nack(meta, code, psn, t.pdcid, t.peer_pdcid, f)
            return
        win.set(psn)
        plen = end - hoff
        t.rcvd_bytes += plen
        if d != 1:
            t.ooo_count += 1
            if pdiff(psn, t.sack_base) < 0 and (t.late is None or pdiff(psn, t.late) < 0):
                t.late = psn
        if not f["syn"]:
            pass
        c = f["clear_psn_offset"]
        if c:
            t.clear_psn = (psn + c) & M32
        # delivery (W4)
        if t.rod:
            if psn == t.next_deliver:
                t.next_deliver = (psn + 1) & M32
                if code == 0:
                    self.ses.deliver(t, item, psn, now)
                buf = t.rod_buf
                if buf:
                    nd = t.next_deliver
                    while nd in buf:
                        it = buf.pop(nd)
                        if it is not None:
                            self.ses.deliver(t, it, nd, now)
                        nd = (nd + 1) & M32
                    t.next_deliver = nd
            else:
                t.rod_buf[psn] = item if code == 0 else None
        elif code == 0:
            self.ses.deliver(t, item, psn, now)
        # A1
        cfg = self.config
        add = plen if plen > cfg.ack_gen_min_pkt_add else cfg.ack_gen_min_pkt_add
        t.bytes_since_ack += add
        ar = f["ar"]
        newcack = win.cack
        rsp = item if code < 0 else None
        if (ar or f["syn"] or rsp is not None or (ce and cfg.ack_on_ecn)
                or t.bytes_since_ack >= cfg.ack_gen_trigger or cfg.ack_per_packet):
            self._send_ack(t, meta, psn, f["retx"], ce, rsp)
            if ar and pdiff(psn, newcack) > 0:
                t.pending_ar = psn
        elif t.pending_ar is not None and pdiff(newcack, t.pending_ar) >= 0:
            self._send_ack(t, meta, psn, f["retx"], ce)
        elif ar:
            t.pending_ar = psn
        if t.close_psn is not None and newcack == t.close_psn:
            self._close_target(t, now)

    def _send_ack(self, t: Target, meta: DatagramMeta, psn: int, retx: bool, ce: bool,
                  rsp: Any = None, probe: int | None = None) -> None:
        cfg = self.config
        win = t.win
        cack = win.cack
        sb = t.sack_base  # A3
        if pdiff(cack, sb) > 0:
            sb = cack
        hi = win.highest
        while pdiff(hi, sb) > 63:
            sb = (sb + 64) & M32
        t.sack_base = sb
        late = t.late
        if late is not None:
            t.late = None
            if pdiff(late, cack) > 0:
                sb = late  # report a PSN that arrived below the tracker base (A3)
        t.bytes_since_ack = 0
        if t.pending_ar is not None and pdiff(cack, t.pending_ar) >= 0:
            t.pending_ar = None
        f: dict[str, Any] = {"m": ce, "retx": retx, "cack_psn": cack, "spdcid": t.pdcid,
                             "dpdcid": t.peer_pdcid}
        if probe is not None:
            f["p"] = 1
            f["probe_opaque"] = probe
        else:
            f["ack_psn_offset"] = _clamp16(pdiff(psn, cack))
        if rsp is not None:
            f["next_hdr"] = 4
        if cfg.ack_type == "ack":
            f["type"] = ACK
            var = _ACK_P_VAR if probe is not None else _ACK_VAR
        else:
            f["type"] = ACK_CC
            f["mpr"] = cfg.mpr
            f["sack_psn_offset"] = pdiff(sb, cack)
            f["sack_bitmap"] = win.sack_word(sb)
            f["rcvd_bytes"] = t.rcvd_bytes & 0xFFFFFF
            f["ooo_count"] = t.ooo_count & 0xFFFF
            var = _ACKCC_P_VAR if probe is not None else _ACKCC_VAR
        parts = [var.encode_int(f).to_bytes(var.size, "big")]
        if rsp is not None:
            rc, mid = rsp
            parts.append(_RSP.encode({"opcode": 1, "return_code": rc, "message_id": mid}))
        rmeta = DatagramMeta(meta.dst, meta.src, meta.dport, meta.sport, NOT_ECT, DSCP_CONTROL)
        self._out.append((seal(parts, rmeta), rmeta))
        self.stats["acks_tx"] += 1

    def _send_nack(self, meta: DatagramMeta, code: int, psn: int, spdcid: int, dpdcid: int,
                   f: dict | None = None, payload: int = 0) -> None:
        nf = {"type": NACK, "m": meta.ecn == CE, "retx": bool(f and f.get("retx")), "nt": False,
              "nack_code": code, "nack_psn": psn & M32, "spdcid": spdcid, "dpdcid": dpdcid,
              "payload": payload}
        rmeta = DatagramMeta(meta.dst, meta.src, meta.dport, meta.sport, NOT_ECT, DSCP_CONTROL)
        self._out.append((seal((_NACK.encode(nf),), rmeta), rmeta))
        self.nacks_sent[nack_name(code)] += 1

    def _on_trimmed(self, data: bytes, meta: DatagramMeta) -> None:
        """R1: NACK TRIMMED for the PSN of a trimmed request."""
        self.stats["trimmed_rx"] += 1
        if len(data) < 12 or (data[0] >> 3) not in REQ_TYPES:
            self.stats["malformed"] += 1
            return
        f, _ = _REQ.decode(data, 0)
        spdcid = 0
        if f["syn"]:
            t = self._tgt_by_key.get((meta.src, meta.dst, f["spdcid"]))
        else:
            t = self._pdcs.get(f["dpdcid"])
            if t is not None and (t.role != "target" or t.peer_pdcid != f["spdcid"]):
                t = None
        if t is not None:
            spdcid = t.pdcid
        self._send_nack(meta, N["TRIMMED"], f["psn"], spdcid, f["spdcid"], f)

    def _on_control(self, data: bytes, end: int, meta: DatagramMeta, now: float) -> None:
        f, _ = _CTL.decode(data[:end])
        ctl = f["ctl_type"]
        if ctl in (CTL_CLEAR_REQ, CTL_CLOSE_REQ):
            p = self._pdcs.get(f["dpdcid"]) if not f["syn"] else None
            if p is None or p.role != "initiator" or (p.established and f["spdcid"] != p.peer_pdcid):
                self.stats["stale_control"] += 1
                return
            p.on_control(f, now)
            return
        if ctl not in (CTL_ACK_REQ, CTL_CLEAR, CTL_CLOSE, CTL_PROBE, CTL_NOOP):
            self.stats["unsupported"] += 1
            return
        psn = f["psn"]
        if ctl == CTL_ACK_REQ and f["syn"] and (meta.src, meta.dst, f["spdcid"]) not in self._tgt_by_key:
            self._send_nack(meta, N["PKT_NOT_RCVD"], psn, 0, f["spdcid"], f)
            return
        t = self._lookup_target(f, bool(f["isrod"]), meta, data, end, False)
        if t is None:
            return
        t.last_rx = now
        if ctl == CTL_ACK_REQ:
            if t.win.test(psn):
                self._send_ack(t, meta, psn, f["retx"], False)
            else:
                self._send_nack(meta, N["PKT_NOT_RCVD"], psn, t.pdcid, t.peer_pdcid, f)
        elif ctl == CTL_PROBE:
            self._send_ack(t, meta, psn, f["retx"], False, probe=f["probe_opaque"])
        elif ctl == CTL_CLEAR:
            t.clear_psn = f["payload"] & M32
        elif ctl == CTL_CLOSE:
            win = t.win
            d = pdiff(psn, win.cack)
            if d > t.size:
                self._send_nack(meta, N["PSN_OOR_WINDOW"], psn, t.pdcid, t.peer_pdcid, f)
                return
            if d > 0:
                win.set(psn)
                t.close_psn = psn
                if t.rod and t.next_deliver == psn:
                    t.next_deliver = (psn + 1) & M32
                elif t.rod:
                    t.rod_buf[psn] = None
            self._send_ack(t, meta, psn, f["retx"], False)
            if t.close_psn is not None and win.cack == t.close_psn:
                self._close_target(t, now)

    def _answer_tomb(self, pdcid: int, tomb: _Tomb, f: dict, meta: DatagramMeta) -> None:
        """C2: after close, ACK what the PDC had, NACK CLOSING beyond the CLOSE PSN."""
        psn = f["psn"]
        if tomb.close_psn is not None and pdiff(psn, tomb.close_psn) > 0:
            self._send_nack(meta, N["CLOSING"], psn, pdcid, tomb.peer_pdcid, f)
            return
        cack = tomb.close_psn if tomb.close_psn is not None else psn
        af = {"type": ACK_CC if self.config.ack_type != "ack" else ACK, "retx": bool(f.get("retx")),
              "ack_psn_offset": _clamp16(pdiff(psn, cack)), "cack_psn": cack, "spdcid": pdcid,
              "dpdcid": tomb.peer_pdcid, "mpr": self.config.mpr}
        rmeta = DatagramMeta(meta.dst, meta.src, meta.dport, meta.sport, NOT_ECT, DSCP_CONTROL)
        codec = _ACK_CC if af["type"] == ACK_CC else _ACK
        self._out.append((seal((codec.encode(af),), rmeta), rmeta))

    # --- PDC lifecycle --------------------------------------------------------------------
    def _alloc_pdcid(self) -> int | None:
        if len(self._pdcs) >= self.config.max_pdcs:
            return None
        self._purge_tombs(self._now)
        for _ in range(65536):
            c = self._next_pdcid
            self._next_pdcid = c + 1 if c < 0xFFFF else 1
            if c not in self._pdcs and c not in self._tombs:
                return c
        return None

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

    def _close_target(self, t: Target, now: float) -> None:
        self._pdcs.pop(t.pdcid, None)
        self._tgt_by_key.pop(t.key, None)
        self.ses.release(t)
        self._tomb(t.pdcid, _Tomb(t.peer, t.peer_pdcid, t.close_psn, now + self.config.close_msl,
                                  "target"))
        self._events.append(ev.PdcClosed(t.pdcid, t.peer, "target", False, "closed by initiator"))

    def _closed_initiator(self, p: Initiator) -> None:
        self._remove_initiator(p)
        self._events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", False, "closed"))

    def _remove_initiator(self, p: Initiator) -> None:
        p.closed = True
        self._pdcs.pop(p.pdcid, None)
        if self._init_by_key.get(p.key) is p:
            del self._init_by_key[p.key]
        self._tomb(p.pdcid, _Tomb(p.peer, p.peer_pdcid, None, self._now + self.config.close_msl,
                                  "initiator"))

    def _fail_initiator(self, p: Initiator, reason: str) -> None:
        if p.closed:
            return
        self._remove_initiator(p)
        for m in p.msgs.values():
            if not m.done and not m.failed:
                m.failed = True
                self._events.append(ev.MessageFailed(m.handle, p.pdcid, m.message_id, reason))
        p.msgs.clear()
        p.recs.clear()
        p.queue.clear()
        self._events.append(ev.PdcClosed(p.pdcid, p.peer, "initiator", True, reason))

    def _message_done(self, p: Initiator, msg: OutMessage) -> None:
        msg.done = True
        p.msgs.pop(msg.handle, None)
        if not msg.failed:
            self._events.append(ev.SendComplete(msg.handle, p.pdcid, msg.message_id, msg.length))
