"""What the C receive lane (uet.native.rxlane, native/rxlane.c) needs to know of the headers it
reads: every field's bit position and width, from the schema's layouts of the RUD/ROD request
(B.5) and the SES standard header (D.3), and the constants it compares with. Built once; the
lane names no field itself, so a change of the schema reaches it here."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..pds.datagram import CE, DSCP_TRIMMED
from ..pds.packets import REQUEST_SIZE, _REQ0
from ..wire.enums import RUD_REQ
from .common import NH_STD, SEND, TAGGED_SEND
from .packets import _MIDDLE, STD_SIZE

PDS_FIELDS = ("type", "next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid",
              "dpdcid")
SES_FIELDS = ("opcode", "som", "eom", "ie", "message_id", "initiator", "request_length",
              "payload_length", "message_offset")
SIGNED = {"clear_psn_offset"}  # B.5: CLEAR_PSN = PSN + a signed offset


@lru_cache(maxsize=None)
def lane_layout() -> dict[str, Any]:
    """``uet_rx_layout`` by field name: (bit position, width, signed) per header field, and the
    constants (the plain request's size, RUD_REQ, the standard header's size and next_hdr, the
    SEND opcodes, the trimmed DSCP and CE, A.2)."""
    layout: dict[str, Any] = {}
    for header, names in ((_REQ0, PDS_FIELDS), (_MIDDLE, SES_FIELDS)):
        for name in names:
            pos, width = header.position(name)
            layout[name] = (pos, width, name in SIGNED)
    layout.update(request_size=REQUEST_SIZE, rud_req=RUD_REQ, std_size=STD_SIZE, nh_std=NH_STD,
                  send_opcode=SEND, tagged_send_opcode=TAGGED_SEND, dscp_trimmed=DSCP_TRIMMED,
                  ecn_ce=CE)
    return layout
