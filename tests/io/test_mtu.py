"""uet.mtu: the payload per packet that fits a link (facts A.1: the reference provider's 1024,
2048, 4096, 8192, the largest whose whole datagram fits), the route's MTU, and DF on sockets."""

from __future__ import annotations

import socket

import pytest

from uet import mtu as M
from uet.io.sockets import udp_socket


def test_a1_overhead_is_the_schemas_worst_case():
    # IP 20, UDP 8, RUD/ROD CC request 16 (B.6), standard SES 44 (D.3) + compare-and-swap 36
    # (D.6), CRC-32C trailer 4 (A.3)
    assert M.packet_overhead() == 20 + 8 + 16 + 44 + 36 + 4 == 128
    assert M.packet_overhead(ipv6=True) == 148
    # TSS: header with SSI 16 (B.15) and ICV 16 (F) in the trailer's place; CSIG tag 4 (E.4)
    assert M.packet_overhead(tss=True) == 128 - 4 + 16 + 16
    assert M.packet_overhead(ipv6=True, tss=True, csig=True) == 148 - 4 + 32 + 4 == 180


@pytest.mark.parametrize("link, v6, want", [
    (1500, False, 1024), (1500, True, 1024), (9000, False, 8192), (9000, True, 8192),
    (65536, False, 8192), (4096 + 128, False, 4096), (4096 + 127, False, 2048),
    (2048 + 148, True, 2048), (1280, True, 1024), (1400, False, 1024)])
def test_a1_payload_for_mtu(link, v6, want):
    assert M.payload_for_mtu(link, ipv6=v6) == want


def test_a1_ipv6_minimum_mtu_fits_1024_even_with_tss_and_csig():
    assert M.payload_for_mtu(1280, ipv6=True, tss=True, csig=True) == 1024


def test_a1_a_link_too_small_for_1024_is_one_clear_error():
    with pytest.raises(M.MtuError) as e:
        M.payload_for_mtu(576)
    msg = str(e.value)
    assert "\n" not in msg and "576" in msg and "--mtu" in msg and "448" in msg


def test_route_mtu_of_loopback_and_its_default_payload():
    assert M.route_mtu("127.0.0.1") >= 16384
    assert M.default_payload(peer="127.0.0.1")[0] == 8192
    assert M.default_payload(bind="127.0.0.1")[0] == 8192
    # a wildcard receiver takes the largest interface that is up (loopback's 65536 here)
    assert M.local_mtu("0.0.0.0") == max(m for _, m in M.interfaces())


def test_dont_fragment_is_set_on_every_endpoint_socket():
    s = udp_socket("127.0.0.1", 0)
    try:
        assert s.getsockopt(socket.IPPROTO_IP, M.IP_MTU_DISCOVER) == M.IP_PMTUDISC_DO
    finally:
        s.close()


def test_a1_df_on_ipv6_loopback_refuses_what_would_fragment():
    """IPv6 loopback (MTU 65536) takes UDP payloads up to 65488 whole; a longer one leaves in
    fragments from a plain socket, and fails with EMSGSIZE from ours (IPV6_DONTFRAG)."""
    ours = udp_socket("::1", 0)
    rx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    plain = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        rx.bind(("::1", 0))
        dest = rx.getsockname()[:2]
        assert ours.sendto(bytes(65536 - 48), dest) == 65488
        assert plain.sendto(bytes(65500), dest) == 65500  # fragmented: what A.1 forbids
        with pytest.raises(OSError) as e:
            ours.sendto(bytes(65500), dest)
        assert e.value.errno == M.EMSGSIZE
    finally:
        for s in (ours, rx, plain):
            s.close()


def test_local_mtu_is_the_mtu_of_the_interface_that_holds_the_address():
    up = dict(M.interfaces())
    pairs = [(n, a) for n, a in M.interface_addresses() if n in up]
    assert ("lo", "127.0.0.1") in pairs
    for name, addr in pairs:
        assert M.local_mtu(addr) == up[name]
    assert M.local_mtu("198.51.100.254") is None  # TEST-NET-2: no interface holds it


def test_too_big_line_names_the_mtu_the_option_and_what_fits():
    line = M.too_big_line(4228, "127.0.0.1", payload=4096)
    assert "\n" not in line
    assert f"MTU {M.route_mtu('127.0.0.1')}" in line and "--mtu 4096" in line
    assert "8192 fits" in line and "4256 bytes" in line  # + IPv4 and UDP headers
