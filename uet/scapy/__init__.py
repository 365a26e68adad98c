"""Scapy layers for UET and RoCEv2, generated from the one schema (:mod:`uet.wire`).

Importing this module registers everything with Scapy; plain Scapy use is unaffected apart from
the added bindings (and one added payload rule on ``scapy.contrib.roce.AETH``, see below)::

    >>> from scapy.all import Ether, IP, UDP, Raw, rdpcap
    >>> from uet.scapy import *
    >>> pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=49152, chksum=0)
    ...        / UET_PDS_RUD_ROD_REQ(psn=7, spdcid=1, dpdcid=2) / UET_SES_STD(opcode="WRITE")
    ...        / Raw(b"data"))
    >>> again = Ether(bytes(pkt))          # the CRC-32C trailer was appended on build
    >>> again[UET].crc_ok()
    True

Nothing here lists a field by hand: :func:`make_layer` turns each :class:`uet.wire.schema.Header`
into a ``Packet`` subclass, and the bindings come from the chain tables of
:mod:`uet.wire.uet_headers` (``PDS_BY_TYPE``, ``SES_BY_NEXT_HDR``, ``ATOMIC_OPCODES``,
``CSWAP_AMO_OPCODES``, ``RENDEZVOUS_OPCODES``) and :func:`uet.wire.roce_headers.extension_headers`.

Layer classes (header key -> class)
-----------------------------------

=========================  ===========================  =========================================
schema key                 Scapy class                  selected by
=========================  ===========================  =========================================
``entropy``                ``UET_Entropy``              IP proto 253 / IPv6 nh 253 (A.1)
``tss``                    ``UET_TSS``                  type 1 (B.15)
``pds.<name>``             ``UET_PDS_<NAME>``           5-bit type of the first byte (B.1), e.g.
                                                        ``UET_PDS_RUD_ROD_REQ`` (types 2 and 3),
                                                        ``UET_PDS_ACK_CC``, ``UET_PDS_CONTROL``
``ses.<name>``             ``UET_SES_<NAME>``           PDS ``next_hdr`` (B.2), e.g.
                                                        ``UET_SES_STD``, ``UET_SES_RSP_DATA``
``ses.atomic/cswap``       ``UET_SES_ATOMIC/CSWAP``     SES opcode in ``ATOMIC_OPCODES``, then the
                                                        AMO opcode byte (``UET_SES_AMO`` dispatches)
``ses.rendezvous``         ``UET_SES_RENDEZVOUS``       standard header, ``RENDEZVOUS_OPCODES``
``roce.reth`` ...          ``RETH``, ``ImmDt``,         BTH opcode, in the order of
                           ``IETH``, ``AtomicETH``,     ``extension_headers(opcode)`` (G.4)
                           ``AtomicAckETH``, ``DETH``
``csig``                   ``CSIG``                     Ether/Dot1Q type ``CSIG_ETHERTYPE`` (E.4)
=========================  ===========================  =========================================

``UET`` is the dispatcher bound to UDP port 4793 (destination port, where every UET datagram goes,
facts A.1; and source port, for captures of implementations that answered from 4793 to the
initiator's entropy port) and to ``UET_Entropy``: ``UET(data)`` returns the PDS (or TSS)
class for the type in ``data[0] >> 3`` (``Raw`` for reserved/unassigned types). All PDS classes and
``UET_TSS`` subclass ``UET``, so ``pkt[UET]`` finds the first UET header of any type. All generated
UET classes subclass ``UETPacket``. ``LAYERS`` maps every schema key to its class, ``PDS_LAYERS``
maps PDS type -> class, ``SES_LAYERS`` maps next_hdr -> class.

Field names
-----------

Field names are the codec's names (:mod:`uet.wire.codec`), reserved fields included
(``rsvd_<bit offset>``, default 0), with these exceptions:

* ``payload`` (NACK and CONTROL payload word) is ``payload_word``: Scapy reserves ``payload``
  (``SCAPY_FIELD_NAMES`` holds the mapping; :func:`scapy_name` / :func:`codec_name` convert).
* Where one name sits at two positions that no single field order can hold (``ses.std``:
  ``initiator_restart_token`` / ``target_restart_token`` are at bytes 12-19 for the deferrable
  sends and at bytes 24-31 for DEFERRABLE_RTR), the second position is an *alias* field named
  ``<name>_at<bit offset>`` in ``fields_desc``; it reads and writes the value under the real name,
  so ``pkt.initiator_restart_token`` and ``UET_SES_STD(initiator_restart_token=...)`` work for both.
  ``show()`` displays the value under the alias name; ``repr()`` and ``command()`` give it under the
  real name only when it was set by name. ``ALIASES`` lists them per class. (The same mechanism
  serves the ``@ccx_layout`` option, whose two arms give ``ack_ccx_state`` / ``nack_ccx_state``
  two widths.)
* Flags are 1-bit ``BitField``\\ s holding 0/1 (the codec gives bools; ``1 == True``). Enumerated
  fields are ``BitEnumField``\\ s with the facts' symbols (so ``opcode="WRITE"`` works). Signed fields
  are :class:`SignedBitField` (two's complement: ``pkt.clear_psn_offset == -2`` reads back).
* Switches (``uet.wire.schema.Switch``) become ``ConditionalField``\\ s whose condition finds the
  layout variant from the selector fields of the same packet (``syn``, ``p``, ``nt``, ``cc_type``,
  ``opcode``, ``som``, ``hd``, ``sp``) and, for ``@option`` switches, from
  ``conf.contribs["uet"]["options"]`` at dissection/build time (so the conflict choices of
  docs/facts.md H.1 are configurable without rebuilding classes).
* RoCEv2: ``scapy.contrib.roce.BTH`` and ``AETH`` keep Scapy's names. ``BTH_FIELD_NAMES`` maps them to
  the schema's: opcode, solicited->se, migreq->m, padcount->pad_cnt, version->tver, pkey->p_key,
  fecn, becn, resv6->rsvd_34, dqpn->dest_qp, ackreq->ack_req, resv7->rsvd_65, psn.

The PDS (or TSS) layer directly over UDP or ``UET_Entropy`` ("outermost") also has a trailer field
at the end of ``fields_desc``: ``crc`` for PDS classes, ``icv`` for ``UET_TSS``.

CRC-32C trailer (docs/facts.md A.3, coverage as in :mod:`uet.wire.trailer`)
------------------------------------------------------------------------

``conf.contribs["uet"]["trailer"]`` is ``"auto"`` (default), ``"crc"`` or ``"none"``:

* dissection: ``auto`` takes the last 4 bytes of the UET payload as the trailer exactly when they
  verify (as ``uet decode`` does); ``crc`` always takes them; ``none`` never does. The value is in
  the ``crc`` field; ``crc`` is ``False`` when no trailer was taken.
* building (outermost layer only): a trailer is appended unless the mode is ``none`` or the field is
  ``False``; ``crc=None`` (default) computes it, an int is written as is (to make bad packets). The
  CRC covers the IP source and destination addresses, then the final UDP header with its checksum
  taken as 0 and its length counting the trailer (native IP: the entropy header instead), then the
  UET bytes. Scapy computes the UDP length (it counts the trailer). The UDP checksum is Scapy's
  usual one unless you set ``chksum=0``, which is what UET senders do (docs/design-notes.md "Defaults").
* ``layer.crc_ok()`` says whether the carried trailer is right (``None`` when there is none or no
  IP layer to compute it with); ``layer.crc_computed()`` gives the value it should have.

``UET_TSS`` instead carries the 16-byte GCM tag (``icv``, bytes), taken from the end of the packet
on dissection; on build it is appended only when set (encryption is not done here).

Truncated input: a generated layer never raises on short input. It keeps the fields that fit whole
(like ``Codec.decode_partial``), ``layer.uet_truncated`` is true, and ``bytes(layer)`` gives back the
exact input.

Configuration
-------------

``conf.contribs["uet"]``: ``trailer`` (above), ``options`` (a :class:`uet.wire.schema.Options`),
``port`` (read-only mirror of the bound port). :func:`bind_uet_port` moves (or adds) the UET UDP
port; :func:`configure` sets all three.

RoCEv2 (extends ``scapy.contrib.roce``)
---------------------------------------

RETH, ImmDt, IETH, AtomicETH, AtomicAckETH and DETH are generated from ``uet.wire.roce_headers`` and
bound onto Scapy's ``BTH`` by opcode for every transport (RC, UC, UD) with ``bind_layers``; Scapy's
``AETH`` is bound for every opcode that carries one (Scapy itself binds only ACKNOWLEDGE). A header
that follows another extension header (RETH -> ImmDt, DETH -> ImmDt, AETH -> AtomicAckETH) is found
from the BTH opcode; for ``AETH`` this needs one added ``guess_payload_class`` rule, which leaves
every other case to Scapy's original method.

CSIG tag (facts E.4)
------------------------

``CSIG`` (from the schema's ``csig`` header, layout uet.cms.csig CMS-C1) sits where an 802.1Q tag would:
``Ether()/CSIG(t="ABW", s=31)/IP()/UDP()/...`` builds (the Ethernet type set to
:data:`uet.cms.csig.CSIG_ETHERTYPE`) and dissects, its ``ethertype``
field choosing IP, IPv6 or Dot1Q after it. :func:`bind_csig_ethertype` moves it to another
EtherType (E.4 fixes none; the default is :data:`uet.cms.csig.CSIG_ETHERTYPE`).

Modules
-------

Importing :mod:`uet.scapy` imports them all, in this order; every name is re-exported here.

* :mod:`uet.scapy.config` - field-name mappings and ``conf.contribs["uet"]``;
* :mod:`uet.scapy.fields` - the custom Scapy field types;
* :mod:`uet.scapy.layout` - a header's layout variants merged into one ``fields_desc``;
* :mod:`uet.scapy.base` - base packet classes and :func:`make_layer` (``LAYERS``, ``ALIASES``);
* :mod:`uet.scapy.uet_layers` - ``UET``, the generated UET classes and their bindings;
* :mod:`uet.scapy.roce` - the generated RoCEv2 classes and their bindings onto Scapy's ``BTH``;
* :mod:`uet.scapy.csig` - the generated ``CSIG`` class and its bindings to ``Ether``, ``Dot1Q``,
  ``IP`` and ``IPv6``.
"""

from __future__ import annotations

# Imported before the submodules: importing it binds UDP 4791 -> BTH, and Scapy tries a layer's
# payload bindings in the order they were made, so this keeps that binding ahead of the UET port
# bindings that uet_layers makes, as it has always been.
from scapy.contrib import roce as _roce  # noqa: F401

from ..wire import uet_headers as U
from .config import (BTH_FIELD_NAMES, SCAPY_FIELD_NAMES, TRAILER_MODES, codec_name, scapy_name,
                     trailer_mode, uet_options)
from .fields import AliasField, CondSchemaField, SignedBitField, UETTrailerField
from .base import ALIASES, LAYERS, UETPacket, _ROCE_CLASS_NAMES, class_name, make_layer
from .uet_layers import PDS_LAYERS, SES_LAYERS, UET, UET_SES_AMO, bind_uet_port, configure
from .roce import ROCE_LAYERS
from .csig import CSIG, bind_csig_ethertype

# private helpers the tests look at (the Scapy configuration and the ports bound to UET)
from .config import _cfg  # noqa: F401,E402
from .uet_layers import _bound_ports  # noqa: F401,E402

__all__ = [
    "UET", "UETPacket", "UET_SES_AMO", "SignedBitField", "UETTrailerField", "CondSchemaField",
    "AliasField", "class_name",
    "LAYERS", "PDS_LAYERS", "SES_LAYERS", "ROCE_LAYERS", "ALIASES", "SCAPY_FIELD_NAMES",
    "BTH_FIELD_NAMES", "TRAILER_MODES", "bind_uet_port", "configure", "make_layer", "scapy_name",
    "codec_name", "uet_options", "trailer_mode", "CSIG", "bind_csig_ethertype",
]

# The generated classes under their class names (UET_Entropy, UET_PDS_ACK, UET_SES_STD, RETH, ...):
# the list follows the schema, so it is built from LAYERS rather than written out.
globals().update({class_name(h): LAYERS[h.key] for h in U.UET_HEADERS})
globals().update({name: LAYERS[key] for key, name in _ROCE_CLASS_NAMES.items()})
__all__ += sorted(class_name(h) for h in U.UET_HEADERS)
__all__ += sorted(_ROCE_CLASS_NAMES.values())
