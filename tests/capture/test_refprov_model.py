"""The reference provider's receive rules as a model (uet.capture.refprov, facts A.1, A.3):
each rule caught on a frame built to break it, and a clean exchange passing them all."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from uet.capture.frame import LINKTYPE_ETHERNET
from uet.capture.refprov import check_frames
from uet.wire.build import udp_frame, uet_bytes

A, B = "10.0.0.1", "10.0.0.2"
EV = 50123


def request(psn: int = 100, *, next_hdr: int = 3, payload: bytes = b"x" * 64, ses: dict | None = None,
            **pds) -> bytes:
    fields = {"type": 2, "next_hdr": next_hdr, "syn": True, "psn": psn, "spdcid": 7, **pds}
    if ses is None:
        ses = ({"opcode": 5, "som": True, "eom": True, "message_id": 1,
                "request_length": len(payload)} if next_hdr == 3 else
               {"opcode": 5, "som": True, "eom": True, "request_length": len(payload)})
    return uet_bytes(fields, ses, payload=payload)


def ack(psn: int = 100, *, dpdcid: int = 7) -> bytes:
    return uet_bytes({"type": 7, "cack_psn": psn, "ack_psn_offset": 0, "spdcid": 9,
                      "dpdcid": dpdcid})


def frames(*items: bytes) -> list[tuple[int, bytes, int]]:
    return [(LINKTYPE_ETHERNET, f, n) for n, f in enumerate(items, 1)]


def clean_pair() -> list[bytes]:
    return [udp_frame(request(), src=A, dst=B, sport=EV),
            udp_frame(ack(), src=B, dst=A, sport=EV, dscp=46)]


def rules(report) -> dict[str, int]:
    return dict(report.by_rule)


def test_a_clean_request_and_its_answer_pass_every_rule():
    rep = check_frames(frames(*clean_pair()))
    assert rep.ok and rep.frames == 2 and rep.requests == 1 and rep.answers == 1
    assert rep.paired == 1 and rep.unpaired == 0
    assert "every frame passes" in rep.text()


def test_rp1_a1_an_answer_to_the_entropy_port_is_dropped():
    req, _ = clean_pair()
    to_ev = udp_frame(ack(), src=B, dst=A, sport=4793, dport=EV, dscp=46)
    rep = check_frames(frames(req, to_ev))
    assert rules(rep) == {"RP1": 1, "RP5": 1}
    v = {v.rule: v for v in rep.violations}
    assert v["RP1"].frame == 2 and "port 50123" in v["RP1"].text and v["RP1"].facts.startswith("A.1")
    assert "4793" in v["RP5"].text and "50123" in v["RP5"].text


def test_rp5_a1_an_answer_from_another_ev_than_its_request():
    req = udp_frame(request(), src=A, dst=B, sport=EV)
    retx = udp_frame(request(retx=True), src=A, dst=B, sport=EV + 1)
    ok_second = udp_frame(ack(), src=B, dst=A, sport=EV + 1, dscp=46)
    wrong = udp_frame(ack(), src=B, dst=A, sport=EV + 2, dscp=46)
    assert check_frames(frames(req, retx, ok_second)).ok  # either EV of a retransmitted PSN
    rep = check_frames(frames(req, retx, wrong))
    assert rules(rep) == {"RP5": 1}
    assert "50123/50124" in rep.violations[0].text


def test_rp5_an_answer_whose_request_is_not_in_the_capture_is_unpaired_not_wrong():
    rep = check_frames(frames(udp_frame(ack(psn=5), src=B, dst=A, sport=1234, dscp=46)))
    assert rep.ok and rep.unpaired == 1 and rep.paired == 0


def _set_ipv4_flags(frame: bytes, flags: int, offset: int = 0) -> bytes:
    b = bytearray(frame)
    word = flags << 13 | offset
    b[14 + 6:14 + 8] = word.to_bytes(2, "big")  # IPv4 checksum is not the model's business
    return bytes(b)


@pytest.mark.parametrize("flags,offset,text", [(0, 0, "DF is not set"),
                                              (1, 0, "fragment"), (0, 185, "fragment")])
def test_rp2_a1_df_on_every_datagram_and_no_fragments(flags, offset, text):
    req, answer = clean_pair()
    rep = check_frames(frames(_set_ipv4_flags(req, flags, offset), answer))
    assert rep.by_rule["RP2"] == 1 and text in rep.violations[0].text


@pytest.mark.parametrize("next_hdr", [1, 2])
def test_rp3_a1_small_and_medium_request_headers_are_dropped(next_hdr):
    req = udp_frame(request(next_hdr=next_hdr), src=A, dst=B, sport=EV)
    rep = check_frames(frames(req))
    assert rules(rep) == {"RP3": 1}
    assert f"next_hdr {next_hdr}" in rep.violations[0].text


def test_rp4_a3_a_wrong_trailer_or_a_nonzero_udp_checksum():
    req, _ = clean_pair()
    bad_crc = req[:-1] + bytes([req[-1] ^ 1])
    assert rules(check_frames(frames(bad_crc))) == {"RP4": 1}
    b = bytearray(req)
    b[14 + 20 + 6:14 + 20 + 8] = b"\x12\x34"
    rep = check_frames(frames(bytes(b)))
    assert rules(rep) == {"RP4": 1} and "0x1234" in rep.violations[0].text


def test_rp6_payload_above_the_fabrics_size():
    req = udp_frame(request(payload=b"p" * 2048), src=A, dst=B, sport=EV)
    assert check_frames(frames(req)).ok
    rep = check_frames(frames(req), max_payload=1024)
    assert rules(rep) == {"RP6": 1} and "2048" in rep.violations[0].text


def test_the_report_keeps_the_first_violations_and_counts_the_rest():
    many = [udp_frame(request(psn=i, next_hdr=1), src=A, dst=B, sport=EV) for i in range(80)]
    rep = check_frames(frames(*many))
    assert rep.by_rule["RP3"] == 80 and len(rep.violations) == 50
    assert rep.text().rstrip().endswith("and 30 more")
    assert rep.as_json()["violations_by_rule"] == {"RP3": 80}


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_model(raw):
    rep = check_frames([(LINKTYPE_ETHERNET, raw, 1), (101, raw, 2)])
    assert rep.frames >= 0


@pytest.mark.parametrize("extra", [[], ["--mode", "rudi", "--op", "read", "--bytes", "64k"]],
                         ids=["rud", "rudi"])
def test_a_uet_sim_capture_passes_the_reference_receive_rules(tmp_path, capsys, extra):
    """A.1, H.1 #19: what uet sim puts on its links obeys the port rule and the EV rule; with
    --ses-header standard only standard requests, and the payload what --mtu says."""
    import json

    from uet.cli import main

    pcap = str(tmp_path / "run.pcap")
    assert main(["sim", "--bytes", "256k", "--paths", "4", "--loss", "0.02", "--seed", "11",
                 "--ses-header", "standard", "--mtu", "2048", "--pcap", pcap, "--json",
                 *extra]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["analyze", pcap, "--refprov", "--max-payload", "2048", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["refprov"]
    assert rep["ok"], rep["violations"]
    assert rep["answers_paired"] > 0 and rep["frames"] > 0
