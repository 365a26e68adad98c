"""The PDS's half of the C receive lane (uet.native.rxlane, native/rxlane.c): the bit position and
width of every request (B.5) and ACK_CC (B.8) field the lane reads or writes, from the schema's
layouts, and the constants it compares with; and the lane tables a PDS endpoint owns, made from
that half and the upper layer's (:meth:`uet.pds.upper.Upper.lane_fields`: the SES header's, D.3).
The lane names no field itself, so a change of the schema reaches it here."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from ..native.rxlane import RxLanes
from ..wire.enums import ROD_REQ, RUD_REQ
from .datagram import CE, DSCP_TRIMMED
from .packets import _ACC, REQUEST_SIZE, _REQ0

PDS_FIELDS = ("type", "next_hdr", "retx", "ar", "syn", "clear_psn_offset", "psn", "spdcid",
              "dpdcid")
SIGNED = {"clear_psn_offset"}  # B.5: CLEAR_PSN = PSN + a signed offset
# the ACK_CC fields (B.8) an ACK the lane builds sets, by their layout names in uet_rx_layout
ACK_FIELDS = {"ack_psn_offset": "ack_psn_offset", "cack_psn": "cack_psn", "ack_m": "m",
              "ack_retx": "retx", "sack_psn_offset": "sack_psn_offset",
              "sack_bitmap": "sack_bitmap", "rcvd_bytes": "rcvd_bytes", "ooo_count": "ooo_count"}


@lru_cache(maxsize=None)
def pds_layout() -> dict[str, Any]:
    """The PDS's fields of ``uet_rx_layout`` by name: (bit position, width, signed) per header
    field (the request's and the ACK_CC fields an ACK of the lane sets) and the constants (the
    plain request's size, RUD_REQ and ROD_REQ, the trimmed DSCP and CE of A.2, the ACK_CC
    size)."""
    layout: dict[str, Any] = {}
    for name in PDS_FIELDS:
        pos, width = _REQ0.position(name)
        layout[name] = (pos, width, name in SIGNED)
    for name, field in ACK_FIELDS.items():
        pos, width = _ACC.position(field)
        layout[name] = (pos, width, False)
    layout.update(ack_size=_ACC.size, request_size=REQUEST_SIZE, rud_req=RUD_REQ,
                  rod_req=ROD_REQ, dscp_trimmed=DSCP_TRIMMED, ecn_ce=CE)
    return layout


def new_lanes(upper_fields: Mapping[str, Any] | None) -> Any:
    """The lane tables of a PDS endpoint whose upper layer gives ``upper_fields`` (its half of
    the layout), or None: no C backend, or an upper layer that takes nothing through the lane."""
    if RxLanes is None or upper_fields is None:
        return None
    return RxLanes({**pds_layout(), **upper_fields})
