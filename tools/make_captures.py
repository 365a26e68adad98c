#!/usr/bin/env python3
"""Make the golden captures in ``captures/``: deterministic pcaps and their expected decodes.

Every frame is built from header dicts with :mod:`uet.wire.build` (the same encoder the transport
uses), framed as Ethernet (linktype 1) with the project's fixed, locally administered MACs, fixed
timestamps and payloads from fixed seeds. Each ``X.pcap`` gets a sibling ``X.json``: exactly what
``python -m uet decode --json captures/X.pcap`` prints (JSON Lines). ``captures/README.md`` lists the
files and their frames and is generated too.

    python tools/make_captures.py            # (re)write captures/
    python tools/make_captures.py --check    # exit 1 if captures/ differs from a fresh run
    python tools/make_captures.py --out DIR  # write somewhere else

The frames themselves are described in :func:`capture_sets` (one entry per frame, with the text
that goes into the README).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import struct
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from uet import UET_UDP_PORT  # noqa: E402
from uet.wire import build as B  # noqa: E402
from uet.wire import enums as EN  # noqa: E402
from uet.wire.codec import codec  # noqa: E402

CAPTURES = ROOT / "captures"
TS_BASE = 1_750_000_000  # 2025-06-15T15:06:40Z; the n-th frame of a file is at TS_BASE + (n - 1) ms
LINKTYPE_ETHERNET = 1

# The two ends used throughout: an initiator (entropy = UDP source port) and a target.
INI, TGT = "10.0.0.1", "10.0.0.2"
INI6, TGT6 = "fd00::1", "fd00::2"
EV = 0xC001  # initiator entropy (UDP source port) unless a frame says otherwise
CTRL = B.DSCP_CONTROL


@dataclass
class Frame:
    what: str
    data: bytes


@dataclass
class CaptureSet:
    name: str
    title: str
    frames: list[Frame] = field(default_factory=list)
    #: frame numbers (1-based) made bad on purpose, with the reason (only in bad.pcap)
    bad: dict[int, str] = field(default_factory=dict)

    def add(self, what: str, data: bytes, bad: str | None = None) -> None:
        self.frames.append(Frame(what, data))
        if bad:
            self.bad[len(self.frames)] = bad


# --- frame helpers ---------------------------------------------------------------------------


def req(pds: dict, ses: dict | None = None, ext: dict | None = None, payload: bytes = b"", **kw: Any) -> bytes:
    """Initiator -> target request over UDP (DSCP 0, ECT(0), CRC-32C trailer)."""
    kw.setdefault("src", INI)
    kw.setdefault("dst", TGT)
    kw.setdefault("sport", EV)
    return B.udp_frame(B.uet_bytes(pds, ses, ext, payload), **kw)


def rsp(pds: dict, ses: dict | None = None, ext: dict | None = None, payload: bytes = b"", **kw: Any) -> bytes:
    """Target -> initiator ACK/NACK/control: from port 4793 to the initiator's entropy port,
    DSCP 46 (docs/design-notes.md "Defaults")."""
    kw.setdefault("src", TGT)
    kw.setdefault("dst", INI)
    kw.setdefault("sport", UET_UDP_PORT)
    kw.setdefault("dport", EV)
    kw.setdefault("dscp", CTRL)
    return B.udp_frame(B.uet_bytes(pds, ses, ext, payload), **kw)


def ctl(pds: dict, **kw: Any) -> bytes:
    """Initiator -> target control packet (DSCP 46)."""
    kw.setdefault("dscp", CTRL)
    return req(pds, **kw)


class Payloads:
    """Deterministic payload bytes from a fixed seed."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def __call__(self, n: int) -> bytes:
        return self.rng.randbytes(n)


def ses_std(opcode: int, **f: Any) -> dict:
    d = {"opcode": opcode, "som": 1, "eom": 1, "message_id": 0x0101, "ri_generation": 1,
         "job_id": 0x00ABCD, "pid_on_fep": 0x123, "resource_index": 0x045, "initiator": 0x0A000001,
         "request_length": 0}
    d.update(f)
    return d


def rud(psn: int, nh: int = 3, **f: Any) -> dict:
    d = {"type": 2, "next_hdr": nh, "psn": psn, "spdcid": 0x0011, "dpdcid": 0x0022,
         "clear_psn_offset": -1}
    d.update(f)
    return d


# --- the capture sets ------------------------------------------------------------------------


def uet_pds() -> CaptureSet:
    cs = CaptureSet("uet_pds", "one frame of every PDS type 1-14 (B.1), TSS with and without SSI")
    pay = Payloads(1)
    enc = pay(48)
    icv = pay(16)
    tss0 = {"type": 1, "sp": 0, "an": 1, "sdi": 0x00ABCD, "epoch": 7, "tsc": 0x0000_0001_2345}
    cs.add("TSS (type 1), SP=0: 12-byte header, encrypted PDS/SES/payload, 16-byte ICV",
           B.udp_frame(B.uet_bytes({}, tss=tss0, payload=enc + icv), src=INI, dst=TGT, sport=EV, trailer=False))
    tss1 = dict(tss0, sp=1, an=0, ssi=0x0A000001, epoch=0xFFFF, tsc=0xFFFF_FFFF_FFFF)
    cs.add("TSS (type 1), SP=1: 16-byte header with SSI, maximum epoch and TSC",
           B.udp_frame(B.uet_bytes({}, tss=tss1, payload=enc + icv), src=INI, dst=TGT, sport=EV, trailer=False))
    cs.add("RUD_REQ (2) + SES standard SEND, single packet, AR",
           req(rud(1000, ar=1), ses_std(0x05, request_length=64), payload=pay(64)))
    cs.add("ROD_REQ (3) + SES standard WRITE, RETX, clear_psn_offset -16",
           req(rud(2000, type=3, retx=1, clear_psn_offset=-16),
               ses_std(0x01, memory_key=0x1122334455667788, buffer_offset=0x1000, request_length=32),
               payload=pay(32)))
    cs.add("RUDI_REQ (4) + SES small WRITE (RUDI carries a packet id, no PDC)",
           req({"type": 4, "next_hdr": 1, "pkt_id": 0xDEADBEEF},
               {"opcode": 0x01, "som": 1, "eom": 1, "request_length": 16, "ri_generation": 2,
                "job_id": 0x00ABCD, "pid_on_fep": 0x123, "resource_index": 0x046,
                "buffer_offset": 0x2000}, payload=pay(16)))
    cs.add("RUDI_RESP (5), M flag, + SES response OK",
           rsp({"type": 5, "next_hdr": 4, "m": 1, "pkt_id": 0xDEADBEEF},
               {"opcode": 1, "return_code": 1, "message_id": 0x0102, "ri_generation": 2,
                "job_id": 0x00ABCD, "modified_length": 16}))
    cs.add("UUD_REQ (6) + SES standard DATAGRAM_SEND",
           req({"type": 6, "next_hdr": 3}, ses_std(0x07, request_length=24), payload=pay(24)))
    cs.add("ACK (7): ack_psn_offset -2 (signed), REQ=CLEAR",
           rsp({"type": 7, "req": 1, "ack_psn_offset": -2, "cack_psn": 1005, "spdcid": 0x0022,
                "dpdcid": 0x0011}))
    cs.add("ACK (7), P=1: probe ACK carrying probe_opaque",
           rsp({"type": 7, "p": 1, "probe_opaque": 0xBEEF, "cack_psn": 1005, "spdcid": 0x0022,
                "dpdcid": 0x0011}))
    cs.add("ACK_CC (8), NSCC state, SACK bitmap (bits 0, 1, 5, 63), negative sack_psn_offset, M, RETX",
           rsp({"type": 8, "m": 1, "retx": 1, "ack_psn_offset": 3, "cack_psn": 4_294_967_290,
                "spdcid": 0x0022, "dpdcid": 0x0011, "cc_type": 0, "mpr": 8, "sack_psn_offset": -4,
                "sack_bitmap": (1 << 63) | 0b100011, "service_time": 1234, "restore_cwnd": 1,
                "rcv_cwnd_pend": 64, "rcvd_bytes": 0xABCDEF, "ooo_count": 3}))
    cs.add("ACK_CC (8), credit state (cc_type 1), REQ=CLOSE",
           rsp({"type": 8, "req": 2, "cack_psn": 77, "spdcid": 0x0022, "dpdcid": 0x0011,
                "cc_type": 1, "mpr": 1, "sack_psn_offset": 1, "sack_bitmap": 0, "credit": 0x0F0000,
                "ooo_count": 0}))
    cs.add("ACK_CCX (9): 40 bytes with 16 bytes of opaque CCX state (H.1 #2)",
           rsp({"type": 9, "cack_psn": 500, "spdcid": 0x0022, "dpdcid": 0x0011, "ccx_type": 14,
                "mpr": 4, "sack_psn_offset": 0, "sack_bitmap": 0xF0, "ack_ccx_state": int.from_bytes(pay(16), "big")}))
    cs.add("NACK (10): NO_PKT_BUFFER for PSN 1001, vendor code",
           rsp({"type": 10, "nack_code": 0x07, "vendor_code": 0x5A, "nack_psn": 1001,
                "spdcid": 0x0022, "dpdcid": 0x0011}))
    cs.add("CONTROL (11): CLEAR with AR, payload = PSN to clear",
           ctl({"type": 11, "ctl_type": 2, "ar": 1, "psn": 0, "spdcid": 0x0011, "dpdcid": 0x0022,
                "payload": 1005}))
    cs.add("NACK_CCX (12): 32 bytes with nccx_type and 124 bits of state (H.1 #3)",
           rsp({"type": 12, "nack_code": 0x0B, "nack_psn": 9999, "spdcid": 0x0022, "dpdcid": 0x0011,
                "payload": 0, "nccx_type": 15,
                "nack_ccx_state": int.from_bytes(pay(16), "big") >> 4}))
    cs.add("RUD_CC_REQ (13) + SES standard SEND, ccc_id and credit_target",
           req(rud(3000, type=13, ccc_id=9, credit_target=0x010203), ses_std(0x05, request_length=8),
               payload=pay(8)))
    cs.add("ROD_CC_REQ (14) + SES medium SEND (HD=0)",
           req(rud(4000, type=14, nh=2, ccc_id=200, credit_target=0xFFFFFF),
               {"opcode": 0x05, "som": 1, "eom": 1, "request_length": 40, "ri_generation": 3,
                "job_id": 0x00ABCD, "pid_on_fep": 0x123, "resource_index": 0x045,
                "buffer_offset": 0, "initiator": 0x0A000001, "memory_key": 0x77},
               payload=pay(40)))
    cs.add("RUD_REQ (2) over IPv6 + SES standard SEND",
           req(rud(5000), ses_std(0x05, request_length=12), payload=pay(12), src=INI6, dst=TGT6))
    return cs


def uet_ses() -> CaptureSet:
    cs = CaptureSet("uet_ses", "every SES header (D.2-D.7) and extension (D.5, D.6)")
    pay = Payloads(2)
    psn = iter(range(10_000, 10_100))
    msg = 4096 + 100

    def std(opcode: int, payload: bytes = b"", ext: dict | None = None, **f: Any) -> bytes:
        return req(rud(next(psn)), ses_std(opcode, **f), ext, payload)

    cs.add("standard SEND, SOM=1 EOM=0 (first packet of a message), HD=1 header_data",
           std(0x05, pay(64), hd=1, eom=0, message_id=0x0201, header_data=0xCAFEF00D12345678,
               memory_key=0x10, request_length=msg))
    cs.add("standard SEND, SOM=0 EOM=0: payload_length and message_offset instead of header_data",
           std(0x05, pay(64), som=0, eom=0, message_id=0x0201, payload_length=64, message_offset=64,
               memory_key=0x10, request_length=msg))
    cs.add("standard SEND, SOM=0 EOM=1 (last packet)",
           std(0x05, pay(36), som=0, eom=1, message_id=0x0201, payload_length=36,
               message_offset=msg - 36, memory_key=0x10, request_length=msg))
    cs.add("standard WRITE, DC, REL, memory_key and buffer_offset",
           std(0x01, pay(32), dc=1, rel=1, memory_key=0xFEDCBA9876543210, buffer_offset=0x100,
               request_length=32))
    cs.add("standard READ (no payload)",
           std(0x02, memory_key=0xAB, buffer_offset=0x8000_0000_0000_0000, request_length=1 << 20))
    cs.add("standard TAGGED_SEND: match_bits",
           std(0x09, pay(20), match_bits=0x0123456789ABCDEF, request_length=20))
    cs.add("standard DEFERRABLE_SEND: restart tokens where buffer_offset is",
           std(0x08, pay(20), initiator_restart_token=0x11112222, target_restart_token=0,
               memory_key=0x99, request_length=20))
    cs.add("standard DEFERRABLE_TSEND: restart tokens and match_bits",
           std(0x0B, pay(20), initiator_restart_token=0x33334444, target_restart_token=0x55556666,
               match_bits=0xFFFF_0000_FFFF_0000, request_length=20))
    cs.add("standard DEFERRABLE_RTR: restart tokens where memory_key is",
           std(0x0C, initiator_restart_token=0x33334444, target_restart_token=0x55556666,
               buffer_offset=0, request_length=20))
    cs.add("standard MSG_ERROR, IE",
           std(0x0F, ie=1, memory_key=0, request_length=0))
    cs.add("small request (next_hdr 1): WRITE",
           req(rud(next(psn), nh=1),
               {"opcode": 0x01, "som": 1, "eom": 1, "request_length": 0x3FFF, "ri_generation": 4,
                "job_id": 0xFFFFFF, "pid_on_fep": 0xFFF, "resource_index": 0xFFF,
                "buffer_offset": 0xFFFF_FFFF_FFFF_FFFF}, payload=pay(8)))
    med = {"som": 1, "eom": 1, "ri_generation": 5, "job_id": 0x00ABCD, "pid_on_fep": 0x123,
           "resource_index": 0x045, "initiator": 0x0A000001}
    cs.add("medium request (next_hdr 2): SEND, HD=0 -> buffer_offset",
           req(rud(next(psn), nh=2), dict(med, opcode=0x05, request_length=24, buffer_offset=0x40,
                                           memory_key=0x1234), payload=pay(24)))
    cs.add("medium request: SEND, HD=1 -> header_data",
           req(rud(next(psn), nh=2), dict(med, opcode=0x05, hd=1, request_length=24,
                                           header_data=0x0102030405060708, memory_key=0x1234),
               payload=pay(24)))
    cs.add("medium request: TAGGED_SEND -> match_bits",
           req(rud(next(psn), nh=2), dict(med, opcode=0x09, request_length=24,
                                           match_bits=0xAAAA_BBBB_CCCC_DDDD), payload=pay(24)))
    amo = {"atomic_opcode": 0x02, "atomic_datatype": 0x07, "cacheable": 1}
    cs.add("standard ATOMIC + atomic extension (SUM, UINT64, cacheable)",
           std(0x03, pay(8), amo, memory_key=0x55, buffer_offset=0x40, request_length=8))
    cs.add("standard FETCHING_ATOMIC + atomic extension (MIN, INT32, CPU coherent)",
           std(0x04, pay(4), {"atomic_opcode": 0x00, "atomic_datatype": 0x04, "cpu_coherent": 1},
               memory_key=0x55, request_length=4))
    cs.add("standard ATOMIC + compare-and-swap extension (CSWAP, UINT128)",
           std(0x03, b"", {"atomic_opcode": 0x0D, "atomic_datatype": 0x09,
                           "compare_value": int.from_bytes(pay(16), "big"),
                           "swap_value": int.from_bytes(pay(16), "big")},
               memory_key=0x55, request_length=16))
    cs.add("standard TSEND_ATOMIC + atomic extension (BXOR)",
           std(0x0D, pay(8), {"atomic_opcode": 0x0A, "atomic_datatype": 0x06},
               match_bits=0x42, request_length=8))
    cs.add("standard TSEND_FETCH_ATOMIC + compare-and-swap extension (CSWAP_GT)",
           std(0x0E, b"", {"atomic_opcode": 0x12, "atomic_datatype": 0x05, "compare_value": 1,
                           "swap_value": 2}, match_bits=0x42, request_length=16))
    cs.add("standard ATOMIC with MSWAP: 4-byte atomic extension by default (facts H.2)",
           std(0x03, pay(16), {"atomic_opcode": 0x13, "atomic_datatype": 0x07},
               memory_key=0x55, request_length=16))
    cs.add("medium ATOMIC + atomic extension (LOR, UINT8)",
           req(rud(next(psn), nh=2), dict(med, opcode=0x03, request_length=1, buffer_offset=0,
                                           memory_key=0x66),
               {"atomic_opcode": 0x05, "atomic_datatype": 0x01}, payload=b"\x01"))
    rndv = {"eager_length": 1024, "ri_generation": 9, "pid_on_fep": 0x321, "resource_index": 0x654,
            "read_offset": 0x0000_7F00_0000_0000, "read_match_bits": 0x1357_9BDF_2468_ACE0}
    cs.add("standard RENDEZVOUS_SEND + rendezvous extension (D.5)",
           std(0x06, pay(32), rndv, memory_key=0x77, request_length=1 << 16))
    cs.add("standard RENDEZVOUS_TSEND + rendezvous extension",
           std(0x0A, pay(32), dict(rndv, eager_length=32), match_bits=0x0F0F, request_length=1 << 16))
    ack = {"type": 7, "cack_psn": 10_010, "spdcid": 0x0022, "dpdcid": 0x0011}
    cs.add("ACK + SES response (next_hdr 4): RESPONSE, OK, modified_length",
           rsp(dict(ack, next_hdr=4), {"opcode": 1, "return_code": 1, "message_id": 0x0201,
                                       "ri_generation": 1, "job_id": 0x00ABCD, "modified_length": 4196}))
    cs.add("ACK + SES response: DEFAULT_RESPONSE, NULL (duplicate of a cleared PSN, D.9)",
           rsp(dict(ack, next_hdr=4), {"opcode": 0, "return_code": 0, "job_id": 0x00ABCD}))
    cs.add("ACK + SES response: NO_RESPONSE, overflow list, NO_MATCH",
           rsp(dict(ack, next_hdr=4), {"list": 1, "opcode": 3, "return_code": 0x05,
                                       "message_id": 0x0203, "job_id": 0x00ABCD}))
    cs.add("ACK_CC + SES response with data (next_hdr 5): RESPONSE_W_DATA for a READ",
           rsp({"type": 8, "next_hdr": 5, "cack_psn": 10_004, "spdcid": 0x0022, "dpdcid": 0x0011,
                "mpr": 8, "rcvd_bytes": 100},
               {"opcode": 2, "return_code": 1, "message_id": 0x0301, "job_id": 0x00ABCD,
                "read_request_message_id": 0x0205, "payload_length": 48, "modified_length": 48,
                "message_offset": 0}, payload=pay(48)))
    cs.add("ACK + SES small response with data (next_hdr 6)",
           rsp(dict(ack, next_hdr=6), {"opcode": 2, "return_code": 1, "payload_length": 8,
                                       "job_id": 0x00ABCD, "original_request_psn": 10_004},
               payload=pay(8)))
    cs.add("RUDI_RESP + SES response with data",
           rsp({"type": 5, "next_hdr": 5, "pkt_id": 0x01020304},
               {"opcode": 2, "return_code": 0x17, "message_id": 0x0401, "job_id": 0x00ABCD,
                "payload_length": 0, "modified_length": 0, "message_offset": 0}))
    return cs


def uet_control_nack() -> CaptureSet:
    cs = CaptureSet("uet_control_nack", "every NACK code (B.11) and every control type (B.12)")
    base = {"spdcid": 0x0022, "dpdcid": 0x0011}
    for code, name in EN.NACK_CODE.table.items():
        f = dict(base, type=10, nack_code=code, nack_psn=20_000 + code)
        what = f"NACK {name} (0x{code:02X})"
        if code == 0x17:
            f["payload"] = 0x0002_0000
            what += ", payload = the new start PSN"
        if code in (0x01, 0x02):
            f["m"] = 1
            what += ", M"
        if code == 0x0A:  # a RUDI NACK: NT = 1, packet id, PDCIDs 0 (C.8)
            f = {"type": 10, "nt": 1, "nack_code": code, "pkt_id": 0xDEADBEEF}
            what += ", NT=1 (RUDI): pkt_id, PDCIDs 0"
        cs.add(what, rsp(f))
    cs.add("NACK_CCX (12) TRIMMED with CCX state, RETX",
           rsp(dict(base, type=12, retx=1, nack_code=1, nack_psn=20_001, nccx_type=1,
                    nack_ccx_state=(1 << 123) | 1)))
    payloads = {0: 0, 1: 0x0201, 2: 20_000, 3: 20_000, 4: 0, 5: 0, 6: 20_010, 7: 0x10000, 8: 0x8000,
                9: 0}
    for ct, name in EN.CTL_TYPE.table.items():
        f = {"type": 11, "ctl_type": ct, "psn": 20_100 + ct, "spdcid": 0x0011, "dpdcid": 0x0022,
             "payload": payloads[ct]}
        what = f"CONTROL {name} ({ct})"
        if ct in (1, 4, 5):
            f["ar"] = 1
            what += ", AR"
        if ct == 6:
            f["probe_opaque"] = 0x5A5A
            what += ", probe_opaque"
        if ct == 4:
            f["isrod"] = 1
            what += ", isROD (H.1 #5)"
        if ct == 5:  # the target asks: target -> initiator
            f.update(spdcid=0x0022, dpdcid=0x0011)
            cs.add(what, rsp(f))
            continue
        cs.add(what, ctl(f))
    cs.add("CONTROL ACK_REQ while the PDC is in SYN state: pdc_info + psn_offset instead of DPDCID",
           ctl({"type": 11, "ctl_type": 1, "ar": 1, "syn": 1, "psn": 20_105, "spdcid": 0x0011,
                "use_rsv_pdc": 1, "psn_offset": 5, "payload": 0}))
    return cs


def uet_flows() -> CaptureSet:
    cs = CaptureSet("uet_flows", "a PDC life: SYN exchange, trimming, close; native IP; IPv6; ECN")
    pay = Payloads(4)
    start = 0x0001_0000
    ses = ses_std(0x05, request_length=256)
    cs.add("SYN request: RUD_REQ SYN=1, psn_offset 0 (PSN = start PSN), initiator PDCID 0x0011",
           req({"type": 2, "next_hdr": 3, "syn": 1, "ar": 1, "psn": start, "spdcid": 0x0011,
                "psn_offset": 0, "clear_psn_offset": -1}, ses, payload=pay(256)))
    cs.add("second request still in SYN state: psn_offset 1",
           req({"type": 2, "next_hdr": 3, "syn": 1, "psn": start + 1, "spdcid": 0x0011,
                "psn_offset": 1, "clear_psn_offset": -2}, dict(ses, message_id=0x0102), payload=pay(256)))
    cs.add("target's ACK_CC: its PDCID 0x0022 as spdcid, the initiator's 0x0011 as dpdcid",
           rsp({"type": 8, "cack_psn": start + 1, "ack_psn_offset": 0, "spdcid": 0x0022,
                "dpdcid": 0x0011, "mpr": 8, "sack_psn_offset": 2, "sack_bitmap": 0,
                "rcvd_bytes": 512}))
    cs.add("next request without SYN: dpdcid 0x0022, clear_psn_offset -1 (CLEAR_PSN = start + 1)",
           req(rud(start + 2, clear_psn_offset=-1), dict(ses, message_id=0x0103, request_length=4000),
               payload=pay(4000)))
    big = req(rud(start + 3, clear_psn_offset=-2), dict(ses, message_id=0x0104, request_length=4000),
              payload=pay(4000))
    cs.add("the same kind of request trimmed by the fabric: 256 bytes of UDP payload kept, DSCP 11",
           B.trim(big))
    cs.add("NACK TRIMMED for the trimmed PSN",
           rsp({"type": 10, "nack_code": 0x01, "nack_psn": start + 3, "spdcid": 0x0022, "dpdcid": 0x0011}))
    cs.add("retransmission of the trimmed packet (RETX)",
           req(rud(start + 3, clear_psn_offset=-2, retx=1),
               dict(ses, message_id=0x0104, request_length=4000), payload=big[-4004:-4]))
    cs.add("ACK_CC with SACK: CACK start+3, bits set for start+5 and start+6",
           rsp({"type": 8, "cack_psn": start + 3, "ack_psn_offset": 0, "spdcid": 0x0022,
                "dpdcid": 0x0011, "mpr": 8, "sack_psn_offset": 1, "sack_bitmap": 0b110 << 0,
                "rcvd_bytes": 8512, "ooo_count": 2}))
    cs.add("request with ECN CE set by the fabric",
           req(rud(start + 4), dict(ses, message_id=0x0105, request_length=64), payload=pay(64), ecn=3))
    cs.add("ACK with M=1: the acked packet arrived CE-marked",
           rsp({"type": 7, "m": 1, "cack_psn": start + 6, "ack_psn_offset": -2, "spdcid": 0x0022,
                "dpdcid": 0x0011}))
    cs.add("CONTROL CLOSE with AR on a new PSN",
           ctl({"type": 11, "ctl_type": 4, "ar": 1, "psn": start + 7, "spdcid": 0x0011, "dpdcid": 0x0022}))
    cs.add("ACK of the CLOSE (ACK_PSN = close PSN)",
           rsp({"type": 7, "cack_psn": start + 7, "ack_psn_offset": 0, "spdcid": 0x0022, "dpdcid": 0x0011}))
    cs.add("native IPv4 (protocol 253): entropy header, RUD_REQ + SES standard SEND",
           B.native_ip_frame(B.uet_bytes(rud(7000, ar=1), ses_std(0x05, request_length=32), None, pay(32)),
                             0x1234, src=INI, dst=TGT))
    cs.add("native IPv4: ACK_CC back, entropy echoed",
           B.native_ip_frame(B.uet_bytes({"type": 8, "cack_psn": 7000, "spdcid": 0x0022, "dpdcid": 0x0011,
                                          "mpr": 8, "sack_psn_offset": 1, "sack_bitmap": 1}),
                             0x1234, src=TGT, dst=INI, dscp=CTRL))
    cs.add("native IPv6 (next header 253): entropy header, UUD_REQ + DATAGRAM_SEND",
           B.native_ip_frame(B.uet_bytes({"type": 6, "next_hdr": 3}, ses_std(0x07, request_length=16),
                                         None, pay(16)), 0xFFFF, src=INI6, dst=TGT6))
    cs.add("UDP over IPv6: RUD_REQ + SES small WRITE",
           req(rud(8000, nh=1), {"opcode": 0x01, "som": 1, "eom": 1, "request_length": 8,
                                 "job_id": 0x00ABCD, "pid_on_fep": 0x123, "resource_index": 0x045},
               payload=pay(8), src=INI6, dst=TGT6))
    cs.add("UDP over IPv6: ACK back",
           rsp({"type": 7, "cack_psn": 8000, "spdcid": 0x0022, "dpdcid": 0x0011}, src=TGT6, dst=INI6))
    return cs


def roce() -> CaptureSet:
    cs = CaptureSet("roce", "RoCEv2 (G.1-G.6): every opcode family, CNP, ECN CE, IPv6")
    pay = Payloads(5)
    qp, rqp = 0x000011, 0x000022
    va, rkey = 0x0000_7F00_0000_1000, 0x1234ABCD

    def bth(op: int, psn: int, dest: int = qp, **f: Any) -> dict:
        d = {"opcode": op, "p_key": 0xFFFF, "dest_qp": dest, "psn": psn}
        d.update(f)
        return d

    def f(b: dict, exts: list = [], payload: bytes = b"", **kw: Any) -> bytes:  # noqa: B006
        kw.setdefault("sport", 0xD000)
        return B.roce_frame(b, exts, payload, **kw)

    def back(b: dict, exts: list = [], payload: bytes = b"", **kw: Any) -> bytes:  # noqa: B006
        kw.update(src=TGT, dst=INI)
        return f(b, exts, payload, **kw)

    reth = ("roce.reth", {"virtual_address": va, "r_key": rkey, "dma_length": 3000})
    cs.add("RC SEND_FIRST", f(bth(0x00, 100), [], pay(1024)))
    cs.add("RC SEND_MIDDLE", f(bth(0x01, 101), [], pay(1024)))
    cs.add("RC SEND_LAST with 2 pad bytes, AckReq", f(bth(0x02, 102, ack_req=1), [], pay(22)))
    cs.add("RC SEND_ONLY, solicited event", f(bth(0x04, 103, se=1, ack_req=1), [], pay(64)))
    cs.add("RC SEND_LAST_WITH_IMMEDIATE (ImmDt)",
           f(bth(0x03, 104, ack_req=1), [("roce.immdt", {"immediate": 0xA5A5A5A5})], pay(32)))
    cs.add("RC SEND_ONLY_WITH_IMMEDIATE",
           f(bth(0x05, 105), [("roce.immdt", {"immediate": 0x01020304})], pay(16)))
    cs.add("RC SEND_ONLY_WITH_INVALIDATE (IETH)",
           f(bth(0x17, 106), [("roce.ieth", {"r_key": 0x0BADC0DE})], pay(16)))
    cs.add("RC SEND_LAST_WITH_INVALIDATE", f(bth(0x16, 107), [("roce.ieth", {"r_key": 0x0BADC0DE})], pay(3)))
    cs.add("RC RDMA_WRITE_FIRST with RETH", f(bth(0x06, 200), [reth], pay(1024)))
    cs.add("RC RDMA_WRITE_MIDDLE", f(bth(0x07, 201), [], pay(1024)))
    cs.add("RC RDMA_WRITE_LAST", f(bth(0x08, 202, ack_req=1), [], pay(952)))
    cs.add("RC RDMA_WRITE_ONLY with RETH", f(bth(0x0A, 203), [reth], pay(40)))
    cs.add("RC RDMA_WRITE_ONLY_WITH_IMMEDIATE: RETH + ImmDt",
           f(bth(0x0B, 204), [reth, ("roce.immdt", {"immediate": 7})], pay(40)))
    cs.add("RC RDMA_WRITE_LAST_WITH_IMMEDIATE", f(bth(0x09, 205), [("roce.immdt", {"immediate": 8})], pay(8)))
    cs.add("RC RDMA_READ_REQUEST with RETH", f(bth(0x0C, 300), [reth]))
    aeth = ("roce.aeth", {"syndrome": 0x1F, "msn": 5})
    cs.add("RC RDMA_READ_RESPONSE_FIRST with AETH", back(bth(0x0D, 300, rqp), [aeth], pay(1024)))
    cs.add("RC RDMA_READ_RESPONSE_MIDDLE", back(bth(0x0E, 301, rqp), [], pay(1024)))
    cs.add("RC RDMA_READ_RESPONSE_LAST with AETH", back(bth(0x0F, 302, rqp), [aeth], pay(952)))
    cs.add("RC RDMA_READ_RESPONSE_ONLY with AETH (credits 3)",
           back(bth(0x10, 303, rqp), [("roce.aeth", {"syndrome": 0x03, "msn": 6})], pay(64)))
    cs.add("RC ACKNOWLEDGE: AETH ACK, unlimited credits", back(bth(0x11, 107, rqp), [aeth]))
    cs.add("RC ACKNOWLEDGE: AETH RNR NAK (timer 14)",
           back(bth(0x11, 108, rqp), [("roce.aeth", {"syndrome": 0x2E, "msn": 5})]))
    cs.add("RC ACKNOWLEDGE: AETH NAK PSN sequence error",
           back(bth(0x11, 108, rqp), [("roce.aeth", {"syndrome": 0x60, "msn": 5})]))
    atomic = {"virtual_address": va, "r_key": rkey, "swap_add": 0x0000_0000_0000_0001,
              "compare": 0xFFFF_FFFF_FFFF_FFFF}
    cs.add("RC COMPARE_SWAP with AtomicETH", f(bth(0x13, 400), [("roce.atomiceth", atomic)]))
    cs.add("RC FETCH_ADD with AtomicETH", f(bth(0x14, 401), [("roce.atomiceth", dict(atomic, compare=0))]))
    cs.add("RC ATOMIC_ACKNOWLEDGE: AETH + AtomicAckETH",
           back(bth(0x12, 400, rqp), [aeth, ("roce.atomicacketh", {"original_value": 0x0123456789ABCDEF})]))
    deth = ("roce.deth", {"q_key": 0x80010000, "source_qp": 0x000077})
    cs.add("UD SEND_ONLY with DETH", f(bth(0x64, 500, 0x000123), [deth], pay(256)))
    cs.add("UD SEND_ONLY_WITH_IMMEDIATE: DETH + ImmDt",
           f(bth(0x65, 501, 0x000123), [deth, ("roce.immdt", {"immediate": 0xCAFE})], pay(100)))
    cs.add("UC SEND_ONLY", f(bth(0x24, 600), [], pay(48)))
    cs.add("UC RDMA_WRITE_ONLY with RETH", f(bth(0x2A, 601), [reth], pay(48)))
    cs.add("CNP (opcode 0x81, BECN, 16 reserved bytes; G.5), DSCP 48",
           back(bth(0x81, 0, qp, becn=1), [("roce.cnp", {})], dscp=48))
    cs.add("RC SEND_ONLY with ECN CE in the IP header (the packet a CNP answers)",
           f(bth(0x04, 109, ack_req=1), [], pay(64), ecn=3))
    cs.add("RC SEND_ONLY with FECN set in the BTH", f(bth(0x04, 110, fecn=1), [], pay(64)))
    cs.add("RC SEND_ONLY over IPv6", f(bth(0x04, 111), [], pay(64), src=INI6, dst=TGT6))
    cs.add("CNP over IPv6", back(bth(0x81, 0, qp, becn=1), [("roce.cnp", {})], src=TGT6, dst=INI6))
    return cs


def bad() -> CaptureSet:
    cs = CaptureSet("bad", "frames made bad on purpose: each has a decode problem, except the wrong CRC "
                           "trailer, which the default auto mode reads as no trailer")
    pay = Payloads(6)
    good = req(rud(1), ses_std(0x05, request_length=16), payload=pay(16))
    flipped = good[:-1] + bytes([good[-1] ^ 0xFF])
    cs.add("RUD_REQ with a wrong CRC-32C trailer: auto mode sees no trailer (4 payload bytes more); "
           "--trailer crc reports the mismatch", flipped, bad="bad CRC (reported with --trailer crc)")
    cs.add("PDS type 0 (reserved)", B.udp_frame(bytes(12), src=INI, dst=TGT, sport=EV), bad="reserved type")
    cs.add("PDS type 20 (not assigned)",
           B.udp_frame(bytes([20 << 3, 0]) + bytes(10), src=INI, dst=TGT, sport=EV), bad="unassigned type")
    raw = bytearray(B.uet_bytes(rud(2), ses_std(0x05, request_length=8), None, pay(8)))
    raw[1] |= 0x40  # reserved flag bit 9
    cs.add("RUD_REQ with reserved flag bit 9 set", B.udp_frame(bytes(raw), src=INI, dst=TGT, sport=EV),
           bad="reserved bits")
    cs.add("RUD_REQ truncated after 10 bytes (no trailer)",
           B.udp_frame(B.uet_bytes(rud(3))[:10], src=INI, dst=TGT, sport=EV, trailer=False), bad="truncated PDS")
    raw = bytearray(B.uet_bytes(rud(4)))
    raw[0:2] = ((2 << 11) | (9 << 7)).to_bytes(2, "big")  # next_hdr 9: reserved
    cs.add("RUD_REQ with next_hdr 9 (reserved)", B.udp_frame(bytes(raw) + pay(8), src=INI, dst=TGT, sport=EV),
           bad="reserved next_hdr")
    cs.add("NACK with code 0x0C (reserved)",
           rsp({"type": 10, "nack_code": 0x0C, "nack_psn": 5, "spdcid": 0x22, "dpdcid": 0x11}),
           bad="unknown NACK code")
    cs.add("SES small request without EOM",
           req(rud(6, nh=1), {"opcode": 0x01, "som": 1, "eom": 0, "request_length": 8}, payload=pay(8)),
           bad="SOM/EOM")
    cs.add("DATAGRAM_SEND on a RUD PDC", req(rud(7), ses_std(0x07, request_length=8), payload=pay(8)),
           bad="DATAGRAM_SEND not on UUD")
    cs.add("RUDI request with the M flag", req({"type": 4, "next_hdr": 1, "m": 1, "pkt_id": 1},
                                              {"opcode": 0x01, "som": 1, "eom": 1}), bad="M on RUDI request")
    cs.add("ACK_CC with cc_type 2 (unknown): state shown as ack_cc_state",
           rsp({"type": 8, "cack_psn": 9, "spdcid": 0x22, "dpdcid": 0x11, "cc_type": 2,
                "ack_cc_state": 0x0102030405060708}), bad="unknown cc_type")
    b = B.uet_bytes(rud(10), ses_std(0x06, request_length=1 << 16), None)
    cs.add("RENDEZVOUS_SEND whose rendezvous extension is cut short (10 of 24 bytes)",
           B.udp_frame(b + bytes(10), src=INI, dst=TGT, sport=EV, trailer=False), bad="truncated extension")
    cs.add("empty UDP payload on port 4793", B.udp_frame(b"", src=INI, dst=TGT, sport=EV, trailer=False),
           bad="empty packet")
    cs.add("TSS header cut short: 8 of its 12 bytes, then a 16-byte ICV",
           B.udp_frame(codec("tss").encode({"type": 1, "sdi": 1})[:8] + pay(16), src=INI, dst=TGT, sport=EV,
                       trailer=False), bad="truncated TSS")
    good = B.roce_frame({"opcode": 0x04, "p_key": 0xFFFF, "dest_qp": 0x11, "psn": 1}, [], pay(16))
    cs.add("RoCEv2 SEND_ONLY with a wrong ICRC", good[:-1] + bytes([good[-1] ^ 0x01]), bad="bad ICRC")
    cs.add("RoCEv2 RD SEND_ONLY (opcode 0x44): RDETH/DETH not decoded",
           B.roce_frame({"opcode": 0x44, "p_key": 0xFFFF, "dest_qp": 0x11, "psn": 2}, [], pay(16)),
           bad="RD transport")
    cs.add("RoCEv2 SEND_ONLY whose pad_cnt (3) exceeds the 0 bytes left",
           B.roce_frame({"opcode": 0x04, "p_key": 0xFFFF, "dest_qp": 0x11, "psn": 3, "pad_cnt": 3}, []),
           bad="pad_cnt")
    cs.add("RoCEv2 RDMA_WRITE_FIRST cut inside its RETH",
           _cut_roce(B.roce_frame({"opcode": 0x06, "p_key": 0xFFFF, "dest_qp": 0x11, "psn": 4},
                                  [("roce.reth", {"virtual_address": 1, "r_key": 2, "dma_length": 3})]), 8),
           bad="truncated RETH")
    return cs


def _cut_roce(frame: bytes, keep_after_bth: int) -> bytes:
    """Keep BTH + ``keep_after_bth`` bytes, then a (recomputed) ICRC: a short but checksummed packet."""
    from uet.wire.trailer import roce_icrc_bytes

    ip = bytearray(frame[14:-4])
    ip = ip[:20 + 8 + 12 + keep_after_bth]
    total = len(ip) + 4
    ip[2:4] = total.to_bytes(2, "big")
    ip[24:26] = (total - 20).to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    ip[10:12] = B.ipv4_checksum(bytes(ip[:20])).to_bytes(2, "big")
    return frame[:14] + bytes(ip) + roce_icrc_bytes(bytes(ip))


SETS: tuple[Callable[[], CaptureSet], ...] = (uet_pds, uet_ses, uet_control_nack, uet_flows, roce, bad)


def capture_sets() -> list[CaptureSet]:
    return [make() for make in SETS]


# --- files -----------------------------------------------------------------------------------


def pcap_bytes(frames: list[bytes]) -> bytes:
    """Classic pcap, microsecond timestamps, Ethernet; frame i at TS_BASE + i ms."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
    for i, data in enumerate(frames):
        usec = i * 1000
        out += struct.pack("<IIII", TS_BASE + usec // 1_000_000, usec % 1_000_000, len(data), len(data))
        out += data
    return bytes(out)


def decode_json(pcap: bytes) -> bytes:
    """Exactly what ``python -m uet decode --json FILE`` prints for these pcap bytes."""
    from uet import cli

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "capture.pcap")
        with open(path, "wb") as fh:
            fh.write(pcap)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = cli.main(["decode", "--json", path])
        if rc != 0:
            raise RuntimeError(f"uet decode exited {rc}")
    return buf.getvalue().encode("utf-8")


def readme(sets: list[CaptureSet]) -> bytes:
    lines = [
        "# Golden captures",
        "",
        "Generated by `python tools/make_captures.py` (do not edit by hand); "
        "`python tools/make_captures.py --check` fails when this folder differs from a fresh run.",
        "",
        "Every frame is built from header dicts with `uet.wire.build`, framed as Ethernet (linktype 1) with "
        "the fixed MACs 02:00:00:00:00:01/02, UDP checksum 0 and, for UET without TSS, the CRC-32C trailer "
        f"(docs/design-notes.md \"Defaults\"). Frame *i* of a file is stamped {TS_BASE} s + (*i* - 1) ms; payload bytes come "
        "from fixed seeds. Initiator 10.0.0.1 / fd00::1 (UDP source port = entropy 0xC001), target "
        "10.0.0.2 / fd00::2 (answers from port 4793). Requests use DSCP 0 with ECT(0); ACK, NACK and "
        "control DSCP 46; RoCEv2 DSCP 26 unless a frame says otherwise.",
        "",
        "Each `X.pcap` has a sibling `X.json`: the expected output of `python -m uet decode --json X.pcap` "
        "(JSON Lines, one object per frame). The tests in `tests/wireshark/` check that the files match a "
        "fresh generation, that only the frames of `bad.pcap` have problems, that chosen frames equal "
        "hand-written bytes, and that the generated Wireshark dissector shows the same fields.",
        "",
        "| file | frames | what |",
        "|---|---|---|",
    ]
    for cs in sets:
        lines.append(f"| `{cs.name}.pcap` | {len(cs.frames)} | {cs.title} |")
    for cs in sets:
        lines += ["", f"## `{cs.name}.pcap`", "", cs.title[0].upper() + cs.title[1:] + ".", "",
                  "| # | frame |" + (" made bad on purpose |" if cs.bad else ""),
                  "|---|---|" + ("---|" if cs.bad else "")]
        for i, fr in enumerate(cs.frames, 1):
            cell = fr.what.replace("|", "\\|")
            lines.append(f"| {i} | {cell} |" + (f" {cs.bad.get(i, '')} |" if cs.bad else ""))
    return ("\n".join(lines) + "\n").encode("utf-8")


def build_all() -> dict[str, bytes]:
    """Every file of ``captures/`` by name, built in memory."""
    sets = capture_sets()
    files: dict[str, bytes] = {}
    for cs in sets:
        pcap = pcap_bytes([f.data for f in cs.frames])
        files[f"{cs.name}.pcap"] = pcap
        files[f"{cs.name}.json"] = decode_json(pcap)
    files["README.md"] = readme(sets)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; exit 1 if they differ")
    ap.add_argument("--out", default=str(CAPTURES), help="output folder (default: captures/)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    files = build_all()
    if args.check:
        bad = []
        for name, data in files.items():
            path = out / name
            if not path.exists():
                bad.append(f"{name}: missing")
            elif path.read_bytes() != data:
                bad.append(f"{name}: differs")
        for extra in sorted(p.name for p in out.glob("*") if p.is_file()) if out.exists() else []:
            if extra not in files:
                bad.append(f"{extra}: not made by this script")
        for line in bad:
            print(f"make_captures --check: {line}", file=sys.stderr)
        if not bad:
            print(f"make_captures --check: {len(files)} files up to date", file=sys.stderr)
        return 1 if bad else 0
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    print(f"make_captures: wrote {len(files)} files to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
