"""``ses_header`` (facts A.1: the reference provider parses standard requests, next_hdr 3, and
responses 4 and 5 only; small and medium requests, D.4, and the small response with data, D.7
next_hdr 6, it drops): "standard" sends none of them; "auto" keeps the small forms, and a target
answers a peer in the header family the peer uses (SES-P3 of uet/ses/target.py).

Host level: ``uet sim`` runs with a capture, every frame decoded; SES level: the SES endpoint's
packets and responses."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import pytest

from uet.capture.frame import DecodeConfig, decode_frame
from uet.capture.pcap import read_frames
from uet.ses import SesConfig, SesEndpoint, SesError
from uet.ses.common import NH_MEDIUM, NH_RSP_DATA, NH_RSP_DATA_SMALL, NH_SMALL, NH_STD
from uet.sim.command import main as sim_main

REQUESTS = ("RUD_REQ", "ROD_REQ", "RUD_CC_REQ", "ROD_CC_REQ")


def _frames(tmp_path, *args: str) -> tuple[dict, Counter]:
    """(the run's summary, Counter of (PDS type, next_hdr) over every frame)."""
    pcap = tmp_path / "run.pcap"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert sim_main(["--json", "--seed", "5", "--pcap", str(pcap), *args]) == 0
    objs = [decode_frame(lt, raw, i + 1, DecodeConfig()).obj
            for i, (lt, raw, _) in enumerate(read_frames(str(pcap)))]
    return json.loads(out.getvalue()), Counter((o["uet"]["pds"].get("type_name"),
                                                o["uet"]["pds"].get("next_hdr")) for o in objs)


def _requests(c: Counter) -> Counter:
    out: Counter = Counter()
    for (t, nh), n in c.items():
        if t in REQUESTS:
            out[nh] += n
    return out


def _response_headers(c: Counter) -> set[int]:
    return {nh for (t, nh), _ in c.items() if t not in REQUESTS and nh}


@pytest.mark.parametrize("op, args", [
    ("send", ("--bytes", "100")),                            # one packet: small header in auto
    ("send", ("--bytes", "40k", "--mtu", "4096")),           # ten packets
    ("tsend", ("--bytes", "100")),                           # medium in auto
    ("write", ("--bytes", "100")),
    ("atomic", ("--bytes", "32", "--messages", "4")),        # 8-byte old values: next_hdr 6 in auto
    ("read", ("--bytes", "16")),
])
def test_a1_standard_sends_next_hdr_3_only_and_never_6(tmp_path, op, args):
    summary, c = _frames(tmp_path, "--op", op, *args, "--ses-header", "standard")
    assert summary["ok"] is True
    req = _requests(c)
    assert set(req) == {NH_STD} and sum(req.values()) >= 1
    assert NH_RSP_DATA_SMALL not in _response_headers(c)


def test_a1_standard_multi_packet_message_counts(tmp_path):
    summary, c = _frames(tmp_path, "--bytes", "40k", "--mtu", "4096", "--ses-header", "standard")
    assert summary["ok"] and summary["data_packets"] == 10
    assert _requests(c) == Counter({NH_STD: 10})


def test_auto_keeps_the_small_header_and_the_small_response(tmp_path):
    _, c = _frames(tmp_path, "--bytes", "100")
    assert _requests(c) == Counter({NH_SMALL: 1})
    _, c = _frames(tmp_path, "--op", "atomic", "--bytes", "32", "--messages", "4")
    assert set(_requests(c)) == {NH_MEDIUM}
    assert NH_RSP_DATA_SMALL in _response_headers(c)  # the peer uses the small forms (SES-P3)


def test_p3_auto_target_answers_a_standard_peer_without_next_hdr_6(tmp_path):
    """A READ always goes in a standard header: a peer that sent nothing else gets its 16 bytes
    in a response with data (next_hdr 5), not the small form."""
    _, c = _frames(tmp_path, "--op", "read", "--bytes", "16")
    assert set(_requests(c)) == {NH_STD}
    assert NH_RSP_DATA in _response_headers(c) and NH_RSP_DATA_SMALL not in _response_headers(c)


# --- SES level -------------------------------------------------------------------------------

def _read_response(target: SesEndpoint, initiator: SesEndpoint) -> int:
    """The next_hdr of the target's answer to an 8-byte READ from ``initiator``."""
    initiator.read("t", 7, 0, 8)
    (p,) = initiator.packets_to_send()
    rsp = target.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="i", request_ref=11)
    return rsp.next_hdr


def _target() -> SesEndpoint:
    t = SesEndpoint(SesConfig(auto_receive=True))
    t.register(7, bytearray(64))
    return t


def test_p3_the_peer_family_is_recorded_per_peer():
    t, i = _target(), SesEndpoint(SesConfig())
    assert _read_response(t, i) == NH_RSP_DATA          # standard requests only so far
    i.send("t", b"hi")                                   # a small request (D.4)
    (p,) = i.packets_to_send()
    assert p.next_hdr == NH_SMALL
    t.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="i", request_ref=12)
    assert _read_response(t, i) == NH_RSP_DATA_SMALL     # the peer uses the small forms
    other = SesEndpoint(SesConfig())
    other.read("t", 7, 0, 8)
    (p,) = other.packets_to_send()
    rsp = t.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="j", request_ref=13)
    assert rsp.next_hdr == NH_RSP_DATA                   # another peer: its own family


def test_p3_a_standard_target_never_sends_6():
    t = SesEndpoint(SesConfig(auto_receive=True, ses_header="standard"))
    t.register(7, bytearray(64))
    i = SesEndpoint(SesConfig())
    i.send("t", b"hi")
    (p,) = i.packets_to_send()
    t.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="i", request_ref=12)
    assert _read_response(t, i) == NH_RSP_DATA


def test_standard_initiator_cuts_standard_headers_only():
    a = SesEndpoint(SesConfig(ses_header="standard"))
    a.send("b", b"hello")
    a.tsend("b", b"t", 0xABC)
    a.write("b", 9, 16, b"w" * 100)
    a.atomic("b", 9, 8, 2, 6, 5)
    assert [p.next_hdr for p in a.packets_to_send()] == [NH_STD] * 4


def test_ses_header_is_checked_and_keyword_only():
    with pytest.raises(SesError, match="ses_header"):
        SesConfig(ses_header="small")
    assert SesConfig().ses_header == "auto"
    with pytest.raises(TypeError):
        SesConfig(4096, 16, True, 0, 0, 0, 0, False, False, 64, 1 << 24, 1 << 30, 256, 64,
                  2 << 30, 1 << 30, 5.0, 1024, 0, "standard")
