"""The PDC states and every transition between them, one table per side (as h11 keeps its HTTP
state machine in one place): a PDC side changes state only through
:meth:`uet.pds.pdc.PdcSide.transition`, which looks ``(state, event)`` up here. A pair the table
does not hold is a bug of this implementation (never something a peer can cause: the rules check
a packet before they name an event), so it raises :class:`IllegalTransition` instead of being
taken silently.

Each row cites the rule (of :mod:`uet.pds.initiator`, :mod:`uet.pds.target`,
:mod:`uet.pds.endpoint`) and the uet-facts.md row it implements.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from ..errors import UetError


class InitiatorState(StrEnum):
    """C.1, C.7. The values are the strings the states had before this table (kept for output)."""
    SYN_SENT = "syn_sent"        # I1: requests carry SYN until the first ACK
    ESTABLISHED = "established"  # I2: the peer's PDCID is known
    CLOSING = "closing"          # C1: the CLOSE went out, its ACK frees the PDC
    CLOSED = "closed"            # freed (C1, I14) or closed in error (X6)


class InitiatorEvent(StrEnum):
    FIRST_ACK = "first_ack"        # I2: the first valid ACK from the peer
    CLOSE_SENT = "close_sent"      # C1: every item acknowledged, CONTROL CLOSE sent
    CLOSE_ACKED = "close_acked"    # C1 / I14: the CLOSE acknowledged (or answered: PDC freed)
    FAILED = "failed"              # X6: closed in error


class TargetState(StrEnum):
    """C.1, C.7: HALF_OPEN until a packet without SYN names us (the initiator learned our PDCID;
    T3 reaps half-open PDCs first), OPEN, CLOSING once a CLOSE arrived (C2). A freed target PDC
    is forgotten (its tomb answers for it, C2), so it has no state of its own."""
    HALF_OPEN = "half_open"
    OPEN = "open"
    CLOSING = "closing"


class TargetEvent(StrEnum):
    NAMED = "named"                # a packet without SYN names this PDC (C.1; T4, T5 passed)
    CLOSE_RCVD = "close_rcvd"      # C2: a CONTROL CLOSE inside the window


class Transition(NamedTuple):
    new: StrEnum
    why: str  # the rule and the uet-facts.md row


_I, _IE = InitiatorState, InitiatorEvent
_T, _TE = TargetState, TargetEvent

INITIATOR_TABLE: dict[tuple[InitiatorState, InitiatorEvent], Transition] = {
    (_I.SYN_SENT, _IE.FIRST_ACK): Transition(_I.ESTABLISHED, "I2, C.1: DPDCID := ACK.SPDCID"),
    (_I.ESTABLISHED, _IE.CLOSE_SENT): Transition(_I.CLOSING, "C1, C.7"),
    # choice: a CLOSE sent before the first ACK keeps SYN (I1); its ACK establishes, then frees
    (_I.SYN_SENT, _IE.CLOSE_SENT): Transition(_I.SYN_SENT, "C1, C.7 with I1, C.1"),
    (_I.SYN_SENT, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "I14, C.7"),
    (_I.ESTABLISHED, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "C1 / I14, C.7"),
    (_I.CLOSING, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "C1 / I14, C.7"),
    (_I.SYN_SENT, _IE.FAILED): Transition(_I.CLOSED, "X6, C.5 / C.7"),
    (_I.ESTABLISHED, _IE.FAILED): Transition(_I.CLOSED, "X6, C.5 / C.7"),
    (_I.CLOSING, _IE.FAILED): Transition(_I.CLOSED, "X6, C.5 / C.7"),
}

TARGET_TABLE: dict[tuple[TargetState, TargetEvent], Transition] = {
    (_T.HALF_OPEN, _TE.NAMED): Transition(_T.OPEN, "T4 / T5 of uet/pds/endpoint.py, C.1"),
    (_T.HALF_OPEN, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "C2, C.7"),
    (_T.OPEN, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "C2, C.7"),
    # a second CLOSE at a newer PSN in the window: C2 records that PSN (the state stays)
    (_T.CLOSING, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "C2, C.7"),
}


class IllegalTransition(UetError, RuntimeError):
    """A PDC side asked for a transition its table does not hold: a bug here, never input."""

    def __init__(self, role: str, state: StrEnum, event: object):
        self.role, self.state, self.event = role, state, event
        if isinstance(event, (InitiatorEvent, TargetEvent)):
            super().__init__(f"{role} PDC: no transition from {state.name} on {event.name}")
        else:  # an assignment to ``state`` that bypassed PdcSide.transition
            super().__init__(f"{role} PDC: state {state.name} assigned {event!r} directly; "
                             "use transition(event)")
