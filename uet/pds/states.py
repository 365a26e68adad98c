"""The PDC states and every transition between them, one table per side (as h11 keeps its HTTP
state machine in one place): a PDC side changes state only through
:meth:`uet.pds.pdc.PdcSide.transition`, which looks ``(state, event)`` up here. A pair the table
does not hold is a bug of this implementation (never something a peer can cause: the rules check
a packet before they name an event), so it raises :class:`IllegalTransition` instead of being
taken silently.

Each row cites the rule (of :mod:`uet.pds.initiator`, :mod:`uet.pds.target`,
:mod:`uet.pds.endpoint`) and the docs/facts.md row it implements.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from ..errors import UetError


class InitiatorState(StrEnum):
    """C.1, C.7. The values are the strings the states had before this table (kept for output)."""
    SYN_SENT = "syn_sent"        # PDS-I1: requests carry SYN until the first ACK
    ESTABLISHED = "established"  # PDS-I2: the peer's PDCID is known
    CLOSING = "closing"          # PDS-C1: the CLOSE went out, its ACK frees the PDC
    CLOSED = "closed"            # freed (PDS-C1, PDS-I14) or closed in error (PDS-X6)


class InitiatorEvent(StrEnum):
    FIRST_ACK = "first_ack"        # PDS-I2: the first valid ACK from the peer
    CLOSE_SENT = "close_sent"      # PDS-C1: every item acknowledged, CONTROL CLOSE sent
    CLOSE_ACKED = "close_acked"    # PDS-C1 / PDS-I14: the CLOSE acknowledged (or answered: PDC freed)
    FAILED = "failed"              # PDS-X6: closed in error


class TargetState(StrEnum):
    """C.1, C.7: HALF_OPEN until a packet without SYN names us (the initiator learned our PDCID;
    PDS-T3 reaps half-open PDCs first), OPEN, CLOSING once a CLOSE arrived (PDS-C2). A freed target PDC
    is forgotten (its tomb answers for it, PDS-C2), so it has no state of its own."""
    HALF_OPEN = "half_open"
    OPEN = "open"
    CLOSING = "closing"


class TargetEvent(StrEnum):
    NAMED = "named"                # a packet without SYN names this PDC (C.1; PDS-T4, PDS-T5 passed)
    CLOSE_RCVD = "close_rcvd"      # PDS-C2: a CONTROL CLOSE inside the window


class Transition(NamedTuple):
    new: StrEnum
    why: str  # the rule and the docs/facts.md row


_I, _IE = InitiatorState, InitiatorEvent
_T, _TE = TargetState, TargetEvent

INITIATOR_TABLE: dict[tuple[InitiatorState, InitiatorEvent], Transition] = {
    (_I.SYN_SENT, _IE.FIRST_ACK): Transition(_I.ESTABLISHED, "PDS-I2, C.1: DPDCID := ACK.SPDCID"),
    (_I.ESTABLISHED, _IE.CLOSE_SENT): Transition(_I.CLOSING, "PDS-C1, C.7"),
    # choice: a CLOSE sent before the first ACK keeps SYN (PDS-I1); its ACK establishes, then frees
    (_I.SYN_SENT, _IE.CLOSE_SENT): Transition(_I.SYN_SENT, "PDS-C1, C.7 with PDS-I1, C.1"),
    (_I.SYN_SENT, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "PDS-I14, C.7"),
    (_I.ESTABLISHED, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "PDS-C1 / PDS-I14, C.7"),
    (_I.CLOSING, _IE.CLOSE_ACKED): Transition(_I.CLOSED, "PDS-C1 / PDS-I14, C.7"),
    (_I.SYN_SENT, _IE.FAILED): Transition(_I.CLOSED, "PDS-X6, C.5 / C.7"),
    (_I.ESTABLISHED, _IE.FAILED): Transition(_I.CLOSED, "PDS-X6, C.5 / C.7"),
    (_I.CLOSING, _IE.FAILED): Transition(_I.CLOSED, "PDS-X6, C.5 / C.7"),
}

TARGET_TABLE: dict[tuple[TargetState, TargetEvent], Transition] = {
    (_T.HALF_OPEN, _TE.NAMED): Transition(_T.OPEN, "PDS-T4 / PDS-T5 of uet/pds/endpoint.py, C.1"),
    (_T.HALF_OPEN, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "PDS-C2, C.7"),
    (_T.OPEN, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "PDS-C2, C.7"),
    # a second CLOSE at a newer PSN in the window: PDS-C2 records that PSN (the state stays)
    (_T.CLOSING, _TE.CLOSE_RCVD): Transition(_T.CLOSING, "PDS-C2, C.7"),
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
