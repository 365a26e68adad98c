"""uet.wire.build.trim and ipv4_checksum: what a trimming switch does to a frame (C.6, the
project's defaults: keep 256 bytes of UDP payload, DSCP 11), checked field by field against the
definitions (RFC 791 lengths, RFC 1071 checksum), for frames of any size and header length."""

from __future__ import annotations

from hypothesis import given, strategies as st

from uet.wire.build import ipv4_checksum, trim, udp_frame
from uet.wire.enums import DSCP_TRIMMED


def _rfc1071(header: bytes) -> int:
    """The one's complement of the one's complement sum of the 16-bit words, as written."""
    s = 0
    for i in range(0, len(header) - 1, 2):
        s += (header[i] << 8) | header[i + 1]
    if len(header) & 1:
        s += header[-1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@given(st.binary(min_size=0, max_size=61))
def test_ipv4_checksum_is_rfc1071s(header):
    assert ipv4_checksum(header) == _rfc1071(header)


@given(payload=st.binary(max_size=1200), keep=st.integers(0, 600), ecn=st.integers(0, 3),
       dscp=st.integers(0, 63), sport=st.integers(0, 65535))
def test_a_trimmed_frame_keeps_its_head_and_fixes_its_fields(payload, keep, ecn, dscp, sport):
    frame = udp_frame(payload, src="10.1.2.3", dst="10.4.5.6", sport=sport, dscp=dscp, ecn=ecn)
    got = trim(frame, keep)
    udp_payload = frame[42:]
    assert got[:14] == frame[:14] and got[42:] == udp_payload[:keep]
    ip = got[14:34]
    assert ip[1] == (DSCP_TRIMMED << 2) | ecn                       # DSCP 11, ECN kept
    assert int.from_bytes(ip[2:4], "big") == len(got) - 14            # IP total length
    assert int.from_bytes(got[38:40], "big") == len(got) - 34         # UDP length
    assert ipv4_checksum(ip) == 0 and ip[4:10] == frame[18:24] and ip[12:] == frame[26:34]
    assert got[34:38] == frame[34:38] and got[40:42] == frame[40:42]  # ports, UDP checksum
