"""`uet decode` as docs/design-notes.md's contract describes it: link types, JSON Lines, trailer modes,
partial layers, problems and exit status."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, RawPcapWriter

from uet.capture.frame import DecodeConfig, decode_frame
from uet.cli import main
from uet.wire import build

PDS_SYN = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": 70000, "psn_offset": 0, "spdcid": 7}
SES_SEND = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 100}
UET = build.uet_bytes(PDS_SYN, SES_SEND, payload=bytes(range(100)))
FRAME = build.udp_frame(UET, sport=50000)  # Ethernet, with the CRC-32C trailer
IP_PACKET = FRAME[14:]


def write_pcap(path, frames, linktype=1, ng=False):
    if ng:
        w = PcapNgWriter(str(path))
        for f in frames:
            w.write(Ether(f))
    elif linktype == 0:  # Scapy's writer takes linktype 0 for "unset"; write the header by hand
        with open(path, "wb") as fh:
            fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 0))
            for f in frames:
                fh.write(struct.pack("<IIII", 1, 0, len(f), len(f)) + f)
        return str(path)
    else:
        w = RawPcapWriter(str(path), linktype=linktype)
        for f in frames:
            w.write(f)
    w.close()
    return str(path)


def run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def lines(out):
    return [json.loads(x) for x in out.splitlines()]


LINK_FORMS = {
    "ethernet": (1, FRAME),
    "vlan": (1, FRAME[:12] + b"\x81\x00\x00\x05" + FRAME[12:]),
    "raw": (101, IP_PACKET),
    "ipv4": (228, IP_PACKET),
    "sll": (113, struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", 0x0800) + IP_PACKET),
    "sll2": (276, struct.pack("!HHIHBB8s", 0x0800, 0, 1, 1, 0, 6, b"\x02" * 8) + IP_PACKET),
    "null_le": (0, struct.pack("<I", 2) + IP_PACKET),
    "loop_be": (108, struct.pack("!I", 2) + IP_PACKET),
}


@pytest.mark.parametrize("form", sorted(LINK_FORMS))
def test_every_link_type_gives_the_same_decode(tmp_path, capsys, form):
    linktype, frame = LINK_FORMS[form]
    path = write_pcap(tmp_path / "f.pcap", [frame], linktype)
    rc, out, err = run(["decode", "--json", path], capsys)
    assert rc == 0
    (obj,) = lines(out)
    assert obj["problems"] == []
    assert obj["ip"] == {"version": 4, "src": "10.0.0.1", "dst": "10.0.0.2", "dscp": 0, "ecn": 2, "ttl": 64}
    assert obj["udp"] == {"sport": 50000, "dport": 4793, "length": 8 + len(UET) + 4, "checksum": 0}
    assert obj["uet"]["pds"]["start_psn"] == 70000
    assert obj["uet"]["ses"]["opcode_name"] == "SEND"
    assert obj["uet"]["payload_len"] == 100
    assert obj["uet"]["crc"]["ok"] is True
    assert list(obj) == ["frame", "ip", "udp", "uet", "problems"]


def test_pcapng_and_stdin(tmp_path):
    path = write_pcap(tmp_path / "f.pcapng", [FRAME, FRAME], ng=True)
    with open(path, "rb") as fh:
        out = subprocess.run([sys.executable, "-m", "uet", "decode", "--json", "-"], stdin=fh,
                             capture_output=True, check=True).stdout
    objs = [json.loads(x) for x in out.decode().splitlines()]
    assert [o["frame"] for o in objs] == [1, 2]
    assert all(o["uet"]["crc"]["ok"] for o in objs)


def test_ipv6_and_native_ip_mode(tmp_path, capsys):
    v6 = build.udp_frame(UET, src="fd00::1", dst="fd00::2", sport=50001)
    native = build.native_ip_frame(UET, entropy=0xBEEF)
    rc, out, _ = run(["decode", "--json", write_pcap(tmp_path / "f.pcap", [v6, native])], capsys)
    a, b = lines(out)
    assert a["ip"]["version"] == 6 and a["uet"]["crc"]["ok"] is True and a["problems"] == []
    assert "udp" not in b and b["uet"]["entropy"] == {"entropy": 0xBEEF}
    assert b["uet"]["crc"]["ok"] is True and b["uet"]["pds"]["type_name"] == "RUD_REQ"


def test_a3_trailer_modes(tmp_path, capsys):
    bad = bytearray(FRAME)
    bad[-1] ^= 1
    path = write_pcap(tmp_path / "f.pcap", [FRAME, bytes(bad), build.udp_frame(UET, trailer=False)])
    _, out, _ = run(["decode", "--json", path], capsys)
    good, wrong, none = lines(out)
    assert good["uet"]["crc"]["ok"] is True
    # auto: a trailer that does not verify is taken to be payload
    assert wrong["uet"]["crc"] == {"value": None, "ok": None} and wrong["uet"]["payload_len"] == 104
    assert none["uet"]["crc"] == {"value": None, "ok": None} and none["uet"]["payload_len"] == 100
    _, out, _ = run(["decode", "--json", "--trailer", "crc", path], capsys)
    good, wrong, none = lines(out)
    carried = int.from_bytes(bad[-4:], "big")
    assert wrong["uet"]["crc"] == {"value": carried, "ok": False}
    assert wrong["uet"]["payload_len"] == 100
    assert wrong["problems"] == [f"crc: CRC-32C trailer mismatch: carries 0x{carried:08x}, "
                                 f"computed 0x{carried ^ 1:08x}"]
    _, out, _ = run(["decode", "--json", "--trailer", "none", path], capsys)
    assert all(o["uet"]["crc"]["value"] is None for o in lines(out))
    assert lines(out)[0]["uet"]["payload_len"] == 104


def test_partial_layers_keep_what_decoded(tmp_path, capsys):
    short = build.udp_frame(UET[:12 + 20], trailer=False)  # SES standard header cut at 20 of 44 bytes
    _, out, _ = run(["decode", "--json", write_pcap(tmp_path / "f.pcap", [short])], capsys)
    (obj,) = lines(out)
    assert obj["uet"]["pds"]["psn"] == 70000
    assert obj["uet"]["ses"]["opcode_name"] == "SEND" and "request_length" not in obj["uet"]["ses"]
    assert obj["error"] == "ses.std: truncated: needs 44 bytes, 20 left"
    assert obj["error"] in obj["problems"]


def test_unknown_type_reserved_next_header_and_tss(tmp_path, capsys):
    frames = [build.udp_frame(bytes([0xF8, 0]) + bytes(10), trailer=False),
              build.udp_frame(bytes([0x13, 0x80]) + bytes(10), trailer=False),  # RUD_REQ, next_hdr 7
              build.udp_frame(build.uet_bytes({}, tss={"type": 1, "sp": True, "sdi": 5, "ssi": 9,
                                                        "tsc": 3}) + bytes(40), trailer=False)]
    _, out, _ = run(["decode", "--json", write_pcap(tmp_path / "f.pcap", frames)], capsys)
    unk, rsv, tss = lines(out)
    assert unk["uet"]["pds"] == {"type": 31, "type_name": None}
    assert unk["error"] == "pds: type 31 is not assigned (B.1)"
    assert rsv["uet"]["pds"]["next_hdr"] == 7 and rsv["uet"]["pds"]["next_hdr_name"] is None
    assert "pds: next_hdr 7 is reserved (B.2); the rest is not decoded" in rsv["problems"]
    assert "pds" not in tss["uet"]
    assert tss["uet"]["tss"] == {"type": 1, "type_name": "TSS", "sp": True, "an": 0, "sdi": 5, "ssi": 9,
                                 "epoch": 0, "tsc": 3}
    assert tss["uet"]["payload_len"] == 40 - 16  # the GCM tag is the trailer


def test_non_uet_traffic_and_non_ip(tmp_path, capsys):
    other = build.udp_frame(b"hello", dport=53, trailer=False)
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    _, out, _ = run(["decode", "--json", write_pcap(tmp_path / "f.pcap", [other, arp, b"\x01"])], capsys)
    a, b, c = lines(out)
    assert "uet" not in a and a["problems"] == [] and "error" not in a
    assert b["error"] == "eth: ethertype 0x0806 is not IP"
    assert c["error"].startswith("eth: truncated")


def test_port_option(tmp_path, capsys):
    f = build.udp_frame(UET, dport=49150)
    path = write_pcap(tmp_path / "f.pcap", [f])
    _, out, _ = run(["decode", "--json", path], capsys)
    assert "uet" not in lines(out)[0]
    _, out, _ = run(["decode", "--json", "--port", "4793", "--port", "49150", path], capsys)
    assert lines(out)[0]["uet"]["crc"]["ok"] is True


def test_exit_status(tmp_path, capsys):
    assert run(["decode", str(tmp_path / "missing.pcap")], capsys)[0] == 2
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture file")
    rc, out, err = run(["decode", "--json", str(junk)], capsys)
    assert rc == 2 and out == "" and "not a readable pcap" in err
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    assert run(["decode", str(empty)], capsys)[0] == 2
    cut = tmp_path / "cut.pcap"
    data = open(write_pcap(tmp_path / "whole.pcap", [FRAME, FRAME]), "rb").read()
    cut.write_bytes(data[:-10])  # second record cut short: decoded as far as it goes
    rc, out, _ = run(["decode", "--json", str(cut)], capsys)
    first, second = lines(out)
    assert rc == 0 and first["problems"] == []
    assert second["problems"][0] == f"ip: {len(IP_PACKET) - 10} bytes captured of {len(IP_PACKET)}"
    assert second["uet"]["pds"]["psn"] == 70000


def test_tree_output(tmp_path, capsys):
    rc, out, _ = run(["decode", write_pcap(tmp_path / "f.pcap", [FRAME])], capsys)
    assert rc == 0
    assert "UET RUD/ROD request [facts B.5]" in out
    assert "      type: 2 (RUD_REQ)" in out
    assert "      [start_psn: 70000]" in out
    assert "CRC-32C trailer: 0x" in out and "[good]" in out


@given(raw=st.binary(max_size=120), linktype=st.sampled_from([0, 1, 101, 108, 113, 228, 229, 276, 999]))
def test_arbitrary_frames_never_raise(raw, linktype):
    obj = decode_frame(linktype, raw, 1, DecodeConfig(trailer="crc")).obj
    json.dumps(obj)
    assert isinstance(obj["problems"], list)


@given(tail=st.binary(max_size=90), proto=st.sampled_from([b"\x11", b"\xfd"]))
def test_arbitrary_uet_payloads_never_raise(tail, proto):
    ip = bytearray(IP_PACKET[:28])
    ip[9:10] = proto
    pkt = bytes(ip) + tail
    pkt = pkt[:2] + len(pkt).to_bytes(2, "big") + pkt[4:]
    obj = decode_frame(101, pkt, 1).obj
    json.dumps(obj)
