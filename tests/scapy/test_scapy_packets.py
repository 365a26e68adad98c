"""Whole UET packets: Scapy-built frames against uet.wire.build, the CRC-32C trailer (docs/facts.md
A.3 with the coverage of uet/wire/trailer.py), the bindings, and the XDP2 interop captures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap

import uet.scapy as S
from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames
from uet.scapy import (
    UET, UET_Entropy, UET_PDS_ACK, UET_SES_RSP, UET_SES_STD, UET_TSS, UETPacket,
)
from uet.wire.build import DST_MAC, SRC_MAC, extension_for, native_ip_frame, udp_frame, uet_bytes

from tests.interop_paths import interop_file

XDP2 = ("uet_pds.pcap", "uet_ses.pcap")


def mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def names(d: dict | None) -> dict:
    return {S.scapy_name(k): v for k, v in (d or {}).items()}


def scapy_frame(pds, ses=None, ext=None, payload=b"", *, src="10.0.0.1", dst="10.0.0.2", sport=49152,
                dport=4793, dscp=0, ecn=2, tss=None):
    """The frame uet.wire.build.udp_frame makes, built with the Scapy layers (same MACs, IP id 0,
    DF, TTL 64, UDP checksum 0)."""
    v6 = ":" in src
    ip = (IPv6(src=src, dst=dst, tc=dscp << 2 | ecn, hlim=64) if v6
          else IP(src=src, dst=dst, tos=dscp << 2 | ecn, id=0, flags="DF", ttl=64))
    pkt = Ether(dst=mac(DST_MAC), src=mac(SRC_MAC)) / ip / UDP(sport=sport, dport=dport, chksum=0)
    if tss is not None:
        pkt = pkt / UET_TSS(**names(tss))
    if pds:
        pkt = pkt / S.PDS_LAYERS[pds["type"]](**names(pds))
        if ses is not None:
            pkt = pkt / S.SES_LAYERS[pds["next_hdr"]](**names(ses))
            if ext is not None:
                pkt = pkt / S.LAYERS[extension_for(ses["opcode"], ext)](**names(ext))
    if payload:
        pkt = pkt / Raw(payload)
    return pkt


SHAPES = {
    "rud_write_std": ({"type": 2, "next_hdr": 3, "ar": 1, "clear_psn_offset": -2, "psn": 1000, "spdcid": 5,
                       "dpdcid": 6},
                      {"opcode": 0x01, "som": 1, "eom": 1, "message_id": 3, "job_id": 77, "pid_on_fep": 12,
                       "resource_index": 9, "buffer_offset": 0x1000, "initiator": 4, "memory_key": 0xABCDEF,
                       "header_data": 0x1122334455667788, "request_length": 64},
                      None, bytes(range(64))),
    "rod_syn_medium": ({"type": 3, "next_hdr": 2, "syn": 1, "use_rsv_pdc": 1, "psn_offset": 7, "psn": 0xFFFFFFFF,
                        "spdcid": 0x1234},
                       {"opcode": 0x09, "som": 1, "eom": 1, "request_length": 10, "job_id": 1,
                        "match_bits": 0xFEEDFACECAFEBEEF, "initiator": 2}, None, b"0123456789"),
    "ack_cc_rsp": ({"type": 8, "next_hdr": 4, "m": 1, "req": 1, "ack_psn_offset": -5, "cack_psn": 99,
                    "spdcid": 6, "dpdcid": 5, "cc_type": 0, "mpr": 8, "sack_psn_offset": -70000 + 2 ** 16 - 1,
                    "sack_bitmap": 0x8000000000000001, "service_time": 3, "restore_cwnd": 1, "rcv_cwnd_pend": 9,
                    "rcvd_bytes": 4096, "ooo_count": 2},
                   {"opcode": 1, "return_code": 1, "message_id": 3, "job_id": 77, "modified_length": 64},
                   None, b""),
    "ack_credit": ({"type": 8, "next_hdr": 0, "cc_type": 1, "credit": 0x123456, "ooo_count": 1, "cack_psn": 5},
                   None, None, b""),
    "nack": ({"type": 10, "nack_code": 0x17, "nack_psn": 41, "spdcid": 6, "dpdcid": 5, "payload": 40},
             None, None, b""),
    "control_clear": ({"type": 11, "ctl_type": 2, "isrod": 1, "psn": 8, "spdcid": 5, "dpdcid": 6, "payload": 8},
                      None, None, b""),
    "rudi_small_atomic": ({"type": 4, "next_hdr": 1, "pkt_id": 0xDEADBEEF},
                          {"opcode": 0x03, "som": 1, "eom": 1, "request_length": 8, "buffer_offset": 64},
                          {"atomic_opcode": 0x02, "atomic_datatype": 0x07, "cacheable": 1}, bytes(8)),
    "rud_std_cswap": ({"type": 2, "next_hdr": 3, "psn": 3, "spdcid": 1, "dpdcid": 2},
                      {"opcode": 0x04, "som": 1, "eom": 1, "request_length": 8},
                      {"atomic_opcode": 0x0D, "atomic_datatype": 0x06, "compare_value": 5, "swap_value": 6},
                      bytes(8)),
    "rendezvous": ({"type": 13, "next_hdr": 3, "psn": 3, "spdcid": 1, "dpdcid": 2, "ccc_id": 4,
                    "credit_target": 100},
                   {"opcode": 0x06, "som": 1, "request_length": 1 << 20},
                   {"eager_length": 4096, "ri_generation": 1, "pid_on_fep": 2, "resource_index": 3,
                    "read_offset": 4096, "read_match_bits": 9}, bytes(100)),
    "uud_datagram": ({"type": 6, "next_hdr": 3}, {"opcode": 0x07, "som": 1, "eom": 1, "request_length": 3},
                     None, b"abc"),
    "rtr_tokens": ({"type": 14, "next_hdr": 3, "psn": 3, "spdcid": 1, "dpdcid": 2},
                   {"opcode": 0x0C, "som": 0, "initiator_restart_token": 0xA1, "target_restart_token": 0xB2,
                    "payload_length": 0, "message_offset": 12},
                   None, b""),
    "ack_ccx_rsp_data": ({"type": 9, "next_hdr": 5, "cack_psn": 9, "ccx_type": 14, "ack_ccx_state": 1 << 100},
                         {"opcode": 2, "return_code": 1, "read_request_message_id": 4, "payload_length": 16,
                          "modified_length": 16, "message_offset": 0}, None, bytes(16)),
}


def chain(pkt) -> list[type]:
    """Layer classes after UDP / IP (the UET part), Raw excluded."""
    out, layer = [], pkt
    while layer:
        if isinstance(layer, UETPacket):
            out.append(type(layer))
        layer = layer.payload
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("addrs", [("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2")], ids=["ipv4", "ipv6"])
def test_scapy_frame_equals_build(shape, addrs):
    pds, ses, ext, payload = SHAPES[shape]
    dscp = 46 if pds["type"] in (7, 8, 9, 10, 11, 12) else 0
    want = udp_frame(uet_bytes(pds, ses, ext, payload), src=addrs[0], dst=addrs[1], dscp=dscp)
    pkt = scapy_frame(pds, ses, ext, payload, src=addrs[0], dst=addrs[1], dscp=dscp)
    assert bytes(pkt) == want
    # dissect build.py's frame: the same classes, the CRC verifies, the fields come back
    got = Ether(want)
    expected = [S.PDS_LAYERS[pds["type"]]]
    if ses is not None:
        expected.append(S.SES_LAYERS[pds["next_hdr"]])
        if ext is not None:
            expected.append(S.LAYERS[extension_for(ses["opcode"], ext)])
    assert chain(got) == expected
    assert got[UET].crc_ok() is True
    assert got[UET].crc == int.from_bytes(want[-4:], "big")
    assert got[UET].crc_computed() == got[UET].crc
    for k, v in pds.items():
        assert got[UET].getfieldval(S.scapy_name(k)) == v, k
    if ses is not None:
        for k, v in ses.items():
            assert got[expected[1]].getfieldval(k) == v, k
    if payload:
        assert got[Raw].load == payload
    else:
        assert not got.haslayer(Raw)
    assert bytes(got) == want  # a dissected frame rebuilds exactly, trailer included


def test_flipped_byte_fails_the_crc(uet_conf):
    pds, ses, ext, payload = SHAPES["rud_write_std"]
    frame = bytearray(udp_frame(uet_bytes(pds, ses, ext, payload)))
    frame[-10] ^= 0x01  # a payload byte
    bad = bytes(frame)
    # auto (default): the last 4 bytes no longer verify, so no trailer is taken (as `uet decode`)
    got = Ether(bad)
    assert got[UET].crc is False and not got[UET].crc_ok()
    assert got[Raw].load[-4:] == bad[-4:]
    # crc: the trailer is taken and is wrong
    uet_conf["trailer"] = "crc"
    got = Ether(bad)
    assert got[UET].crc_ok() is False
    assert got[UET].crc == int.from_bytes(bad[-4:], "big")
    assert got[Raw].load == bad[-4 - len(payload):-4]
    assert bytes(got) == bad
    # and a flipped header byte, too
    frame = bytearray(udp_frame(uet_bytes(pds, ses, ext, payload)))
    frame[14 + 20 + 8 + 5] ^= 0x80
    assert Ether(bytes(frame))[UET].crc_ok() is False


def test_trailer_mode_none(uet_conf):
    pds, ses, ext, payload = SHAPES["ack_cc_rsp"]
    with_crc = udp_frame(uet_bytes(pds, ses, ext, payload))
    uet_conf["trailer"] = "none"
    got = Ether(with_crc)
    assert got[UET].crc is False and got[UET].crc_ok() is None
    assert got[Raw].load == with_crc[-4:]  # taken as payload
    assert bytes(got) == with_crc
    # building appends no trailer either
    assert bytes(scapy_frame(pds, ses, ext, payload)) == udp_frame(uet_bytes(pds, ses, ext, payload),
                                                                 trailer=False)


def test_per_packet_trailer_control():
    pds, ses, ext, payload = SHAPES["nack"]
    no_trailer = scapy_frame(pds, ses, ext, payload)
    no_trailer[UET].crc = False
    assert bytes(no_trailer) == udp_frame(uet_bytes(pds, ses, ext, payload), trailer=False)
    forced = scapy_frame(pds, ses, ext, payload)
    forced[UET].crc = 0x01020304
    assert bytes(forced)[-4:] == b"\x01\x02\x03\x04"
    assert Ether(bytes(forced))[UET].crc is False  # auto mode: it does not verify


def test_dissected_frame_without_trailer_rebuilds_without_one():
    pds, ses, ext, payload = SHAPES["control_clear"]
    frame = udp_frame(uet_bytes(pds, ses, ext, payload), trailer=False)
    got = Ether(frame)
    assert got[UET].crc is False
    got[UET].psn = 9  # a change makes Scapy rebuild the layer from its fields
    assert bytes(got) == udp_frame(uet_bytes(dict(pds, psn=9), ses, ext, payload), trailer=False)


def test_udp_length_and_checksum_on_build():
    pkt = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1000) / UET_PDS_ACK(cack_psn=1)
    b = IP(bytes(pkt))
    assert b[UDP].len == 8 + 12 + 4  # counts the trailer
    assert b[UDP].dport == 4793  # the binding fills it in
    assert b[UET].crc_ok() is True  # with Scapy's computed checksum too: the CRC takes it as 0


def test_native_ip_entropy_header():
    pds, ses, ext, payload = SHAPES["ack_cc_rsp"]
    want = native_ip_frame(uet_bytes(pds, ses, ext, payload), 0xBEEF)
    pkt = (Ether(dst=mac(DST_MAC), src=mac(SRC_MAC)) / IP(src="10.0.0.1", dst="10.0.0.2", tos=2, id=0,
                                                          flags="DF", ttl=64)
           / UET_Entropy(entropy=0xBEEF) / S.UET_PDS_ACK_CC(**names(pds)) / UET_SES_RSP(**names(ses)))
    assert bytes(pkt) == want
    got = Ether(want)
    assert got[IP].proto == 253
    assert chain(got) == [UET_Entropy, S.UET_PDS_ACK_CC, UET_SES_RSP]
    assert got[UET_Entropy].entropy == 0xBEEF
    assert got[UET].crc_ok() is True
    v6 = native_ip_frame(uet_bytes(pds, ses, ext, payload), 7, src="fd00::1", dst="fd00::2")
    assert Ether(v6)[UET].crc_ok() is True


def test_tss_carries_the_icv_not_a_crc():
    tss = {"type": 1, "sp": 1, "an": 1, "sdi": 0x123456, "ssi": 0x0A000001, "epoch": 2, "tsc": 1 << 40}
    ciphertext, icv = bytes(range(40)), bytes(range(100, 116))
    want = udp_frame(uet_bytes({}, tss=tss, payload=ciphertext + icv), trailer=False)
    pkt = scapy_frame(None, tss=tss, payload=ciphertext)
    pkt[UET_TSS].icv = icv
    assert bytes(pkt) == want
    got = Ether(want)
    assert chain(got) == [UET_TSS]
    assert got[UET_TSS].icv == icv and got[Raw].load == ciphertext
    assert got[UET_TSS].ssi == 0x0A000001 and got[UET_TSS].tsc == 1 << 40
    assert got[UET_TSS].crc_ok() is None
    assert bytes(got) == want


def test_acks_from_port_4793_to_an_entropy_port():
    frame = udp_frame(uet_bytes({"type": 7, "cack_psn": 3}), sport=4793, dport=50123)
    got = Ether(frame)
    assert type(got[UDP].payload) is UET_PDS_ACK and got[UET].crc_ok() is True


def test_bind_uet_port(uet_conf):
    frame = udp_frame(uet_bytes({"type": 7, "cack_psn": 3}), dport=49150, sport=50000)
    assert not Ether(frame).haslayer(UET)
    S.bind_uet_port(49150)
    assert uet_conf["port"] == 49150
    assert Ether(frame)[UET].crc_ok() is True
    assert (UDP() / UET_PDS_ACK()).dport == 49150
    assert not Ether(udp_frame(uet_bytes({"type": 7}), sport=50000)).haslayer(UET)  # 4793 released
    S.bind_uet_port(4793, keep_old=True)
    assert Ether(frame).haslayer(UET) and Ether(udp_frame(uet_bytes({"type": 7}), sport=50000)).haslayer(UET)
    S.configure(port=4793)
    assert not Ether(frame).haslayer(UET)


def test_configure_checks_mode():
    with pytest.raises(ValueError):
        S.configure(trailer="sometimes")


@settings(max_examples=150, deadline=None)
@given(body=st.binary(min_size=0, max_size=120), mode=st.sampled_from(S.TRAILER_MODES),
       trailer=st.booleans())
def test_random_uet_payloads_dissect_and_rebuild(body, mode, trailer):
    S.configure(trailer=mode)
    try:
        frame = udp_frame(body, trailer=trailer)
        got = Ether(frame)  # must not raise
        assert bytes(got) == frame
        got.show(dump=True)
    finally:
        S.configure(trailer="auto")


# --- the XDP2 interop captures ------------------------------------------------------------------


def _expected(obj: dict) -> list[type]:
    """The layer classes that `uet decode` says the frame holds (an extension header with no bytes
    at all is not a Scapy layer)."""
    uet = obj["uet"]
    out = [S.PDS_LAYERS[uet["pds"]["type"]]]
    ses = uet.get("ses")
    if ses is not None:
        out.append(S.SES_LAYERS[uet["pds"]["next_hdr"]])
        for ext in ("atomic", "cswap", "rendezvous"):
            if ses.get(ext):
                out.append(S.LAYERS[f"ses.{ext}"])
    return out


@pytest.mark.parametrize("name", XDP2)
def test_xdp2_captures(name):
    path = interop_file("xdp2", name)
    pkts = rdpcap(str(path))
    frames = list(read_frames(str(path)))
    assert len(pkts) == len(frames) > 0
    for n, (pkt, (linktype, raw, _ts)) in enumerate(zip(pkts, frames), 1):
        obj = decode_frame(linktype, raw, n).obj
        assert chain(pkt) == _expected(obj), n
        assert pkt[UET].crc is False  # the XDP2 samples carry no trailer
        # field values: what uet decode shows for each header (reserved fields aside)
        pds = pkt[UET].schema_values()
        for k, v in obj["uet"]["pds"].items():
            if k in pds:
                assert pds[k] == v, (n, k)
        if "ses" in obj["uet"]:
            layer = pkt[S.SES_LAYERS[obj["uet"]["pds"]["next_hdr"]]]
            ses = layer.schema_values()
            for k, v in obj["uet"]["ses"].items():
                if k in ses and (not layer.uet_truncated or k in layer.fields):
                    assert ses[k] == v, (n, k)
        assert bytes(pkt) == raw


def test_xdp2_ses_frames_by_opcode():
    """uet_ses.pcap: the SES header and extension chosen per frame (atomic vs compare-swap by the
    AMO opcode byte, rendezvous by the opcode)."""
    pkts = rdpcap(str(interop_file("xdp2", "uet_ses.pcap")))
    kinds = [tuple(c.__name__ for c in chain(p)[1:]) for p in pkts]
    assert kinds[4] == ("UET_SES_STD", "UET_SES_ATOMIC")
    assert kinds[5] == ("UET_SES_STD", "UET_SES_CSWAP")
    assert kinds[7] == ("UET_SES_MEDIUM", "UET_SES_ATOMIC")
    assert kinds[11] == ("UET_SES_SMALL", "UET_SES_CSWAP")
    assert kinds[14] == ("UET_SES_RSP_DATA_SMALL",)
    assert pkts[3][UET_SES_STD].opcode == 0x0C  # DEFERRABLE_RTR: restart tokens at the key position
    assert pkts[3][UET_SES_STD].initiator_restart_token is not None
