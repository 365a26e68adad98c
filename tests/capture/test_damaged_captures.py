"""`uet decode` on damaged capture files: reading stops at the damage with one line on stderr naming
the byte, the frame and the reason, every good frame before it is decoded, and the exit status stays
0; blocks it does not parse are skipped without being read into memory (issue 11, item 7)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import re
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from uet.capture.pcap import FRAME_CAP, CaptureStopped, read_frames
from uet.cli import main
from uet.wire import build

PDS = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": 70000, "psn_offset": 0, "spdcid": 7}
SES = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 100}


def frame(i: int) -> bytes:
    return build.udp_frame(build.uet_bytes({**PDS, "psn": 70000 + i}, SES, payload=bytes(range(100))),
                           sport=50000)


FRAMES = [frame(i) for i in range(17)]

# pcapng blocks, written with struct so that any field can be damaged


def block(btype: int, body: bytes, endian: str = "<", length: int | None = None,
          trailing: int | None = None) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return (struct.pack(endian + "II", btype, n if length is None else length) + body
            + struct.pack(endian + "I", n if trailing is None else trailing))


def shb(endian: str = "<", major: int = 1, bom: int = 0x1A2B3C4D) -> bytes:
    return block(0x0A0D0D0A, struct.pack(endian + "IHHq", bom, major, 0, -1), endian)


def idb(endian: str = "<", linktype: int = 1, snaplen: int = 0, tsresol: int | None = None) -> bytes:
    opts = b""
    if tsresol is not None:
        opts = struct.pack(endian + "HHB3x", 9, 1, tsresol) + struct.pack(endian + "HH", 0, 0)
    return block(1, struct.pack(endian + "HHI", linktype, 0, snaplen) + opts, endian)


def epb(f: bytes, endian: str = "<", intid: int = 0, caplen: int | None = None, ts: int = 0,
        **kw) -> bytes:
    fixed = struct.pack(endian + "5I", intid, ts >> 32, ts & 0xFFFFFFFF,
                        len(f) if caplen is None else caplen, len(f))
    return block(6, fixed + f, endian, **kw)


def spb(f: bytes, endian: str = "<") -> bytes:
    return block(3, struct.pack(endian + "I", len(f)) + f, endian)


def pcapng(frames: list[bytes]) -> bytes:
    return shb() + idb() + b"".join(epb(f) for f in frames)


def pcap(frames: list[bytes], caplens: dict[int, int] | None = None) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", i, 0, (caplens or {}).get(i, len(f)), len(f)) + f
    return out


HEAD = len(shb() + idb())  # where the first packet block starts
EPB_LEN = len(epb(FRAMES[0]))
REC_LEN = 16 + len(FRAMES[0])


def decode(path: Path | str, capsys, *extra: str) -> tuple[int, list[dict], list[str]]:
    rc = main(["decode", "--json", *extra, str(path)])
    out = capsys.readouterr()
    return rc, [json.loads(x) for x in out.out.splitlines()], out.err.splitlines()


def write(tmp_path: Path, data: bytes, name: str = "f.pcapng") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def assert_clean(objs: list[dict], n: int) -> None:
    assert [o["frame"] for o in objs] == list(range(1, n + 1))
    assert [o["uet"]["pds"]["psn"] for o in objs] == [70000 + i for i in range(n)]
    assert all(o["problems"] == [] for o in objs)


# the silent stop: a pcapng block whose trailing length does not match


@pytest.mark.parametrize("good", [3, 0, 16])
def test_damaged_trailing_length_stops_with_one_line(tmp_path, capsys, good):
    blocks = [epb(f, trailing=len(epb(f)) + 16 if i == good else None) for i, f in enumerate(FRAMES)]
    path = write(tmp_path, shb() + idb() + b"".join(blocks))
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, good)
    at = HEAD + good * EPB_LEN
    reason = f"pcapng enhanced packet block total length {EPB_LEN} does not match its trailing copy"
    assert err == [f"uet decode: {path}: stopped reading at byte {at} (frame {good + 1}): {reason} "
                   f"{EPB_LEN + 16}; {good} frame{'' if good == 1 else 's'} read"]


def test_damaged_trailing_length_in_tree_output(tmp_path, capsys):
    path = write(tmp_path, pcapng(FRAMES[:3]) + epb(FRAMES[3], trailing=0) + pcapng(FRAMES[4:])[HEAD:])
    rc = main(["decode", str(path)])
    out = capsys.readouterr()
    assert rc == 0 and out.out.count("UET RUD/ROD request") == 3
    assert out.err.splitlines() == [f"uet decode: {path}: stopped reading at byte {HEAD + 3 * EPB_LEN} "
                                    f"(frame 4): pcapng enhanced packet block total length {EPB_LEN} "
                                    "does not match its trailing copy 0; 3 frames read"]


@pytest.mark.parametrize("kind", ["pcapng", "pcapng.gz", "pcap"])
def test_stdin_stops_with_one_line(kind):
    if kind == "pcap":
        data = pcap(FRAMES[:4])[:-REC_LEN + 9]  # the fourth record header cut after 9 bytes
        at, reason = 24 + 3 * REC_LEN, "the file ends 9 bytes into a 16-byte pcap record header"
    else:
        data = pcapng(FRAMES[:3]) + epb(FRAMES[3], trailing=1) + epb(FRAMES[4])
        at = HEAD + 3 * EPB_LEN
        reason = (f"pcapng enhanced packet block total length {EPB_LEN} does not match its "
                  "trailing copy 1")
        if kind.endswith(".gz"):
            data = gzip.compress(data)
    proc = subprocess.run([sys.executable, "-m", "uet", "decode", "--json", "-"], input=data,
                          capture_output=True)
    assert proc.returncode == 0
    assert_clean([json.loads(x) for x in proc.stdout.decode().splitlines()], 3)
    assert proc.stderr.decode().splitlines() == [
        f"uet decode: stdin: stopped reading at byte {at} (frame 4): {reason}; 3 frames read"]


def test_named_pipe_stops_with_one_line(tmp_path, capsys):
    # a pipe cannot seek (gzip sniffing) or tell (byte offsets): it is spooled like stdin
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = gzip.compress(pcapng(FRAMES[:3]) + epb(FRAMES[3], trailing=0))

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    rc, objs, err = decode(fifo, capsys)
    writer.join()
    assert rc == 0
    assert_clean(objs, 3)
    assert err == [f"uet decode: {fifo}: stopped reading at byte {HEAD + 3 * EPB_LEN} (frame 4): pcapng "
                   f"enhanced packet block total length {EPB_LEN} does not match its trailing copy 0; "
                   "3 frames read"]


# pcap records cut short or absurd


def test_pcap_record_header_cut_short(tmp_path, capsys):
    path = write(tmp_path, pcap(FRAMES[:6])[:24 + 5 * REC_LEN + 7], "f.pcap")
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, 5)
    at = 24 + 5 * REC_LEN
    assert err == [f"uet decode: {path}: stopped reading at byte {at} (frame 6): the file ends 7 bytes "
                   "into a 16-byte pcap record header; 5 frames read"]


def test_pcap_record_data_cut_short_keeps_the_partial_frame(tmp_path, capsys):
    path = write(tmp_path, pcap(FRAMES[:6])[:-30], "f.pcap")
    rc, objs, err = decode(path, capsys)
    assert rc == 0 and len(objs) == 6
    assert_clean(objs[:5], 5)
    assert objs[5]["frame"] == 6 and objs[5]["problems"]  # decoded as far as it goes
    caplen = len(FRAMES[0])
    at = 24 + 5 * REC_LEN
    assert err == [f"uet decode: {path}: stopped reading at byte {at} (frame 6): pcap record cut short: "
                   f"the file ends {caplen - 30} bytes into its {caplen} captured bytes (that frame is "
                   "decoded as far as it goes); 6 frames read"]


def test_pcap_record_header_with_no_data_after_it(tmp_path, capsys):
    path = write(tmp_path, pcap(FRAMES[:2])[:24 + REC_LEN + 16], "f.pcap")
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, 1)
    assert err == [f"uet decode: {path}: stopped reading at byte {24 + REC_LEN} (frame 2): pcap record "
                   f"cut short: the file ends before its {len(FRAMES[0])} captured bytes; 1 frame read"]


def test_pcap_absurd_captured_length(tmp_path, capsys):
    path = write(tmp_path, pcap(FRAMES[:4], caplens={2: 0xFFFFFF00}), "f.pcap")
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, 2)
    at = 24 + 2 * REC_LEN
    assert err == [f"uet decode: {path}: stopped reading at byte {at} (frame 3): pcap record claims "
                   f"{0xFFFFFF00} captured bytes, more than the 256 MiB limit; 2 frames read"]


def test_pcap_frame_longer_than_the_cap_is_read_past(tmp_path, capsys):
    big = FRAMES[0] + bytes(FRAME_CAP)
    path = write(tmp_path, pcap([FRAMES[0], big, FRAMES[2]]), "f.pcap")
    frames = list(read_frames(str(path)))
    assert [len(raw) for _, raw, _ in frames] == [len(FRAMES[0]), FRAME_CAP, len(FRAMES[2])]
    assert frames[2][1] == FRAMES[2]
    rc, objs, err = decode(path, capsys)
    assert rc == 0 and err == [] and [o["frame"] for o in objs] == [1, 2, 3]


# other damaged pcapng blocks


DAMAGED_PCAPNG: dict[str, tuple[bytes, str] | tuple[bytes, str, int]] = {
    # name: (the bytes after 3 good packet blocks, the reason[, where the damage is in those bytes])
    "length not a multiple of 4": (
        epb(FRAMES[3], length=EPB_LEN + 2),
        f"enhanced packet block total length {EPB_LEN + 2} is not a multiple of 4"),
    "length under the minimum": (
        struct.pack("<III", 6, 12, 12),
        "enhanced packet block total length 12 is less than its 32-byte minimum"),
    "length under 12 for an unknown block": (
        struct.pack("<III", 0x0BADBEEF, 8, 8),
        "block of type 0x0BADBEEF total length 8 is less than its 12-byte minimum"),
    "captured length past the block": (
        epb(FRAMES[3], caplen=len(FRAMES[3]) + 64),
        f"enhanced packet block captured length {len(FRAMES[3]) + 64} runs past its block "
        f"({EPB_LEN - 32} bytes of room)"),
    "unknown interface": (
        epb(FRAMES[3], intid=3),
        "enhanced packet block names interface 3, but the section describes 1"),
    "packet block over the limit": (
        epb(FRAMES[3], length=1 << 30),
        "enhanced packet block claims 1073741824 bytes, more than the 256 MiB limit"),
    "block header cut short": (
        epb(FRAMES[3])[:5],
        "the file ends 5 bytes into an 8-byte pcapng block header"),
    "block body cut short": (
        epb(FRAMES[3])[:-20],
        f"enhanced packet block (total length {EPB_LEN}) runs past the end of the file: {EPB_LEN - 20} "
        f"of its {EPB_LEN} bytes are there"),
    "trailing length cut short": (
        epb(FRAMES[3])[:-2],
        f"enhanced packet block (total length {EPB_LEN}) runs past the end of the file: {EPB_LEN - 2} "
        f"of its {EPB_LEN} bytes are there"),
    "unknown block past the end": (
        struct.pack("<II", 0x0BADBEEF, 4096) + bytes(100),
        "block of type 0x0BADBEEF (total length 4096) runs past the end of the file: 108 of its 4096 "
        "bytes are there"),
    "unknown block with a bad trailing length": (
        block(0x0BADBEEF, bytes(100), trailing=7),
        "pcapng block of type 0x0BADBEEF total length 112 does not match its trailing copy 7"),
    "new section without a byte-order magic": (
        shb(bom=0x11223344),
        "section header block has no byte-order magic (44332211)"),
    "new section of version 2": (
        shb(major=2),
        "section header block has version 2; only 1 is read"),
    "new section forgets the interfaces": (
        shb() + epb(FRAMES[3]),
        "enhanced packet block names interface 0, but the section describes 0", len(shb())),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_PCAPNG))
def test_damaged_pcapng_blocks(tmp_path, capsys, case):
    tail, reason, *within = DAMAGED_PCAPNG[case]
    path = write(tmp_path, pcapng(FRAMES[:3]) + tail + epb(FRAMES[4]))
    if "cut short" in case or "past the end" in case:
        path.write_bytes(pcapng(FRAMES[:3]) + tail)
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, 3)
    at = HEAD + 3 * EPB_LEN + sum(within)
    assert err == [f"uet decode: {path}: stopped reading at byte {at} (frame 4): {reason}; 3 frames "
                   "read"]


def test_simple_packet_block_before_any_interface(tmp_path, capsys):
    path = write(tmp_path, shb() + spb(FRAMES[0]))
    rc, objs, err = decode(path, capsys)
    assert rc == 0 and objs == []
    assert err == [f"uet decode: {path}: stopped reading at byte {len(shb())} (frame 1): simple packet "
                   "block names interface 0, but the section describes 0; 0 frames read"]


def test_readable_oddities_are_read_without_a_word(tmp_path, capsys):
    # a new big-endian section, simple packet blocks with an unlimited (0) and a short snap length,
    # an interface with nanosecond timestamps, and blocks that are skipped
    custom = block(0xBAD, struct.pack("<I", 32473) + bytes(300_000))
    stats = block(5, struct.pack("<IIIHH", 0, 0, 0, 0, 0))
    data = (pcapng(FRAMES[:2]) + custom + spb(FRAMES[2]) + stats
            + shb(">") + idb(">", tsresol=9) + epb(FRAMES[3], ">", ts=1_500_000_000)
            + spb(FRAMES[4], ">")
            + idb(">", snaplen=60) + epb(FRAMES[5], ">", intid=1))
    path = write(tmp_path, data)
    frames = list(read_frames(str(path)))
    assert [raw for _, raw, _ in frames] == FRAMES[:6]
    assert frames[3][2] == 1.5
    short = write(tmp_path, shb() + idb(snaplen=60) + spb(FRAMES[0]), "short.pcapng")
    assert [raw for _, raw, _ in read_frames(str(short))] == [FRAMES[0][:60]]
    rc, objs, err = decode(path, capsys)
    assert rc == 0 and err == []
    assert_clean(objs, 6)


def test_damaged_gzip_stream(tmp_path, capsys):
    # incompressible bytes are stored as they are, so a byte changed among them changes only the
    # gzip CRC, which fails where the stream ends
    noise = block(0xBAD, random.Random(7).randbytes(200_000))
    data = bytearray(gzip.compress(pcapng(FRAMES[:6]) + noise, mtime=0))
    data[len(data) // 2] ^= 0xFF
    path = write(tmp_path, bytes(data), "f.pcapng.gz")
    rc, objs, err = decode(path, capsys)
    assert rc == 0
    assert_clean(objs, 6)
    (line,) = err
    at = HEAD + 6 * EPB_LEN + len(noise)
    head = re.escape(f"uet decode: {path}: stopped reading at byte {at} (frame 7): ")
    assert re.fullmatch(head + r"the compressed stream is damaged \(.+\); 6 frames read", line)


def test_clean_files_and_open_failures_unchanged(tmp_path, capsys):
    rc, objs, err = decode(write(tmp_path, pcapng(FRAMES)), capsys)
    assert rc == 0 and err == []
    assert_clean(objs, 17)
    rc, objs, err = decode(write(tmp_path, pcap(FRAMES), "f.pcap"), capsys)
    assert rc == 0 and err == []
    assert_clean(objs, 17)
    rc, objs, err = decode(write(tmp_path, shb()[:20], "h.pcapng"), capsys)
    assert rc == 2 and objs == [] and len(err) == 1 and "not a readable pcap or pcapng" in err[0]
    huge_shb = struct.pack("<III", 0x0A0D0D0A, 1 << 30, 0x1A2B3C4D) + bytes(100)
    rc, objs, err = decode(write(tmp_path, huge_shb, "s.pcapng"), capsys)
    assert rc == 2 and objs == [] and len(err) == 1 and "more than the 256 MiB limit" in err[0]


def test_read_frames_raises_capture_stopped_after_the_good_frames(tmp_path):
    path = write(tmp_path, pcapng(FRAMES[:3]) + epb(FRAMES[3], trailing=0))
    got = []
    with pytest.raises(CaptureStopped) as info:
        for item in read_frames(str(path)):
            got.append(item[1])
    assert got == FRAMES[:3]
    stop = info.value
    assert (stop.offset, stop.frame, stop.frames_read) == (HEAD + 3 * EPB_LEN, 4, 3)
    assert "does not match its trailing copy 0" in stop.reason


# memory: blocks that are skipped are never read whole

MEASURE = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True)
print(json.dumps({"rc": p.returncode, "out": p.stdout.decode(), "err": p.stderr.decode(),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""
MEMORY_BOUND_KB = 200 * 1024  # ru_maxrss is in KiB on Linux; Python and Scapy alone take ~60 MiB


def gzip_member(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def run_measured(path: Path) -> dict:
    """`uet decode --json` in a child of a fresh process, so that its peak memory is the only one."""
    argv = [sys.executable, "-m", "uet", "decode", "--json", str(path)]
    proc = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, check=True)
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def zeros_16m() -> bytes:
    # gzip files may hold several members: 16 MiB of zeros compressed once, repeated, make a small
    # file that decompresses to hundreds of MiB
    return gzip_member(bytes(16 << 20))


def test_legitimately_huge_unknown_block_is_skipped_in_bounded_memory(tmp_path, zeros_16m):
    length = 8 + (64 << 24) + 4  # header, 1 GiB of zeros, trailing length
    data = (gzip_member(pcapng(FRAMES[:3]) + struct.pack("<II", 0x0BADBEEF, length)) + zeros_16m * 64
            + gzip_member(struct.pack("<I", length) + b"".join(epb(f) for f in FRAMES[3:5])))
    assert len(data) < 2 << 20
    res = run_measured(write(tmp_path, data, "huge.pcapng.gz"))
    assert res["rc"] == 0 and res["err"] == ""
    assert_clean([json.loads(x) for x in res["out"].splitlines()], 5)
    assert res["maxrss_kb"] < MEMORY_BOUND_KB


def test_unknown_block_claim_past_the_end_of_a_compressed_file(tmp_path, zeros_16m):
    data = gzip_member(pcapng(FRAMES[:3]) + struct.pack("<II", 0x0BADBEEF, 1 << 30)) + zeros_16m * 16
    path = write(tmp_path, data, "cut.pcapng.gz")
    res = run_measured(path)
    assert res["rc"] == 0
    assert_clean([json.loads(x) for x in res["out"].splitlines()], 3)
    assert res["err"].splitlines() == [
        f"uet decode: {path}: stopped reading at byte {HEAD + 3 * EPB_LEN} (frame 4): block of type "
        f"0x0BADBEEF (total length {1 << 30}) runs past the end of the file: {8 + (16 << 24)} of its "
        f"{1 << 30} bytes are there; 3 frames read"]
    assert res["maxrss_kb"] < MEMORY_BOUND_KB


def test_unknown_block_claim_past_the_end_of_a_plain_file(tmp_path):
    data = pcapng(FRAMES[:3]) + struct.pack("<II", 0x0BADBEEF, 1 << 30) + bytes(1 << 20)
    path = write(tmp_path, data)
    res = run_measured(path)
    assert res["rc"] == 0 and len(res["out"].splitlines()) == 3
    assert res["err"].splitlines() == [
        f"uet decode: {path}: stopped reading at byte {HEAD + 3 * EPB_LEN} (frame 4): block of type "
        f"0x0BADBEEF (total length {1 << 30}) runs past the end of the file: {8 + (1 << 20)} of its "
        f"{1 << 30} bytes are there; 3 frames read"]
    assert res["maxrss_kb"] < MEMORY_BOUND_KB


# any damage: never a traceback, JSON lines numbered 1..N, at most one line on stderr

SMALL_PCAPNG = (pcapng(FRAMES[:3]) + block(0xBAD, bytes(40)) + spb(FRAMES[3])
                + shb(">") + idb(">", tsresol=9) + epb(FRAMES[4], ">"))
SMALL_PCAP = pcap(FRAMES[:4])
BASES = {"pcapng": SMALL_PCAPNG, "pcap": SMALL_PCAP, "pcapng.gz": gzip.compress(SMALL_PCAPNG, mtime=0),
         "pcap.gz": gzip.compress(SMALL_PCAP, mtime=0)}


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def decode_in_process(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["decode", "--json", str(path)])
    return rc, out.getvalue(), err.getvalue()


@given(base=st.sampled_from(sorted(BASES)),
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=6),
       cut=st.one_of(st.none(), st.integers(min_value=0)))
def test_damaged_files_never_raise(fuzz_dir, base, edits, cut):
    data = bytearray(BASES[base])
    for pos, value in edits:
        data[pos % len(data)] = value
    if cut is not None:
        del data[cut % (len(data) + 1):]
    path = fuzz_dir / "fuzz.bin"
    path.write_bytes(bytes(data))
    rc, out, err = decode_in_process(path)
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["frame"] for o in objs] == list(range(1, len(objs) + 1))
    assert all(isinstance(o["problems"], list) for o in objs)
    lines = err.splitlines()
    # an edit can make a frame an IP fragment whose datagram never completes: uet decode names
    # each such datagram on stderr after everything else (uet.capture.reassembly), bounded
    unfinished = [ln for ln in lines if "never completed" in ln]
    assert len(unfinished) <= 101 and lines[len(lines) - len(unfinished):] == unfinished
    lines = lines[:len(lines) - len(unfinished)]
    if lines and "no frame decoded as UET or RoCEv2" in lines[-1]:  # the ports it saw instead
        lines = lines[:-1]
    assert len(lines) <= 1
    if rc == 2:
        assert objs == [] and lines and "not a readable" in lines[0]
    else:
        assert rc == 0
        if lines:
            assert "stopped reading at byte" in lines[0]
            assert lines[0].endswith(f"; {len(objs)} frame{'' if len(objs) == 1 else 's'} read")
        if not edits and cut is None:
            assert lines == [] and len(objs) == (5 if base.startswith("pcapng") else 4)
