"""Events the PDS core hands to the layer above (``Endpoint.next_event()``), as small classes in
the h11 style. Delivery events carry the peer's address and PDC ids so a caller can tell flows apart.
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


@dataclass(frozen=True, slots=True)
class MessageDelivered(Event):
    """A whole message reassembled at the target (RUD: in arrival order; ROD: in PSN order).
    ``data`` is bytes, or with ``PdsConfig.zero_copy_delivery`` the reassembly buffer itself: a
    bytearray, or for a message longer than one reassembly chunk (256 KiB) a memoryview of its
    lazily paged mapping (uet.native.reassembly)."""
    pdcid: int
    peer: str
    message_id: int
    data: bytes | bytearray | memoryview
    job_id: int = 0
    pid_on_fep: int = 0
    resource_index: int = 0


@dataclass(frozen=True, slots=True)
class DataReceived(Event):
    """One request's payload handed to the message layer (only with ``PdsConfig.packet_events``)."""
    pdcid: int
    psn: int
    message_id: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class SendComplete(Event):
    """Every packet of a message was acknowledged (CACK passed it; SACK alone is not enough, C.4)."""
    handle: int
    pdcid: int
    message_id: int
    nbytes: int


MessageAcked = SendComplete


@dataclass(frozen=True, slots=True)
class MessageFailed(Event):
    handle: int
    pdcid: int
    message_id: int
    reason: str
