"""The CRC-32C trailer at DEFAULT preferences (trailer auto, check_crc off), in real tshark.

A.3: a packet without TSS ends with a CRC-32C trailer or with nothing, as its sender is set up
(``uet`` sends one, XDP2 none). `uet decode` (auto) finds a trailer exactly when the last 4 bytes
verify. The plugin verifies the first 8 packets of each source IP address the same way, then gives
that source's later packets the verdict its first 8 agreed on without computing a CRC (marked
``crc.learned``); a source whose first 8 disagree is verified on every packet. So every capture
decodes as `uet decode` does at default preferences: payload_len and trailer presence alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import (  # noqa: E402
    CAPTURES, INTEROP, NEEDS_TSHARK, compare, lua_file, plugin_name, run_tshark, stderr_problems,
    tshark_proc, uet_decode_json,
)

pytestmark = [pytest.mark.tshark, NEEDS_TSHARK]

__all__ = ["lua_file"]  # the fixture, imported from wshelpers

#: the number of packets of a source that are verified before its verdict is learned (LEARN_PACKETS)
K = 8
#: Wireshark's checksum status values (proto_checksum_vals)
GOOD, UNVERIFIED = 1, 2

FILES = sorted(CAPTURES.glob("*.pcap")) + sorted(INTEROP.glob("*/*.pcap"))
#: Frames tshark cannot show as UET (test_wireshark_tshark.NOT_DISSECTED: an empty UDP payload)
NOT_DISSECTED = {("bad.pcap", 13)}


def _check_default(pcap: Path, lua: Path) -> dict[str, list[int]]:
    """Every frame of ``pcap`` at default preferences shows what ``uet decode`` (auto) says; the
    frames whose trailer presence was learned show no crc.ok (not computed) and, with a trailer, the
    status Unverified; the computed ones Good. Returns the frame numbers learned / computed."""
    pn = plugin_name()
    run = run_tshark(pcap, [lua])
    assert run.returncode == 0, run.stderr
    assert stderr_problems(run.stderr) == [], run.stderr
    assert "Lua Error" not in run.pdml and "_ws.lua.error" not in run.pdml
    objs = uet_decode_json(pcap)
    assert len(objs) == len(run.packets)
    failures, seen = [], {"learned": [], "computed": []}
    for obj, pkt in zip(objs, run.packets):
        if (pcap.name, obj["frame"]) in NOT_DISSECTED:
            continue
        learned = pkt.fields.get(f"{pn}.crc.learned")
        crc = obj.get("uet", {}).get("crc") or {}
        if learned and crc.get("ok") is not None:
            crc["ok"] = None  # learned: not computed, no verdict shown
        diffs = compare(obj, pkt, pn=pn)
        if diffs:
            failures.append(f"frame {obj['frame']}: " + "; ".join(diffs))
            continue
        if "uet" not in obj:
            continue  # RoCEv2 (the ICRC is no part of this): compared above
        status = [int(a["show"]) for a in pkt.fields.get(f"{pn}.crc.status", [])]
        if learned:
            seen["learned"].append(obj["frame"])
            assert [a["show"] for a in learned] in (["1"], ["True"], ["true"]), obj["frame"]
            assert "learned from this source's first 8 packets" in learned[0].get("showname", "")
            if crc.get("value") is not None:
                assert status == [UNVERIFIED], obj["frame"]
            else:
                assert status == [], obj["frame"]
        elif "tss" not in obj["uet"]:
            seen["computed"].append(obj["frame"])
            assert status == ([GOOD] if crc.get("ok") else []), obj["frame"]
    assert not failures, "\n".join(failures)
    return seen


@pytest.mark.parametrize("pcap", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_default_preferences_agree_with_uet_decode(pcap, lua_file):
    """The three dissectors agree at their defaults: XDP2's captures (no trailers) included."""
    seen = _check_default(pcap, lua_file)
    if pcap.parent.name == "xdp2":
        assert seen["learned"], "XDP2: a source's later packets take the learned 'no trailer'"


def _pcap(tmp_path: Path, frames: list[bytes]) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes

    path = tmp_path / "senders.pcap"
    path.write_bytes(pcap_bytes(frames))
    return path


def _request(psn: int, payload: bytes) -> bytes:
    from uet.wire import build as B

    return B.uet_bytes({"type": 2, "next_hdr": 3, "psn": psn, "spdcid": 1, "dpdcid": 2},
                       {"opcode": 5, "som": True, "eom": True, "request_length": len(payload)},
                       payload=payload)


def _frames(senders: dict[str, list[bool]]) -> list[bytes]:
    """One request per (source, trailer?) entry, the sources interleaved, each from its own
    entropy (UDP source port): the port is no part of a source."""
    from uet.wire import build as B

    out = []
    for i in range(max(len(v) for v in senders.values())):
        for j, (src, trailers) in enumerate(senders.items()):
            if i < len(trailers):
                out.append(B.udp_frame(_request(100 + i, bytes([i]) * (8 + i)), src=src, sport=49152 + 7 * i + j,
                                       trailer=trailers[i]))
    return out


def test_two_sources_one_with_trailers_one_without(tmp_path, lua_file):
    """A source that sends trailers and one that sends none (as XDP2), interleaved: both decode as
    `uet decode` says; each one's packets after its first 8 are learned."""
    pcap = _pcap(tmp_path, _frames({"10.0.0.1": [True] * 12, "10.0.0.3": [False] * 12}))
    seen = _check_default(pcap, lua_file)
    # frames alternate 10.0.0.1, 10.0.0.3: each source's 9th packet is frame 17 or 18
    assert seen["learned"] == list(range(2 * K + 1, 25))
    assert seen["computed"] == list(range(1, 2 * K + 1))
    objs = uet_decode_json(pcap)
    assert [o["uet"]["crc"]["value"] is not None for o in objs] == [True, False] * 12


def test_source_whose_first_packets_disagree_is_verified_on_every_packet(tmp_path, lua_file):
    """The first 8 packets of 10.0.0.5 disagree (one has no trailer): none of its packets is learned,
    every one is verified; 10.0.0.1, consistent, is learned after 8."""
    mixed = [True] * 4 + [False] + [True] * 9
    pcap = _pcap(tmp_path, _frames({"10.0.0.5": mixed, "10.0.0.1": [True] * 14}))
    seen = _check_default(pcap, lua_file)
    assert seen["learned"] == list(range(2 * K + 2, 29, 2))  # 10.0.0.1's 9th packet on
    assert seen["computed"] == list(range(1, 2 * K + 1)) + list(range(2 * K + 1, 29, 2))


def test_learned_verdicts_do_not_depend_on_the_visit_order(tmp_path, lua_file):
    """tshark -2 dissects every frame twice (the second pass visited, as the GUI's clicks): the
    second pass reuses the verdicts of the first, and shows what one pass shows."""
    pn = plugin_name()
    pcap = _pcap(tmp_path, _frames({"10.0.0.1": [True] * 10, "10.0.0.3": [False] * 10}))
    fields = ("-e", "frame.number", "-e", f"{pn}.payload_len", "-e", f"{pn}.crc.status",
              "-e", f"{pn}.crc.learned")
    one = tshark_proc(pcap, [lua_file], output="fields", extra=fields)
    two = tshark_proc(pcap, [lua_file], output="fields", extra=("-2", *fields))
    assert one.returncode == 0 and two.returncode == 0, (one.stderr, two.stderr)
    assert two.stdout == one.stdout
    rows = [line.split("\t") for line in one.stdout.splitlines()]
    assert [r[3] != "" for r in rows] == [False] * 16 + [True] * 4
