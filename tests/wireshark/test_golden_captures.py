"""The golden captures in captures/: up to date, clean (except the bad ones), complete, and - as the
.json files come from the decoder under test - checked against bytes written by hand from the
facts tables, with CRCs computed here independently of uet.native."""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import CAPTURES, load_make_captures, uet_decode_json  # noqa: E402

mc = load_make_captures()


@pytest.fixture(scope="module")
def fresh() -> dict[str, bytes]:
    return mc.build_all()


def test_committed_captures_equal_a_fresh_generation(fresh):
    on_disk = sorted(p.name for p in CAPTURES.iterdir() if p.is_file())
    assert on_disk == sorted(fresh), "captures/ has other files than tools/make_captures.py makes"
    stale = [name for name, data in fresh.items() if (CAPTURES / name).read_bytes() != data]
    assert not stale, f"stale golden files (run python tools/make_captures.py): {stale}"


def test_generation_is_deterministic(fresh):
    again = mc.build_all()
    assert again == fresh


def test_check_mode_passes():
    assert mc.main(["--check"]) == 0


def test_check_mode_notices_a_difference(tmp_path):
    assert mc.main(["--out", str(tmp_path)]) == 0
    assert mc.main(["--check", "--out", str(tmp_path)]) == 0
    victim = tmp_path / "roce.json"
    victim.write_bytes(victim.read_bytes() + b"\n")
    assert mc.main(["--check", "--out", str(tmp_path)]) == 1


# --- reading the pcaps (independently of uet.capture) -------------------------------------------


def frames(name: str) -> list[bytes]:
    data = (CAPTURES / name).read_bytes()
    magic, vmaj, vmin, _tz, _sig, snap, link = struct.unpack_from("<IHHiIII", data)
    assert (magic, vmaj, vmin, link) == (0xA1B2C3D4, 2, 4, 1)
    out, off, i = [], 24, 0
    while off < len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, off)
        assert (sec, usec) == (mc.TS_BASE + i // 1000, (i % 1000) * 1000)  # fixed timestamps
        assert incl == orig
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
        i += 1
    return out


def decoded(name: str) -> list[dict]:
    return [json.loads(line) for line in (CAPTURES / name).read_text().splitlines()]


def split(frame: bytes) -> tuple[bytes, bytes, bytes]:
    """(IP header, UDP header or b'' for native IP, transport payload) of an Ethernet frame."""
    assert frame[0:12] == bytes.fromhex("020000000002020000000001")  # fixed local MACs
    etype = frame[12:14]
    ip = frame[14:]
    if etype == b"\x08\x00":
        hl = (ip[0] & 15) * 4
        total = int.from_bytes(ip[2:4], "big")
        ip = ip[:total]
        proto = ip[9]
    else:
        assert etype == b"\x86\xdd"
        hl = 40
        ip = ip[:40 + int.from_bytes(ip[4:6], "big")]
        proto = ip[6]
    if proto == 17:
        return ip[:hl], ip[hl:hl + 8], ip[hl + 8:]
    assert proto == 253
    return ip[:hl], b"", ip[hl:]


CAPTURE_FILES = [p.name for p in sorted(CAPTURES.glob("*.pcap"))]


@pytest.mark.parametrize("name", CAPTURE_FILES)
def test_json_sibling_matches_the_pcap(name):
    assert len(decoded(name.replace(".pcap", ".json"))) == len(frames(name))


#: the frames of bad.pcap made bad on purpose, and what the decoder says about each
BAD_FRAMES = {
    1: None,  # wrong CRC-32C trailer: in auto mode simply "no trailer"; --trailer crc reports it
    2: "pds: type 0 is reserved (B.1)",
    3: "pds: type 20 is not assigned (B.1)",
    4: "pds.rud_rod_req: reserved bits 9-10 are set (0x2)",
    5: "pds.rud_rod_req: truncated: needs 12 bytes, 10 left",
    6: "pds: next_hdr 9 is reserved (B.2); the rest is not decoded",
    7: "pds.nack: nack_code = 12 (0xC) is not a known nack_code value",
    8: "ses.small: single-packet header without both SOM and EOM (D.4)",
    9: "ses: DATAGRAM_SEND is only legal with UUD (C.8)",
    10: "pds: M flag set on a RUDI request (defined for responses only, B.13)",
    11: "pds.ack_cc: cc_type = 2 (0x2) is not a known cc_type value",
    12: "ses.rendezvous: truncated: needs 24 bytes, 10 left",
    13: "pds: empty UET packet",
    14: "tss: 12 bytes after the header, fewer than the 16-byte ICV (F)",
    15: "icrc: mismatch: carries 0x",
    16: "roce.bth: opcode 0x44: extension headers not decoded",
    17: "roce.bth: pad_cnt 3 exceeds the 0 bytes left",
    18: "roce.reth: truncated: needs 16 bytes, 8 left",
}


@pytest.mark.parametrize("name", CAPTURE_FILES)
def test_only_the_listed_frames_have_problems(name):
    for obj in decoded(name.replace(".pcap", ".json")):
        if name != "bad.pcap":
            assert obj["problems"] == [], (name, obj["frame"], obj["problems"])
            assert "error" not in obj
            assert ("uet" in obj) != ("roce" in obj)
            continue
        want = BAD_FRAMES[obj["frame"]]
        if want is None:
            assert obj["problems"] == []
        else:
            assert any(p.startswith(want) for p in obj["problems"]), (obj["frame"], obj["problems"])
    if name == "bad.pcap":
        assert len(decoded("bad.json")) == len(BAD_FRAMES)
        sets = {cs.name: cs for cs in mc.capture_sets()}
        assert sorted(sets["bad"].bad) == sorted(BAD_FRAMES)


def test_bad_crc_frame_is_reported_in_crc_mode():
    obj = uet_decode_json(CAPTURES / "bad.pcap", "--trailer", "crc")[0]
    assert obj["uet"]["crc"]["ok"] is False
    assert obj["problems"][0].startswith("crc: CRC-32C trailer mismatch")


# --- coverage of the capture families ----------------------------------------------------------


def test_coverage_pds_types_and_tss():
    objs = decoded("uet_pds.json")
    types = {o["uet"]["pds"]["type"] for o in objs if "pds" in o["uet"]}
    assert types == set(range(2, 15))
    tss = [o["uet"]["tss"] for o in objs if "tss" in o["uet"]]
    assert {t["sp"] for t in tss} == {False, True}
    assert any(o["ip"]["version"] == 6 for o in objs)


def test_coverage_nack_codes_and_control_types():
    from uet.wire.enums import CTL_TYPE, NACK_CODE

    objs = decoded("uet_control_nack.json")
    codes = {o["uet"]["pds"]["nack_code"] for o in objs if o["uet"]["pds"]["type"] in (10, 12)}
    ctls = {o["uet"]["pds"]["ctl_type"] for o in objs if o["uet"]["pds"]["type"] == 11}
    assert codes == set(NACK_CODE.table)
    assert ctls == set(CTL_TYPE.table)


def test_coverage_ses_headers_and_extensions():
    objs = decoded("uet_ses.json")
    nhs = {o["uet"]["pds"]["next_hdr"] for o in objs}
    assert nhs == {1, 2, 3, 4, 5, 6}
    exts = {k for o in objs for k in ("atomic", "cswap", "rendezvous") if k in o["uet"]["ses"]}
    assert exts == {"atomic", "cswap", "rendezvous"}
    std = [o["uet"]["ses"] for o in objs if o["uet"]["pds"]["next_hdr"] == 3]
    assert {s["som"] for s in std} == {True, False}
    for key in ("match_bits", "initiator_restart_token", "memory_key", "header_data", "payload_length"):
        assert any(key in s for s in std), key
    med = [o["uet"]["ses"] for o in objs if o["uet"]["pds"]["next_hdr"] == 2]
    assert {m["hd"] for m in med} == {True, False}


def test_coverage_flows():
    objs = decoded("uet_flows.json")
    syn, ack, nosyn = objs[0]["uet"]["pds"], objs[2]["uet"]["pds"], objs[3]["uet"]["pds"]
    assert syn["syn"] and "dpdcid" not in syn and syn["start_psn"] == syn["psn"]
    assert ack["dpdcid"] == syn["spdcid"]  # the ACK carries the initiator's PDCID
    assert not nosyn["syn"] and nosyn["dpdcid"] == ack["spdcid"]
    trimmed = objs[4]
    assert trimmed["ip"]["dscp"] == 11 and trimmed["udp"]["length"] == 8 + 256
    nack = objs[5]["uet"]["pds"]
    assert nack["nack_code_name"] == "TRIMMED" and nack["nack_psn"] == trimmed["uet"]["pds"]["psn"]
    assert sum("entropy" in o["uet"] for o in objs) == 3
    assert any(o["ip"]["ecn"] == 3 for o in objs)


def test_coverage_roce():
    objs = decoded("roce.json")
    headers = {k for o in objs for k in o["roce"] if k not in ("bth", "payload_len", "icrc")}
    assert headers == {"reth", "aeth", "immdt", "ieth", "atomiceth", "atomicacketh", "deth", "cnp"}
    ops = {o["roce"]["bth"]["opcode"] for o in objs}
    assert {0x04, 0x06, 0x0C, 0x10, 0x13, 0x14, 0x12, 0x64, 0x65, 0x17, 0x81} <= ops
    assert any(o["ip"]["ecn"] == 3 for o in objs)
    assert all(o["roce"]["icrc"]["ok"] for o in objs)


# --- hand-written bytes (facts tables), independent CRCs ----------------------------------------


def crc32c(data: bytes, crc: int = 0) -> int:
    """Bitwise CRC-32C (A.3: reflected 0x1EDC6F41 = 0x82F63B78, init and final ~0)."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def check_trailer(ip: bytes, udp: bytes, uet: bytes) -> bytes:
    """Assert the last 4 bytes are the CRC-32C trailer of docs/design-notes.md "Defaults"; return the rest."""
    addrs = ip[12:20] if ip[0] >> 4 == 4 else ip[8:40]
    cover = addrs + (udp[:6] + b"\0\0" if udp else b"") + uet[:-4]
    assert int.from_bytes(uet[-4:], "big") == crc32c(cover)
    return uet[:-4]


def icrc(ip_packet: bytes) -> int:
    """G.6 by hand: mask IPv4 TOS/TTL/checksum, UDP checksum, BTH byte 4; CRC-32 of 8 x FF + it."""
    b = bytearray(ip_packet)
    if b[0] >> 4 == 4:
        hl = (b[0] & 15) * 4
        b[1] = b[8] = b[10] = b[11] = 0xFF
    else:
        hl = 40
        b[0] |= 0x0F
        b[1] = b[2] = b[3] = b[7] = 0xFF
    b[hl + 6] = b[hl + 7] = b[hl + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(b))


def h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # A.3


# (file, frame, hand-written UET bytes before any payload, payload length)
HAND_UET = [
    # B.7 ACK: type 7, REQ=1 (0x3802), ack_psn_offset -2, cack_psn 1005, spdcid 0x22, dpdcid 0x11
    ("uet_pds.pcap", 8, "3802 fffe 000003ed 0022 0011", 0),
    # B.15 TSS with SSI: 0x0C = type 1 << 3 | SP; SDI 00abcd; SSI; epoch ffff; TSC ffffffffffff
    ("uet_pds.pcap", 2, "0c00abcd 0a000001 ffff ffffffffffff", 48 + 16),
    # B.5 RUD_REQ next_hdr 3, AR (0x1188), clear_psn_offset -1, PSN 1000; D.2/D.3 standard SEND
    ("uet_pds.pcap", 3, "1188 ffff 000003e8 0011 0022"
                        "05 03 0101 01 00abcd 0123 0045 0000000000000000 0a000001"
                        "0000000000000000 0000000000000000 00000040", 64),
    # B.8 ACK_CC: M, RETX (0x4030); cc_type 0, mpr 8, sack offset -4, bitmap, NSCC state
    ("uet_pds.pcap", 10, "4030 0003 fffffffa 0022 0011 00 08 fffc 8000000000000023"
                         "04d2 c0 abcdef 0003", 0),
    # D.3 SOM=0 middle packet: payload_length/message_offset instead of header_data
    ("uet_ses.pcap", 2, "1180 ffff 00002711 0011 0022"
                        "05 00 0201 01 00abcd 0123 0045 0000000000000000 0a000001"
                        "0000000000000010 00000040 00000040 00001064", 64),
    # D.4 small request (next_hdr 1): request_length 0x3fff, all-ones ids and buffer_offset
    ("uet_ses.pcap", 11, "1080 ffff 0000271a 0011 0022 01 03 3fff 04 ffffff 0fff 0fff ffffffffffffffff", 8),
    # D.5 rendezvous extension after a standard RENDEZVOUS_SEND (opcode 6)
    ("uet_ses.pcap", 22, "1180 ffff 00002725 0011 0022"
                         "06 03 0101 01 00abcd 0123 0045 0000000000000000 0a000001"
                         "0000000000000077 0000000000000000 00010000"
                         "00000400 09 321 654 00007f0000000000 13579bdf2468ace0", 32),
    # B.7 ACK next_hdr 4 (0x3a00) + D.7 response: list 0 opcode 1, return code 1, modified_length
    ("uet_ses.pcap", 24, "3a00 0000 0000271a 0022 0011 01 01 0201 01 00abcd 00001064", 0),
    # B.10 NACK NEW_START_PSN with the new start PSN as payload
    ("uet_control_nack.pcap", 22, "5000 17 00 00004e37 0022 0011 00020000", 0),
    # B.10 RUDI NACK: NT (0x5008), NO_RESOURCE, pkt_id, PDCIDs 0
    ("uet_control_nack.pcap", 10, "5008 0a 00 deadbeef 0000 0000 00000000", 0),
    # B.12 CONTROL PROBE (type 11, ctl_type 6 -> 0x5b00), probe_opaque, PSN, payload = SACK base
    ("uet_control_nack.pcap", 36, "5b00 5a5a 00004e8a 0011 0022 00004e2a", 0),
    # B.12 CONTROL CLOSE: isROD + AR (0x5a28)
    ("uet_control_nack.pcap", 34, "5a28 0000 00004e88 0011 0022 00000000", 0),
    # B.5 SYN form in a control packet: AR + SYN (0x588c); use_rsv_pdc (bit 80) + psn_offset 5
    ("uet_control_nack.pcap", 40, "588c 0000 00004e89 0011 8005 00000000", 0),
    # B.5 SYN request: AR + SYN (0x118c), psn_offset 0
    ("uet_flows.pcap", 1, "118c ffff 00010000 0011 0000"
                          "05 03 0101 01 00abcd 0123 0045 0000000000000000 0a000001"
                          "0000000000000000 0000000000000000 00000100", 256),
    # B.8 the target's ACK_CC: spdcid = target 0x22, dpdcid = the initiator's 0x11
    ("uet_flows.pcap", 3, "4000 0000 00010001 0022 0011 00 08 0002 0000000000000000 0000 00 000200 0000", 0),
    # A.1 native IP: entropy header 0x1234 + reserved, then B.5 RUD_REQ with AR
    ("uet_flows.pcap", 13, "1234 0000 1188 ffff 00001b58 0011 0022"
                           "05 03 0101 01 00abcd 0123 0045 0000000000000000 0a000001"
                           "0000000000000000 0000000000000000 00000020", 32),
]


@pytest.mark.parametrize("name,number,hexstr,plen", HAND_UET, ids=[f"{n}#{i}" for n, i, _, _ in HAND_UET])
def test_uet_bytes_equal_hand_written_hex(name, number, hexstr, plen):
    ip, udp, uet = split(frames(name)[number - 1])
    if udp:
        assert int.from_bytes(udp[2:4], "big") in (4793,) or int.from_bytes(udp[0:2], "big") == 4793
        assert int.from_bytes(udp[6:8], "big") == 0  # UDP checksum 0
    else:
        assert ip[9] == 253
    if not (uet[0] >> 3 == 1):  # TSS: ICV instead of the CRC trailer
        uet = check_trailer(ip, udp, uet)
    want = h(hexstr)
    assert uet[:len(want)] == want
    assert len(uet) == len(want) + plen


def test_trimmed_frame_by_hand():
    fr = frames("uet_flows.pcap")
    ip, udp, uet = split(fr[4])
    assert ip[1] == (11 << 2) | 2  # DSCP 11, ECT(0)
    assert int.from_bytes(udp[4:6], "big") == 8 + 256 and len(uet) == 256
    assert uet[:12] == h("1180 fffe 00010003 0011 0022")
    ip2, _, nack = split(fr[5])
    assert ip2[1] >> 2 == 46
    assert check_trailer(ip2, split(fr[5])[1], nack) == h("5000 01 00 00010003 0022 0011 00000000")


# (frame of roce.pcap, hand-written UDP payload without the payload bytes and ICRC, payload + pad length)
HAND_ROCE = [
    # G.5 CNP: opcode 0x81, P_Key ffff, BECN (byte 4 = 0x40), DestQP 0x11, PSN 0, 16 reserved bytes
    (30, "81 00 ffff 40 000011 00 000000" + "00" * 16, 0),
    # G.2 + G.4 RDMA WRITE FIRST with RETH
    (9, "06 00 ffff 00 000011 00 0000c8 00007f0000001000 1234abcd 00000bb8", 1024),
    # SEND LAST, 22 bytes + 2 pad (PadCnt 2 -> 0x20), AckReq (0x80)
    (3, "02 20 ffff 00 000011 80 000066", 24),
    # ATOMIC ACKNOWLEDGE: AETH (ACK, unlimited credits, MSN 5) + AtomicAckETH
    (25, "12 00 ffff 00 000022 00 000190 1f 000005 0123456789abcdef", 0),
    # UD SEND ONLY WITH IMMEDIATE: DETH (Q_Key, rsvd, source QP) + ImmDt
    (27, "65 00 ffff 00 000123 00 0001f5 80010000 00 000077 0000cafe", 100),
    # COMPARE SWAP: AtomicETH (VA, R_Key, swap/add, compare)
    (23, "13 00 ffff 00 000011 00 000190 00007f0000001000 1234abcd 0000000000000001 ffffffffffffffff", 0),
]


@pytest.mark.parametrize("number,hexstr,plen", HAND_ROCE, ids=[f"roce#{n}" for n, _, _ in HAND_ROCE])
def test_roce_bytes_equal_hand_written_hex(number, hexstr, plen):
    fr = frames("roce.pcap")[number - 1]
    ip, udp, body = split(fr)
    assert int.from_bytes(udp[2:4], "big") == 4791
    want = h(hexstr)
    assert body[:len(want)] == want
    assert len(body) == len(want) + plen + 4
    assert int.from_bytes(body[-4:], "little") == icrc(ip + udp + body[:-4])  # G.6, LSB first


def test_roce_ecn_ce_frame_by_hand():
    ip, _, _ = split(frames("roce.pcap")[30])
    assert ip[1] & 3 == 3


def test_reserved_pds_type_has_its_symbol():
    from uet.wire.enums import PDS_TYPE

    obj = decoded("bad.json")[1]  # PDS type 0
    assert obj["uet"]["pds"]["type_name"] == PDS_TYPE.symbol(0) == "RESERVED"
