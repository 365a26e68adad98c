"""The native-IP relay (uet.fabric.iprelay FABRIC-V1 to FABRIC-V5; facts A.1 "Native IP", A.3): what it does to
one IP payload, without sockets; the live runs are in tests/io/test_native_ip.py (root)."""

from __future__ import annotations

import random
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uet import native
from uet.fabric.iprelay import IpFabric, ip_hop, with_entropy
from uet.fabric.paths import FWD, REV, FabricConfig, Link, Releases
from uet.wire.build import DSCP_TRIMMED, ECT0, native_ip_frame
from uet.wire.ipencap import to_ip_payload
from uet.wire.trailer import address_bytes

PORT = 4793
V4 = {"S": "127.0.0.20", "F": "127.0.0.2", "B": "127.0.0.3", "R": "127.0.0.1"}
V6 = {"S": "fd00::20", "F": "fd00::2", "B": "fd00::3", "R": "fd00::1"}
BODY = bytes([2 << 3]) + bytes(range(7, 7 + 200))  # a RUD request's first byte, not TSS (B.15)


def _native_ok(payload: bytes, src: str, dst: str) -> bool:
    """A.3, native coverage: the trailer is the CRC-32C of the two addresses and the payload."""
    crc = native.crc32c(address_bytes(src) + address_bytes(dst) + payload[:-4])
    return crc == int.from_bytes(payload[-4:], "big")


def _link(direction: int = FWD, **cfg) -> Link:
    link = Link(FabricConfig(**cfg), 0, direction, Releases(0.0))
    link.start(0.0)
    return link


def _forward(link: Link, hop, data: bytes, tos: int) -> tuple[bytes, int]:
    """What the link sends on for ``data`` (the first release on its heap): bytes and TOS."""
    link.forward(0.0, data, tos, hop, hop.rng, hop.rewrite)
    entry = link.releases.heap[0]
    return entry[3], entry[4]


def _fwd_hop(a: dict, link: Link, ev: int, ev_out: int | None = None):
    hop = ip_hop(None, a["R"], link, random.Random(1), ev_out=ev if ev_out is None else ev_out,
                 in_dst=a["F"], src=a["B"], uet_port=PORT, verify=True)
    hop.src_addr = (a["S"], ev)
    return hop


@pytest.mark.parametrize("a", [V4, V6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("tos", [ECT0, 46 << 2, (10 << 2) | 1])
def test_v3_a3_rewrites_the_addresses_keeps_ev_and_tos_and_recomputes_the_trailer(a, tos):
    link = _link()
    ev = 0xBEEF
    arrived = to_ip_payload(BODY + bytes(4), src=a["S"], dst=a["F"], ev=ev)
    assert _native_ok(arrived, a["S"], a["F"])
    out, out_tos = _forward(link, _fwd_hop(a, link, ev), arrived, tos)
    assert out_tos == tos                                     # DSCP and ECN kept
    assert out[:-4] == arrived[:-4] and out[:2] == ev.to_bytes(2, "big")  # EV and bytes kept
    assert _native_ok(out, a["B"], a["R"])                    # valid for the new addresses
    assert not _native_ok(out, a["S"], a["F"])
    # the IP payload native_ip_frame builds for the hop it leaves on (A.1, A.3)
    assert out == native_ip_frame(BODY, ev, src=a["B"], dst=a["R"], ethernet=False)[-len(out):]
    assert (link.crc_rewritten, link.crc_bad) == (1, 0)


def test_v3_a_trailer_that_does_not_verify_goes_on_unchanged_and_counts_crc_bad():
    link = _link()
    good = to_ip_payload(BODY + bytes(4), src=V4["S"], dst=V4["F"], ev=7)
    bad = good[:-1] + bytes([good[-1] ^ 0x40])
    out, _ = _forward(link, _fwd_hop(V4, link, 7), bad, ECT0)
    assert out == bad
    assert (link.crc_rewritten, link.crc_bad) == (0, 1)


def test_v3_trimming_keeps_the_first_bytes_of_the_ip_payload_and_sets_dscp_11():
    link = _link(trim=1.0, trim_bytes=64)
    arrived = to_ip_payload(BODY + bytes(4), src=V4["S"], dst=V4["F"], ev=9)
    out, tos = _forward(link, _fwd_hop(V4, link, 9), arrived, ECT0)
    assert out == arrived[:64]                                # the entropy header included
    assert tos == (DSCP_TRIMMED << 2) | ECT0
    assert link.trimmed == 1 and link.crc_rewritten == 0


@settings(max_examples=100, deadline=None)
@given(body=st.binary(min_size=1, max_size=200).filter(lambda b: b[0] >> 3 != 1),
       ev=st.integers(0, 0xFFFF), ev2=st.integers(0, 0xFFFF), damage=st.integers(0, 0xFFFFFFFF))
def test_v2_a_remapped_ev_keeps_a_right_trailer_right_and_a_wrong_one_wrong(body, ev, ev2, damage):
    right = to_ip_payload(body + bytes(4), src=V4["S"], dst=V4["F"], ev=ev)
    assert with_entropy(right, ev2) == to_ip_payload(body + bytes(4), src=V4["S"], dst=V4["F"],
                                                     ev=ev2)
    wrong = right[:-4] + (int.from_bytes(right[-4:], "big") ^ damage).to_bytes(4, "big")
    moved = with_entropy(wrong, ev2)
    assert int.from_bytes(moved[-4:], "big") ^ damage == int.from_bytes(
        with_entropy(right, ev2)[-4:], "big")


def test_v2_a_remapped_flow_leaves_with_its_back_ev_and_a_valid_trailer():
    link = _link()
    hop = _fwd_hop(V4, link, 100, ev_out=101)
    arrived = with_entropy(to_ip_payload(BODY + bytes(4), src=V4["S"], dst=V4["F"], ev=100), 101)
    out, _ = _forward(link, hop, arrived, ECT0)  # _on_ip remaps before the link (FABRIC-V2)
    assert out[:2] == (101).to_bytes(2, "big") and _native_ok(out, V4["B"], V4["R"])


def test_v4_an_answer_is_captured_as_it_left_the_receiver():
    """The capture's tap is between relay and receiver: an answer shows R -> B, its EV (the back
    one) and its arriving trailer, although it left towards S with the sender's EV."""
    link = _link(REV)
    hop = ip_hop(None, V4["S"], link, random.Random(1), ev_out=100, in_dst=V4["B"],
                 src=V4["F"], uet_port=PORT, verify=True)
    hop.src_addr = (V4["R"], 101)
    answer = to_ip_payload(BODY + bytes(4), src=V4["R"], dst=V4["B"], ev=101)
    out, tos = _forward(link, hop, with_entropy(answer, 100), 46 << 2)
    assert _native_ok(out, V4["F"], V4["S"]) and out[:2] == (100).to_bytes(2, "big")
    assert hop.as_arrived(out, tos) == answer


@pytest.mark.parametrize("a", [V4, V6], ids=["ipv4", "ipv6"])
def test_v4_the_capture_frame_is_native_ip_frames(a):
    payload = to_ip_payload(BODY + bytes(4), src=a["B"], dst=a["R"], ev=0x1234)
    fake = SimpleNamespace(ip_proto=253)
    frame = IpFabric._frame(fake, a["B"], a["R"], 0x1234, PORT, (5 << 2) | 3, payload, None)
    assert frame == native_ip_frame(BODY, 0x1234, src=a["B"], dst=a["R"], dscp=5, ecn=3)


def test_v5_fabric_encap_ip_with_csig_is_one_line_and_exit_2():
    r = subprocess.run([sys.executable, "-m", "uet", "fabric", "--encap", "ip", "--csig", "nqd",
                        "--to", "127.0.0.1:4793"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == ("uet fabric: error: --csig: the native-IP relay carries "
                                        "no CSIG tags; give --encap udp")
