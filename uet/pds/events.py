"""Events of the PDS core (``Endpoint.next_event()``), as small classes in the h11 style: PDCs
opening and closing. What the PDS carries goes to the upper layer through its interface
(uet/pds/upper.py), not as events.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    pass


@dataclass(frozen=True, slots=True)
class PdcEstablished(Event):
    """Initiator: the first ACK arrived (C.1). Target: a SYN request created the PDC."""
    pdcid: int
    peer_pdcid: int
    peer: str
    role: str  # "initiator" | "target"
    mode: str  # "rud" | "rod"


@dataclass(frozen=True, slots=True)
class PdcClosed(Event):
    pdcid: int
    peer: str
    role: str
    error: bool
    reason: str
