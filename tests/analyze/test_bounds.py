"""Issue 25 item 5: what ``uet analyze`` keeps of frames it does not use is bounded: broken frames
are counted and the first ``BROKEN_KEEP`` listed (``broken_count`` in the JSON, "and N more" in
the text); frames that wait for the end of the file to be judged are at most ``PENDING_MAX``.
The counts stay exact. (Memory itself is not measured here: the lists' lengths are.)"""

from __future__ import annotations

import gzip
import struct

import pytest

from uet.analyze import intake as intake_mod
from uet.analyze.conversation import analyze as converse
from uet.analyze.intake import BROKEN_KEEP, collect
from uet.analyze.report import to_json, to_text
from uet.wire import build

from .test_analyze import EV, ack, analyze, req, run

NOTE = ("{} frame(s) on other UDP ports that decode as UET were not judged: more than 4 frames, "
        "or broken frames of more than 3 address pairs, waited for a confirmed frame to show where "
        "they belong")
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # Ethernet link type


@pytest.fixture
def empty_records(tmp_path):
    """``empty_records(n)``: a gzip pcap of ``n`` records of length 0 (a 16-byte record header
    each; 3,000,000 of them compress to about 93 KB), built without a pcap writer."""
    def make(n: int):
        path = tmp_path / f"empty{n}.pcap.gz"
        record = struct.pack("<IIII", 1750000000, 0, 0, 0)
        with gzip.open(path, "wb") as f:
            f.write(PCAP_HEADER)
            for done in range(0, n, 100_000):
                f.write(record * min(100_000, n - done))
        return path
    return make


def test_empty_records_are_counted_and_the_first_listed(capsys, empty_records):
    n = 5 * BROKEN_KEEP + 7
    path = empty_records(n)
    a = analyze(capsys, path)
    assert (a["frames"], a["uet_frames"], a["broken_count"]) == (n, 0, n)
    assert a["broken"] == [{"frame": i, "reason": "eth: truncated: needs 14 bytes, 0 left"}
                           for i in range(1, BROKEN_KEEP + 1)]
    rc, out, err = run(capsys, "analyze", str(path))
    lines = out.splitlines()
    assert (rc, err) == (0, "")
    assert f"broken frames (skipped): {n}" in lines
    i = lines.index(f"broken frames (skipped): {n}")
    assert lines[i + 1:i + 14] == [f"  frame {k}: eth: truncated: needs 14 bytes, 0 left"
                                   for k in range(1, 13)] + [
        f"  ... and {n - 12} more (--json lists the first {BROKEN_KEEP})"]


def test_broken_frames_of_every_kind_are_counted_and_the_first_kept(monkeypatch):
    """Broken as read (a runt), broken at the end (a trailer that fails from a sealing source, a
    runt between endpoints only known later): the first 3 by frame number kept, all counted."""
    monkeypatch.setattr(intake_mod, "BROKEN_KEEP", 3)
    good = req(1000, syn=True, ar=True)
    bad = bytearray(req(1001, syn=True))
    bad[-10] ^= 1                                                     # its CRC fails
    stray = build.udp_frame(b"\x10\x00\x00", sport=EV, dport=6000, trailer=False)
    frames = [bytes(bad), stray, stray, good, bytes(bad), stray, bytes(bad),
              ack(1000, sport=6000)]                                  # 6000 becomes a UET port
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "mix")
    assert [b.frame for b in got.broken] == [1, 2, 3]
    assert got.broken_count == 6
    assert [p.n for p in got.uet] == [4, 8]
    assert got.notes == []


def test_frames_waiting_for_the_end_are_bounded(monkeypatch):
    """Candidates (UET without a trailer on another port: here trimmed requests) before any
    confirmed frame wait, at most PENDING_MAX of them, and broken frames on other ports of at most
    LOOSE_PAIRS_MAX address pairs; the rest are counted in a note. Once a confirmed frame showed
    the endpoint, later candidates are taken as they come, however many."""
    monkeypatch.setattr(intake_mod, "PENDING_MAX", 4)
    monkeypatch.setattr(intake_mod, "LOOSE_PAIRS_MAX", 3)
    early = [build.trim(req(1000 + i, dport=6000)) for i in range(10)]
    confirmed = req(2000, syn=True, ar=True, start=2000, dport=6000)
    late = [build.trim(req(2001 + i, dport=6000)) for i in range(10)]
    frames = early + [confirmed] + late
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "wait")
    assert [p.n for p in got.uet] == [1, 2, 3, 4] + list(range(11, 22))
    assert got.notes == [NOTE.format(6)]
    # without a confirmed frame none of them could belong: nothing to say
    got = collect([(1, f, float(i)) for i, f in enumerate(early)], "alone")
    assert (got.uet, got.notes) == ([], [])
    # broken frames on another port wait grouped by their address pair: one pair, one place
    stray = build.udp_frame(b"\x10\x00\x00", sport=EV, dport=6000, trailer=False)
    other = build.udp_frame(b"\x10\x00\x00", sport=EV + 1, dport=7000, trailer=False)
    frames = [stray] * 9 + [other] * 3 + [confirmed]
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "pairs")
    assert (got.broken_count, len(got.broken), got.notes) == (9, 9, [])
    # more pairs than LOOSE_PAIRS_MAX: the pairs beyond it are not judged, and said so
    frames = [build.udp_frame(b"\x10\x00\x00", sport=EV + i, dport=6000, trailer=False)
              for i in range(6)] + [confirmed]
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "many pairs")
    assert [b.frame for b in got.broken] == [1, 2, 3]
    assert got.notes == [NOTE.format(3)]
    report = to_json(got, converse(got.uet, got.outside))
    assert report["notes"] == got.notes and got.notes[0] in to_text(report).splitlines()


def uud(*, trailer: bool, src: str = "10.0.0.1", dscp: int = 0) -> bytes:
    ses = {"opcode": 7, "message_id": 1, "request_length": 16, "som": True, "eom": True}
    return build.udp_frame(build.uet_bytes({"type": 6, "next_hdr": 3}, ses, payload=bytes(16)),
                           src=src, trailer=trailer, dscp=dscp)


def test_frames_outside_pdcs_are_counted_not_kept(monkeypatch):
    """UUD frames (no PDC takes them: the analysis counts them by type) leave no record each. One
    without a trailer waits as a count until the end shows whether its source seals its frames
    (then it is broken, A.3); the kinds that wait are at most LOOSE_PAIRS_MAX."""
    monkeypatch.setattr(intake_mod, "BROKEN_KEEP", 2)
    frames = ([uud(trailer=False)] * 5 + [uud(trailer=False, src="10.0.0.9")] * 4
              + [uud(trailer=True)] * 6 + [build.trim(uud(trailer=True))] * 2)
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "uud")
    assert got.uet == []
    # 10.0.0.1 seals (frames 10-15): its 5 frames without a trailer are broken; 10.0.0.9 never
    # does, and a trimmed frame has lost its trailer on the way (C.6)
    assert (got.broken_count, [b.frame for b in got.broken]) == (5, [1, 2])
    o = got.outside
    assert (o.frames, o.trimmed, dict(o.names)) == (12, 2, {"UUD_REQ": 12})
    report = to_json(got, converse(got.uet, got.outside))
    assert (report["uet_frames"], report["other"], report["trimmed"]) == (12, {"UUD_REQ": 12}, 2)
    monkeypatch.setattr(intake_mod, "LOOSE_PAIRS_MAX", 1)
    got = collect([(1, f, float(i)) for i, f in enumerate(frames)], "uud")
    assert (got.outside.frames, got.broken_count) == (8, 5)   # 10.0.0.9's 4 found no room
    assert got.notes == ["4 UET frame(s) outside PDCs without a trailer were not counted: more "
                         "than 1 kinds of them waited for the end of the file to show whether "
                         "their source seals its frames"]
