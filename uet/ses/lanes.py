"""The SES's half of the C receive lane (uet.native.rxlane, native/rxlane.c): every field's bit
position and width, from the schema's layout of the SES standard header (D.3), and the constants
the lane compares with. The PDS below adds its half (uet.pds.lanes) and owns the lane tables
(:meth:`uet.pds.upper.Upper.lane_fields`). Built once; the lane names no field itself, so a
change of the schema reaches it here."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..pds.lanes import pds_layout
from .common import NH_STD, SEND, TAGGED_SEND
from .packets import _MIDDLE, STD_SIZE

SES_FIELDS = ("opcode", "som", "eom", "ie", "message_id", "initiator", "request_length",
              "payload_length", "message_offset")


@lru_cache(maxsize=None)
def lane_fields() -> dict[str, Any]:
    """The SES's fields of ``uet_rx_layout`` by name: (bit position, width, signed) per field of
    the standard header, and the constants (its size and next_hdr, the SEND opcodes)."""
    layout: dict[str, Any] = {}
    for name in SES_FIELDS:
        pos, width = _MIDDLE.position(name)
        layout[name] = (pos, width, False)
    layout.update(std_size=STD_SIZE, nh_std=NH_STD, send_opcode=SEND,
                  tagged_send_opcode=TAGGED_SEND)
    return layout


def lane_layout() -> dict[str, Any]:
    """The whole ``uet_rx_layout`` (the PDS's half and this one): what the tests and the
    sanitizer driver give a lane of their own."""
    return {**pds_layout(), **lane_fields()}
