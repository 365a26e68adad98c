"""PFC pause frames (IEEE 802.1Qbb) wherever frames are decoded: the schema's ``pfc`` header against
uet.roce.pfc's builder and parser, ``uet decode --json`` (a clean ``pfc`` object; cut short, another
MAC control opcode or a reserved bit set: a readable problem), the fast reader leaving them to the
reference, and a capture of ``uet compare`` holding them."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, strategies as st

from uet.capture.frame import DecodeConfig, decode_frame, pfc_json
from uet.capture.quick import QuickDecoder
from uet.cli import main
from uet.roce.pfc import PFC_DST_MAC, parse_pause, pause_frame
from uet.sim.frames import PcapWriter
from uet.wire import codec
from uet.wire.net_headers import NET_HEADERS, PFC

C = codec("pfc")
SRC = bytes.fromhex("0200000000aa")


def frame(vector: int, times: list[int], opcode: int = 0x0101, rsvd: int = 0) -> bytes:
    body = struct.pack(">HBB8H", opcode, rsvd, vector, *times)
    raw = PFC_DST_MAC + SRC + b"\x88\x08" + body
    return raw + bytes(60 - len(raw))


def test_the_header_is_declared_once_with_its_reference():
    assert PFC in NET_HEADERS and C.min_size == C.max_size == 20
    assert PFC.ref == "IEEE 802.1Qbb"
    assert all(f.reserved or f.ref == "IEEE 802.1Qbb" for f in PFC.all_fields())


@given(prio=st.integers(0, 7), quanta=st.integers(0, 0xFFFF))
def test_schema_codec_reads_what_uet_roce_pfc_builds(prio, quanta):
    raw = pause_frame(prio, quanta, SRC)
    fields, size = C.decode(raw, 14)
    times = [0] * 8
    times[prio] = quanta
    assert size == 20 and pfc_json(fields) == {"opcode": 0x0101, "opcode_name": "PFC",
                                               "class_enable": 1 << prio, "pause_quanta": times}
    assert parse_pause(raw) == (1 << prio, quanta)
    assert C.encode(fields) == raw[14:34]


def test_xoff_and_xon_decode_clean(decode_json):
    xoff, xon = decode_json([pause_frame(3, 0xFFFF, SRC), pause_frame(3, 0, SRC)])
    assert xoff == {"frame": 1, "pfc": {"opcode": 257, "opcode_name": "PFC", "class_enable": 8,
                                        "pause_quanta": [0, 0, 0, 0xFFFF, 0, 0, 0, 0]},
                    "problems": []}
    assert xon["pfc"]["pause_quanta"] == [0] * 8 and xon["problems"] == [] and "error" not in xon


def test_several_priorities_in_one_frame(decode_json):
    (obj,) = decode_json([frame(0b10000101, [7, 0, 9, 0, 0, 0, 0, 65535])])
    assert obj["pfc"]["class_enable"] == 0x85
    assert obj["pfc"]["pause_quanta"] == [7, 0, 9, 0, 0, 0, 0, 65535] and obj["problems"] == []


@pytest.mark.parametrize("keep, left", [(14 + 19, 19), (14 + 5, 5), (14 + 2, 2)])
def test_a_truncated_frame_is_a_readable_problem(keep, left):
    obj = decode_frame(1, pause_frame(3, 100, SRC)[:keep], 1).obj
    want = f"pfc: truncated: needs 20 bytes, {left} left"
    assert obj["problems"] == [want] and obj["error"] == want
    assert obj["pfc"]["opcode"] == 0x0101  # the whole fields that fit are kept


def test_another_mac_control_opcode_and_a_reserved_octet():
    pause = decode_frame(1, frame(0, [0] * 8, opcode=0x0001), 1).obj  # 802.3x PAUSE
    assert "pfc" not in pause and "opcode 0x0001 is not PFC" in pause["error"]
    rsvd = decode_frame(1, frame(8, [0, 0, 0, 5, 0, 0, 0, 0], rsvd=0x80), 2).obj
    assert rsvd["pfc"]["pause_quanta"][3] == 5 and "error" not in rsvd
    assert len(rsvd["problems"]) == 1 and "reserved" in rsvd["problems"][0]


def test_the_fast_reader_leaves_them_to_the_reference():
    quick = QuickDecoder(DecodeConfig(), warmup=1)
    for f in (pause_frame(3, 0xFFFF, SRC), pause_frame(3, 0, SRC), pause_frame(3, 1)[:20],
              pause_frame(3, 1)[:13]):
        for n in range(4):  # past any warm-up
            assert quick(1, f, n + 1) is None


def test_a_roce_compare_capture_holds_pause_frames(capsys, tmp_path):
    from uet.compare.command import main as compare

    assert compare(["pfc-victim", "--designs", "roce", "--bytes", "64k", "--pcap",
                    str(tmp_path / "r.pcap")]) == 0
    capsys.readouterr()
    assert main(["decode", "--json", str(tmp_path / "r.roce.pcap")]) == 0
    objs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    pauses = [o for o in objs if "pfc" in o]
    assert pauses and all(o["problems"] == [] and "ip" not in o for o in pauses)
    assert all(o["problems"] == [] for o in objs)


def test_the_readable_tree_shows_the_pause_frame(capsys, tmp_path):
    path = tmp_path / "t.pcap"
    with open(path, "wb") as fh:
        w = PcapWriter(fh)
        w.write(0.0, frame(0x08, [0, 0, 0, 65535, 0, 0, 0, 0]))
        w.flush()
    capsys.readouterr()
    assert main(["decode", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Priority-based flow control (802.1Qbb)" in out
    assert "class_enable: 0x08" in out and "pause_quanta_3: 65535" in out
