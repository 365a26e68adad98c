"""Sans-IO semantic sublayer (SES), docs/facts.md section D: send, tagged send, deferrable and
rendezvous sends, RMA write/read, atomics, datagrams, responses with return codes.

>>> from uet.ses import SesEndpoint
>>> from uet.ses.loopback import Loopback
>>> a, b = SesEndpoint(), SesEndpoint()
>>> _ = b.register(7, bytearray(8))
>>> h = a.write("b", 7, 0, b"hi")
>>> _ = Loopback({"a": a, "b": b}).run()
>>> bytes(b.regions[7].buffer[:2]), type(a.next_event()).__name__
(b'hi', 'OperationComplete')

The rules are written at the top of :mod:`uet.ses.endpoint`; the connectionless PDS modes it
runs over are :mod:`uet.pds.rudi` and :mod:`uet.pds.uud`.
"""

from . import atomics
from .common import (MAX_ACK_DATA_SIZE, SUPPORTED_OPCODES, UNSUPPORTED_OPCODES, MemoryRegion,
                     SesConfig, SesError)
from .endpoint import SesEndpoint
from .packets import Message, SesPacket, decode_ses
from .events import (AtomicDone, DatagramReceived, Event, MessageError, MessageReceived,
                     OperationComplete, OperationFailed, RecvFailed, RmaReadDone, RmaWriteDone,
                     SendDeferred)

__all__ = [
    "MAX_ACK_DATA_SIZE", "SUPPORTED_OPCODES", "UNSUPPORTED_OPCODES", "AtomicDone",
    "DatagramReceived", "Event", "MemoryRegion", "MessageError", "MessageReceived",
    "OperationComplete", "OperationFailed", "RecvFailed", "RmaReadDone", "RmaWriteDone",
    "Message", "SendDeferred", "SesConfig", "SesEndpoint", "SesError", "SesPacket", "atomics",
    "decode_ses",
]
