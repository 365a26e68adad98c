"""RCCC in the PDS (facts E.2): how credit travels between an initiator whose congestion
control wants it (:class:`uet.cms.rccc.Rccc`) and a target's credit scheduler
(:class:`uet.cms.rccc.CreditScheduler`). The algorithms are in uet.cms.rccc; this module only
moves their numbers in the fields the facts name, in RCCC's wire units (``to_units``).

Initiator (a PDC whose ``cc.wants_credit``):
  PDS-Q1  B.6: its requests use the CC forms (RUD_CC_REQ, ROD_CC_REQ) with ccc_id 0 and
      credit_target = the CC's demand for the bytes it has not sent (``backlog``: the items
      queued, plus the resends waiting).
  PDS-Q2  B.8 / B.12: a credit ACK (cc_type 1) and CONTROL CREDIT (ctl 7) hand their credit to the
      CC (``on_credit``); nothing else does.
  PDS-Q3  B.12: when it has something to send, nothing in flight and no credit for it, it sends
      CONTROL CREDIT_REQ (ctl 8, payload = its demand) at once and again every RTO while that
      lasts (the target may have lost the demand; nothing else would wake either side).
  PDS-Q4  choice: before establishment there is no PDC to send CREDIT_REQ on, so one request may
      always be in flight while the PDC is SYN_SENT (the SYN that states the demand, or its
      resend after a trim).

Target (an endpoint with a ``credit_scheduler_factory``):
  PDS-Q5  B.6: a CC-form request restates its PDC's demand; the PDC is credited from then on.
  PDS-Q6  choice: credit covers payload (the initiator's CC is charged each request's payload), and
      the PDS cannot tell the SES header from the payload, so an accepted request counts as
      arrived with what it carried, at most one MTU: exact for every full request (MTU bytes of
      payload and a header), up to one SES header too much for the last of a message. Counting
      the header as well would hand every sender ~1% more credit per packet, which piles up
      over a long flow. A trimmed request counts as one MTU (its credit was spent on the wire;
      its resend spends more).
  PDS-Q7  B.8: every ACK of a credited PDC is an ACK_CC of cc_type 1 carrying the scheduler's
      grant (0 when none is due); it takes precedence over a CSIG reflection. A request whose
      arrival makes credit due to its own PDC is ACKed at once (C.3's coalescing would hold
      the credit back while the sender waits for it).
  PDS-Q8  B.12: CREDIT_REQ restates the demand and is answered with CONTROL CREDIT when credit is
      due; after each arrival, senders the scheduler can now serve get CONTROL CREDIT; a PDC
      that closes returns its share.
"""

from __future__ import annotations

from typing import Any

from ..cms.rccc import to_bytes, to_units
from ..wire.enums import CTL_CREDIT, CTL_CREDIT_REQ
from .datagram import DatagramMeta
from .packets import control_bytes

INF = float("inf")


class InitiatorCredit:
    """PDS-Q1 to PDS-Q4 for one initiator PDC."""

    __slots__ = ("p", "backlog", "request_at")

    def __init__(self, p: Any):
        self.p = p
        self.backlog = 0          # PDS-Q1: bytes of the queued items not sent yet
        self.request_at = INF     # PDS-Q3: when CREDIT_REQ goes (again)

    def queued(self, item: Any) -> None:
        """PDS-Q1: an item's bytes join the backlog (its last request may be short)."""
        n = item.count
        self.backlog += (n - 1) * self.p.cfg.mtu + item.size_of(n - 1)

    def sent_new(self, nbytes: int) -> None:
        self.backlog -= nbytes

    def demand(self) -> int:
        """PDS-Q1: the credit_target of the next request, in wire units."""
        p = self.p
        resend = len(p.rec.retx_q) * p.cfg.mtu
        return to_units(p.cc.credit_target(max(0, self.backlog) + resend))

    def may_send(self, nbytes: int) -> bool:
        """The credit gate, with PDS-Q4's exception before establishment."""
        p = self.p
        return p.cc.can_send(p.rec.inflight, nbytes) or (not p.established and not p.rec.inflight)

    def granted(self, now: float, units: int) -> None:
        """PDS-Q2."""
        if units:
            self.request_at = INF
            self.p.cc.on_credit(now=now, size=to_bytes(units))

    def check(self, now: float, out: list) -> None:
        """PDS-Q3: ask for credit when stuck with nothing in flight."""
        p = self.p
        rec = p.rec
        if rec.inflight or not (rec.retx_q or p.queue) or not p.established:
            self.request_at = INF
            return
        if self.request_at == INF or now >= self.request_at:
            out.append(p._control(CTL_CREDIT_REQ, p.next_psn, self.demand(), False))
            self.request_at = now + rec.rto()


def target_request(t: Any, credit_target: int, cc_form: bool, now: float) -> None:
    """PDS-Q5: a request of target PDC ``t`` restates its demand."""
    sched = t.ep.credits
    if sched is not None and cc_form:
        t.credited = True
        sched.demand(t.pdcid, now, to_bytes(credit_target))


def target_arrived(t: Any, nbytes: int, now: float) -> None:
    """PDS-Q6, PDS-Q8: ``nbytes`` of a credited PDC arrived; serve whoever can be served now."""
    if t.credited:
        sched = t.ep.credits
        sched.arrived(t.pdcid, now, nbytes)
        for pdcid, grant in sched.waiting(now):
            if pdcid == t.pdcid:
                t.grant_due += grant  # PDS-Q7: on the ACK that follows at once
                continue
            other = t.ep.target(pdcid)
            if other is not None:
                send_credit(other, grant)


def ack_grant(t: Any, now: float) -> int | None:
    """PDS-Q7: the credit (wire units) an ACK of ``t`` carries, or None for a PDC not credited."""
    if not t.credited:
        return None
    due, t.grant_due = t.grant_due, 0
    return to_units(due or t.ep.credits.grant(t.pdcid, now))  # one grant per ACK (S3)


def target_credit_request(t: Any, units: int, now: float) -> None:
    """PDS-Q8: CREDIT_REQ."""
    sched = t.ep.credits
    if sched is None:
        t.ep.stats_counter["unsupported"] += 1
        return
    t.credited = True
    sched.demand(t.pdcid, now, to_bytes(units))
    grant = sched.grant(t.pdcid, now)
    if grant:
        send_credit(t, grant)


def send_credit(t: Any, nbytes: int) -> None:
    """PDS-Q8: CONTROL CREDIT to ``t``'s initiator, where its last request came from (PDS-A4)."""
    meta: DatagramMeta | None = t.last_meta
    if meta is None:
        return
    body = control_bytes(CTL_CREDIT, 0, t.pdcid, dpdcid=t.peer_pdcid, rod=t.rod, ar=False,
                         payload=to_units(nbytes))
    t.ep.send_answer(meta, body)
    t.ep.stats_counter["credit_tx"] += 1

