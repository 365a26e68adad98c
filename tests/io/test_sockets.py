"""uet.io.sockets: address parsing and the per-packet TOS / receive metadata plumbing."""

from __future__ import annotations

import socket

import pytest

from uet.io import sockets as S


@pytest.mark.parametrize("text, expect", [
    ("127.0.0.1:4793", ("127.0.0.1", 4793)),
    ("0.0.0.0:0", ("0.0.0.0", 0)),
    (":5000", ("0.0.0.0", 5000)),
    ("10.1.2.3", ("10.1.2.3", 4793)),
    ("[::1]:9000", ("::1", 9000)),
    ("[::]:4793", ("::", 4793)),
    ("::1", ("::1", 4793)),
    ("localhost:7", ("127.0.0.1", 7)),
])
def test_parse_hostport(text, expect):
    assert S.parse_hostport(text) == expect


@pytest.mark.parametrize("bad", ["127.0.0.1:99999", "127.0.0.1:x"])
def test_parse_hostport_rejects(bad):
    with pytest.raises(ValueError):
        S.parse_hostport(bad)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
@pytest.mark.parametrize("tos", [0x02, 46 << 2, 11 << 2 | 3])
def test_tos_per_datagram_is_seen_by_the_receiver(host, tos):
    """A.2: the TOS control message on sendmsg sets DSCP + ECN of one datagram, and
    IP_RECVTOS / IPV6_RECVTCLASS shows it on receive (sockets.udp_socket sets both up)."""
    rx = S.udp_socket(host, 0)
    tx = S.udp_socket(host, 0, tos=0)
    try:
        tx.sendmsg([b"x"], [S.tos_cmsg(tx.family, tos)], 0, rx.getsockname()[:2])
        rx.settimeout(2)
        rx.setblocking(True)
        _d, anc, _f, _a = rx.recvmsg(100, S.ANC_SIZE)
        got, dst = S.parse_anc(anc, rx.family)
        assert got == tos and dst is None
    finally:
        rx.close()
        tx.close()


def test_wildcard_socket_reports_destination_address():
    rx = S.udp_socket("0.0.0.0", 0)
    tx = S.udp_socket("127.0.0.1", 0)
    try:
        tx.sendto(b"x", ("127.0.0.3", rx.getsockname()[1]))
        rx.setblocking(True)
        rx.settimeout(2)
        _d, anc, _f, addr = rx.recvmsg(100, S.ANC_SIZE)
        tos, dst = S.parse_anc(anc, socket.AF_INET)
        assert dst == "127.0.0.3" and addr[0] == "127.0.0.1"
    finally:
        rx.close()
        tx.close()


def test_zero_checksum_options_are_set():
    s4 = S.udp_socket("127.0.0.1", 0)
    s6 = S.udp_socket("::1", 0)
    try:
        assert s4.getsockopt(socket.SOL_SOCKET, S.SO_NO_CHECK) == 1
        assert s6.getsockopt(S.SOL_UDP, S.UDP_NO_CHECK6_TX) == 1
        assert s6.getsockopt(S.SOL_UDP, S.UDP_NO_CHECK6_RX) == 1
        assert s6.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 1
    finally:
        s4.close()
        s6.close()
