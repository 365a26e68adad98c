"""uet: a reference implementation of the Ultra Ethernet Transport (UEC Specification 1.0.x).

Subpackages follow the spec's sublayers: :mod:`uet.wire` (every header, declared once),
:mod:`uet.native` (C on the critical path, with Python twins), :mod:`uet.capture` (pcap decoding).
"""

__version__ = "0.1.0"

UET_UDP_PORT = 4793  # docs/facts.md A.1
ROCE_UDP_PORT = 4791  # docs/facts.md G.1
UET_IP_PROTO = 253  # docs/facts.md A.1: RFC 3692 experimental, as the reference provider uses
