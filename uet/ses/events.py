"""Events the SES core hands to its user (``SesEndpoint.next_event()``), h11 style.

Target side: MessageReceived, DatagramReceived, RmaWriteDone, RmaReadDone, AtomicDone,
MessageError. Initiator side: OperationComplete, OperationFailed, SendDeferred.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    pass


# --- target side -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """A SEND / TAGGED_SEND (deferrable, rendezvous) message landed whole in a posted receive.
    ``tag`` is the match bits for tagged opcodes, else None; ``unexpected`` is True when it
    waited in the unexpected list before the receive was posted."""
    peer: Any
    message_id: int
    opcode: int
    data: bytes
    tag: int | None
    recv_handle: int
    header_data: int = 0
    unexpected: bool = False
    dc: bool = False
    job_id: int = 0          # D.2: the ids the message's header named
    pid_on_fep: int = 0
    resource_index: int = 0


@dataclass(frozen=True, slots=True)
class DatagramReceived(Event):
    """DATAGRAM_SEND (UUD only, C.8)."""
    peer: Any
    data: bytes


@dataclass(frozen=True, slots=True)
class RmaDone(Event):
    """An RMA operation served from a registered region (target side): which, where."""
    peer: Any
    message_id: int
    memory_key: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class RmaWriteDone(RmaDone):
    """A WRITE landed in a registered region."""


@dataclass(frozen=True, slots=True)
class RmaReadDone(RmaDone):
    """A READ served from a registered region."""


@dataclass(frozen=True, slots=True)
class AtomicDone(Event):
    peer: Any
    message_id: int
    memory_key: int
    offset: int
    atomic_opcode: int
    atomic_datatype: int
    modified: bool


@dataclass(frozen=True, slots=True)
class MessageError(Event):
    """A request the target refused (``return_code``, D.8) or a message the initiator terminated
    with MSG_ERROR / the IE flag; ``reason`` is readable."""
    peer: Any
    message_id: int
    opcode: int
    return_code: int
    reason: str


@dataclass(frozen=True, slots=True)
class RecvFailed(Event):
    """A posted receive consumed in error (message longer than its capacity: TOO_LONG)."""
    recv_handle: int
    return_code: int
    reason: str


# --- initiator side ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OperationComplete(Event):
    """The SES response for an operation arrived with RC OK (delivery complete at the target).
    ``data``: read data, or the fetched value bytes of a fetching atomic / compare-and-swap."""
    handle: int
    op: str
    message_id: int
    return_code: int
    modified_length: int = 0
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class OperationFailed(Event):
    handle: int
    op: str
    message_id: int
    return_code: int
    reason: str


@dataclass(frozen=True, slots=True)
class SendDeferred(Event):
    """A deferrable send was deferred by the target; it restarts on DEFERRABLE_RTR (D.9)."""
    handle: int
    message_id: int
    initiator_restart_token: int
