"""The XDP2 sample captures (../shared/interop/xdp2/) decode field by field as docs/facts.md says.

Expected values were worked out by hand from the frames' hex and the facts tables (B.3-B.14,
D.2-D.7). The XDP2 quirks named in ../shared/interop/README.md are asserted where they show:
reserved bits set, the 32-byte ACK_CCX and 24-byte NACK_CCX (H.1 #2, #3), the CONTROL packet without
its payload word (XDP2-PY), no CRC trailer, and a RENDEZVOUS_TSEND without its extension.
"""

from __future__ import annotations

import pytest

from uet.capture.frame import DecodeConfig, decode_frame
from uet.capture.pcap import read_frames
from uet.wire.schema import Options

from tests.interop_paths import interop_file, needs_interop

pytestmark = needs_interop


def frames(name: str, **cfg) -> list[dict]:
    c = DecodeConfig(**cfg)
    path = interop_file("xdp2", name)
    return [decode_frame(lt, raw, i, c).obj for i, (lt, raw, _) in enumerate(read_frames(str(path)), 1)]


def subset(actual: dict, expected: dict) -> None:
    for k, v in expected.items():
        assert k in actual, f"missing {k}"
        assert actual[k] == v, f"{k}: {actual[k]!r} != {v!r}"


# SES standard READ request that XDP2 appends to most PDS samples (D.2, D.3).
STD_READ = dict(opcode=2, opcode_name="READ", version=0, dc=True, ie=False, rel=True, hd=False,
                eom=True, som=True, message_id=0x1234, ri_generation=0x77, job_id=0xABCDEF,
                pid_on_fep=0x678, resource_index=0x9AB, buffer_offset=0xFEDCBA9876543210,
                initiator=0xFEDCBA98, memory_key=0x1122334455667788, header_data=0xAABBDDDDEEFF0011,
                request_length=0x99887766)
# SES response (D.7) that XDP2 appends to ACK/NACK samples: c109 1234 99 654321 09abcdef.
RSP = dict(list=3, list_name="VENDOR_0x03", opcode=1, opcode_name="RESPONSE", version=0,
           return_code=9, return_code_name="AT_PERM", message_id=0x1234, ri_generation=0x99,
           job_id=0x654321, modified_length=0x09ABCDEF)
REQ = dict(next_hdr=3, retx=True, ar=False, clear_psn_offset=0x1234, psn=0x98765432, spdcid=0x3456,
           clear_psn=0x98766666)
NOSYN = dict(REQ, syn=False, dpdcid=0x9ABC)
SYN = dict(REQ, syn=True, use_rsv_pdc=True, psn_offset=0x876, start_psn=0x98764BBC)
CC = dict(ccc_id=0x77, credit_target=0x887766)


@pytest.fixture(scope="module")
def pds():
    return frames("uet_pds.pcap")


@pytest.fixture(scope="module")
def ses():
    return frames("uet_ses.pcap")


@pytest.mark.parametrize("n,type_name,fields", [
    (1, "RUD_REQ", NOSYN), (2, "RUD_REQ", SYN), (3, "RUD_CC_REQ", dict(NOSYN, **CC)),
    (4, "RUD_CC_REQ", dict(SYN, **CC)), (5, "ROD_REQ", NOSYN), (6, "ROD_REQ", SYN),
    (7, "ROD_CC_REQ", dict(NOSYN, **CC)), (8, "ROD_CC_REQ", dict(SYN, **CC)),
])
def test_b5_b6_requests(pds, n, type_name, fields):
    f = pds[n - 1]
    assert f["problems"] == []
    subset(f["uet"]["pds"], dict(fields, type_name=type_name))
    subset(f["uet"]["ses"], STD_READ)
    assert f["uet"]["payload_len"] == 0
    assert f["uet"]["crc"] == {"value": None, "ok": None}  # quirk: no CRC trailer


ACK_BASE = dict(next_hdr=4, m=True, retx=True, p=False, req=1, req_name="CLEAR", cack_psn=0x2468ACE0,
                spdcid=0x3456, dpdcid=0x789A)


def test_b7_ack(pds):
    f = pds[8]
    assert f["problems"] == []
    subset(f["uet"]["pds"], dict(ACK_BASE, type=7, type_name="ACK", ack_psn_offset=-31166,
                                 ack_psn=0x24683322))
    subset(f["uet"]["ses"], RSP)


def test_b8_ack_cc_nscc(pds):
    f = pds[9]
    assert f["problems"] == []
    subset(f["uet"]["pds"], dict(ACK_BASE, type=8, ack_psn_offset=0x2121, cc_type=0, cc_type_name="NSCC",
                                 cc_flags=0xF, mpr=0x87, sack_psn_offset=0x6789,
                                 sack_bitmap=0x123456789ABCDEF0, service_time=0x99AA, restore_cwnd=True,
                                 rcv_cwnd_pend=0x7F, rcvd_bytes=0x887766, ooo_count=0x8765,
                                 sack_base_psn=0x24691469))
    subset(f["uet"]["ses"], RSP)


def test_b8_ack_cc_credit(pds):
    f = pds[10]
    assert f["problems"] == []
    subset(f["uet"]["pds"], dict(ACK_BASE, type=8, ack_psn_offset=-26506, cc_type=1, cc_type_name="CREDIT",
                                 mpr=0x87, sack_psn_offset=-26232, credit=0x123456, ooo_count=0x8765))
    assert "service_time" not in f["uet"]["pds"]


def test_b9_ack_ccx_xdp2_quirk_short_layout(pds):
    """H.1 #2: XDP2 writes a 32-byte ACK_CCX; read as the 1.0 40-byte layout, its SES response no
    longer fits - reported, with the PDS header kept. --ccx-layout xdp2 reads it cleanly."""
    f = pds[11]
    subset(f["uet"]["pds"], dict(ACK_BASE, type=9, type_name="ACK_CCX", ccx_type=0xE, mpr=0x87,
                                 ack_ccx_state=0x1122334455667788C109123499654321))
    assert f["error"] == "ses.rsp: truncated: needs 12 bytes, 4 left"
    g = frames("uet_pds.pcap", opts=Options(ccx_layout="xdp2"))[11]
    assert g["problems"] == []
    assert g["uet"]["pds"]["ack_ccx_state"] == 0x1122334455667788
    subset(g["uet"]["ses"], RSP)


def test_b10_nack_rudi_form(pds):
    f = pds[12]
    assert f["problems"] == []
    subset(f["uet"]["pds"], dict(type=10, next_hdr=4, m=True, retx=True, nt=True, nack_code=0x16,
                                 nack_code_name="PDC_MODE_MISMATCH", vendor_code=0x87, pkt_id=0x99887766,
                                 spdcid=0x3456, dpdcid=0x789A, payload=0x56789ABC))
    assert "nack_psn" not in f["uet"]["pds"]
    subset(f["uet"]["ses"], RSP)


def test_b10_nack_ccx_xdp2_quirk_short_layout(pds):
    f = pds[13]
    subset(f["uet"]["pds"], dict(type=12, type_name="NACK_CCX", retx=True, nt=False, nack_code=0x15,
                                 nack_code_name="INVALID_SYN", nack_psn=0x99887766, nccx_type=3,
                                 nack_ccx_state=0xFDCBA9876543210C109123499654321))
    assert f["error"] == "ses.rsp: truncated: needs 12 bytes, 4 left"
    g = frames("uet_pds.pcap", opts=Options(ccx_layout="xdp2"))[13]
    assert g["problems"] == []
    assert g["uet"]["pds"]["nack_ccx_state"] == 0xFDCBA9876543210
    subset(g["uet"]["ses"], RSP)


def test_b12_control_xdp2_quirk_no_payload_word(pds):
    """XDP2-PY's CONTROL lacks the 4-byte payload word, so the 1.0 layout takes the first 4 bytes
    of what follows as payload and 8 bytes are left over."""
    f, g = pds[14], pds[15]
    assert f["problems"] == [] and g["problems"] == []
    subset(f["uet"]["pds"], dict(type=11, ctl_type=8, ctl_type_name="CREDIT_REQ", isrod=True, retx=True,
                                 ar=False, syn=False, probe_opaque=0x9876, psn=0xCDEF0123, spdcid=0xCDEF,
                                 dpdcid=0xFEDC, payload=0xC1091234))
    subset(g["uet"]["pds"], dict(ctl_type=9, ctl_type_name="NEGOTIATION", isrod=False, syn=True,
                                 use_rsv_pdc=True, psn_offset=0x876, payload=0xC1091234))
    assert "ses" not in f["uet"] and f["uet"]["payload_len"] == 8


def test_b14_uud_and_b13_rudi(pds):
    uud, req, rsp = pds[16], pds[17], pds[18]
    assert uud["problems"] == []
    subset(uud["uet"]["pds"], dict(type=6, type_name="UUD_REQ", next_hdr=3))
    subset(uud["uet"]["ses"], STD_READ)
    subset(req["uet"]["pds"], dict(type=4, type_name="RUDI_REQ", next_hdr=3, m=True, retx=False,
                                   pkt_id=0x99887766))
    assert req["problems"] == ["pds: M flag set on a RUDI request (defined for responses only, B.13)"]
    subset(rsp["uet"]["pds"], dict(type=5, type_name="RUDI_RESP", next_hdr=4, m=True, pkt_id=0x99887766))
    subset(rsp["uet"]["ses"], RSP)


def test_every_pds_frame_decodes(pds):
    assert len(pds) == 19
    assert [f["uet"]["pds"]["type"] for f in pds] == [2, 2, 13, 13, 3, 3, 14, 14, 7, 8, 8, 9, 10, 12, 11,
                                                       11, 6, 4, 5]
    for f in pds:
        assert f["ip"] == {"version": 4, "src": "192.168.1.2", "dst": "192.168.1.2", "dscp": 0, "ecn": 0,
                           "ttl": 64}
        assert f["udp"]["dport"] == 4793


# --- SES formats -----------------------------------------------------------------------------

IDS = dict(ri_generation=0x77, job_id=0xABCDEF, pid_on_fep=0x678, resource_index=0x9AB)


def test_d3_std_write_non_som(ses):
    f = ses[1]
    assert f["problems"] == []
    subset(f["uet"]["ses"], dict(IDS, opcode=1, opcode_name="WRITE", dc=True, rel=True, eom=True, som=False,
                                 message_id=0x1234, buffer_offset=0xFEDCBA9876543210,
                                 initiator=0xFEDCBA98, memory_key=0x1122334455667788,
                                 payload_length=0x345, message_offset=0x77665544,
                                 request_length=0x99887766))
    assert "header_data" not in f["uet"]["ses"]


def test_d3_deferrable_send_and_rtr_restart_tokens(ses):
    d, r = ses[2]["uet"]["ses"], ses[3]["uet"]["ses"]
    subset(d, dict(opcode=8, opcode_name="DEFERRABLE_SEND", initiator_restart_token=0x87654321,
                   target_restart_token=0x12345678, initiator=0xFEDCBA98, memory_key=0x1122334455667788,
                   payload_length=0x3A98, message_offset=0x76543210))
    subset(r, dict(opcode=12, opcode_name="DEFERRABLE_RTR", buffer_offset=0x8899AABBCCDDEEFF,
                   initiator=0xFEDCBA98, initiator_restart_token=0x87654321,
                   target_restart_token=0x12345678))
    # quirk: XDP2 fills the non-SOM reserved bits 256-273 with its header_data pattern
    assert ses[2]["problems"] == ["ses.std: reserved bits 256-273 are set (0x3FB72)"]


@pytest.mark.parametrize("n,hdr", [(5, "std"), (8, "medium"), (11, "small")])
def test_d6_atomic_extension_after_every_request_form(ses, n, hdr):
    f = ses[n - 1]
    s = f["uet"]["ses"]
    assert s["opcode_name"] == "ATOMIC"
    atomic = s["atomic"]
    if n == 11:
        subset(atomic, dict(atomic_opcode=8, atomic_opcode_name="BAND", atomic_datatype=0x0A,
                            atomic_datatype_name="FLOAT", cpu_coherent=False, cacheable=True))
    else:
        subset(atomic, dict(atomic_opcode=0x0A, atomic_opcode_name="BXOR", atomic_datatype=0x0C,
                            atomic_datatype_name="FLOAT_COMPLEX", cpu_coherent=True, cacheable=True))
    # quirk: semantic_control bits outside 0x03 are set (H.1 #11 reads 0x01/0x02 only)
    assert f["problems"] == ["ses.atomic: reserved bits 16-21 are set (0x31)"]


@pytest.mark.parametrize("n", [6, 9, 12])
def test_d6_compare_swap_extension(ses, n):
    c = ses[n - 1]["uet"]["ses"]["cswap"]
    subset(c, dict(atomic_opcode=0x11, atomic_opcode_name="CSWAP_GE", atomic_datatype=0x0C,
                   compare_value=0x98765432987654322345678923456789))
    assert ses[n - 1]["uet"]["payload_len"] == 0


def test_d4_medium_and_small(ses):
    m, s = ses[6]["uet"], ses[9]["uet"]
    assert m["pds"]["next_hdr_name"] == "REQUEST_MEDIUM" and s["pds"]["next_hdr_name"] == "REQUEST_SMALL"
    subset(m["ses"], dict(IDS, opcode=1, request_length=0x1234, hd=False, buffer_offset=0x9876543298765432,
                          initiator=0x87654321, memory_key=0xCCBBDDEEFF009988))
    subset(s["ses"], dict(IDS, opcode=2, request_length=0x1234, buffer_offset=0x9876543298765432))
    assert ses[16]["uet"]["ses"]["opcode_name"] == "NO_OP"


def test_d7_response_forms(ses):
    r, d, sm = ses[12]["uet"]["ses"], ses[13]["uet"]["ses"], ses[14]["uet"]["ses"]
    subset(r, dict(RSP, opcode=2, opcode_name="RESPONSE_W_DATA"))
    subset(d, dict(list=3, opcode=2, return_code=9, message_id=0x1234, job_id=0x654321,
                   read_request_message_id=0x1234, payload_length=0x321, modified_length=0x87654321,
                   message_offset=0x09ABCDEF))
    subset(sm, dict(list=3, opcode=2, return_code=9, payload_length=0x3456, job_id=0x036870,
                    original_request_psn=0x1234))
    for f in ses[12:15]:
        assert f["problems"] == []
        assert f["uet"]["pds"]["type_name"] == "RUDI_RESP"


def test_d3_tagged_send_and_rendezvous_quirk(ses):
    f = ses[15]
    subset(f["uet"]["ses"], dict(opcode=0x0A, opcode_name="RENDEZVOUS_TSEND", match_bits=0x1122334455667788))
    assert "memory_key" not in f["uet"]["ses"]
    # quirk: XDP2 sends no rendezvous extension (its header has only 8 bytes of it, H.1 #10)
    assert f["error"] == "ses.rendezvous: truncated: needs 24 bytes, 0 left"
