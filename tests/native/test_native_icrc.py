"""RoCEv2 ICRC (docs/facts.md G.6) against hardware and Scapy captures."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import _twin

import uet.native as _native

from tests.interop_paths import interop_file

# (not imported from conftest: other test directories have their own conftest)
requires_c = pytest.mark.skipif(
    _native.BACKEND != "c", reason="C backend not in use (BACKEND=%r)" % _native.BACKEND
)

CX4LX = ("roce", "hw_cnp_cx4lx.pcap")  # under tests.interop_paths.INTEROP
SCAPY = ("roce", "roce_scapy.pcap")

FAST = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def _ip_packets(path):
    """(ip_packet_without_icrc, icrc_from_wire) for each Ethernet frame."""
    from scapy.utils import RawPcapReader

    out = []
    for frame, _meta in RawPcapReader(str(interop_file(*path))):
        off = 12
        etype = struct.unpack_from("!H", frame, off)[0]
        while etype in (0x8100, 0x88A8):
            off += 4
            etype = struct.unpack_from("!H", frame, off)[0]
        ip = frame[off + 2 :]
        if etype == 0x0800:
            ip = ip[: struct.unpack_from("!H", ip, 2)[0]]  # drop Ethernet padding
        elif etype == 0x86DD:
            ip = ip[: 40 + struct.unpack_from("!H", ip, 4)[0]]
        else:
            raise AssertionError("not IP: ethertype %#x" % etype)
        out.append((ip[:-4], struct.unpack("<I", ip[-4:])[0]))
    return out


def test_g6_icrc_cx4lx_cnp(impl):
    (pkt, icrc), = _ip_packets(CX4LX)
    assert pkt[0] >> 4 == 4
    assert impl.roce_icrc(pkt) == icrc
    assert impl.roce_icrc(bytearray(pkt)) == icrc
    assert impl.roce_icrc(memoryview(pkt)) == icrc


def test_g6_icrc_scapy_frames(impl):
    frames = _ip_packets(SCAPY)
    assert len(frames) == 7
    verdicts = [impl.roce_icrc(pkt) == icrc for pkt, icrc in frames]
    # frame 6 is frame 2 with its last ICRC byte flipped
    assert verdicts == [True, True, True, True, True, False, True]
    assert frames[5][0] == frames[1][0]
    assert {pkt[0] >> 4 for pkt, _ in frames} == {4, 6}


def test_g6_icrc_seed_is_rxe_constant():
    # rxe starts its raw register at 0xDEBB20E3 = register after 8 x 0xFF
    import zlib

    assert zlib.crc32(b"\xff" * 8) ^ 0xFFFFFFFF == 0xDEBB20E3


def _v4(payload_len=16, ihl=5, seed=0):
    r = random.Random(seed)
    hdr = bytearray(r.randbytes(ihl * 4 + 8 + 12 + payload_len))
    hdr[0] = 0x40 | ihl
    return hdr


def _v6(payload_len=16, seed=0):
    r = random.Random(seed)
    hdr = bytearray(r.randbytes(40 + 8 + 12 + payload_len))
    hdr[0] = 0x60 | (hdr[0] & 0x0F)
    return hdr


@pytest.mark.parametrize("ihl", [5, 6, 15])
def test_g6_icrc_ipv4_masked_fields(impl, ihl):
    pkt = _v4(ihl=ihl, seed=ihl)
    want = impl.roce_icrc(pkt)
    u = ihl * 4
    for pos in (1, 8, 10, 11, u + 6, u + 7, u + 8 + 4):
        p = bytearray(pkt)
        p[pos] ^= 0xA5
        assert impl.roce_icrc(p) == want, pos
    # covered: version/IHL kept, total length, id, flags, protocol, addresses,
    # ports, UDP length, BTH opcode, P_Key, DestQP, PSN, payload
    for pos in (2, 4, 6, 9, 12, 19, u, u + 4, u + 8, u + 8 + 2, u + 8 + 5, u + 8 + 11, len(pkt) - 1):
        p = bytearray(pkt)
        p[pos] ^= 0x01
        assert impl.roce_icrc(p) != want, pos


def test_g6_icrc_ipv6_masked_fields(impl):
    pkt = _v6(seed=3)
    want = impl.roce_icrc(pkt)
    for pos, flip in ((0, 0x0F), (1, 0xFF), (2, 0x55), (3, 0x80), (7, 0x11), (46, 1), (47, 1), (52, 0xC0)):
        p = bytearray(pkt)
        p[pos] ^= flip
        assert impl.roce_icrc(p) == want, pos
    for pos in (4, 5, 6, 8, 39, 40, 44, 48, 53, len(pkt) - 1):
        p = bytearray(pkt)
        p[pos] ^= 0x01
        assert impl.roce_icrc(p) != want, pos


def test_g6_icrc_bad_input(impl):
    with pytest.raises(ValueError):
        impl.roce_icrc(b"")
    with pytest.raises(ValueError):
        impl.roce_icrc(bytes(_v4())[: 20 + 8 + 11])  # one byte short of the BTH
    impl.roce_icrc(bytes(_v4())[: 20 + 8 + 12])  # exactly IP+UDP+BTH is fine
    with pytest.raises(ValueError):
        impl.roce_icrc(bytes(_v4(ihl=15))[: 60 + 8 + 11])
    with pytest.raises(ValueError):
        impl.roce_icrc(bytes(_v6())[: 40 + 8 + 11])
    impl.roce_icrc(bytes(_v6())[: 40 + 8 + 12])
    for first in (0x00, 0x50, 0x70, 0xF5):
        p = _v4()
        p[0] = first
        with pytest.raises(ValueError):
            impl.roce_icrc(p)
    p = _v4()
    p[0] = 0x44  # IHL 4 < 5
    with pytest.raises(ValueError):
        impl.roce_icrc(p)


@FAST
@given(st.binary(max_size=200), st.sampled_from([0x40, 0x45, 0x46, 0x4F, 0x60, 0x6A, 0x10, 0x41]))
def test_g6_icrc_twin_random(data, first):
    # never anything but an int in range or a ValueError
    pkt = bytes([first]) + data
    try:
        v = _twin.roce_icrc(pkt)
    except ValueError:
        return
    assert 0 <= v <= 0xFFFFFFFF


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.booleans(),
    st.integers(0, 255),
    st.integers(1, 255),
    st.integers(0, 2**24 - 1),
    st.integers(0, 2**24 - 1),
    st.integers(0, 0xFFFF),
    st.binary(max_size=300),
    st.integers(0, 2**20 - 1),
)
def test_g6_icrc_against_scapy_contrib_roce(impl, v6, tos, ttl, dqpn, psn, pkey, payload, flow):
    """Independent cross-check: scapy.contrib.roce computes the ICRC itself."""
    from scapy.compat import raw
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.packet import Raw

    if v6:
        ip = IPv6(src="fe80::1", dst="fe80::2", tc=tos, fl=flow, hlim=ttl)
    else:
        ip = IP(src="10.0.0.1", dst="10.0.0.2", tos=tos, ttl=ttl)
    pkt = raw(ip / UDP(sport=0xC000 | (psn & 0x3FFF), dport=4791)
              / BTH(opcode=0x04, dqpn=dqpn, psn=psn, pkey=pkey, fecn=tos & 1, becn=ttl & 1)
              / Raw(payload))
    assert impl.roce_icrc(pkt[:-4]) == struct.unpack("<I", pkt[-4:])[0]


# ---------------------------------------------------------------- C vs twin


def _outcome(f, pkt):
    try:
        return f(pkt)
    except ValueError:
        return "ValueError"


@requires_c
@FAST
@given(st.binary(max_size=300), st.sampled_from([0x40, 0x45, 0x46, 0x4F, 0x60, 0x6A, 0x10, 0x41, 0xF0]))
def test_g6_icrc_c_vs_twin(data, first):
    from uet.native import _cbackend

    pkt = bytes([first]) + data
    assert _outcome(_cbackend.roce_icrc, pkt) == _outcome(_twin.roce_icrc, pkt)
    assert _outcome(_cbackend.roce_icrc, bytearray(pkt)) == _outcome(_twin.roce_icrc, pkt)


@requires_c
def test_g6_icrc_c_vs_twin_every_length():
    from uet.native import _cbackend

    for first in (0x45, 0x4F, 0x60):
        base = bytes([first]) + random.Random(first).randbytes(5000)
        for n in list(range(0, 130)) + [1000, 4096 + 72, 5001]:
            pkt = base[:n]
            assert _outcome(_cbackend.roce_icrc, pkt) == _outcome(_twin.roce_icrc, pkt), (first, n)
