"""The CSIG congestion-signalling tag (facts E.4) as a Scapy layer.

``CSIG`` is generated from the schema's ``csig`` header (:mod:`uet.wire.net_headers`) like every
other layer, and bound the way Scapy binds ``Dot1Q``, since the tag has an 802.1Q tag's shape (TPID,
16 bits of tag, inner EtherType; layout uet.cms.csig CMS-C1):

* below it: ``Ether`` and ``Dot1Q`` with ``type`` = the CSIG EtherType (default
  :data:`uet.cms.csig.CSIG_ETHERTYPE`; :func:`bind_csig_ethertype` moves it);
* above it, by its own ``ethertype`` field: ``IP`` (0x0800), ``IPv6`` (0x86DD) and ``Dot1Q``
  (0x8100, a VLAN tag after the CSIG tag).

So ``Ether()/CSIG(t="DELAY", s=3)/IP()/UDP()/UET_PDS_...`` builds with every type filled in, and
``Ether(raw)`` dissects through the tag to UET.
"""

from __future__ import annotations

from scapy.data import ETH_P_IP, ETH_P_IPV6
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import bind_bottom_up, bind_layers, bind_top_down, split_bottom_up, split_top_down

from ..cms.csig import CSIG_ETHERTYPE
from ..wire.net_headers import CSIG as _CSIG_HEADER
from .base import _SchemaPacket, make_layer

ETH_P_8021Q = 0x8100  # the 802.1Q TPID: Scapy binds Dot1Q under this number but names no constant

CSIG = make_layer(_CSIG_HEADER, _SchemaPacket, name="CSIG")

#: the EtherType Ether/Dot1Q -> CSIG is bound on (one at a time, see bind_csig_ethertype)
_bound_ethertype: list[int] = []


def bind_csig_ethertype(ethertype: int = CSIG_ETHERTYPE) -> None:
    """Dissect EtherType ``ethertype`` after ``Ether`` / ``Dot1Q`` as the CSIG tag, and make
    ``Ether()/CSIG()`` write it, instead of the EtherType bound before (E.4 fixes none)."""
    ethertype = int(ethertype)
    for lower in (Ether, Dot1Q):
        for old in _bound_ethertype:
            split_bottom_up(lower, CSIG, type=old)
        split_top_down(lower, CSIG)
        bind_bottom_up(lower, CSIG, type=ethertype)
        bind_top_down(lower, CSIG, type=ethertype)
    _bound_ethertype[:] = [ethertype]


bind_csig_ethertype(CSIG_ETHERTYPE)
bind_layers(CSIG, IP, ethertype=ETH_P_IP)
bind_layers(CSIG, IPv6, ethertype=ETH_P_IPV6)
bind_layers(CSIG, Dot1Q, ethertype=ETH_P_8021Q)
