"""The CSIG congestion-signalling tag (facts E.4, layout uet.cms.csig CMS-C1) wherever frames are
decoded: the schema's ``csig`` header against uet.cms.csig, ``uet decode`` through the tag (alone,
with VLAN tags, r set, cut short, on another EtherType), the Scapy ``CSIG`` layer against the codec,
and tshark with the generated Lua dissector against ``uet decode --json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.utils import PcapWriter

from uet.cli import main
from uet.cms import csig
from uet.scapy import CSIG, UET, UET_PDS_RUD_ROD_REQ, UET_SES_STD, bind_csig_ethertype
from uet.wire import build, codec
from uet.wire.enums import CSIG_TYPE

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wireshark"))
from wshelpers import NEEDS_TSHARK, compare, run_tshark, stderr_problems  # noqa: E402

from uet.wireshark import generate_lua  # noqa: E402

C = codec("csig")
PDS = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": 70000, "psn_offset": 0, "spdcid": 7}
SES = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 100}
PLAIN = build.udp_frame(build.uet_bytes(PDS, SES, payload=bytes(range(100))), sport=50000)
PLAIN6 = build.udp_frame(build.uet_bytes(PDS, SES, payload=b"v6"), src="fd00::1", dst="fd00::2")
OTHER_ETHERTYPE = 0x88B5  # IEEE 802 local experimental EtherType 1
MAC = "02:00:00:00:00:02"  # Scapy looks up (and warns about) a missing destination MAC


def tagged(frame: bytes, *, vlan_before: bool = False, vlan_after: bool = False,
           tpid: int | None = None, **tag) -> bytes:
    """``frame`` (Ethernet, from uet.wire.build) with a CSIG tag (and VLAN tags) after the MACs."""
    eth = Ether(frame)
    inner = eth.payload
    if vlan_after:
        inner = Dot1Q(vlan=7) / inner
    layers = CSIG(**tag) / inner
    if vlan_before:
        layers = Dot1Q(vlan=5) / layers
    top = Ether(dst=eth.dst, src=eth.src) / layers
    if tpid is not None:
        top[CSIG].underlayer.type = tpid
    return bytes(top)


def write(path: Path, frames: list[bytes]) -> str:
    with PcapWriter(str(path), linktype=1, sync=True) as w:
        for f in frames:
            w.write(Ether(f))
    return str(path)


def decode(capsys, path: str, *args: str) -> list[dict]:
    assert main(["decode", "--json", path, *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def tag_json(t: int, s: int, lm: int = 0, d: int = 0, r: int = 0, ethertype: int = 0x0800) -> dict:
    return {"t": t, "t_name": CSIG_TYPE.symbol(t), "s": s, "lm": lm, "d": bool(d), "r": r,
            "ethertype": ethertype}


# --- the schema against uet.cms.csig (CMS-C1) -----------------------------------------------------

@given(t=st.integers(0, 3), s=st.integers(0, 31), lm=st.integers(0, 127), d=st.booleans(),
       r=st.integers(0, 1), ethertype=st.integers(0, 0xFFFF))
def test_schema_codec_is_the_c1_layout(t, s, lm, d, r, ethertype):
    fields = {"t": t, "s": s, "lm": lm, "d": d, "r": r, "ethertype": ethertype}
    wire = C.encode(fields)
    assert len(wire) == csig.TAG_LEN
    assert wire[:2] == csig.pack(t, s, lm, int(d), r).to_bytes(2, "big")
    decoded, size = C.decode(wire)
    assert (decoded, size) == (fields, csig.TAG_LEN)
    assert csig.unpack(int.from_bytes(wire[:2], "big")) == csig.Tag(t, s, lm, int(d), r)


def test_type_names_are_csig_c1s():
    assert {v: n.lower() for v, n in CSIG_TYPE.table.items()} == csig.TYPE_NAMES


# --- uet decode ---------------------------------------------------------------------------------

def test_tagged_frame_decodes_like_the_untagged_one(tmp_path, capsys):
    frames = [PLAIN, tagged(PLAIN, t=csig.ABW_C, s=17, lm=99, d=1), PLAIN6,
              tagged(PLAIN6, t=csig.DELAY, s=4)]
    plain, tag4, plain6, tag6 = decode(capsys, write(tmp_path / "t.pcap", frames))
    assert tag4["csig"] == tag_json(csig.ABW_C, 17, 99, 1)
    assert tag6["csig"] == tag_json(csig.DELAY, 4, ethertype=0x86DD)
    assert list(tag4) == ["frame", "csig", "ip", "udp", "uet", "problems"]
    for bare, tag in ((plain, tag4), (plain6, tag6)):
        assert tag["problems"] == [] and tag["uet"]["crc"]["ok"] is True
        assert {k: v for k, v in tag.items() if k not in ("frame", "csig")} == \
            {k: v for k, v in bare.items() if k != "frame"}


def test_vlan_tags_before_and_after_the_csig_tag(tmp_path, capsys):
    frames = [tagged(PLAIN, vlan_before=True, t=csig.NQD, s=30),
              tagged(PLAIN, vlan_after=True, t=csig.ABW, s=31, ethertype=0x8100)]
    before, after = decode(capsys, write(tmp_path / "t.pcap", frames))
    assert before["csig"] == tag_json(csig.NQD, 30)
    assert after["csig"] == tag_json(csig.ABW, 31, ethertype=0x8100)
    for obj in (before, after):
        assert obj["problems"] == [] and obj["uet"]["pds"]["start_psn"] == 70000


def test_reserved_bit_is_a_problem_and_decoding_goes_on(tmp_path, capsys):
    (obj,) = decode(capsys, write(tmp_path / "t.pcap", [tagged(PLAIN, t=csig.ABW, s=1, r=1)]))
    assert obj["csig"]["r"] == 1
    assert obj["problems"] == ["csig: reserved bit r is set (E.4): a receiver ignores this tag"]
    assert "error" not in obj and obj["uet"]["crc"]["ok"] is True


def test_truncated_tag_stops_with_its_reason(tmp_path, capsys):
    whole = tagged(PLAIN, t=csig.DELAY, s=9)
    short, none = decode(capsys, write(tmp_path / "t.pcap", [whole[:15], whole[:14]]))
    assert short["error"] == "csig: truncated: needs 4 bytes, 1 left"
    assert short["problems"] == [short["error"]]
    assert short["csig"] == {"t": csig.DELAY, "t_name": "DELAY", "s": 9}  # the fields that fit whole
    assert "ip" not in short
    assert none["error"] == "csig: truncated: needs 4 bytes, 0 left" and "csig" not in none


def test_csig_ethertype_option(tmp_path, capsys):
    path = write(tmp_path / "t.pcap", [tagged(PLAIN, tpid=OTHER_ETHERTYPE, t=csig.NQD, s=3),
                                       tagged(PLAIN, t=csig.NQD, s=3)])
    other, default = decode(capsys, path, "--csig-ethertype", f"0x{OTHER_ETHERTYPE:04x}")
    assert other["csig"] == tag_json(csig.NQD, 3) and other["uet"]["crc"]["ok"] is True
    assert "csig" not in default
    assert default["error"] == f"eth: ethertype 0x{csig.CSIG_ETHERTYPE:04x} is not IP"
    # decimal works too, and the default is uet.cms.csig's
    assert decode(capsys, path, "--csig-ethertype", str(OTHER_ETHERTYPE))[0]["csig"]["s"] == 3
    assert decode(capsys, path)[1]["csig"]["s"] == 3


@pytest.mark.parametrize("bad", ["0x0800", "0x86dd", "0x8100", "0x05ff", "0x10000", "-1", "zz", ""])
def test_bad_csig_ethertype_exits_2_with_one_line(capsys, bad):
    assert main(["decode", "--csig-ethertype", bad, "x.pcap"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("uet decode: error: argument --csig-ethertype: ")
    assert err[1:] == ["try 'uet decode --help'"]


def test_tree_shows_the_tag(tmp_path, capsys):
    assert main(["decode", write(tmp_path / "t.pcap", [tagged(PLAIN, t=csig.ABW_C, s=5, r=1)])]) == 0
    out = capsys.readouterr().out
    assert "  CSIG tag (after its TPID) [facts E.4]\n      t: 1 (ABW/C)\n      s: 5\n" in out
    assert out.index("CSIG tag") < out.index("IPv4")
    assert "  ! csig: reserved bit r is set" in out


# --- Scapy --------------------------------------------------------------------------------------

def test_scapy_layer_builds_the_codec_bytes_and_dissects_them():
    fields = {"t": csig.DELAY, "s": 21, "lm": 77, "d": True, "r": 0, "ethertype": 0x86DD}
    wire = C.encode(fields)
    assert bytes(CSIG(**fields)) == wire
    assert CSIG(wire).schema_values() == fields
    assert CSIG(t="ABW/C").t == csig.ABW_C  # the E.4 names work as values


def test_scapy_frame_through_the_tag():
    pkt = (Ether(dst=MAC) / CSIG(t="NQD", s=12) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=49152, chksum=0)
           / UET_PDS_RUD_ROD_REQ(psn=7, spdcid=1) / UET_SES_STD(opcode="WRITE"))
    raw = bytes(pkt)
    assert raw[12:14] == csig.CSIG_ETHERTYPE.to_bytes(2, "big")  # filled in by the binding
    assert raw[14:16] == csig.pack(csig.NQD, 12).to_bytes(2, "big") and raw[16:18] == b"\x08\x00"
    again = Ether(raw)
    assert again[CSIG].s == 12 and again[UET].crc_ok() is True and again[UET_SES_STD].opcode == 1
    six = Ether(bytes(Ether(dst=MAC) / Dot1Q(vlan=3) / CSIG() / Dot1Q(vlan=4) / IPv6() / UDP(sport=1)))
    assert six[CSIG].ethertype == 0x8100 and six.haslayer(IPv6)


def test_scapy_csig_ethertype_moves():
    raw = bytes(Ether(dst=MAC, type=OTHER_ETHERTYPE) / CSIG(s=3) / IP())
    default = tagged(PLAIN, s=3)
    try:
        bind_csig_ethertype(OTHER_ETHERTYPE)
        assert Ether(raw)[CSIG].s == 3
        assert bytes(Ether(dst=MAC) / CSIG() / IP())[12:14] == OTHER_ETHERTYPE.to_bytes(2, "big")
        assert not Ether(default).haslayer(CSIG)
    finally:
        bind_csig_ethertype()
    assert not Ether(raw).haslayer(CSIG) and Ether(default).haslayer(CSIG)


# --- tshark with the generated dissector --------------------------------------------------------

@pytest.mark.tshark
@NEEDS_TSHARK
def test_tshark_shows_the_tag_and_the_uet_fields(tmp_path, capsys):
    lua = tmp_path / "uet.lua"
    lua.write_text(generate_lua(), encoding="utf-8")
    frames = [tagged(PLAIN, t=csig.ABW_C, s=17, lm=99, d=1), tagged(PLAIN6, vlan_before=True, t=3, s=2),
              tagged(PLAIN, vlan_after=True, t=csig.DELAY, s=1, r=1, ethertype=0x8100)]
    path = write(tmp_path / "t.pcap", frames)
    objs = decode(capsys, path)
    # the trailer verified (uet.check_crc, off by default) so that crc.ok compares with uet decode's
    run = run_tshark(path, [lua], prefs=("uet.check_crc:TRUE",), own=("uet", "uetroce", "uetcsig"))
    assert run.returncode == 0 and stderr_problems(run.stderr) == [], run.stderr
    assert "Lua Error" not in run.pdml
    assert len(run.packets) == len(objs)
    for obj, pkt in zip(objs, run.packets):
        assert {"uetcsig", "ip" if obj["ip"]["version"] == 4 else "ipv6", "uet"} <= set(pkt.protos)
        assert compare(obj, pkt) == [], obj["frame"]
    first = run.packets[0].fields
    assert first["uetcsig.t"][0]["showname"].endswith("t: ABW/C (1)")
    assert first["uetcsig.lm"][0]["show"] == "99" and first["uet.pds.psn"][0]["show"] == "70000"
    # the EtherType is a preference
    other = write(tmp_path / "o.pcap", [tagged(PLAIN, tpid=OTHER_ETHERTYPE, s=6)])
    run = run_tshark(other, [lua], prefs=(f"uetcsig.ethertype:{OTHER_ETHERTYPE}",),
                     own=("uet", "uetroce", "uetcsig"))
    (pkt,) = run.packets
    assert pkt.fields["uetcsig.s"][0]["show"] == "6" and "uet" in pkt.protos
