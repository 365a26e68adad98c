"""D.7: a SES response header (next_hdr 4, 5, 6) carries a response opcode. One that holds a request
opcode instead (D.1: 0x04-0x0F; 0-3 are response opcodes too, 2 being RESPONSE_W_DATA) gets one
readable problem in `uet decode`, whichever PDS type carries the response: a RUDI response, an ACK,
a NACK. (The Wireshark dissector shows the same problem: tests/wireshark/test_wireshark_tshark.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import struct

import pytest

from uet.cli import main
from uet.wire import build
from uet.wire.packet import decode_uet, response_opcode_problem

RUDI_RESP = {"type": 5, "pkt_id": 0x1234}
ACK = {"type": 7, "ack_psn_offset": 0, "cack_psn": 1000, "spdcid": 0x11, "dpdcid": 0x22}
NACK = {"type": 10, "nack_code": 0x01, "nack_psn": 1000, "spdcid": 0x11, "dpdcid": 0x22}
RSP = {"return_code": 1, "message_id": 7, "job_id": 0xABCD}


def frame(pds: dict, nh: int, opcode: int, payload: bytes = b"") -> bytes:
    ses = dict(RSP, opcode=opcode)
    if nh in (5, 6):
        ses["payload_length"] = len(payload)
    if nh == 6:
        del ses["message_id"]
    return build.udp_frame(build.uet_bytes(dict(pds, next_hdr=nh), ses, payload=payload))


# (what, frame, the problems uet decode must report)
CASES = [
    ("RUDI response, SEND", frame(RUDI_RESP, 4, 0x05),
     ["ses.rsp: opcode = 5 (0x5) is the request opcode SEND (D.1), not a response opcode (D.7)"]),
    ("RUDI response with data, FETCHING_ATOMIC", frame(RUDI_RESP, 5, 0x04, b"abcd"),
     ["ses.rsp_data: opcode = 4 (0x4) is the request opcode FETCHING_ATOMIC (D.1), "
      "not a response opcode (D.7)"]),
    ("ACK response, DEFERRABLE_RTR", frame(ACK, 4, 0x0C),
     ["ses.rsp: opcode = 12 (0xC) is the request opcode DEFERRABLE_RTR (D.1), not a response opcode (D.7)"]),
    ("ACK small response with data, MSG_ERROR", frame(ACK, 6, 0x0F, b"xy"),
     ["ses.rsp_data_small: opcode = 15 (0xF) is the request opcode MSG_ERROR (D.1), "
      "not a response opcode (D.7)"]),
    ("NACK response, TAGGED_SEND", frame(NACK, 4, 0x09),
     ["ses.rsp: opcode = 9 (0x9) is the request opcode TAGGED_SEND (D.1), not a response opcode (D.7)"]),
    # not request opcodes: a reserved value keeps the generic note, the rest are fine
    ("RUDI response, reserved 0x20", frame(RUDI_RESP, 4, 0x20),
     ["ses.rsp: opcode = 32 (0x20) is not a known rsp_opcode value"]),
    ("RUDI response, RESPONSE_W_DATA (2) without data", frame(RUDI_RESP, 4, 0x02), []),
    ("RUDI response with data, RESPONSE_W_DATA", frame(RUDI_RESP, 5, 0x02, b"abcd"), []),
    ("ACK response, RESPONSE", frame(ACK, 4, 0x01), []),
    ("ACK response, NO_RESPONSE", frame(ACK, 4, 0x03), []),
    ("RUDI response, vendor 0x35", frame(RUDI_RESP, 4, 0x35), []),
]


def write_pcap(path, frames: list[bytes]) -> str:
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, f in enumerate(frames):
            fh.write(struct.pack("<IIII", 1_700_000_000, i, len(f), len(f)) + f)
    return str(path)


@pytest.fixture(scope="module")
def decoded(tmp_path_factory) -> list[dict]:
    pcap = write_pcap(tmp_path_factory.mktemp("d7") / "d7.pcap", [f for _, f, _ in CASES])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["decode", "--json", pcap]) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_uet_decode_json_problems(decoded, i):
    _what, _frame, problems = CASES[i]
    obj = decoded[i]
    assert obj["problems"] == problems
    assert obj["uet"]["crc"]["ok"] is True  # the frames are otherwise sound: the SES header decodes
    assert "ses" in obj["uet"] and obj["uet"]["pds"]["next_hdr"] in (4, 5, 6)


def test_the_field_is_still_shown(decoded):
    """The opcode keeps its value; it has no response-opcode name, so none is given."""
    ses = decoded[0]["uet"]["ses"]
    assert ses["opcode"] == 5 and ses.get("opcode_name") is None
    assert decoded[0]["uet"]["pds"]["type_name"] == "RUDI_RESP"


def test_text_output_lists_the_problem(tmp_path, capsys):
    pcap = write_pcap(tmp_path / "one.pcap", [CASES[2][1]])
    assert main(["decode", pcap]) == 0
    assert "is the request opcode DEFERRABLE_RTR (D.1), not a response opcode (D.7)" in capsys.readouterr().out


def test_request_headers_are_not_checked():
    """The check belongs to response headers: SEND in a request is what requests carry."""
    pds = {"type": 2, "next_hdr": 3, "psn": 1, "spdcid": 1, "dpdcid": 2}
    ses = {"opcode": 5, "som": True, "eom": True, "request_length": 0}
    assert decode_uet(build.uet_bytes(pds, ses), trailer="none").problems == []


def test_one_problem_per_field():
    """The D.7 wording replaces the generic "not a known rsp_opcode value", not added to it."""
    d = decode_uet(build.uet_bytes(dict(RUDI_RESP, next_hdr=4), dict(RSP, opcode=6)), trailer="none")
    assert d.problems == ["ses.rsp: opcode = 6 (0x6) is the request opcode RENDEZVOUS_SEND (D.1), "
                          "not a response opcode (D.7)"]


@pytest.mark.parametrize("value", range(64))
def test_only_request_only_opcodes_are_named(value):
    msg = response_opcode_problem("ses.rsp", "opcode", value)
    assert (msg is not None) == (0x04 <= value <= 0x0F)
    assert response_opcode_problem("ses.rsp", "return_code", value) is None
