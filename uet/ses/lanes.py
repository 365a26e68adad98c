"""What the C receive lane (uet.native.rxlane, native/rxlane.c) needs to know of the headers it
reads and writes: every field's bit position and width, from the schema's layouts of the RUD/ROD
request (B.5), the SES standard header (D.3) and ACK_CC (B.8), and the constants it compares with. Built once; the
lane names no field itself, so a change of the schema reaches it here."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..pds.datagram import CE, DSCP_TRIMMED
from ..pds.packets import _ACC, REQUEST_SIZE, _REQ0
from ..wire.enums import RUD_REQ
from .common import NH_STD, SEND, TAGGED_SEND
from .packets import _MIDDLE, STD_SIZE

PDS_FIELDS = ("type", "next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid",
              "dpdcid")
SES_FIELDS = ("opcode", "som", "eom", "ie", "message_id", "initiator", "request_length",
              "payload_length", "message_offset")
SIGNED = {"clear_psn_offset"}  # B.5: CLEAR_PSN = PSN + a signed offset
# the ACK_CC fields (B.8) an ACK the lane builds sets, by their layout names in uet_rx_layout
ACK_FIELDS = {"ack_psn_offset": "ack_psn_offset", "cack_psn": "cack_psn", "ack_m": "m",
              "ack_retx": "retx", "sack_psn_offset": "sack_psn_offset",
              "sack_bitmap": "sack_bitmap", "rcvd_bytes": "rcvd_bytes", "ooo_count": "ooo_count"}


@lru_cache(maxsize=None)
def lane_layout() -> dict[str, Any]:
    """``uet_rx_layout`` by field name: (bit position, width, signed) per header field (the
    request's, the standard header's, and the ACK_CC fields an ACK of the lane sets), and the
    constants (the plain request's size, RUD_REQ, the standard header's size and next_hdr, the
    SEND opcodes, the trimmed DSCP and CE, A.2, the ACK_CC size)."""
    layout: dict[str, Any] = {}
    for header, names in ((_REQ0, PDS_FIELDS), (_MIDDLE, SES_FIELDS)):
        for name in names:
            pos, width = header.position(name)
            layout[name] = (pos, width, name in SIGNED)
    for name, field in ACK_FIELDS.items():
        pos, width = _ACC.position(field)
        layout[name] = (pos, width, False)
    layout.update(ack_size=_ACC.size, request_size=REQUEST_SIZE, rud_req=RUD_REQ, std_size=STD_SIZE, nh_std=NH_STD,
                  send_opcode=SEND, tagged_send_opcode=TAGGED_SEND, dscp_trimmed=DSCP_TRIMMED,
                  ecn_ce=CE)
    return layout
