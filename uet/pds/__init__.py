"""Sans-IO packet delivery sublayer (PDS): RUD and ROD PDCs, uet-facts.md sections C.1-C.8.

>>> from uet.pds import Endpoint, DatagramMeta
>>> a, b = Endpoint("10.0.0.1"), Endpoint("10.0.0.2")
>>> h = a.send_message("10.0.0.2", b"hello")

The rules the state machines follow are written at the top of :mod:`uet.pds.endpoint`.
"""

from .config import CE, DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0, ECT1, NOT_ECT, DatagramMeta, PdsConfig
from .endpoint import Endpoint, Initiator, Target, crc_seed, nack_name, pdiff, seal, trailer_ok
from .events import (DataReceived, Event, MessageAcked, MessageDelivered, MessageFailed,
                     PdcClosed, PdcEstablished, SendComplete)

__all__ = [
    "CE", "DSCP_CONTROL", "DSCP_DATA", "DSCP_TRIMMED", "ECT0", "ECT1", "NOT_ECT", "DataReceived",
    "DatagramMeta", "Endpoint", "Event", "Initiator", "MessageAcked", "MessageDelivered",
    "MessageFailed", "PdcClosed", "PdcEstablished", "PdsConfig", "SendComplete", "Target",
    "crc_seed", "nack_name", "pdiff", "seal", "trailer_ok",
]
