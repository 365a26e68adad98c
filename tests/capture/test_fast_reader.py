"""The fast path of `uet decode` (issue 15, item 4): the capture reader without Scapy, the quick
decoder of plain frames against the reference decoder, and a CLI that imports only what `uet
decode` needs."""

from __future__ import annotations

import gzip
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scapy.utils import RawPcapNgWriter, RawPcapWriter

from uet.capture.frame import DecodeConfig, decode_frame
from uet.capture.pcap import FRAME_CAP, CaptureError, read_frames
from uet.capture.quick import QuickDecoder, _Compiler, _Header, compile_headers
from uet.cli import main
from uet.wire import build, codec
from uet.wire import uet_headers as U
from uet.wire.registry import ALL_HEADERS
from uet.wire.roce_headers import extension_headers
from uet.wire.schema import DEFAULT_OPTIONS, Options

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted((ROOT / "captures").glob("*.pcap"))

PDS = {"type": 2, "next_hdr": 3, "ar": True, "psn": 70000, "spdcid": 7, "dpdcid": 9}
SES = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 100}
FRAMES = [build.udp_frame(build.uet_bytes({**PDS, "psn": 70000 + i}, SES, payload=bytes(range(i * 7))),
                          sport=50000 + i) for i in range(9)]

# --- the reader: round trips through Scapy's writers --------------------------------------------


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_round_trip(tmp_path, endian, nano):
    path = tmp_path / "f.pcap"
    w = RawPcapWriter(str(path), linktype=1, endianness=endian, nano=nano)
    stamps = [(1_750_000_000 + i, i * 1013) for i in range(len(FRAMES))]
    w.write_header(None)
    for f, (sec, frac) in zip(FRAMES, stamps):
        w.write_packet(f, sec=sec, usec=frac)
    w.close()
    got = list(read_frames(str(path)))
    assert [raw for _, raw, _ in got] == FRAMES
    assert {lt for lt, _, _ in got} == {1}
    per = 1e9 if nano else 1e6
    assert [ts for _, _, ts in got] == [sec + frac / per for sec, frac in stamps]


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcapng_round_trip_with_interfaces_of_their_own_link_types(tmp_path, endian):
    path = tmp_path / "f.pcapng"
    w = RawPcapNgWriter(str(path))
    if endian == ">":  # Scapy writes little-endian sections; its byte order is two attributes
        w.endian, w.endian_magic = ">", b"\x1a\x2b\x3c\x4d"
    w.linktype = 1
    w._write_header(None)
    want = []
    for i, f in enumerate(FRAMES):
        lt, data, ifname = (1, f, None) if i % 3 == 0 else (101, f[14:], b"raw%d" % (i % 2))
        w._write_packet(data, linktype=lt, sec=1_750_000_000 + i / 4, ifname=ifname)
        want.append((lt, data, float(int((1_750_000_000 + i / 4) * 1_000_000)) / 1_000_000))
    w.close()
    assert list(read_frames(str(path))) == want


def test_gzip_and_stdin_round_trip(tmp_path):
    path = tmp_path / "f.pcap"
    w = RawPcapWriter(str(path), linktype=1)
    for f in FRAMES:
        w.write(f)
    w.close()
    gz = tmp_path / "f.pcap.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert [raw for _, raw, _ in read_frames(str(gz))] == FRAMES
    proc = subprocess.run([sys.executable, "-m", "uet", "decode", "--json", "-"],
                          input=gz.read_bytes(), capture_output=True, check=True)
    assert [json.loads(x)["uet"]["pds"]["psn"] for x in proc.stdout.splitlines()] == \
        [70000 + i for i in range(len(FRAMES))]


# --- the reader: any bytes give frames or the reader's typed error --------------------------------

HEADS = [b"",
         struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1),
         struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1),
         struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 101),
         struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 101),
         struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28),
         struct.pack(">IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack(">I", 28)]


def _read_all(path: Path) -> list[tuple[int, bytes, float]]:
    got = []
    try:
        for item in read_frames(str(path)):
            got.append(item)
    except CaptureError:
        pass
    for lt, raw, ts in got:
        assert isinstance(lt, int) and isinstance(raw, bytes) and isinstance(ts, float)
        assert len(raw) <= FRAME_CAP
    return got


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from(HEADS), body=st.binary(max_size=400), gz=st.booleans())
def test_random_bytes_never_crash_the_reader(tmp_path, head, body, gz):
    data = head + body
    path = tmp_path / "r.bin"
    path.write_bytes(gzip.compress(data) if gz else data)
    _read_all(path)


def _pcapng_blocks(rng: random.Random, endian: str) -> bytes:
    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack(endian + "II", btype, 12 + len(body)) + body + struct.pack(endian + "I", 12 + len(body))

    out = block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack(endian + "HHI", 1, 0, 0) + struct.pack(endian + "HHB3xHH", 9, 1, 9, 0, 0))
    for f in FRAMES[:4]:
        out += block(6, struct.pack(endian + "5I", 0, 0, rng.randrange(1 << 32), len(f), len(f)) + f)
        out += block(rng.choice([4, 5, 0xBAD, 0x12345]), rng.randbytes(rng.randrange(40)))
    return out


@settings(max_examples=300)
@given(seed=st.integers(0, 1 << 32), endian=st.sampled_from("<>"), ng=st.booleans(),
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=8),
       cut=st.one_of(st.none(), st.integers(min_value=0)))
def test_damaged_files_give_frames_or_the_typed_error(tmp_path_factory, seed, endian, ng, edits, cut):
    rng = random.Random(seed)
    if ng:
        data = bytearray(_pcapng_blocks(rng, endian))
    else:
        data = bytearray(struct.pack(endian + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for f in FRAMES[:5]:
            data += struct.pack(endian + "IIII", rng.randrange(1 << 32), 0, len(f), len(f)) + f
    for pos, value in edits:
        data[pos % len(data)] = value
    if cut is not None:
        del data[cut % (len(data) + 1):]
    path = tmp_path_factory.mktemp("d") / "d.bin"
    path.write_bytes(bytes(data))
    got = _read_all(path)
    if not edits and cut is None:
        assert [raw for _, raw, _ in got] == (FRAMES[:4] if ng else FRAMES[:5])


# --- the quick decoder against the reference ----------------------------------------------------


def _reference(var, buf: bytes):
    fields = var.decode_int(int.from_bytes(buf[:var.size], "big"))
    return fields, (None if var.problems(fields) else var.to_json(fields))


@pytest.mark.parametrize("header", ALL_HEADERS, ids=lambda h: h.key)
def test_every_variant_renders_as_the_reference(header):
    rng = random.Random(header.key)
    for var in codec(header).variants.values():
        as_json, as_fields = compile_headers([var]), compile_headers([var], modes=["fields"])
        for i in range(60):
            buf = rng.randbytes(var.size)
            if i % 2:  # reserved bits clear, so that the object is rendered
                v = int.from_bytes(buf, "big")
                for p in var.reserved:
                    v &= ~(p.field.mask << (var.size * 8 - p.end))
                buf = v.to_bytes(var.size, "big")
            fields, obj = _reference(var, buf)
            assert as_json(b"xy" + buf, 2) == obj
            assert as_fields(buf, 0) == fields


@pytest.mark.parametrize("header", ALL_HEADERS, ids=lambda h: h.key)
def test_fields_known_from_the_key_render_as_the_reference(header):
    # every narrow field in the key: the compiled objects take them as constants
    also = tuple({p.name for v in codec(header).variants.values() for p in v.placed
                  if p.field.width <= 8 and not p.field.reserved})
    h = _Header(header, DEFAULT_OPTIONS, _Compiler().alone, also=also)
    rng = random.Random(header.key)
    for _ in range(200):
        buf = rng.randbytes(codec(header).max_size)
        size, fn = h.find(buf, 0, len(buf))
        var = codec(header).variant_for_bytes(buf)
        assert size == var.size and fn(buf, 0) == _reference(var, buf)[1]


def test_pds_and_ses_read_together_render_as_each_alone():
    rng = random.Random(3)
    for ph in {h.key: h for h in U.PDS_BY_TYPE.values()}.values():
        for sh in U.SES_BY_NEXT_HDR.values():
            for pv in codec(ph).variants.values():
                for sv in codec(sh).variants.values():
                    pair = compile_headers([pv, sv])
                    for _ in range(3):
                        a, b = rng.randbytes(pv.size), rng.randbytes(sv.size)
                        want = (_reference(pv, a)[1], _reference(sv, b)[1])
                        assert pair(a + b, 0) == (None if None in want else want)


def _random_fields(draw, h) -> dict:
    """Values for every field of every variant of ``h`` (reserved ones mostly 0)."""
    out = {}
    for var in codec(h).variants.values():
        for p in var.placed:
            if p.name in out:
                continue
            if p.field.reserved:
                out[p.name] = draw(st.sampled_from([0] * 7 + [p.field.mask]))
            elif p.field.flag:
                out[p.name] = draw(st.booleans())
            elif p.field.signed:
                half = 1 << (p.field.width - 1)
                out[p.name] = draw(st.integers(-half, half - 1))
            else:
                out[p.name] = draw(st.integers(0, p.field.mask))
    return out


@st.composite
def uet_frames(draw):
    ptype = draw(st.sampled_from(sorted(U.PDS_BY_TYPE)))
    nh = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 6, 7]))
    pds = {**_random_fields(draw, U.PDS_BY_TYPE[ptype]), "type": ptype}
    ses = None
    if ptype != 11:
        pds["next_hdr"] = nh
        if nh in U.SES_BY_NEXT_HDR and draw(st.integers(0, 4)):
            ses = _random_fields(draw, U.SES_BY_NEXT_HDR[nh])
            if draw(st.booleans()):
                ses["opcode"] = draw(st.sampled_from([1, 2, 5, 7]))
                ses["som"] = ses["eom"] = True
    uet = codec(U.PDS_BY_TYPE[ptype]).encode(pds)
    if ses is not None:
        uet += codec(U.SES_BY_NEXT_HDR[nh]).encode(ses)
    uet += draw(st.binary(max_size=40))
    v6 = draw(st.booleans())
    frame = build.udp_frame(uet, src="fd00::1" if v6 else "10.0.0.1", dst="fd00::2" if v6 else "10.0.0.2",
                            sport=draw(st.sampled_from([4793, 49152, 4791])),
                            dport=draw(st.sampled_from([4793, 4791, 5000])), trailer=draw(st.booleans()),
                            ecn=draw(st.integers(0, 3)), dscp=draw(st.integers(0, 63)))
    return frame


@st.composite
def roce_frames(draw):
    opcode = draw(st.sampled_from([0x04, 0x06, 0x0A, 0x11, 0x12, 0x13, 0x81, 0x64, 0x65, 0x40, 0x1F]))
    exts = extension_headers(opcode) or ()
    return build.roce_frame({**_random_fields(draw, codec("roce.bth").header), "opcode": opcode,
                             "pad_cnt": draw(st.integers(0, 3))},
                            [(x.key, _random_fields(draw, x)) for x in exts], draw(st.binary(max_size=24)))


@settings(max_examples=400, deadline=None)
@given(frame=st.one_of(uet_frames(), roce_frames()), ethernet=st.booleans(),
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=2),
       cut=st.one_of(st.none(), st.integers(min_value=0)),
       trailer=st.sampled_from(["auto", "crc", "none"]), ccx=st.sampled_from(["1.0", "xdp2"]),
       rsv=st.sampled_from([80, 83]), mswap=st.booleans())
def test_quick_decoder_gives_the_reference_object_or_none(frame, ethernet, edits, cut, trailer, ccx, rsv,
                                                          mswap):
    raw = bytearray(frame if ethernet else frame[14:])
    for pos, value in edits:
        raw[pos % len(raw)] = value
    if cut is not None:
        del raw[cut % (len(raw) + 1):]
    linktype = 1 if ethernet else 101
    cfg = DecodeConfig(trailer=trailer, opts=Options(ccx_layout=ccx, rsv_pdc_bit=rsv, mswap_cswap_ext=mswap))
    got = QuickDecoder(cfg, warmup=1)(linktype, bytes(raw), 7)
    if got is not None:
        assert json.dumps(got) == json.dumps(decode_frame(linktype, bytes(raw), 7, cfg).obj)


@given(raw=st.binary(max_size=120), linktype=st.sampled_from([0, 1, 12, 101, 108, 113, 228, 229, 276]))
def test_quick_decoder_on_arbitrary_bytes(raw, linktype):
    for trailer in ("auto", "none"):
        cfg = DecodeConfig(trailer=trailer)
        got = QuickDecoder(cfg, warmup=1)(linktype, raw, 1)
        if got is not None:
            assert json.dumps(got) == json.dumps(decode_frame(linktype, raw, 1, cfg).obj)


@pytest.mark.parametrize("budget", [256, 9])
def test_quick_decoder_on_the_golden_captures(monkeypatch, budget):
    monkeypatch.setattr("uet.capture.quick._COMPILE_BUDGET", budget)  # 9: most kinds left over
    quick = QuickDecoder(DecodeConfig(), warmup=1)
    hits = total = 0
    for path in GOLDEN:
        for n, (lt, raw, _) in enumerate(read_frames(str(path)), 1):
            got = quick(lt, raw, n)
            total += 1
            if got is not None:
                hits += 1
                assert json.dumps(got) == json.dumps(decode_frame(lt, raw, n).obj), (path.name, n)
    assert quick.compile.made <= budget
    assert hits > (total // 2 if budget > 100 else 10)  # the plain frames, which are most of them


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_decode_json_is_the_golden_output(path, capsys):
    assert main(["decode", "--json", str(path)]) == 0
    assert capsys.readouterr().out == path.with_suffix(".json").read_text()


# --- the CLI imports what `uet decode` needs, nothing more ---------------------------------------

IMPORTS = """
import contextlib, io, sys
from uet import cli
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = cli.main(["decode", "--json", sys.argv[1]])
loaded = [m for m in ("trio", "scapy", "uet.sim", "uet.pds", "uet.fabric", "uet.io", "uet.demo", "rich")
          if m in sys.modules]
print(rc, len(out.getvalue().splitlines()), loaded)
"""


def test_decode_imports_neither_the_simulator_nor_trio_nor_scapy():
    path = GOLDEN[0]
    proc = subprocess.run([sys.executable, "-c", IMPORTS, str(path)], capture_output=True, text=True,
                          check=True)
    frames = len(path.with_suffix(".json").read_text().splitlines())
    assert proc.stdout.strip() == f"0 {frames} []"  # exit status, JSON lines, heavy modules loaded


def test_the_whole_parser_still_knows_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("decode", "wireshark", "sim", "send", "recv", "fabric", "demo"):
        assert command in out
