"""native/rxlane.c under AddressSanitizer and UBSan: the driver (native/test_rxlane_driver.c)
feeds the lane valid, mutated, truncated and random datagrams, with the field layout the
schema gives (uet.pds.lanes, uet.ses.lanes), and the lane must stay inside its buffers."""

from __future__ import annotations

from tests.native.sanitize import run_sanitized

SOURCES = ["test_rxlane_driver.c", "rxlane.c", "crc32c.c", "reasm.c"]

CONSTANTS = ("request_size", "rud_req", "rod_req", "std_size", "nh_std", "send_opcode",
             "tagged_send_opcode", "dscp_trimmed", "ecn_ce", "ack_size")


def test_rxlane_under_asan_ubsan(tmp_path):
    from uet.pds.lanes import ACK_FIELDS, PDS_FIELDS
    from uet.ses.lanes import SES_FIELDS, lane_layout

    lay = lane_layout()
    args = []
    for name in PDS_FIELDS + SES_FIELDS + tuple(ACK_FIELDS):  # uet_rx_layout's order
        pos, width, signed = lay[name]
        args += [str(pos), str(width), str(int(signed))]
    args += [str(lay[name]) for name in CONSTANTS]
    run_sanitized(tmp_path, SOURCES, args)
