"""Hand-built byte vectors, one or more per header, worked out from docs/facts.md.

Every hex string below was derived by hand from the bit offsets and widths of the facts tables
(section 0: MSB-first, bit 0 = MSB of byte 0, big-endian) - not from the declarations in
``uet/wire/*_headers.py``, which are only used for the header keys and the field names. The comments
next to each vector show the derivation. Values are distinctive and non-zero wherever the facts allow,
so that a wrong offset or width in a declaration moves bits into a neighbour and the comparison fails.

Each vector is checked by :func:`check`:

* decode -> exact dict equality on the non-reserved fields, exact equality of the reserved keys
  (``rsvd_<bit offset>``, so the key name itself checks the reserved field's position);
* flags decode as ``bool``;
* re-encoding the decoded dict, and encoding the stated values alone, both give the same bytes;
* the same header decodes identically at an offset inside a larger buffer;
* one byte short raises ``TruncatedError``;
* ``codec.problems()`` is empty unless the vector sets reserved bits / unknown enum values on purpose.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pytest

from uet import wire
from uet.errors import DecodeError, EncodeError, TruncatedError

DEFAULT = wire.Options()
XDP2 = wire.Options(ccx_layout="xdp2")  # H.1 #2, #3
RP83 = wire.Options(rsv_pdc_bit=83)  # H.1 #4


def check(key: str, hexstr: str, expected: Mapping[str, Any], reserved: Mapping[str, int], *,
          opts: wire.Options = DEFAULT, problems: Sequence[str] = ()) -> dict[str, Any]:
    """Decode ``hexstr`` as ``key`` and compare against the hand-derived values (see module doc)."""
    data = bytes.fromhex(hexstr)
    c = wire.codec(key)
    fields, size = c.decode(data, 0, opts)
    assert size == len(data), f"{key}: decoded size {size}, vector has {len(data)} bytes"

    got = {k: v for k, v in fields.items() if not k.startswith("rsvd_")}
    got_rsvd = {k: v for k, v in fields.items() if k.startswith("rsvd_")}
    assert got == dict(expected)
    assert got_rsvd == dict(reserved)
    for name, value in expected.items():
        if isinstance(value, bool):
            assert fields[name] is value, f"{key}.{name} should decode as a bool"

    # re-encode: from the decoded dict, and from the stated values alone
    assert wire.encode(key, fields, opts) == data
    assert wire.encode(key, {**expected, **reserved}, opts) == data
    if not any(reserved.values()):
        assert wire.encode(key, expected, opts) == data

    # the same bytes at an offset inside a bigger buffer
    assert c.decode(b"\xa5\x5a\xc3" + data + b"\x3c", 3, opts) == (fields, size)

    # one byte short
    with pytest.raises(TruncatedError):
        c.decode(data[:-1], 0, opts)

    msgs = c.problems(fields, opts)
    assert len(msgs) == len(problems), msgs
    for needle in problems:
        assert any(needle in m for m in msgs), (needle, msgs)
    return fields


def psns_in_bitmap(base: int, bitmap: int) -> list[int]:
    """C.4 / B.8: bit i (LSB = 0) of the 64-bit SACK bitmap covers PSN base + i (mod 2**32)."""
    return [(base + i) & 0xFFFFFFFF for i in range(64) if bitmap >> i & 1]


PDS_REQ_RSVD = {"rsvd_9": 0, "rsvd_14": 0}  # B.5: rsvd at bit 9 (2) and bit 14 (2)
ACK_RSVD = {"rsvd_9": 0, "rsvd_15": 0}  # B.7: rsvd (RP EPSN) at bit 9, rsvd at bit 15
NACK_RSVD = {"rsvd_9": 0, "rsvd_13": 0}  # B.10: rsvd at bit 9 (1) and bit 13 (3)
CTL_RSVD = {"rsvd_9": 0, "rsvd_14": 0}  # B.12: rsvd at bit 9 (1) and bit 14 (2)
SES_REQ_RSVD = {"rsvd_0": 0, "rsvd_64": 0, "rsvd_80": 0}  # D.2: bits 0-1, 64-67, 80-83


# ================================================================================================
# A.1 entropy header
# ================================================================================================

def test_a1_entropy():
    # beef: entropy = 0xBEEF (bits 0-15); 0000: reserved (bits 16-31)
    check("entropy", "beef 0000", {"entropy": 0xBEEF}, {"rsvd_16": 0})


def test_a1_entropy_reserved_set():
    check("entropy", "beef 1234", {"entropy": 0xBEEF}, {"rsvd_16": 0x1234},
          problems=["reserved bits 16-31"])


# ================================================================================================
# B.15 TSS
# ================================================================================================

def test_b15_tss_12_bytes_sp0():
    # byte 0 0x09: type=1 (00001) SP=0 rsvd=0 AN=1   -> 0000 1001
    # bytes 1-3: SDI = 0xA1B2C3 (bits 8-31)
    # bytes 4-5: epoch = 0x1357 (bits 32-47); bytes 6-11: TSC = 0x2468ACE0F1D3 (bits 48-95)
    check("tss", "09 a1b2c3 1357 2468ace0f1d3",
          {"type": 1, "sp": False, "an": 1, "sdi": 0xA1B2C3, "epoch": 0x1357, "tsc": 0x2468ACE0F1D3},
          {"rsvd_6": 0})


@pytest.mark.parametrize("byte0, an", [("0c", 0), ("0d", 1)])
def test_b15_tss_16_bytes_sp1_ssi(byte0, an):
    # byte 0 0x0C / 0x0D: type=1 (00001) SP=1 rsvd=0 AN=0/1 -> 0000 110x
    # bytes 1-3: SDI = 0x5A6B7C; bytes 4-7: SSI = 0xDEADBEEF (bits 32-63, present because SP=1)
    # bytes 8-9: epoch = 0x8001; bytes 10-15: TSC = 0x123456789ABC
    check("tss", f"{byte0} 5a6b7c deadbeef 8001 123456789abc",
          {"type": 1, "sp": True, "an": an, "sdi": 0x5A6B7C, "ssi": 0xDEADBEEF,
           "epoch": 0x8001, "tsc": 0x123456789ABC},
          {"rsvd_6": 0})


def test_b15_tss_reserved_bit():
    # byte 0 0x0B: type=1 SP=0 rsvd=1 AN=1 -> 0000 1011
    check("tss", "0b 000001 0000 000000000001",
          {"type": 1, "sp": False, "an": 1, "sdi": 1, "epoch": 0, "tsc": 1}, {"rsvd_6": 1},
          problems=["reserved bits 6-6"])


# ================================================================================================
# B.5 RUD/ROD request (12 bytes)
# ================================================================================================

def test_b5_rud_req_dpdcid_form():
    # 0x1198: type=2 RUD (00010) next_hdr=3 (0011) rsvd=00 RETX=1 AR=1 SYN=0 rsvd=00
    #         = 2<<11 | 3<<7 | 0x10 | 0x08
    # fffe: clear_psn_offset = -2 (signed 16); 89abcdef: psn; 1234: spdcid; 5678: dpdcid (SYN=0)
    f = check("pds.rud_rod_req", "1198 fffe 89abcdef 1234 5678",
              {"type": 2, "next_hdr": 3, "retx": True, "ar": True, "syn": False,
               "clear_psn_offset": -2, "psn": 0x89ABCDEF, "spdcid": 0x1234, "dpdcid": 0x5678},
              PDS_REQ_RSVD)
    # CLEAR_PSN = PSN + offset
    assert wire.codec("pds.rud_rod_req").derived(f)["clear_psn"] == 0x89ABCDED


# Bytes 10-11 in the SYN form (B.5, H.1 #4): 0x8ABC = 1000 1010 1011 1100 sets bit 80 only,
# 0x1ABC = 0001 1010 1011 1100 sets bit 83 only; both have psn_offset = 0xABC (bits 84-95).
@pytest.mark.parametrize("tail, opts, use_rsv_pdc, reserved, problems", [
    ("8abc", DEFAULT, True, {"rsvd_81": 0}, []),  # WS/XDP2: use_rsv_pdc = bit 80, rsvd 81-83
    ("8abc", RP83, False, {"rsvd_80": 0b100}, ["reserved bits 80-82"]),  # RP: rsvd 80-82, flag 83
    ("1abc", DEFAULT, False, {"rsvd_81": 0b001}, ["reserved bits 81-83"]),
    ("1abc", RP83, True, {"rsvd_80": 0}, []),
], ids=["bit80-default", "bit80-rp83", "bit83-default", "bit83-rp83"])
def test_b5_rod_req_syn_form(tail, opts, use_rsv_pdc, reserved, problems):
    # 0x188c: type=3 ROD (00011) next_hdr=1 (0001) rsvd=00 RETX=0 AR=1 SYN=1 rsvd=00
    #         = 3<<11 | 1<<7 | 0x08 | 0x04
    # fffb: clear_psn_offset = -5; 00000003: psn = 3; 4321: spdcid; then pdc_info + psn_offset
    f = check("pds.rud_rod_req", f"188c fffb 00000003 4321 {tail}",
              {"type": 3, "next_hdr": 1, "retx": False, "ar": True, "syn": True,
               "clear_psn_offset": -5, "psn": 3, "spdcid": 0x4321,
               "use_rsv_pdc": use_rsv_pdc, "psn_offset": 0xABC},
              {**PDS_REQ_RSVD, **reserved}, opts=opts, problems=problems)
    # wraparound: CLEAR_PSN = 3 - 5 mod 2^32; START_PSN = 3 - 0xABC mod 2^32
    assert wire.codec("pds.rud_rod_req").derived(f) == {"clear_psn": 0xFFFFFFFE,
                                                         "start_psn": 0xFFFFF547}


@pytest.mark.parametrize("psn, off_hex, offset, clear_psn", [
    (0x00000000, "ffff", -1, 0xFFFFFFFF),
    (0x00000001, "8000", -0x8000, 0xFFFF8001),
    (0xFFFFFFF0, "0020", 0x20, 0x00000010),
    (0x7FFFFFFF, "7fff", 0x7FFF, 0x80007FFE),
])
def test_b5_clear_psn_wraparound(psn, off_hex, offset, clear_psn):
    # 0x1008: type=2 next_hdr=0 AR=1; spdcid 0x0102, dpdcid 0x0304
    f = check("pds.rud_rod_req", f"1008 {off_hex} {psn:08x} 0102 0304",
              {"type": 2, "next_hdr": 0, "retx": False, "ar": True, "syn": False,
               "clear_psn_offset": offset, "psn": psn, "spdcid": 0x0102, "dpdcid": 0x0304},
              PDS_REQ_RSVD)
    assert wire.codec("pds.rud_rod_req").derived(f)["clear_psn"] == clear_psn


# ================================================================================================
# B.6 RUD/ROD request with CC state (16 bytes)
# ================================================================================================

def test_b6_rud_cc_req():
    # 0x6910: type=13 RUD_CC (01101) next_hdr=2 (0010) RETX=1 AR=0 SYN=0 = 13<<11 | 2<<7 | 0x10
    # 0020: clear_psn_offset = +32; fffffff0: psn; 0a0b: spdcid; 0c0d: dpdcid
    # e7: ccc_id (bits 96-103); 12ab34: credit_target (bits 104-127)
    f = check("pds.rud_rod_cc_req", "6910 0020 fffffff0 0a0b 0c0d e7 12ab34",
              {"type": 13, "next_hdr": 2, "retx": True, "ar": False, "syn": False,
               "clear_psn_offset": 32, "psn": 0xFFFFFFF0, "spdcid": 0x0A0B, "dpdcid": 0x0C0D,
               "ccc_id": 0xE7, "credit_target": 0x12AB34},
              PDS_REQ_RSVD)
    assert wire.codec("pds.rud_rod_cc_req").derived(f)["clear_psn"] == 0x00000010


def test_b6_rod_cc_req_syn_form():
    # 0x719c: type=14 ROD_CC (01110) next_hdr=3 (0011) RETX=1 AR=1 SYN=1 = 14<<11 | 3<<7 | 0x1c
    # 8000: clear_psn_offset = -32768; 00010000: psn; fedc: spdcid
    # 07ff: use_rsv_pdc=0 rsvd=000 psn_offset=0x7FF; 01: ccc_id; fedcba: credit_target
    f = check("pds.rud_rod_cc_req", "719c 8000 00010000 fedc 07ff 01 fedcba",
              {"type": 14, "next_hdr": 3, "retx": True, "ar": True, "syn": True,
               "clear_psn_offset": -0x8000, "psn": 0x10000, "spdcid": 0xFEDC,
               "use_rsv_pdc": False, "psn_offset": 0x7FF, "ccc_id": 0x01, "credit_target": 0xFEDCBA},
              {**PDS_REQ_RSVD, "rsvd_81": 0})
    assert wire.codec("pds.rud_rod_cc_req").derived(f) == {"clear_psn": 0x8000, "start_psn": 0xF801}


# ================================================================================================
# B.7 ACK (12 bytes)
# ================================================================================================

def test_b7_ack_p0_negative_offset():
    # 0x3a22: type=7 (00111) next_hdr=4 (0100) rsvd=0 M=1 RETX=0 P=0 REQ=01 rsvd=0
    #         = 7<<11 | 4<<7 | 0x20 | 1<<1
    # fffd: ack_psn_offset = -3; 10203040: cack_psn; abcd: spdcid; 9876: dpdcid
    f = check("pds.ack", "3a22 fffd 10203040 abcd 9876",
              {"type": 7, "next_hdr": 4, "m": True, "retx": False, "p": False, "req": 1,
               "ack_psn_offset": -3, "cack_psn": 0x10203040, "spdcid": 0xABCD, "dpdcid": 0x9876},
              ACK_RSVD)
    assert wire.codec("pds.ack").derived(f) == {"ack_psn": 0x1020303D}


def test_b7_ack_p1_probe_opaque():
    # 0x381c: type=7 next_hdr=0 M=0 RETX=1 P=1 REQ=10 = 7<<11 | 0x10 | 0x08 | 2<<1
    # c0de: probe_opaque (P=1); 7fffffff: cack_psn; 0001: spdcid; fffe: dpdcid
    check("pds.ack", "381c c0de 7fffffff 0001 fffe",
          {"type": 7, "next_hdr": 0, "m": False, "retx": True, "p": True, "req": 2,
           "probe_opaque": 0xC0DE, "cack_psn": 0x7FFFFFFF, "spdcid": 0x0001, "dpdcid": 0xFFFE},
          ACK_RSVD)


@pytest.mark.parametrize("word, m, retx, req, problems", [
    ("3aa0", True, False, 0, []),  # flags 0x20: M
    ("3a90", False, True, 0, []),  # flags 0x10: RETX
    ("3a82", False, False, 1, []),  # flags 0x02: REQ=1 clear request
    ("3a84", False, False, 2, []),  # flags 0x04: REQ=2 close request
    ("3ab6", True, True, 3, ["req"]),  # flags 0x36: M RETX REQ=3 (reserved value)
])
def test_b7_ack_flags_and_req(word, m, retx, req, problems):
    # word = 7<<11 | 5<<7 (next_hdr 5) | flags = 0x3a80 | flags
    # 0007: ack_psn_offset = +7; 00000100: cack_psn; 0002 / 0003: spdcid / dpdcid
    f = check("pds.ack", f"{word} 0007 00000100 0002 0003",
              {"type": 7, "next_hdr": 5, "m": m, "retx": retx, "p": False, "req": req,
               "ack_psn_offset": 7, "cack_psn": 0x100, "spdcid": 2, "dpdcid": 3},
              ACK_RSVD, problems=problems)
    assert wire.codec("pds.ack").derived(f) == {"ack_psn": 0x107}


def test_b7_ack_epsn_bit_is_reserved():
    # 0x3840: type=7 next_hdr=0, flag 0x40 (bit 9: RP EPSN, H.1 #6) decoded as reserved
    check("pds.ack", "3840 0001 00000010 0001 0002",
          {"type": 7, "next_hdr": 0, "m": False, "retx": False, "p": False, "req": 0,
           "ack_psn_offset": 1, "cack_psn": 0x10, "spdcid": 1, "dpdcid": 2},
          {"rsvd_9": 1, "rsvd_15": 0}, problems=["reserved bits 9-9"])


# ================================================================================================
# B.8 ACK_CC (32 bytes)
# ================================================================================================

def test_b8_ack_cc_nscc():
    # 0x4312: type=8 (01000) next_hdr=6 (0110) M=0 RETX=1 P=0 REQ=01 = 8<<11 | 6<<7 | 0x10 | 0x02
    # 0004: ack_psn_offset; 00c0ffee: cack_psn; 1357: spdcid; 2468: dpdcid
    # 03: cc_type=0 NSCC (bits 96-99) cc_flags=3 (bits 100-103); 21: mpr (bits 104-111)
    # fff0: sack_psn_offset = -16 (bits 112-127); 8100000000000205: sack_bitmap (bits 128-191)
    # NSCC state (bits 192-255): 0bb8 service_time | a5 = RC 1, rcv_cwnd_pend 0x25
    #                            | 0f4240 rcvd_bytes (1,000,000) | 0123 ooo_count
    hexstr = "4312 0004 00c0ffee 1357 2468 03 21 fff0 8100000000000205 0bb8 a5 0f4240 0123"
    f = check("pds.ack_cc", hexstr,
              {"type": 8, "next_hdr": 6, "m": False, "retx": True, "p": False, "req": 1,
               "ack_psn_offset": 4, "cack_psn": 0x00C0FFEE, "spdcid": 0x1357, "dpdcid": 0x2468,
               "cc_type": 0, "cc_flags": 3, "mpr": 0x21, "sack_psn_offset": -16,
               "sack_bitmap": 0x8100000000000205,
               "service_time": 3000, "restore_cwnd": True, "rcv_cwnd_pend": 0x25,
               "rcvd_bytes": 1_000_000, "ooo_count": 0x0123},
              ACK_RSVD)
    d = wire.codec("pds.ack_cc").derived(f)
    assert d == {"ack_psn": 0x00C0FFF2, "sack_base_psn": 0x00C0FFDE}
    # bit i of the bitmap <-> PSN base + i; bit 0 is the LSB of the big-endian 64-bit value
    base = d["sack_base_psn"]
    assert psns_in_bitmap(base, f["sack_bitmap"]) == [base + i for i in (0, 2, 9, 56, 63)]
    data = bytes.fromhex(hexstr)
    assert data[23] & 0x01  # bit 0 -> PSN base + 0: LSB of the bitmap's last byte (header byte 23)
    assert data[16] & 0x80  # bit 63 -> PSN base + 63: MSB of the bitmap's first byte (byte 16)


@pytest.mark.parametrize("byte26, restore_cwnd, rcv_cwnd_pend", [
    ("a5", True, 0x25), ("7f", False, 127), ("80", True, 0), ("01", False, 1),
])
def test_b8_ack_cc_nscc_rc_penalty_byte(byte26, restore_cwnd, rcv_cwnd_pend):
    # header byte 26 = bits 208-215: restore_cwnd (bit 208, 0x80) + rcv_cwnd_pend (bits 209-215)
    # 0x4000: type=8 next_hdr=0; sack fields 0; service_time 0x0102; rcvd_bytes 0x030405; ooo 0x0607
    check("pds.ack_cc", f"4000 0000 00000001 0001 0001 00 01 0000 0000000000000000 "
                        f"0102 {byte26} 030405 0607",
          {"type": 8, "next_hdr": 0, "m": False, "retx": False, "p": False, "req": 0,
           "ack_psn_offset": 0, "cack_psn": 1, "spdcid": 1, "dpdcid": 1,
           "cc_type": 0, "cc_flags": 0, "mpr": 1, "sack_psn_offset": 0, "sack_bitmap": 0,
           "service_time": 0x0102, "restore_cwnd": restore_cwnd, "rcv_cwnd_pend": rcv_cwnd_pend,
           "rcvd_bytes": 0x030405, "ooo_count": 0x0607},
          ACK_RSVD)


def test_b8_ack_cc_credit():
    # 0x4020: type=8 next_hdr=0 M=1 = 8<<11 | 0x20
    # 0001: ack_psn_offset = +1; ffffffff: cack_psn (ACK_PSN wraps to 0); 0bad / f00d: PDC ids
    # 1a: cc_type=1 credit, cc_flags=0xA; 01: mpr; 0002: sack_psn_offset = +2 (base wraps to 1)
    # 0123456789abcdef: sack_bitmap
    # credit state: 0a0b0c credit (bits 192-215) | 000000 rsvd (216-239) | beef ooo_count (240-255)
    f = check("pds.ack_cc",
              "4020 0001 ffffffff 0bad f00d 1a 01 0002 0123456789abcdef 0a0b0c 000000 beef",
              {"type": 8, "next_hdr": 0, "m": True, "retx": False, "p": False, "req": 0,
               "ack_psn_offset": 1, "cack_psn": 0xFFFFFFFF, "spdcid": 0x0BAD, "dpdcid": 0xF00D,
               "cc_type": 1, "cc_flags": 0xA, "mpr": 1, "sack_psn_offset": 2,
               "sack_bitmap": 0x0123456789ABCDEF, "credit": 0x0A0B0C, "ooo_count": 0xBEEF},
              {**ACK_RSVD, "rsvd_216": 0})
    d = wire.codec("pds.ack_cc").derived(f)
    assert d == {"ack_psn": 0x00000000, "sack_base_psn": 0x00000001}
    # 0x...cdef: low byte 0xEF = 1110 1111 -> bits 0-3, 5-7 -> PSNs 1+0..1+3, 1+5..1+7
    assert psns_in_bitmap(1, f["sack_bitmap"])[:7] == [1, 2, 3, 4, 6, 7, 8]


def test_b8_ack_cc_unknown_cc_type():
    # 0x4204: type=8 next_hdr=4 REQ=10 = 8<<11 | 4<<7 | 2<<1
    # 7fff: ack_psn_offset = +32767; 00001000: cack_psn; 00aa / 5500: PDC ids
    # 50: cc_type=5 (unknown) cc_flags=0; ff: mpr; ffff: sack_psn_offset = -1
    # f000000000000001: sack_bitmap; feedfacecafebeef: opaque ack_cc_state (bits 192-255)
    f = check("pds.ack_cc",
              "4204 7fff 00001000 00aa 5500 50 ff ffff f000000000000001 feedfacecafebeef",
              {"type": 8, "next_hdr": 4, "m": False, "retx": False, "p": False, "req": 2,
               "ack_psn_offset": 0x7FFF, "cack_psn": 0x1000, "spdcid": 0x00AA, "dpdcid": 0x5500,
               "cc_type": 5, "cc_flags": 0, "mpr": 0xFF, "sack_psn_offset": -1,
               "sack_bitmap": 0xF000000000000001, "ack_cc_state": 0xFEEDFACECAFEBEEF},
              ACK_RSVD, problems=["cc_type"])
    d = wire.codec("pds.ack_cc").derived(f)
    assert d == {"ack_psn": 0x00008FFF, "sack_base_psn": 0x00000FFF}
    assert psns_in_bitmap(0xFFF, f["sack_bitmap"]) == [0xFFF, 0xFFF + 60, 0xFFF + 61, 0xFFF + 62,
                                                       0xFFF + 63]


# ================================================================================================
# B.9 ACK_CCX (40 bytes; XDP2 32 bytes)
# ================================================================================================

ACK_CCX_HEAD = (
    # 0x4ab2: type=9 (01001) next_hdr=5 (0101) M=1 RETX=1 P=0 REQ=01 = 9<<11 | 5<<7 | 0x20|0x10|0x02
    # ff9c: ack_psn_offset = -100; 00000050: cack_psn (ACK_PSN = 80 - 100 wraps); 3141 / 5926
    # e7: ccx_type=0xE (proprietary), cc_flags=7; 08: mpr; 0010: sack_psn_offset = +16
    # 1122334455667788: sack_bitmap
    "4ab2 ff9c 00000050 3141 5926 e7 08 0010 1122334455667788"
)
ACK_CCX_FIELDS = {
    "type": 9, "next_hdr": 5, "m": True, "retx": True, "p": False, "req": 1,
    "ack_psn_offset": -100, "cack_psn": 0x50, "spdcid": 0x3141, "dpdcid": 0x5926,
    "ccx_type": 0xE, "cc_flags": 7, "mpr": 8, "sack_psn_offset": 16,
    "sack_bitmap": 0x1122334455667788,
}


def test_b9_ack_ccx_40_bytes():
    # bits 192-319: ack_ccx_state (128 bits)
    f = check("pds.ack_ccx", ACK_CCX_HEAD + " 0f1e2d3c4b5a69788796a5b4c3d2e1f0",
              {**ACK_CCX_FIELDS, "ack_ccx_state": 0x0F1E2D3C4B5A69788796A5B4C3D2E1F0}, ACK_RSVD)
    assert wire.codec("pds.ack_ccx").derived(f) == {"ack_psn": 0xFFFFFFEC, "sack_base_psn": 0x60}


def test_b9_ack_ccx_xdp2_32_bytes():
    # H.1 #2: XDP2 carries 64 bits of state (bits 192-255), 32 bytes in all
    check("pds.ack_ccx", ACK_CCX_HEAD + " cafef00d12345678",
          {**ACK_CCX_FIELDS, "ack_ccx_state": 0xCAFEF00D12345678}, ACK_RSVD, opts=XDP2)
    # the 32-byte form is too short for the default (40-byte) layout
    with pytest.raises(TruncatedError):
        wire.decode("pds.ack_ccx", bytes.fromhex(ACK_CCX_HEAD + " cafef00d12345678"))


# ================================================================================================
# B.10 NACK (16 bytes) and NACK_CCX (32 bytes; XDP2 24 bytes)
# ================================================================================================

def test_b10_nack_nt0_psn():
    # 0x5030: type=10 (01010) next_hdr=0 rsvd=0 M=1 RETX=1 NT=0 rsvd=000 = 10<<11 | 0x20 | 0x10
    # 17: nack_code NEW_START_PSN; 5c: vendor_code; 0badcafe: nack_psn (NT=0)
    # 7a7b / 6c6d: spdcid / dpdcid; 40000123: payload (the new start PSN)
    check("pds.nack", "5030 17 5c 0badcafe 7a7b 6c6d 40000123",
          {"type": 10, "next_hdr": 0, "m": True, "retx": True, "nt": False,
           "nack_code": 0x17, "vendor_code": 0x5C, "nack_psn": 0x0BADCAFE,
           "spdcid": 0x7A7B, "dpdcid": 0x6C6D, "payload": 0x40000123},
          NACK_RSVD)


def test_b10_nack_nt1_pkt_id():
    # 0x5028: type=10 M=1 RETX=0 NT=1 = 10<<11 | 0x20 | 0x08
    # 01: nack_code TRIMMED; a0: vendor_code; fedcba98: RUDI pkt_id (NT=1)
    # 0000 / 0000: PDC ids (0 for RUDI); 000003e8: payload
    check("pds.nack", "5028 01 a0 fedcba98 0000 0000 000003e8",
          {"type": 10, "next_hdr": 0, "m": True, "retx": False, "nt": True,
           "nack_code": 0x01, "vendor_code": 0xA0, "pkt_id": 0xFEDCBA98,
           "spdcid": 0, "dpdcid": 0, "payload": 0x3E8},
          NACK_RSVD)


def test_b10_nack_ccx_32_bytes():
    # 0x6010: type=12 (01100) next_hdr=0 RETX=1 = 12<<11 | 0x10
    # 0b: PSN_OOR_WINDOW; 3c: vendor_code; 00abcdef: nack_psn; 4455 / 6677; 89abcdef: payload
    # f1..ef: nccx_type=0xF (bits 128-131) + nack_ccx_state 0x123456789ABCDEF0123456789ABCDEF
    #         (bits 132-255, 124 bits = 31 hex digits)
    check("pds.nack_ccx",
          "6010 0b 3c 00abcdef 4455 6677 89abcdef f123456789abcdef0123456789abcdef",
          {"type": 12, "next_hdr": 0, "m": False, "retx": True, "nt": False,
           "nack_code": 0x0B, "vendor_code": 0x3C, "nack_psn": 0x00ABCDEF,
           "spdcid": 0x4455, "dpdcid": 0x6677, "payload": 0x89ABCDEF,
           "nccx_type": 0xF, "nack_ccx_state": 0x123456789ABCDEF0123456789ABCDEF},
          NACK_RSVD)


def test_b10_nack_ccx_xdp2_24_bytes():
    # H.1 #3: XDP2 appends 8 bytes: nccx_type (4) + 60-bit state
    # 0x6028: type=12 M=1 NT=1; fd: EXP_NACK_NORMAL; 13579bdf: pkt_id (NT=1)
    # e876543210fedcba: nccx_type=0xE, nack_ccx_state=0x876543210FEDCBA (15 hex digits)
    check("pds.nack_ccx", "6028 fd 3c 13579bdf 4455 6677 89abcdef e876543210fedcba",
          {"type": 12, "next_hdr": 0, "m": True, "retx": False, "nt": True,
           "nack_code": 0xFD, "vendor_code": 0x3C, "pkt_id": 0x13579BDF,
           "spdcid": 0x4455, "dpdcid": 0x6677, "payload": 0x89ABCDEF,
           "nccx_type": 0xE, "nack_ccx_state": 0x876543210FEDCBA},
          NACK_RSVD, opts=XDP2)


# ================================================================================================
# B.12 CONTROL (16 bytes)
# ================================================================================================

def test_b12_control_probe_isrod():
    # 0x5b28: type=11 (01011) ctl_type=6 PROBE (0110) rsvd=0 isROD=1 RETX=0 AR=1 SYN=0
    #         = 11<<11 | 6<<7 | 0x20 | 0x08
    # d00d: probe_opaque; 00facade: psn; 1a2b / 3c4d: spdcid / dpdcid; 00facad0: payload (SACK base)
    check("pds.control", "5b28 d00d 00facade 1a2b 3c4d 00facad0",
          {"type": 11, "ctl_type": 6, "isrod": True, "retx": False, "ar": True, "syn": False,
           "probe_opaque": 0xD00D, "psn": 0x00FACADE, "spdcid": 0x1A2B, "dpdcid": 0x3C4D,
           "payload": 0x00FACAD0},
          CTL_RSVD)


def test_b12_control_clear():
    # 0x5910: type=11 ctl_type=2 CLEAR (0010) isROD=0 RETX=1 = 11<<11 | 2<<7 | 0x10
    # 0000: probe_opaque; 01020304: psn; 0abc / 0def; 7654321f: payload (clear PSN)
    check("pds.control", "5910 0000 01020304 0abc 0def 7654321f",
          {"type": 11, "ctl_type": 2, "isrod": False, "retx": True, "ar": False, "syn": False,
           "probe_opaque": 0, "psn": 0x01020304, "spdcid": 0x0ABC, "dpdcid": 0x0DEF,
           "payload": 0x7654321F},
          CTL_RSVD)


def test_b12_control_credit_req():
    # 0x5c08: type=11 ctl_type=8 CREDIT_REQ (1000) AR=1 = 11<<11 | 8<<7 | 0x08
    # a0b0c0d0: psn; 0e0f / 1e1f; 00123456: payload (target credit)
    check("pds.control", "5c08 0000 a0b0c0d0 0e0f 1e1f 00123456",
          {"type": 11, "ctl_type": 8, "isrod": False, "retx": False, "ar": True, "syn": False,
           "probe_opaque": 0, "psn": 0xA0B0C0D0, "spdcid": 0x0E0F, "dpdcid": 0x1E1F,
           "payload": 0x00123456},
          CTL_RSVD)


def test_b12_control_syn_form():
    # 0x58bc: type=11 ctl_type=1 ACK_REQ (0001) isROD=1 RETX=1 AR=1 SYN=1
    #         = 11<<11 | 1<<7 | 0x20 | 0x10 | 0x08 | 0x04
    # 0000: probe_opaque; 80000010: psn; 2d2e: spdcid
    # 8010: use_rsv_pdc=1 (bit 80) rsvd=000 psn_offset=0x010; 0000bead: payload (message id)
    f = check("pds.control", "58bc 0000 80000010 2d2e 8010 0000bead",
              {"type": 11, "ctl_type": 1, "isrod": True, "retx": True, "ar": True, "syn": True,
               "probe_opaque": 0, "psn": 0x80000010, "spdcid": 0x2D2E,
               "use_rsv_pdc": True, "psn_offset": 0x010, "payload": 0xBEAD},
              {**CTL_RSVD, "rsvd_81": 0})
    assert wire.codec("pds.control").derived(f)["start_psn"] == 0x80000000


# ================================================================================================
# B.13 RUDI (8 bytes), B.14 UUD (4 bytes)
# ================================================================================================

def test_b13_rudi_request():
    # 0x2190: type=4 RUDI_REQ (00100) next_hdr=3 (0011) rsvd=0 M=0 RETX=1 rsvd=0000
    #         = 4<<11 | 3<<7 | 0x10
    # 0000: rsvd (bits 16-31); 9e3779b9: pkt_id
    check("pds.rudi", "2190 0000 9e3779b9",
          {"type": 4, "next_hdr": 3, "m": False, "retx": True, "pkt_id": 0x9E3779B9},
          {"rsvd_9": 0, "rsvd_12": 0, "rsvd_16": 0})


def test_b13_rudi_response():
    # 0x2b20: type=5 RUDI_RESP (00101) next_hdr=6 (0110) M=1 RETX=0 = 5<<11 | 6<<7 | 0x20
    check("pds.rudi", "2b20 0000 01234567",
          {"type": 5, "next_hdr": 6, "m": True, "retx": False, "pkt_id": 0x01234567},
          {"rsvd_9": 0, "rsvd_12": 0, "rsvd_16": 0})


@pytest.mark.parametrize("word, next_hdr", [("3180", 3), ("3080", 1)])
def test_b14_uud(word, next_hdr):
    # 0x3180 / 0x3080: type=6 UUD (00110) next_hdr=3 / 1, flags (bits 9-15) all 0; 0000 rsvd
    check("pds.uud", f"{word} 0000", {"type": 6, "next_hdr": next_hdr},
          {"rsvd_9": 0, "rsvd_16": 0})


# ================================================================================================
# D.3 SES standard request (44 bytes)
# ================================================================================================

def test_d3_std_som1_header_data():
    # 01: rsvd=00 opcode=0x01 WRITE; 6d: version=01 DC=1 IE=0 REL=1 HD=1 EOM=0 SOM=1 (01 1 0 1 1 0 1)
    # beef: message_id; 7e: ri_generation; abcdef: job_id
    # 09a5: rsvd=0000 pid_on_fep=0x9A5; 03c7: rsvd=0000 resource_index=0x3C7
    # 0000123456789abc: buffer_offset (bits 96-159); cafebabe: initiator (160-191)
    # a1a2a3a4a5a6a7a8: memory_key (192-255); deadbeef00c0ffee: header_data (SOM=1, 256-319)
    # 00100000: request_length (320-351)
    check("ses.std",
          "01 6d beef 7e abcdef 09a5 03c7 0000123456789abc cafebabe a1a2a3a4a5a6a7a8 "
          "deadbeef00c0ffee 00100000",
          {"opcode": 0x01, "version": 1, "dc": True, "ie": False, "rel": True, "hd": True,
           "eom": False, "som": True, "message_id": 0xBEEF, "ri_generation": 0x7E,
           "job_id": 0xABCDEF, "pid_on_fep": 0x9A5, "resource_index": 0x3C7,
           "buffer_offset": 0x0000123456789ABC, "initiator": 0xCAFEBABE,
           "memory_key": 0xA1A2A3A4A5A6A7A8, "header_data": 0xDEADBEEF00C0FFEE,
           "request_length": 0x00100000},
          SES_REQ_RSVD)


def test_d3_std_som0_tagged():
    # 09: opcode=0x09 TAGGED_SEND; 12: version=00 DC=0 IE=1 REL=0 HD=0 EOM=1 SOM=0
    # 4321: message_id; 01: ri_generation; 123456: job_id; 0abc: pid_on_fep; 0123: resource_index
    # fedcba9876543210: buffer_offset; 00000042: initiator; 13579bdf2468ace0: match_bits (tagged)
    # 00003456: rsvd (18 bits, 256-273) + payload_length=0x3456 (14 bits, 274-287)
    # 00abc000: message_offset (288-319); 01000000: request_length
    check("ses.std",
          "09 12 4321 01 123456 0abc 0123 fedcba9876543210 00000042 13579bdf2468ace0 "
          "00003456 00abc000 01000000",
          {"opcode": 0x09, "version": 0, "dc": False, "ie": True, "rel": False, "hd": False,
           "eom": True, "som": False, "message_id": 0x4321, "ri_generation": 0x01,
           "job_id": 0x123456, "pid_on_fep": 0xABC, "resource_index": 0x123,
           "buffer_offset": 0xFEDCBA9876543210, "initiator": 0x42,
           "match_bits": 0x13579BDF2468ACE0, "payload_length": 0x3456,
           "message_offset": 0x00ABC000, "request_length": 0x01000000},
          {**SES_REQ_RSVD, "rsvd_256": 0})


def test_d3_std_deferrable_send_restart_tokens():
    # 08: opcode=0x08 DEFERRABLE_SEND; 83: version=10 EOM=1 SOM=1
    # 0777: message_id; c3: ri_generation; 0f1e2d: job_id; 02b4: pid_on_fep; 05c6: resource_index
    # 11223344: initiator_restart_token (bits 96-127); 55667788: target_restart_token (128-159)
    # 9abcdef0: initiator; 0000000000001000: memory_key; 0102030405060708: header_data (SOM=1)
    # 00000400: request_length
    check("ses.std",
          "08 83 0777 c3 0f1e2d 02b4 05c6 11223344 55667788 9abcdef0 0000000000001000 "
          "0102030405060708 00000400",
          {"opcode": 0x08, "version": 2, "dc": False, "ie": False, "rel": False, "hd": False,
           "eom": True, "som": True, "message_id": 0x0777, "ri_generation": 0xC3,
           "job_id": 0x0F1E2D, "pid_on_fep": 0x2B4, "resource_index": 0x5C6,
           "initiator_restart_token": 0x11223344, "target_restart_token": 0x55667788,
           "initiator": 0x9ABCDEF0, "memory_key": 0x1000, "header_data": 0x0102030405060708,
           "request_length": 0x400},
          SES_REQ_RSVD)


def test_d3_std_deferrable_tsend_restart_tokens_and_match_bits():
    # 0b: opcode=0x0B DEFERRABLE_TSEND; 03: EOM=1 SOM=1
    # aabbccdd / 11223344: restart tokens (bits 96-159); 00000007: initiator
    # 0011223344556677: match_bits (tagged, 192-255); 8899aabbccddeeff: header_data
    check("ses.std",
          "0b 03 0999 44 556677 0123 0456 aabbccdd 11223344 00000007 0011223344556677 "
          "8899aabbccddeeff 00002000",
          {"opcode": 0x0B, "version": 0, "dc": False, "ie": False, "rel": False, "hd": False,
           "eom": True, "som": True, "message_id": 0x0999, "ri_generation": 0x44,
           "job_id": 0x556677, "pid_on_fep": 0x123, "resource_index": 0x456,
           "initiator_restart_token": 0xAABBCCDD, "target_restart_token": 0x11223344,
           "initiator": 7, "match_bits": 0x0011223344556677, "header_data": 0x8899AABBCCDDEEFF,
           "request_length": 0x2000},
          SES_REQ_RSVD)


def test_d3_std_deferrable_rtr_restart_tokens():
    # 0c: opcode=0x0C DEFERRABLE_RTR; 23: DC=1 EOM=1 SOM=1
    # 0888: message_id; 3c: ri_generation; e1d2c3: job_id; 07f0: pid_on_fep; 000f: resource_index
    # 0000000000abcdef: buffer_offset; 00c0ffee: initiator
    # 11223344: initiator_restart_token (bits 192-223); 55667788: target_restart_token (224-255)
    # ffeeddccbbaa9988: header_data; 00008000: request_length
    check("ses.std",
          "0c 23 0888 3c e1d2c3 07f0 000f 0000000000abcdef 00c0ffee 11223344 55667788 "
          "ffeeddccbbaa9988 00008000",
          {"opcode": 0x0C, "version": 0, "dc": True, "ie": False, "rel": False, "hd": False,
           "eom": True, "som": True, "message_id": 0x0888, "ri_generation": 0x3C,
           "job_id": 0xE1D2C3, "pid_on_fep": 0x7F0, "resource_index": 0x00F,
           "buffer_offset": 0xABCDEF, "initiator": 0x00C0FFEE,
           "initiator_restart_token": 0x11223344, "target_restart_token": 0x55667788,
           "header_data": 0xFFEEDDCCBBAA9988, "request_length": 0x8000},
          SES_REQ_RSVD)


_NO_FLAGS = {"version": 0, "dc": False, "ie": False, "rel": False, "hd": False, "eom": False,
             "som": False}


@pytest.mark.parametrize("byte1, flags", [
    ("c0", {"version": 3}),  # version = bits 8-9 (mask 0xC0)
    ("40", {"version": 1}),
    ("20", {"dc": True}),  # bit 10
    ("10", {"ie": True}),  # bit 11
    ("08", {"rel": True}),  # bit 12
    ("04", {"hd": True}),  # bit 13
    ("02", {"eom": True}),  # bit 14
    ("01", {"som": True}),  # bit 15 (switches bits 256-319 to header_data)
])
def test_d2_std_each_flag(byte1, flags):
    # 05: opcode SEND; byte1 per case; 1a2b: message_id; 6e: ri_generation; 314159: job_id
    # 0265: pid_on_fep; 0358: resource_index; 0000000000004000: buffer_offset; 00000011: initiator
    # 00000000beef0001: memory_key; 00003456 00abc000: SOM=0 length/offset or SOM=1 header_data
    # 00000800: request_length
    tail = ({"header_data": 0x0000345600ABC000} if flags.get("som")
            else {"payload_length": 0x3456, "message_offset": 0x00ABC000})
    rsvd = SES_REQ_RSVD if flags.get("som") else {**SES_REQ_RSVD, "rsvd_256": 0}
    check("ses.std",
          f"05 {byte1} 1a2b 6e 314159 0265 0358 0000000000004000 00000011 00000000beef0001 "
          "00003456 00abc000 00000800",
          {"opcode": 0x05, **_NO_FLAGS, **flags, "message_id": 0x1A2B, "ri_generation": 0x6E,
           "job_id": 0x314159, "pid_on_fep": 0x265, "resource_index": 0x358,
           "buffer_offset": 0x4000, "initiator": 0x11, "memory_key": 0xBEEF0001, **tail,
           "request_length": 0x800},
          rsvd)


# ================================================================================================
# D.4 SES small (20 bytes) and medium (32 bytes)
# ================================================================================================

def test_d4_small():
    # 01: opcode WRITE; 0b: REL=1 EOM=1 SOM=1; 3a5c: rsvd=00 request_length=0x3A5C (14 bits)
    # 99: ri_generation; 0a1b2c: job_id; 0321: pid_on_fep; 0654: resource_index
    # 7766554433221100: buffer_offset (bits 96-159)
    check("ses.small", "01 0b 3a5c 99 0a1b2c 0321 0654 7766554433221100",
          {"opcode": 0x01, "version": 0, "dc": False, "ie": False, "rel": True, "hd": False,
           "eom": True, "som": True, "request_length": 0x3A5C, "ri_generation": 0x99,
           "job_id": 0x0A1B2C, "pid_on_fep": 0x321, "resource_index": 0x654,
           "buffer_offset": 0x7766554433221100},
          {**SES_REQ_RSVD, "rsvd_16": 0})


def test_d4_medium_hd1_header_data():
    # 09: TAGGED_SEND; 47: version=01 HD=1 EOM=1 SOM=1; 0fed: rsvd=00 request_length=0x0FED
    # 5a: ri_generation; fedcba: job_id; 00c3: pid_on_fep; 0a96: resource_index
    # 1122334455667788: header_data (HD=1, bits 96-159); 0badf00d: initiator (160-191)
    # 8877665544332211: match_bits (192-255)
    check("ses.medium", "09 47 0fed 5a fedcba 00c3 0a96 1122334455667788 0badf00d 8877665544332211",
          {"opcode": 0x09, "version": 1, "dc": False, "ie": False, "rel": False, "hd": True,
           "eom": True, "som": True, "request_length": 0x0FED, "ri_generation": 0x5A,
           "job_id": 0xFEDCBA, "pid_on_fep": 0x0C3, "resource_index": 0xA96,
           "header_data": 0x1122334455667788, "initiator": 0x0BADF00D,
           "match_bits": 0x8877665544332211},
          {**SES_REQ_RSVD, "rsvd_16": 0})


def test_d4_medium_hd0_buffer_offset():
    # 02: READ; 23: DC=1 EOM=1 SOM=1 (HD=0); 2000: request_length=0x2000
    # 01: ri_generation; 000777: job_id; 0800: pid_on_fep; 0001: resource_index
    # 0000100000002000: buffer_offset (HD=0); 00000009: initiator; 0a0b0c0d0e0f1011: memory_key
    check("ses.medium", "02 23 2000 01 000777 0800 0001 0000100000002000 00000009 0a0b0c0d0e0f1011",
          {"opcode": 0x02, "version": 0, "dc": True, "ie": False, "rel": False, "hd": False,
           "eom": True, "som": True, "request_length": 0x2000, "ri_generation": 0x01,
           "job_id": 0x000777, "pid_on_fep": 0x800, "resource_index": 0x001,
           "buffer_offset": 0x0000100000002000, "initiator": 9, "memory_key": 0x0A0B0C0D0E0F1011},
          {**SES_REQ_RSVD, "rsvd_16": 0})


# ================================================================================================
# D.2 / D.3 / D.4 / D.7: reserved bits next to 12- and 14-bit fields (catches a wrong width)
# ================================================================================================

@pytest.mark.parametrize("key, hexstr, field, value, rsvd, rsvd_value", [
    # small: bytes 2-3 0xfa5c = 11 + 11 1010 0101 1100 -> rsvd(16-17)=3, request_length=0x3A5C
    ("ses.small", "01 0b fa5c 99 0a1b2c 0321 0654 7766554433221100",
     "request_length", 0x3A5C, "rsvd_16", 3),
    # medium: bytes 2-3 0xcfed -> rsvd=3, request_length=0x0FED
    ("ses.medium", "09 47 cfed 5a fedcba 00c3 0a96 1122334455667788 0badf00d 8877665544332211",
     "request_length", 0x0FED, "rsvd_16", 3),
    # std: bytes 8-9 0xf9a5 -> rsvd(64-67)=0xF, pid_on_fep=0x9A5
    ("ses.std", "01 6d beef 7e abcdef f9a5 03c7 0000123456789abc cafebabe a1a2a3a4a5a6a7a8 "
                "deadbeef00c0ffee 00100000", "pid_on_fep", 0x9A5, "rsvd_64", 0xF),
    # std: bytes 10-11 0xc3c7 -> rsvd(80-83)=0xC, resource_index=0x3C7
    ("ses.std", "01 6d beef 7e abcdef 09a5 c3c7 0000123456789abc cafebabe a1a2a3a4a5a6a7a8 "
                "deadbeef00c0ffee 00100000", "resource_index", 0x3C7, "rsvd_80", 0xC),
    # std SOM=0: bytes 32-35 0xfffff456 -> rsvd(256-273)=0x3FFFF, payload_length=0x3456
    ("ses.std", "09 12 4321 01 123456 0abc 0123 fedcba9876543210 00000042 13579bdf2468ace0 "
                "fffff456 00abc000 01000000", "payload_length", 0x3456, "rsvd_256", 0x3FFFF),
    # std: byte 0 0xc9 -> rsvd(0-1)=3, opcode=0x09
    ("ses.std", "c9 12 4321 01 123456 0abc 0123 fedcba9876543210 00000042 13579bdf2468ace0 "
                "00003456 00abc000 01000000", "opcode", 0x09, "rsvd_0", 3),
    # rsp_data: bytes 10-11 0xefed -> rsvd(80-81)=3, payload_length=0x2FED
    ("ses.rsp_data", "02 a3 0f0e 00 c0ffee 1357 efed 00012345 00c00000",
     "payload_length", 0x2FED, "rsvd_80", 3),
    # rsp_data: byte 4 0x5a -> rsvd(32-39)=0x5A, job_id unchanged
    ("ses.rsp_data", "02 a3 0f0e 5a c0ffee 1357 2fed 00012345 00c00000",
     "job_id", 0xC0FFEE, "rsvd_32", 0x5A),
    # rsp_data_small: bytes 2-3 0xdabc -> rsvd(16-17)=3, payload_length=0x1ABC
    ("ses.rsp_data_small", "82 c5 dabc 00 00beef fffffff7", "payload_length", 0x1ABC, "rsvd_16", 3),
    # rendezvous has no reserved bits; DETH: byte 4 0x81 -> rsvd(32-39)=0x81, source_qp kept
    ("roce.deth", "80010000 81 c0ffee", "source_qp", 0xC0FFEE, "rsvd_32", 0x81),
    # BTH byte 4 0x3f -> FECN=0 BECN=0 rsvd(34-39)=0x3F; byte 8 0x7f -> A=0 rsvd(65-71)=0x7F
    ("roce.bth", "0a a3 abcd 3f 1234ab 7f fedcba", "dest_qp", 0x1234AB, "rsvd_34", 0x3F),
    ("roce.bth", "0a a3 abcd 3f 1234ab 7f fedcba", "psn", 0xFEDCBA, "rsvd_65", 0x7F),
])
def test_reserved_bits_beside_narrow_fields(key, hexstr, field, value, rsvd, rsvd_value):
    data = bytes.fromhex(hexstr)
    c = wire.codec(key)
    f, size = c.decode(data)
    assert size == len(data)
    assert f[field] == value
    assert f[rsvd] == rsvd_value
    assert wire.encode(key, f) == data
    # clearing the reserved bits changes only those bits
    cleared = wire.encode(key, {**f, rsvd: 0})
    assert wire.decode(key, cleared) == {**f, rsvd: 0}
    off = int(rsvd.split("_")[1])
    assert any(f"reserved bits {off}-" in m for m in c.problems(f)), c.problems(f)


# ================================================================================================
# D.5 rendezvous (24 bytes), D.6 atomic (4 bytes) and compare-swap (36 bytes)
# ================================================================================================

def test_d5_rendezvous():
    # 00010000: eager_length (bits 0-31)
    # a5123456: RP second word (H.1 #10): ri_generation=0xA5 (32-39) pid_on_fep=0x123 (40-51)
    #           resource_index=0x456 (52-63)
    # 0000ffff00001111: read_offset (64-127); abcdef0123456789: read_match_bits (128-191)
    check("ses.rendezvous", "00010000 a5123456 0000ffff00001111 abcdef0123456789",
          {"eager_length": 0x10000, "ri_generation": 0xA5, "pid_on_fep": 0x123,
           "resource_index": 0x456, "read_offset": 0x0000FFFF00001111,
           "read_match_bits": 0xABCDEF0123456789},
          {})


@pytest.mark.parametrize("hexstr, amo, dtype, cacheable, cpu_coherent", [
    ("02 07 01 00", 0x02, 0x07, True, False),  # SUM, UINT64, byte 2 = 0x01 cacheable
    ("0b 04 02 00", 0x0B, 0x04, False, True),  # READ, INT32, byte 2 = 0x02 CPU coherent
    ("14 0a 03 00", 0x14, 0x0A, True, True),  # INVAL, FLOAT, both
])
def test_d6_atomic(hexstr, amo, dtype, cacheable, cpu_coherent):
    # byte 0 atomic_opcode; byte 1 atomic_datatype; byte 2 semantic_control; byte 3 rsvd
    check("ses.atomic", hexstr,
          {"atomic_opcode": amo, "atomic_datatype": dtype, "cacheable": cacheable,
           "cpu_coherent": cpu_coherent},
          {"rsvd_16": 0, "rsvd_24": 0})


def test_d6_atomic_xdp2_semantic_bits_are_reserved():
    # H.1 #11: XDP2's 0x80/0x40 positions are reserved in the RP/WS layout: byte 2 0xc0 -> bits
    # 16-21 = 110000 = 0x30, cacheable/cpu_coherent clear; byte 3 0x01 -> rsvd(24-31) = 1
    check("ses.atomic", "0d 09 c0 01",
          {"atomic_opcode": 0x0D, "atomic_datatype": 0x09, "cacheable": False, "cpu_coherent": False},
          {"rsvd_16": 0x30, "rsvd_24": 0x01}, problems=["reserved bits 16-21", "reserved bits 24-31"])


def test_d6_cswap():
    # 0d: CSWAP; 09: UINT128; 02: CPU coherent; 00: rsvd
    # bits 32-159: compare_value; bits 160-287: swap_value
    check("ses.cswap",
          "0d 09 02 00 0123456789abcdeffedcba9876543210 13579bdf02468ace0f1e2d3c4b5a6978",
          {"atomic_opcode": 0x0D, "atomic_datatype": 0x09, "cacheable": False, "cpu_coherent": True,
           "compare_value": 0x0123456789ABCDEFFEDCBA9876543210,
           "swap_value": 0x13579BDF02468ACE0F1E2D3C4B5A6978},
          {"rsvd_16": 0, "rsvd_24": 0})


# ================================================================================================
# D.7 responses
# ================================================================================================

def test_d7_rsp():
    # 41: list=01 overflow, opcode=000001 RESPONSE; 5c: version=01 return_code=011100 (0x1C BAD_MKEY)
    # 2468: message_id; 8f: ri_generation; 123abc: job_id; 00004000: modified_length
    check("ses.rsp", "41 5c 2468 8f 123abc 00004000",
          {"list": 1, "opcode": 1, "version": 1, "return_code": 0x1C, "message_id": 0x2468,
           "ri_generation": 0x8F, "job_id": 0x123ABC, "modified_length": 0x4000},
          {})


def test_d7_rsp_data():
    # 02: list=00 opcode=000010 RESPONSE_W_DATA; a3: version=10 return_code=100011 (0x23)
    # 0f0e: message_id; 00: rsvd; c0ffee: job_id; 1357: read_request_message_id
    # 2fed: rsvd=00 payload_length=0x2FED (14 bits); 00012345: modified_length
    # 00c00000: message_offset
    check("ses.rsp_data", "02 a3 0f0e 00 c0ffee 1357 2fed 00012345 00c00000",
          {"list": 0, "opcode": 2, "version": 2, "return_code": 0x23, "message_id": 0x0F0E,
           "job_id": 0xC0FFEE, "read_request_message_id": 0x1357, "payload_length": 0x2FED,
           "modified_length": 0x12345, "message_offset": 0x00C00000},
          {"rsvd_32": 0, "rsvd_80": 0})


def test_d7_rsp_data_small():
    # 82: list=10 (vendor) opcode=000010; c5: version=11 return_code=000101 (0x05 NO_MATCH)
    # 1abc: rsvd=00 payload_length=0x1ABC; 00: rsvd; 00beef: job_id; fffffff7: original_request_psn
    check("ses.rsp_data_small", "82 c5 1abc 00 00beef fffffff7",
          {"list": 2, "opcode": 2, "version": 3, "return_code": 0x05, "payload_length": 0x1ABC,
           "job_id": 0x00BEEF, "original_request_psn": 0xFFFFFFF7},
          {"rsvd_16": 0, "rsvd_32": 0})


# ================================================================================================
# G.2 BTH, G.4 extension headers, G.5 CNP
# ================================================================================================

BTH_RSVD = {"rsvd_34": 0, "rsvd_65": 0}


def test_g2_bth_rc_write_only():
    # 0a: opcode RC RDMA_WRITE_ONLY; a3: SE=1 M=0 PadCnt=10 TVer=0011
    # abcd: P_Key; 80: FECN=1 BECN=0 Resv6=0; 1234ab: DestQP; 80: A=1 Resv7=0; fedcba: PSN
    check("roce.bth", "0a a3 abcd 80 1234ab 80 fedcba",
          {"opcode": 0x0A, "se": True, "m": False, "pad_cnt": 2, "tver": 3, "p_key": 0xABCD,
           "fecn": True, "becn": False, "dest_qp": 0x1234AB, "ack_req": True, "psn": 0xFEDCBA},
          BTH_RSVD)


def test_g2_bth_ud_send_only():
    # 64: UD SEND_ONLY; 50: SE=0 M=1 PadCnt=01 TVer=0; ffff: P_Key; 40: FECN=0 BECN=1
    # 000001: DestQP; 00: A=0; 0abcde: PSN
    check("roce.bth", "64 50 ffff 40 000001 00 0abcde",
          {"opcode": 0x64, "se": False, "m": True, "pad_cnt": 1, "tver": 0, "p_key": 0xFFFF,
           "fecn": False, "becn": True, "dest_qp": 1, "ack_req": False, "psn": 0x0ABCDE},
          BTH_RSVD)


def test_g4_reth():
    # VA 64 | R_Key 32 | DMA length 32
    check("roce.reth", "00007f0012345678 a0b1c2d3 00100000",
          {"virtual_address": 0x00007F0012345678, "r_key": 0xA0B1C2D3, "dma_length": 0x100000}, {})


def test_g4_aeth():
    # 62: syndrome NAK remote access error (011 00010); 00abcd: MSN
    check("roce.aeth", "62 00abcd", {"syndrome": 0x62, "msn": 0x00ABCD}, {})


def test_g4_immdt():
    check("roce.immdt", "deadbeef", {"immediate": 0xDEADBEEF}, {})


def test_g4_ieth():
    check("roce.ieth", "1234abcd", {"r_key": 0x1234ABCD}, {})


def test_g4_atomiceth():
    # VA 64 | R_Key 32 | swap/add 64 | compare 64 = 28 bytes
    check("roce.atomiceth", "0000000100002000 55aa1234 1111222233334444 5555666677778888",
          {"virtual_address": 0x0000000100002000, "r_key": 0x55AA1234,
           "swap_add": 0x1111222233334444, "compare": 0x5555666677778888}, {})


def test_g4_atomicacketh():
    check("roce.atomicacketh", "0123456789abcdef", {"original_value": 0x0123456789ABCDEF}, {})


def test_g4_deth():
    # Q_Key 32 | rsvd 8 | source QP 24
    check("roce.deth", "80010000 00 c0ffee", {"q_key": 0x80010000, "source_qp": 0xC0FFEE},
          {"rsvd_32": 0})


def test_g5_cnp_example():
    # MLNX-CNP example: BTH 81 00 ff ff 40 00 00 d2 00 00 00 00, then 16 zero bytes (ICRC not here)
    pkt = bytes.fromhex("8100ffff400000d200000000" + "00" * 16)
    check("roce.bth", pkt[:12].hex(),
          {"opcode": 0x81, "se": False, "m": False, "pad_cnt": 0, "tver": 0, "p_key": 0xFFFF,
           "fecn": False, "becn": True, "dest_qp": 0xD2, "ack_req": False, "psn": 0},
          BTH_RSVD)
    check("roce.cnp", pkt[12:].hex(), {}, {"rsvd_0": 0, "rsvd_64": 0})
    body, size = wire.codec("roce.cnp").decode(pkt, 12)
    assert size == 16 and not any(body.values())


# ================================================================================================
# IPv4, IPv6, UDP (underlay; ECN per A.2)
# ================================================================================================

@pytest.mark.parametrize("tos, dscp, ecn", [
    ("b9", 46, 1),  # 101110 01: EF, ECT(1)
    ("03", 0, 3),  # 000000 11: CS0, CE
    ("2a", 10, 2),  # 001010 10: AF11, ECT(0)
])
def test_ipv4(tos, dscp, ecn):
    # 45: version=4 IHL=5; tos = DSCP(6) ECN(2); 0054: total length 84; 1c46: identification
    # 2abc: flags=001 (MF) fragment_offset=0x0ABC (13 bits); 40: TTL 64; 11: protocol UDP
    # b1e6: checksum (not verified by the codec); c0a8010a: 192.168.1.10; 0a0000fd: 10.0.0.253
    check("ipv4", f"45 {tos} 0054 1c46 2abc 40 11 b1e6 c0a8010a 0a0000fd",
          {"version": 4, "ihl": 5, "dscp": dscp, "ecn": ecn, "total_length": 84,
           "identification": 0x1C46, "flags": 1, "fragment_offset": 0x0ABC, "ttl": 64,
           "protocol": 17, "checksum": 0xB1E6, "src": 0xC0A8010A, "dst": 0x0A0000FD},
          {})


def test_ipv6():
    # 66babcde: version=0110, traffic class=0x6B (DSCP 011010 = 26, ECN 11 = CE),
    #           flow label=0xABCDE -> 0110 0110 1011 1010 1011 1100 1101 1110
    # 0030: payload length; 11: next header UDP; 3f: hop limit
    # src 2001:db8::1; dst fe80::1234:5678:9abc:def0
    check("ipv6", "66babcde 0030 11 3f 20010db8000000000000000000000001 "
                  "fe80000000000000123456789abcdef0",
          {"version": 6, "dscp": 26, "ecn": 3, "flow_label": 0xABCDE, "payload_length": 0x30,
           "next_header": 17, "hop_limit": 63, "src": 0x20010DB8000000000000000000000001,
           "dst": 0xFE80000000000000123456789ABCDEF0},
          {})


def test_udp():
    # c1d2: source port (the entropy value, A.1); 12b9: destination port 4793; 0040: length;
    # 9f3e: checksum
    check("udp", "c1d2 12b9 0040 9f3e",
          {"sport": 0xC1D2, "dport": 4793, "length": 0x40, "checksum": 0x9F3E}, {})


# ================================================================================================
# negative tests
# ================================================================================================

@pytest.mark.parametrize("key, size, opts", [
    ("entropy", 4, DEFAULT), ("pds.rud_rod_req", 12, DEFAULT), ("pds.rud_rod_cc_req", 16, DEFAULT),
    ("pds.ack", 12, DEFAULT), ("pds.ack_cc", 32, DEFAULT), ("pds.ack_ccx", 40, DEFAULT),
    ("pds.ack_ccx", 32, XDP2), ("pds.nack", 16, DEFAULT), ("pds.nack_ccx", 32, DEFAULT),
    ("pds.nack_ccx", 24, XDP2), ("pds.control", 16, DEFAULT), ("pds.rudi", 8, DEFAULT),
    ("pds.uud", 4, DEFAULT), ("ses.std", 44, DEFAULT), ("ses.small", 20, DEFAULT),
    ("ses.medium", 32, DEFAULT), ("ses.rsp", 12, DEFAULT), ("ses.rsp_data", 20, DEFAULT),
    ("ses.rsp_data_small", 12, DEFAULT), ("ses.atomic", 4, DEFAULT), ("ses.cswap", 36, DEFAULT),
    ("ses.rendezvous", 24, DEFAULT), ("roce.bth", 12, DEFAULT), ("roce.reth", 16, DEFAULT),
    ("roce.aeth", 4, DEFAULT), ("roce.immdt", 4, DEFAULT), ("roce.ieth", 4, DEFAULT),
    ("roce.atomiceth", 28, DEFAULT), ("roce.atomicacketh", 8, DEFAULT), ("roce.deth", 8, DEFAULT),
    ("roce.cnp", 16, DEFAULT), ("ipv4", 20, DEFAULT), ("ipv6", 40, DEFAULT), ("udp", 8, DEFAULT),
    ("tss", 12, DEFAULT),
])
def test_b16_sizes_and_one_byte_short(key, size, opts):
    # B.16 sizes; an all-zero buffer of exactly that size decodes, one byte less does not
    _, got = wire.codec(key).decode(bytes(size), 0, opts)
    assert got == size
    with pytest.raises(TruncatedError) as ei:
        wire.decode(key, bytes(size - 1), opts=opts)
    assert isinstance(ei.value, DecodeError)


def test_b15_tss_sp1_needs_16_bytes():
    # byte 0 0x0c: SP=1 -> 16 bytes; 15 bytes are short
    with pytest.raises(TruncatedError):
        wire.decode("tss", bytes.fromhex("0c5a6b7c deadbeef 8001 123456789a"))


def test_truncated_is_a_decode_error():
    assert issubclass(TruncatedError, DecodeError)
    with pytest.raises(DecodeError):
        wire.decode("pds.ack", b"")
    with pytest.raises(TruncatedError):
        wire.decode("pds.ack", bytes(12), 1)


@pytest.mark.parametrize("key, fields, name", [
    ("pds.rud_rod_req", {"syn": True, "psn_offset": 0x1000}, "psn_offset"),  # 12 bits
    ("pds.rud_rod_req", {"clear_psn_offset": 0x10000}, "clear_psn_offset"),  # 16 bits
    ("pds.rud_rod_req", {"clear_psn_offset": -0x8001}, "clear_psn_offset"),
    ("pds.rud_rod_req", {"type": 32}, "type"),  # 5 bits
    ("pds.ack", {"cack_psn": 1 << 32}, "cack_psn"),
    ("pds.ack", {"cack_psn": -1}, "cack_psn"),  # unsigned
    ("pds.ack", {"req": 4}, "req"),  # 2 bits
    ("pds.ack_cc", {"cc_type": 0, "rcv_cwnd_pend": 128}, "rcv_cwnd_pend"),  # 7 bits
    ("pds.nack", {"nack_code": 0x100}, "nack_code"),
    ("pds.control", {"ctl_type": 16}, "ctl_type"),  # 4 bits
    ("tss", {"tsc": 1 << 48}, "tsc"),
    ("tss", {"sdi": 1 << 24}, "sdi"),
    ("ses.std", {"pid_on_fep": 0x1000}, "pid_on_fep"),  # 12 bits
    ("ses.std", {"som": False, "payload_length": 0x4000}, "payload_length"),  # 14 bits
    ("ses.small", {"request_length": 0x4000}, "request_length"),  # 14 bits
    ("ses.rsp_data", {"payload_length": 0x4000}, "payload_length"),  # 14 bits
    ("ses.rendezvous", {"pid_on_fep": 0x1000}, "pid_on_fep"),
    ("roce.bth", {"dest_qp": 1 << 24}, "dest_qp"),
    ("roce.bth", {"pad_cnt": 4}, "pad_cnt"),
    ("ipv4", {"dscp": 64}, "dscp"),
])
def test_encode_value_too_wide(key, fields, name):
    with pytest.raises(EncodeError) as ei:
        wire.encode(key, fields)
    assert name in str(ei.value)


def test_problems_unknown_nack_code():
    # 0x5000: NACK; nack_code 0x30 is reserved (B.11: 0x1B-0xFC)
    data = bytes.fromhex("5000 30 00 00000001 0001 0002 00000000")
    c = wire.codec("pds.nack")
    f, _ = c.decode(data)
    assert f["nack_code"] == 0x30
    msgs = c.problems(f)
    assert len(msgs) == 1 and "nack_code" in msgs[0]
    # 0x0C is reserved too (KRFC pre-spec FIRST_ROD_OOO)
    assert any("nack_code" in m for m in c.problems({**f, "nack_code": 0x0C}))
    # known codes and the experimental range are fine
    for code in (0x01, 0x1A, 0xFD, 0xFE, 0xFF):
        assert c.problems({**f, "nack_code": code}) == []


def test_problems_reserved_bits_and_unknown_values():
    # NACK 0x5047: type=10 next_hdr=0, flags 0x40 (bit 9) and 0x07 (bits 13-15) set - both reserved
    c = wire.codec("pds.nack")
    f, _ = c.decode(bytes.fromhex("5047 01 00 00000001 0001 0002 00000000"))
    assert (f["rsvd_9"], f["rsvd_13"]) == (1, 0b111)
    msgs = c.problems(f)
    assert len(msgs) == 2
    assert any("reserved bits 9-" in m for m in msgs) and any("reserved bits 13-" in m for m in msgs)
    # unknown PDS type (15) in a request, unknown next_hdr (7)
    c = wire.codec("pds.rud_rod_req")
    f, _ = c.decode(bytes.fromhex("7b80 0000 00000001 0001 0002"))  # 01111 0111 0000000
    assert (f["type"], f["next_hdr"]) == (15, 7)
    msgs = c.problems(f)
    assert any("type" in m for m in msgs) and any("next_hdr" in m for m in msgs)
    # unknown SES opcode 0x20 and unknown control type 10
    assert any("opcode" in m for m in wire.codec("ses.std").problems({"opcode": 0x20, "som": True}))
    assert any("ctl_type" in m for m in wire.codec("pds.control").problems({"ctl_type": 10}))
