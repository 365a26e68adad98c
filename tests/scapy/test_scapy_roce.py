"""RoCEv2: scapy.contrib.roce (BTH with its ICRC, AETH) against the project's schema, codecs and
native ICRC (docs/design-notes.md principle 4: an independent cross-check), and the generated extension
headers bound onto Scapy's BTH by opcode (docs/facts.md G.3, G.4, G.6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap

import uet.scapy as S
from uet import native
from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames
from uet.scapy import DETH, IETH, RETH, AtomicAckETH, AtomicETH, ImmDt
from uet.wire import codec
from uet.wire import roce_headers as R
from uet.wire.build import DST_MAC, SRC_MAC, roce_frame
from uet.wire.enums import ROCE_OPCODE
from uet.wire.trailer import roce_icrc_bytes

from tests.interop_paths import interop_file

DECODABLE = sorted(op for op in ROCE_OPCODE.table if R.extension_headers(op) is not None)


def _bth_fields():
    return st.fixed_dictionaries({
        "opcode": st.integers(0, 255), "solicited": st.integers(0, 1), "migreq": st.integers(0, 1),
        "padcount": st.integers(0, 3), "version": st.integers(0, 15), "pkey": st.integers(0, 0xFFFF),
        "fecn": st.integers(0, 1), "becn": st.integers(0, 1), "resv6": st.integers(0, 63),
        "dqpn": st.integers(0, (1 << 24) - 1), "ackreq": st.integers(0, 1), "resv7": st.integers(0, 127),
        "psn": st.integers(0, (1 << 24) - 1),
    })


@settings(max_examples=200, deadline=None)
@given(f=_bth_fields())
def test_bth_against_schema(f):
    ours = {S.BTH_FIELD_NAMES[k]: v for k, v in f.items()}
    wire = codec("roce.bth").encode(ours)
    assert bytes(BTH(icrc=0, **f))[:12] == wire
    assert codec("roce.bth").decode(wire)[0] == ours  # flags: True == 1
    theirs = BTH(wire + b"\0\0\0\0")
    assert {S.BTH_FIELD_NAMES[k]: theirs.getfieldval(k) for k in f} == ours


@settings(max_examples=100, deadline=None)
@given(syndrome=st.integers(0, 255), msn=st.integers(0, (1 << 24) - 1))
def test_aeth_against_schema(syndrome, msn):
    wire = codec("roce.aeth").encode({"syndrome": syndrome, "msn": msn})
    assert bytes(AETH(syndrome=syndrome, msn=msn)) == wire
    assert AETH(wire).msn == msn


def _exts_for(opcode: int, data) -> list:
    layers = []
    for h in R.extension_headers(opcode) or ():
        if h is R.CNP:
            layers.append(CNPPadding())
            continue
        cls = S.ROCE_LAYERS[h.key]
        vals = {}
        for f in h.all_fields():
            if not f.reserved:
                vals[f.name] = data.draw(st.integers(0, (1 << f.width) - 1), label=f"{h.key}.{f.name}")
        if cls is AETH:
            layers.append(AETH(**vals))
        else:
            layers.append(cls(**vals))
    return layers


@settings(max_examples=120, deadline=None)
@given(data=st.data(), v6=st.booleans(), opcode=st.sampled_from(DECODABLE),
       payload=st.binary(max_size=64), tos=st.integers(0, 255), ttl=st.integers(1, 255),
       fecn=st.integers(0, 1), becn=st.integers(0, 1), resv6=st.integers(0, 63), flow=st.integers(0, 0xFFFFF))
def test_scapy_icrc_equals_native(data, v6, opcode, payload, tos, ttl, fecn, becn, resv6, flow):
    """Scapy's BTH ICRC over whole packets (every field it masks randomised) equals
    uet.native.roce_icrc over the same bytes, for IPv4 and IPv6 (G.6)."""
    ip = (IPv6(src="fd00::1", dst="fd00::2", tc=tos, hlim=ttl, fl=flow) if v6
          else IP(src="10.0.0.1", dst="10.0.0.2", tos=tos, ttl=ttl))
    bth = BTH(opcode=opcode, dqpn=data.draw(st.integers(0, (1 << 24) - 1)), psn=data.draw(st.integers(0, 99)),
              fecn=fecn, becn=becn, resv6=resv6)
    pkt = ip / UDP(sport=49152, dport=4791) / bth
    for ext in _exts_for(opcode, data):
        pkt = pkt / ext
    if payload:
        pkt = pkt / Raw(payload)
    wire = bytes(pkt)
    assert wire[-4:] == roce_icrc_bytes(wire[:-4])
    assert native.roce_icrc(wire[:-4]) == int.from_bytes(wire[-4:], "little")
    # and it dissects back into the same layers, ICRC kept out of the payload
    back = (IPv6 if v6 else IP)(wire)
    assert back[BTH].icrc == int.from_bytes(wire[-4:], "big")  # Scapy shows it big-endian
    want = [type(x) for x in _exts_for(opcode, data)]
    got, layer = [], back[BTH].payload
    while layer and not isinstance(layer, Raw):
        got.append(type(layer))
        layer = layer.payload
    assert got == want
    if payload:
        assert back[Raw].load == payload


@pytest.mark.parametrize("opcode", DECODABLE)
def test_every_opcode_chains_the_schema_extensions(opcode):
    """BTH -> extension headers in the order of extension_headers(opcode), for RC, UC and UD."""
    exts = R.extension_headers(opcode)
    body = b"".join(codec(h.key).encode({}) for h in exts) + b"PAYL"
    wire = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=4791) / BTH(opcode=opcode) / Raw(body))
    pkt = IP(wire)
    got, layer = [], pkt[BTH].payload
    while layer and not isinstance(layer, Raw):
        got.append(type(layer))
        layer = layer.payload
    assert got == [S.ROCE_LAYERS[h.key] for h in exts]
    if opcode != R.CNP_OPCODE:
        assert pkt[Raw].load == b"PAYL"


def test_generated_headers_match_codec_and_build():
    """A Scapy-built RoCEv2 frame with RETH + ImmDt equals uet.wire.build.roce_frame (4-byte payload,
    so no pad)."""
    reth = {"virtual_address": 0x7F0011223344, "r_key": 0x1234, "dma_length": 4096}
    imm = {"immediate": 0xCAFEBABE}
    bth = {"opcode": 0x0B, "p_key": 0xFFFF, "dest_qp": 17, "psn": 5, "ack_req": 1}
    want = roce_frame(bth, [("roce.reth", reth), ("roce.immdt", imm)], b"abcd")
    pkt = (Ether(dst=":".join(f"{b:02x}" for b in DST_MAC), src=":".join(f"{b:02x}" for b in SRC_MAC))
           / IP(src="10.0.0.1", dst="10.0.0.2", tos=26 << 2 | 2, id=0, flags="DF", ttl=64)
           / UDP(sport=49152, dport=4791, chksum=0) / BTH(opcode=0x0B, dqpn=17, psn=5, ackreq=1)
           / RETH(**reth) / ImmDt(**imm) / Raw(b"abcd"))
    assert bytes(pkt) == want
    got = Ether(want)
    assert got[RETH].fields == reth and got[ImmDt].immediate == imm["immediate"]


def test_top_down_opcodes():
    assert (BTH() / RETH()).opcode == 0x0A
    assert (BTH() / ImmDt()).opcode == 0x05
    assert (BTH() / IETH()).opcode == 0x17
    assert (BTH() / AtomicETH()).opcode == 0x14
    assert (BTH() / DETH()).opcode == 0x64


def test_atomic_acknowledge_aeth_then_atomicacketh():
    wire = bytes(IP() / UDP(sport=1, dport=4791) / BTH(opcode=0x12) / AETH(msn=1) / AtomicAckETH(original_value=7))
    pkt = IP(wire)
    assert pkt[AtomicAckETH].original_value == 7
    # AETH's other uses are Scapy's as before: READ RESPONSE data stays Raw
    wire = bytes(IP() / UDP(sport=1, dport=4791) / BTH(opcode=0x10) / AETH() / Raw(bytes(8)))
    assert IP(wire)[Raw].load == bytes(8) and not IP(wire).haslayer(AtomicAckETH)


def test_roce_scapy_pcap_fields_match_uet_decode():
    pcap = interop_file("roce", "roce_scapy.pcap")
    pkts = rdpcap(str(pcap))
    frames = list(read_frames(str(pcap)))
    assert len(pkts) == len(frames) == 7
    for n, (pkt, (linktype, raw, _ts)) in enumerate(zip(pkts, frames), 1):
        roce = decode_frame(linktype, raw, n).obj["roce"]
        bth = {S.BTH_FIELD_NAMES[k]: pkt[BTH].getfieldval(k) for k in S.BTH_FIELD_NAMES}
        for k, v in roce["bth"].items():
            if k in bth:
                assert bth[k] == v, (n, k)
        assert pkt[BTH].icrc == int.from_bytes(raw[-4:], "big")
        assert (roce_icrc_bytes(bytes(pkt[IP if pkt.haslayer(IP) else IPv6])[:-4]) == raw[-4:]) == roce["icrc"]["ok"]
        for key in ("reth", "aeth"):
            if key in roce:
                layer = pkt[S.ROCE_LAYERS[f"roce.{key}"]]
                for k, v in roce[key].items():
                    if k in layer.fields:
                        assert layer.getfieldval(k) == v, (n, k)
    # frame 1: RDMA WRITE FIRST with the generated RETH
    assert type(pkts[0][BTH].payload) is RETH
    assert pkts[0][RETH].fields == {"virtual_address": 139637976731648, "r_key": 305441741, "dma_length": 3000}
    assert len(pkts[0][Raw].load) == 1024


def test_hw_cnp_capture():
    pkt = rdpcap(str(interop_file("roce", "hw_cnp_cx4lx.pcap")))[0]
    assert pkt[BTH].opcode == R.CNP_OPCODE and pkt.haslayer(CNPPadding)
