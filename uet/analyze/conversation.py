"""PDCs as a capture shows them (``uet analyze``, issue 17 item 1): grouping frames into PDCs and
the per-PDC state machine of what the capture showed happen.

Grouping (facts C.1). A PDC is (initiator address, target address, initiator's PDCID): a
request or an initiator's CONTROL is (src, dst, SPDCID); an ACK, NACK or target CONTROL
(CLOSE_REQ, CREDIT) is (dst, src, DPDCID). The target's PDCID is learned from the first ACK's
SPDCID (C.1; from a request's DPDCID when the capture holds no ACK). Both directions are followed:
a host that initiates PDCs of its own (read data) has PDCs of its own. A SYN request with a new
start PSN after the PDC's CLOSE starts a new PDC with the same ids.

Copies. A capture taken in the fabric may show one transmission twice: as sent and again as the
network changed it (the simulator's pcaps record both). A frame is a *copy* of an earlier
transmission of its PSN, not a new transmission, when its UDP ports and PDS and SES headers are
those of that transmission and the network changed it: its DSCP became the trimmed one (11, C.6)
or its ECN became CE with the same bytes (A.2); or it is byte for byte that transmission (CRC
trailer included) without RETX: a network duplicate, since a sender's resend carries RETX (C.5).
A byte-identical repeat with RETX counts as a resend (the capture cannot tell it from a duplicate
of a resend). An ACK byte for byte like an earlier one is a duplicate too (no checks).

Transmissions of a PSN are requests and the tracked CONTROL CLOSE (C.2: it consumes a PSN). A
transmission is a *retransmission* when it carries RETX or its PSN was transmitted before (C.5).
It is judged *spurious* when an earlier copy of the PSN is known to have arrived: an ACK in the
capture (its CACK, a SACK bit or its ACK_PSN; C.2, C.4) covered the PSN before the resend, and an
earlier transmission was not trimmed. Otherwise it is *needed*: no ACK covered the PSN before the
resend, every earlier copy was trimmed, or the first copy is not in the capture.
Each retransmission also names ``intact_copy_frame``, the first earlier untrimmed transmission the
capture shows (for a capture taken where the receiver reads, the live demo's, that copy arrived);
``trimmed``, whether the resend itself was seen trimmed; and ``answer_frame``, the target's answer
to the resend: the first later ACK whose ACK_PSN is that PSN with RETX set (B.7: it acknowledges a
retransmission), or NACK of that PSN with RETX (B.10). An untrimmed resend with an ACK answer
arrived.

Violations, each with its frame and facts row (``kind``):

* ``cack_backwards`` (C.2): an ACK's CACK below an earlier CACK on the same path (the same
  addresses and UDP ports: one path keeps its order; ACKs on different paths may overtake);
* ``phantom_ack`` (C.2, C.6): an ACK claims (CACK, SACK bit or ACK_PSN) a PSN of which the capture
  showed no untrimmed transmission before it: never sent (C.2) or only trimmed copies (C.6).
  Checked only for PSNs from the PDC's start (SYN) or first seen PSN on, and a violation only when
  the capture shows request traffic for that PDC at all (a one-sided capture cannot tell);
* ``nack_trimmed_untrimmed`` (C.6): NACK TRIMMED/TRIMMED_LASTHOP for a PSN with no unanswered
  trimmed copy; a violation only when the capture shows trimmed frames at all (a capture taken
  before the trimming switch cannot see them; then it is a note);
* ``beyond_mpr`` (C.2): a request more than MPR x 128 PSNs beyond the highest CACK shown;
* ``data_after_close`` (C.7): a request transmitted after the PDC's CLOSE;
* ``dpdcid_mismatch`` / ``pdcid_changed`` (C.1): a request's DPDCID, or an ACK's SPDCID, is not
  the target PDCID the capture showed before;
* ``retx_flag_missing`` (C.5): a PSN transmitted again without RETX;
* ``mode_mismatch`` (C.8): RUD and ROD requests on one PDC.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..wire.enums import (ACK_TYPES, CONTROL_TYPE, CTL_ACK_REQ, CTL_CLOSE, CTL_CLOSE_REQ,
                          CTL_CREDIT, NACK_BY_NAME, NACK_TYPES, REQUEST_TRIM_CODES,
                          REQUEST_TYPES, ROD_TYPES)
from ..wire.psn import M32, pdiff
from .intake import Outside, Pkt, code_name

MAX_SCAN = 1 << 16        # PSNs of one CACK step checked one by one; a larger jump is a note
MAX_BIG_STEPS = 64        # CACK jumps remembered for the verdicts; more are not looked at
MPR_UNIT = 128            # B.8: MPR counts PSNs in units of 128


class Tally:
    """How many frames of a kind, and the first of them."""

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None

    def add(self, frame: int) -> None:
        self.count += 1
        if self.first is None:
            self.first = frame


class Mean:
    """The mean of a series of values, without the series."""

    __slots__ = ("total", "n")

    def __init__(self) -> None:
        self.total = self.n = 0

    def add(self, value: int) -> None:
        self.total += value
        self.n += 1

    @property
    def value(self) -> float | None:
        return round(self.total / self.n, 2) if self.n else None


@dataclass
class Tx:
    """One transmission of a PSN (a request or the CLOSE) and what became of it in the capture."""

    pkt: Pkt
    trimmed: bool
    ce: bool

    @property
    def frame(self) -> int:
        return self.pkt.n


@dataclass
class Event:
    """One frame of a PDC as a ladder row: ``forward`` is initiator -> target; ``style`` one of
    request, retx, trim, copy, ack, nack, control."""

    frame: int
    t: float
    forward: bool
    label: str
    style: str
    notes: list[str] = field(default_factory=list)


def _flags(pds: dict[str, Any], names: tuple[str, ...]) -> str:
    return "".join(f" {n.upper()}" for n in names if pds.get(n))


class Pdc:
    """One PDC: its identity and everything the capture showed of it."""

    def __init__(self, index: int, initiator: str, target: str, ipdcid: int):
        self.index, self.initiator, self.target, self.ipdcid = index, initiator, target, ipdcid
        self.tpdcid: int | None = None
        self.tpdcid_frame: int | None = None
        self.mode: str | None = None
        self.start_psn: int | None = None
        self.first_psn: int | None = None
        self.last_psn: int | None = None
        self.psns: set[int] = set()
        self.counts = Counter()                    # requests, copies, acks, nacks, control
        self.msg_ids: set[int] = set()
        self.som = self.eom = 0
        self.tx: dict[int, list[Tx]] = {}          # PSN -> its transmissions
        self.last_fwd: dict[int, int] = {}         # PSN -> latest initiator frame carrying it
        self.claimed: dict[int, int] = {}          # PSN -> first ACK frame that claimed it
        self.big_steps: list[tuple[int, int, int]] = []   # CACK jumps not scanned: (lo, hi, frame)
        self.cack_hw: int | None = None
        self.cack_hw_frame: int | None = None
        self.scan_floor: int | None = None          # lowest PSN CACKs were checked from
        self.scanned = 0                            # PSNs CACKs were checked for, one by one
        self.flow_cack: dict[tuple, tuple[int, int]] = {}
        self.ack_sigs: dict[tuple, int] = {}         # an ACK's ports, trailer, header -> frame
        self.mpr: int | None = None
        self.retx: list[dict[str, Any]] = []
        self.nacks: list[dict[str, Any]] = []
        self.trims: list[dict[str, Any]] = []
        self.close: dict[str, Any] | None = None
        self.violations: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.phantom_cands: list[tuple[int, int, str]] = []
        self.nack_trim_cands: list[tuple[int, int, str]] = []
        self.phantoms: list[dict[str, Any]] = []
        self._retx_tx: list[tuple[dict[str, Any], Tx]] = []   # each retransmission, its Tx
        self._unanswered: dict[int, dict[str, Any]] = {}      # PSN -> its resend, not answered
        # what the report shows of these is a count, the first frame and a mean: no list per frame
        self.ce_frames = Tally()                   # CE-marked request frames
        self.m_frames = Tally()                    # ACKs with M
        self.outstanding = (Mean(), Mean())        # PSNs outstanding per new request: before /
                                                   # after the first M
        self.events: list[Event] = []
        self._event_at: dict[int, Event] = {}
        self.dpdcid_seen: tuple[int, int] | None = None  # (DPDCID, frame) of a request

    # --- helpers --------------------------------------------------------------------------
    def _event(self, p: Pkt, forward: bool, label: str, style: str) -> Event:
        e = Event(p.n, p.t, forward, label, style)
        self.events.append(e)
        self._event_at[p.n] = e
        return e

    def violation(self, frame: int, rule: str, kind: str, text: str) -> None:
        self.violations.append({"frame": frame, "rule": rule, "kind": kind, "text": text})
        e = self._event_at.get(frame)
        if e is not None:
            e.notes.append(f"! {rule} {kind}")

    def _claim_frame(self, psn: int) -> int | None:
        """The first ACK frame that covered ``psn`` (CACK, SACK or ACK_PSN), or None."""
        f = self.claimed.get(psn)
        if f is not None:
            return f
        for lo, hi, frame in self.big_steps:
            if pdiff(psn, lo) >= 0 and pdiff(hi, psn) >= 0:
                return frame
        if (self.cack_hw is not None and pdiff(self.cack_hw, psn) >= 0
                and (self.scan_floor is None or pdiff(psn, self.scan_floor) < 0)):
            return self.cack_hw_frame  # covered below where CACKs were checked PSN by PSN
        return None

    def _top(self) -> int | None:
        """The highest PSN transmitted so far (a request or the CLOSE)."""
        top = self.last_psn
        if self.close is not None and (top is None or pdiff(self.close["psn"], top) > 0):
            top = self.close["psn"]
        return top

    def _lower(self) -> int | None:
        """Where the PSNs the capture can judge start: the start PSN (SYN) or the first PSN seen."""
        return self.start_psn if self.start_psn is not None else self.first_psn

    # --- initiator -> target ---------------------------------------------------------------
    def request(self, p: Pkt) -> None:
        pds = p.pds
        psn = pds.get("psn", 0)
        self.counts["frames"] += 1
        label = f"{p.name} {psn}{_flags(pds, ('syn', 'ar', 'retx'))}"
        if self._copy(p, psn, label):
            return
        self.counts["requests"] += 1
        mode = "ROD" if p.ptype in ROD_TYPES else "RUD"
        e = self._event(p, True, label, "request")
        if self.mode is None:
            self.mode = mode
        elif mode != self.mode:
            self.violation(p.n, "C.8", "mode_mismatch", f"{mode} request on a {self.mode} PDC")
        if pds.get("syn"):
            if self.start_psn is None:
                self.start_psn = pds.get("start_psn")
        else:
            d = pds.get("dpdcid")
            if self.tpdcid is not None and d != self.tpdcid:
                self.violation(p.n, "C.1", "dpdcid_mismatch",
                               f"request to PDCID {d}; the target's PDCID is {self.tpdcid} "
                               f"(frame {self.tpdcid_frame})")
            elif self.dpdcid_seen is None:
                self.dpdcid_seen = (d, p.n)
        first = psn not in self.tx
        if self.close is not None:
            self.violation(p.n, "C.7", "data_after_close",
                           f"request PSN {psn} after the CLOSE (frame {self.close['frame']})")
        if self.mpr and self.cack_hw is not None and pdiff(psn, self.cack_hw) > self.mpr * MPR_UNIT:
            self.violation(p.n, "C.2", "beyond_mpr",
                           f"PSN {psn} is {pdiff(psn, self.cack_hw)} beyond CACK {self.cack_hw} "
                           f"(frame {self.cack_hw_frame}); MPR {self.mpr} allows "
                           f"{self.mpr * MPR_UNIT}")
        if first:
            ses = p.ses or {}
            self.som += bool(ses.get("som"))
            self.eom += bool(ses.get("eom"))
            if "message_id" in ses:
                self.msg_ids.add(ses["message_id"])
            if self.cack_hw is not None and pdiff(psn, self.cack_hw) > 0:
                self.outstanding[1 if self.m_frames.count else 0].add(pdiff(psn, self.cack_hw))
        self.psns.add(psn)
        if self.first_psn is None or pdiff(psn, self.first_psn) < 0:
            self.first_psn = psn
        if self.last_psn is None or pdiff(psn, self.last_psn) > 0:
            self.last_psn = psn
        if p.ce:
            self.ce_frames.add(p.n)
            e.notes.append("CE")
        self._transmit(p, psn, e)

    def _copy(self, p: Pkt, psn: int, label: str) -> bool:
        """A copy of an earlier transmission changed by the network (trimmed or CE-marked)."""
        for tx in reversed(self.tx.get(psn, ())):
            q = tx.pkt
            if (q.sport, q.dport) != (p.sport, p.dport) or q.pds != p.pds or q.ses != p.ses:
                continue
            trim = p.trimmed and not tx.trimmed and not q.trimmed
            ce = p.ce and not q.ce and p.dscp == q.dscp and p.crc == q.crc
            dup = (not p.pds.get("retx") and (p.dscp, p.ecn) == (q.dscp, q.ecn)
                   and p.crc is not None and p.crc == q.crc)
            if not (trim or ce or dup):
                continue
            self.counts["copies"] += 1
            self.last_fwd[psn] = p.n
            if trim:
                tx.trimmed = True
                self.trims.append({"frame": p.n, "psn": psn, "copy_of": tx.frame,
                                   "nack_frame": None})
            if p.ce:
                tx.ce = True
                self.ce_frames.add(p.n)
            what = " and ".join(w for w, on in (("trimmed", trim or p.trimmed), ("CE-marked", p.ce))
                                if on) if not dup else "duplicated"
            self._event(p, True, label, "trim" if trim else "copy").notes.append(
                f"{what} in the network: copy of frame {tx.frame}")
            return True
        return False

    def _transmit(self, p: Pkt, psn: int, e: Event) -> None:
        prior = self.tx.get(psn, [])
        retx = bool(p.pds.get("retx"))
        judged = prior or retx
        self._unanswered.pop(psn, None)  # a new transmission: the older one's answer is moot
        if judged:
            self._judge(p, psn, prior, e)
            if prior and not retx:
                self.violation(p.n, "C.5", "retx_flag_missing",
                               f"PSN {psn} sent again without RETX (first in frame "
                               f"{prior[0].frame})")
        tx = Tx(p, p.trimmed, p.ce)
        self.tx.setdefault(psn, []).append(tx)
        if judged:
            self._retx_tx.append((self.retx[-1], tx))
        self.last_fwd[psn] = p.n
        if p.trimmed:
            self.trims.append({"frame": p.n, "psn": psn, "copy_of": None, "nack_frame": None})
            e.style = "trim"
            e.notes.append("trimmed (DSCP 11)")

    def _judge(self, p: Pkt, psn: int, prior: list[Tx], e: Event) -> None:
        intact = [tx for tx in prior if not tx.trimmed]
        cover = self._claim_frame(psn)
        if cover is not None and intact:
            verdict, reason = "spurious", f"ACK in frame {cover} had covered it"
        elif prior and not intact:
            verdict = "needed"
            reason = f"every earlier copy was trimmed (frame {prior[-1].frame})"
        elif not prior:
            verdict, reason = "needed", "the first copy is not in the capture"
        else:
            verdict, reason = "needed", "no ACK had covered it"
        self.retx.append({"frame": p.n, "psn": psn, "verdict": verdict, "reason": reason,
                          "earlier_frames": [tx.frame for tx in prior],
                          "ack_frame": cover if verdict == "spurious" else None,
                          "intact_copy_frame": intact[0].frame if intact else None,
                          "trimmed": False, "answer_frame": None})
        self._unanswered[psn] = self.retx[-1]
        e.style = "retx"
        e.notes.append(f"retransmission, {verdict}: {reason}")

    def control(self, p: Pkt, forward: bool) -> None:
        pds = p.pds
        self.counts["frames"] += 1
        ctl, psn = pds.get("ctl_type"), pds.get("psn")
        name = pds.get("ctl_type_name", f"CONTROL {ctl}")
        label = f"{name} {psn}{_flags(pds, ('syn', 'ar', 'retx'))}"
        if forward and ctl == CTL_CLOSE and psn is not None:
            if self._copy(p, psn, label):
                return
            self.counts["control"] += 1
            e = self._event(p, True, label, "control")
            if self.close is None:
                self.close = {"frame": p.n, "psn": psn, "ack_frame": None}
            self._transmit(p, psn, e)
            return
        self.counts["control"] += 1
        self._event(p, forward, label, "control")
        if forward and ctl == CTL_ACK_REQ and psn is not None:
            self.last_fwd[psn] = p.n  # C.4: it asks about that PSN; a NACK may answer it

    # --- target -> initiator ---------------------------------------------------------------
    def _learn_target(self, p: Pkt, learn: bool) -> None:
        """C.1: the first ACK's SPDCID is the target's PDCID (``learn``); a NACK only checks it,
        and a NACK from no PDC carries 0 (B.10)."""
        sp = p.pds.get("spdcid")
        if self.tpdcid is None:
            if learn:
                self.tpdcid, self.tpdcid_frame = sp, p.n
        elif sp != self.tpdcid and sp:
            self.violation(p.n, "C.1", "pdcid_changed",
                           f"{p.name} from PDCID {sp}; the target's PDCID is {self.tpdcid} "
                           f"(frame {self.tpdcid_frame})")

    def ack(self, p: Pkt) -> None:
        pds = p.pds
        self.counts["frames"] += 1
        cack = pds.get("cack_psn", 0)
        probe = bool(pds.get("p"))
        head = "probe" if probe else pds.get("ack_psn")
        req = pds.get("req_name") if pds.get("req") else None
        label = (f"{p.name} {head} cack {cack}{_flags(pds, ('m', 'retx'))}"
                 + (f" REQ={req}" if req else ""))
        sig = (p.sport, p.dport, p.crc, repr(pds))
        first = self.ack_sigs.setdefault(sig, p.n)
        if first != p.n:  # byte for byte an earlier ACK: duplicated in the network
            self.counts["copies"] += 1
            self._event(p, False, label, "copy").notes.append(
                f"duplicated in the network: copy of frame {first}")
            return
        self.counts["acks"] += 1
        e = self._event(p, False, label, "ack")
        self._learn_target(p, True)
        flow = (p.src, p.sport, p.dst, p.dport)
        prev = self.flow_cack.get(flow)
        if prev is not None and pdiff(cack, prev[0]) < 0:
            self.violation(p.n, "C.2", "cack_backwards",
                           f"CACK {cack} is below CACK {prev[0]} of frame {prev[1]} on the same path")
        if prev is None or pdiff(cack, prev[0]) > 0:
            self.flow_cack[flow] = (cack, p.n)
        claims: list[int] = []
        if self.cack_hw is None or pdiff(cack, self.cack_hw) > 0:
            lo = (self.cack_hw + 1) & M32 if self.cack_hw is not None else self._lower()
            if lo is not None:
                span = pdiff(cack, lo) + 1
                if self.scan_floor is None:
                    self.scan_floor = lo
                # a CACK honestly advances by what was sent: the PSN-by-PSN budget is that
                budget = MAX_SCAN + 2 * (self.counts["requests"] + self.counts["control"])
                if 0 < span <= min(MAX_SCAN, budget - self.scanned):
                    self.scanned += span
                    claims.extend((lo + i) & M32 for i in range(span))
                elif span > 0:
                    if len(self.big_steps) < MAX_BIG_STEPS:
                        self.big_steps.append((lo, cack, p.n))
                        self.notes.append(f"frame {p.n}: CACK {cack} jumps {span} PSNs; not "
                                          "checked PSN by PSN")
                    top = self._top()
                    if top is not None and pdiff(cack, top) > 0:  # beyond all that was sent
                        self.phantom_cands.append((p.n, (top + 1) & M32, "never sent"))
            self.cack_hw, self.cack_hw_frame = cack, p.n
        bitmap, base = pds.get("sack_bitmap"), pds.get("sack_base_psn")
        if bitmap and base is not None:
            claims.extend((base + i) & M32 for i in range(64) if bitmap >> i & 1)
        if not probe and pds.get("ack_psn") is not None:
            claims.append(pds["ack_psn"])
            if pds.get("retx") and pds["ack_psn"] in self._unanswered:  # B.7: RETX = acks a resend
                self._unanswered.pop(pds["ack_psn"])["answer_frame"] = p.n
        for psn in claims:
            if psn in self.claimed:
                continue
            self.claimed[psn] = p.n
            txs = self.tx.get(psn)
            if not txs:
                self.phantom_cands.append((p.n, psn, "never sent"))
            elif all(tx.trimmed for tx in txs):
                self.phantom_cands.append((p.n, psn, "only trimmed copies"))
        if pds.get("mpr"):
            self.mpr = pds["mpr"]
        if pds.get("m"):
            self.m_frames.add(p.n)
        c = self.close
        if (c is not None and c["ack_frame"] is None
                and (pds.get("ack_psn") == c["psn"] or pdiff(cack, c["psn"]) >= 0)):
            c["ack_frame"] = p.n
            e.notes.append(f"ACKs the CLOSE (frame {c['frame']})")

    def nack(self, p: Pkt) -> dict[str, Any]:
        pds = p.pds
        self.counts["frames"] += 1
        self.counts["nacks"] += 1
        code = code_name(pds)
        psn = pds.get("nack_psn")
        answers = self.last_fwd.get(psn)
        entry = {"frame": p.n, "code": code, "psn": psn, "answers": answers,
                 "retx": bool(pds.get("retx"))}
        self.nacks.append(entry)
        if psn in self._unanswered and pds.get("retx"):  # B.10: RETX = NACKs a resend
            self._unanswered.pop(psn)["answer_frame"] = p.n
        e = self._event(p, False, f"{p.name} {code} {psn}{_flags(pds, ('m', 'retx'))}", "nack")
        e.notes.append(f"answers frame {answers}" if answers is not None
                       else "answers no frame in the capture")
        self._learn_target(p, False)
        if NACK_BY_NAME.get(code) in REQUEST_TRIM_CODES:  # B.11: answers to a trimmed request
            trim = next((t for t in reversed(self.trims)
                         if t["psn"] == psn and t["nack_frame"] is None), None)
            if trim is not None:
                trim["nack_frame"] = p.n
                te = self._event_at.get(trim["frame"])
                if te is not None:
                    te.notes.append(f"NACK in frame {p.n}")
            else:
                txs = self.tx.get(psn)
                why = ("the capture never showed it sent" if not txs
                       else f"its last copy (frame {txs[-1].frame}) was not trimmed")
                self.nack_trim_cands.append((p.n, psn, why))
        return entry

    # --- the end of the capture ----------------------------------------------------------------
    def finish(self, capture_has_trims: bool) -> None:
        for entry, tx in self._retx_tx:
            entry["trimmed"] = tx.trimmed  # the resend itself (or its copy) was trimmed
        if self.tpdcid is None and self.dpdcid_seen is not None:
            self.tpdcid, self.tpdcid_frame = self.dpdcid_seen
        requests = self.counts["requests"] > 0
        lower = self._lower()
        grouped: dict[tuple[int, str], list[int]] = {}
        for frame, psn, why in self.phantom_cands:
            if lower is not None and pdiff(psn, lower) < 0:
                continue  # sent before the capture began
            grouped.setdefault((frame, why), []).append(psn)
        if requests:
            for (frame, why), psns in sorted(grouped.items()):
                self.phantoms.append({"frame": frame, "psns": psns, "why": why})
                rule = "C.2" if why == "never sent" else "C.6"
                shown = ", ".join(map(str, psns[:8])) + (" ..." if len(psns) > 8 else "")
                self.violation(frame, rule, "phantom_ack",
                               f"ACK claims {len(psns)} PSN(s) with {why} in the capture: {shown}")
        elif grouped:
            self.notes.append("one-sided: the capture shows no request of this PDC, so what its "
                              "ACKs claim cannot be checked")
        for frame, psn, why in self.nack_trim_cands:
            text = f"NACK TRIMMED for PSN {psn}, but {why}"
            if capture_has_trims and requests:
                self.violation(frame, "C.6", "nack_trimmed_untrimmed", text)
            else:
                self.notes.append(f"frame {frame}: {text} (not judged: the capture shows no "
                                  "trimmed frame or no request of this PDC)")
        self.violations.sort(key=lambda v: v["frame"])


class Conversation:
    """Every PDC of a capture, fed its UET frames in frame order."""

    def __init__(self) -> None:
        self.pdcs: list[Pdc] = []
        self.by_key: dict[tuple, Pdc] = {}
        self.other: Counter = Counter()
        self.nacks: Counter = Counter()
        self.trimmed = 0
        self.ce_marked = 0
        self.uet_frames = 0

    def _pdc(self, key: tuple) -> Pdc:
        pdc = self.by_key.get(key)
        if pdc is None:
            pdc = self.by_key[key] = Pdc(len(self.pdcs) + 1, *key)
            self.pdcs.append(pdc)
        return pdc

    def feed(self, p: Pkt) -> None:
        self.uet_frames += 1
        self.trimmed += p.trimmed
        self.ce_marked += p.ce
        t, pds = p.ptype, p.pds
        if t in NACK_TYPES:
            self.nacks[code_name(pds)] += 1
        if t in REQUEST_TYPES:
            key = (p.src, p.dst, pds.get("spdcid"))
            pdc = self.by_key.get(key)
            if (pdc is not None and pds.get("syn") and pdc.close is not None
                    and pds.get("start_psn") != pdc.start_psn):
                del self.by_key[key]  # C.7 then C.1: the ids start a new PDC
            self._pdc(key).request(p)
        elif t in ACK_TYPES:
            self._pdc((p.dst, p.src, pds.get("dpdcid"))).ack(p)
        elif t in NACK_TYPES and not pds.get("nt"):
            self._pdc((p.dst, p.src, pds.get("dpdcid"))).nack(p)
        elif t == CONTROL_TYPE:
            fwd = (p.src, p.dst, pds.get("spdcid"))
            back = (p.dst, p.src, pds.get("dpdcid"))
            if fwd in self.by_key:
                self.by_key[fwd].control(p, True)
            elif "dpdcid" in pds and (back in self.by_key
                                      or pds.get("ctl_type") in (CTL_CLOSE_REQ, CTL_CREDIT)):
                self._pdc(back).control(p, False)
            else:
                self._pdc(fwd).control(p, True)
        else:
            self.other[p.name] += 1

    def add_outside(self, o: Outside) -> None:
        """The frames outside PDCs the intake counted instead of keeping (as feed counts them)."""
        self.uet_frames += o.frames
        self.trimmed += o.trimmed
        self.ce_marked += o.ce
        self.other.update(o.names)
        self.nacks.update(o.nacks)

    def finish(self) -> None:
        for pdc in self.pdcs:
            pdc.finish(self.trimmed > 0)


def analyze(pkts: list[Pkt], outside: Outside | None = None) -> Conversation:
    """The conversation of ``pkts`` (the intake's ``uet``) and of the frames outside PDCs it
    counted (its ``outside``: they count towards the totals, trimmed frames included)."""
    conv = Conversation()
    if outside is not None:
        conv.add_outside(outside)
    for p in pkts:
        conv.feed(p)
    conv.finish()
    return conv
