"""RoCEv2 captures from other projects (../shared/interop/roce/): ICRC verdicts (G.6), BTH/RETH/AETH
fields (G.2, G.4), CNP (G.5), ECN CE and IPv6."""

from __future__ import annotations

import pytest

from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames

from tests.interop_paths import interop_file, needs_interop

pytestmark = needs_interop


def frames(name: str) -> list[dict]:
    path = interop_file("roce", name)
    return [decode_frame(lt, raw, i).obj for i, (lt, raw, _) in enumerate(read_frames(str(path)), 1)]


@pytest.fixture(scope="module")
def scapy_frames():
    return frames("roce_scapy.pcap")


def test_g6_icrc_verdicts(scapy_frames):
    """Frame 6 is frame 2 with its last ICRC byte flipped; every other frame verifies."""
    oks = [f["roce"]["icrc"]["ok"] for f in scapy_frames]
    assert oks == [True, True, True, True, True, False, True]
    assert scapy_frames[5]["problems"] == ["icrc: mismatch: carries 0x9bc6b0dd, computed 0x64c6b0dd"]
    # G.6 step 3: the ICRC is stored least-significant byte first; the flip hit the top byte
    assert scapy_frames[1]["roce"]["icrc"]["value"] ^ scapy_frames[5]["roce"]["icrc"]["value"] == 0xFF000000


def test_g6_icrc_connectx4_lx_cnp():
    (f,) = frames("hw_cnp_cx4lx.pcap")
    assert f["problems"] == []
    assert f["roce"]["icrc"] == {"value": 0x2A00FD82, "ok": True}
    assert f["roce"]["bth"]["opcode_name"] == "CNP" and f["roce"]["bth"]["becn"] is True
    assert f["roce"]["bth"]["dest_qp"] == 0x118 and f["roce"]["bth"]["p_key"] == 0xFFFF
    assert f["ip"]["dscp"] == 48 and f["ip"]["ecn"] == 2


def test_g4_write_first_with_reth(scapy_frames):
    f = scapy_frames[0]["roce"]
    assert f["bth"] == {"opcode": 6, "opcode_name": "RC_RDMA_WRITE_FIRST", "se": False, "m": False,
                        "pad_cnt": 0, "tver": 0, "p_key": 0xFFFF, "fecn": False, "becn": False,
                        "dest_qp": 17, "ack_req": False, "psn": 100}
    assert f["reth"] == {"virtual_address": 0x7F0000001000, "r_key": 0x1234ABCD, "dma_length": 3000}
    assert f["payload_len"] == 1024


def test_a2_ecn_ce_on_frame_2(scapy_frames):
    f = scapy_frames[1]
    assert f["ip"]["ecn"] == 3
    assert f["roce"]["bth"]["opcode_name"] == "RC_SEND_ONLY"
    assert f["roce"]["bth"]["se"] is True and f["roce"]["bth"]["ack_req"] is True


def test_g4_aeth_ack_and_nak(scapy_frames):
    ack, nak = scapy_frames[2]["roce"], scapy_frames[6]["roce"]
    assert ack["aeth"] == {"syndrome": 0x1F, "msn": 5, "syndrome_name": "ACK(credits=unlimited)"}
    assert nak["aeth"] == {"syndrome": 0x60, "msn": 4, "syndrome_name": "NAK(PSN_SEQUENCE_ERROR)"}


def test_g5_cnp(scapy_frames):
    f = scapy_frames[3]["roce"]
    assert f["bth"]["opcode"] == 0x81 and f["bth"]["becn"] is True and f["bth"]["dest_qp"] == 0x22
    assert f["cnp"] == {} and f["payload_len"] == 0


def test_ipv6_frame_5(scapy_frames):
    f = scapy_frames[4]
    assert f["ip"] == {"version": 6, "src": "fd00::1", "dst": "fd00::2", "dscp": 26, "ecn": 2, "ttl": 64}
    assert f["roce"]["bth"]["dest_qp"] == 0x33 and f["roce"]["icrc"]["ok"] is True
