"""Sans-IO packet delivery sublayer (PDS): RUD and ROD PDCs (docs/facts.md C.1-C.8), RUDI and UUD.

The PDS carries the bytes of the layer above (the SES) and never parses them:

>>> from uet.pds import Endpoint
>>> from uet.pds.upper import Accepting
>>> ep = Endpoint("10.0.0.1", upper=Accepting())

A whole host (PDS, RUDI, UUD and the SES) is :class:`uet.host.Host`. Module map: ``endpoint``
(PDC registry, dispatch table), ``initiator`` and ``target`` (the two sides of a PDC and their
rules), ``recovery`` (RTT, RACK, RTO, TLP), ``packets`` (one build and one parse per PDS packet),
``reactions`` (the NACK table), ``upper`` (the seam to the SES), ``datagram`` (metadata and the
CRC trailer), ``config``, ``events``, ``rudi`` and ``uud``.
"""

from .config import PdsConfig
from .datagram import (CE, DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0, ECT1, NOT_ECT,
                       DatagramMeta, seal, trailer_ok)
from .endpoint import Endpoint
from .events import Event, PdcClosed, PdcEstablished
from .initiator import Initiator
from ..wire.psn import pdiff
from .target import Target
from ..wire.enums import nack_name

__all__ = [
    "CE", "DSCP_CONTROL", "DSCP_DATA", "DSCP_TRIMMED", "ECT0", "ECT1", "NOT_ECT", "DatagramMeta",
    "Endpoint", "Event", "Initiator", "PdcClosed", "PdcEstablished", "PdsConfig", "Target",
    "nack_name", "pdiff", "seal", "trailer_ok",
]
