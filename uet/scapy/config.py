"""Names and configuration of the uet Scapy layers.

This module owns the mapping between schema (codec) field names and Scapy field names
(:data:`SCAPY_FIELD_NAMES`, :data:`BTH_FIELD_NAMES`) and the run-time settings kept in
``conf.contribs["uet"]``: the trailer mode, the decoder options and the bound UDP port (see the
"Configuration" section of :mod:`uet.scapy`). Binding a port is done by
:func:`uet.scapy.uet_layers.bind_uet_port`, which records it here.
"""

from __future__ import annotations

from typing import Mapping

from scapy.config import conf

from .. import UET_UDP_PORT
from ..wire.schema import DEFAULT_OPTIONS, Options

TRAILER_MODES = ("auto", "crc", "none")

#: schema (codec) field name -> Scapy field name, where Scapy reserves the name.
SCAPY_FIELD_NAMES = {"payload": "payload_word"}
_CODEC_NAMES = {v: k for k, v in SCAPY_FIELD_NAMES.items()}

#: scapy.contrib.roce.BTH field name -> schema (roce.bth codec) field name.
BTH_FIELD_NAMES = {
    "opcode": "opcode", "solicited": "se", "migreq": "m", "padcount": "pad_cnt", "version": "tver",
    "pkey": "p_key", "fecn": "fecn", "becn": "becn", "resv6": "rsvd_34", "dqpn": "dest_qp",
    "ackreq": "ack_req", "resv7": "rsvd_65", "psn": "psn",
}


def scapy_name(name: str) -> str:
    """Scapy field name of a schema/codec field name."""
    return SCAPY_FIELD_NAMES.get(name, name)


def codec_name(name: str) -> str:
    """Schema/codec field name of a Scapy field name."""
    return _CODEC_NAMES.get(name, name)


# --- configuration ----------------------------------------------------------------------------

def _cfg() -> dict:
    """``conf.contribs["uet"]``, created with the defaults when missing."""
    d = conf.contribs.get("uet")
    if not isinstance(d, dict):
        d = conf.contribs["uet"] = {}
    d.setdefault("trailer", "auto")
    d.setdefault("options", Options())
    d.setdefault("port", UET_UDP_PORT)
    return d


_cfg()


def uet_options() -> Options:
    """The decoder options in force (``conf.contribs["uet"]["options"]``)."""
    o = _cfg().get("options")
    if isinstance(o, Options):
        return o
    if isinstance(o, Mapping):
        return Options(**o)
    return DEFAULT_OPTIONS


def trailer_mode() -> str:
    """The trailer mode in force (``conf.contribs["uet"]["trailer"]``)."""
    m = _cfg().get("trailer", "auto")
    if m not in TRAILER_MODES:
        raise ValueError(f'conf.contribs["uet"]["trailer"] must be one of {TRAILER_MODES}, not {m!r}')
    return m
