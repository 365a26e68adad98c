"""The generated dissector does per-packet only what a packet needs (issue 31, item 7).

Structural checks of the generated Lua: the functions that run once per packet create no
ProtoField, expert or Field extractor, build no closure, and the header walk and the CRC build no
table per field or per block of bytes; the CRC itself is checked against the standard check values
on Lua 5.2 (bit32) and 5.4 (native operators). Timing is left to tools/bench_decode.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from uet.wireshark import generate_lua
from uet.wireshark.lua import lua_source

_TOKEN = re.compile(r'--\[(=*)\[.*?\]\1\]|--[^\n]*|\[(=*)\[.*?\]\2\]|"(?:\\.|[^"\\])*"|'
                    r"'(?:\\.|[^'\\])*'|[A-Za-z_][A-Za-z0-9_]*|.", re.S)
_OPEN = {"function", "do", "if", "repeat"}
_CLOSE = {"end", "until"}


def _code_tokens(text: str) -> list[tuple[int, str]]:
    """(offset, token) of the Lua text, comments dropped, strings kept as one token."""
    return [(m.start(), m.group()) for m in _TOKEN.finditer(text)
            if not m.group().startswith("--") and not m.group().isspace()]


def function_body(text: str, header: str) -> str:
    """The source of the function that ``header`` (e.g. ``local function add_header(``) opens,
    up to its matching ``end``. ``for``/``while`` open their block with ``do``, ``if`` with itself."""
    start = text.index(header)
    depth = 0
    for pos, tok in _code_tokens(text[start:]):
        if tok in _OPEN:
            depth += 1
        elif tok in _CLOSE:
            depth -= 1
            if depth == 0:
                return text[start:start + pos + len(tok)]
    raise AssertionError(f"no end for {header!r}")


PER_PACKET = (
    "local function add_header(",
    "local function field_value(",
    "local function add_derived(",
    "local function dissect_uet(",
    "local function uet_summary(",
    "local function dissect_roce_additions(",
    "function proto_csig.dissector(",
    "local function innermost_ip(",
    "local function crc_seed(",
    "local function dscp_of(",
    "local function sym(",
)


def test_the_block_matcher_finds_the_whole_function():
    text = 'local function f(a)\n  if a then return "end" end\n  for i = 1, 2 do end\n  -- end\nend\nx()'
    assert function_body(text, "local function f(") == text[:-4]


@pytest.mark.parametrize("header", PER_PACKET)
def test_per_packet_functions_register_nothing(header):
    body = function_body(generate_lua(), header)
    for call in ("ProtoField.", "ProtoExpert.", "Field.new", "Proto(", "Pref.", "DissectorTable.get"):
        assert call not in body, f"{header} calls {call} per packet"


@pytest.mark.parametrize("header", ["local function add_header(", "local function field_value(",
                                    "local function add_derived("])
def test_header_walk_builds_no_closure_and_no_title(header):
    body = function_body(generate_lua(), header)
    tokens = [t for _, t in _code_tokens(body)]
    assert tokens.count("function") == 1, f"{header} builds a closure per packet"
    # the title is concatenated once at load time (h.text)
    assert "h.title" not in body and "ipairs" not in body


def test_dissect_uet_reads_no_preference_per_packet():
    """The options are read at load time and by prefs_changed (which `-o` triggers), not per packet."""
    text = generate_lua()
    body = function_body(text, "local function dissect_uet(")
    assert "read_prefs" not in body and "prefs." not in body
    assert "read_prefs()" in function_body(text, "function proto.prefs_changed(")


def test_per_packet_lookups_do_not_walk_the_layouts():
    """The Info column's opcode name and the IP context are table lookups, not searches."""
    text = generate_lua()
    assert "ipairs" not in function_body(text, "local function sym(")
    for header in ("local function crc_seed(", "local function dscp_of(", "local function innermost_ip("):
        assert "Field.new" not in function_body(text, header)
    extractors = re.findall(r"Field\.new\(\"([^\"]+)\"\)", text)
    assert sorted(extractors) == ["frame", "ip", "ipv6", "udp"]


def test_add_header_makes_only_its_three_result_tables_and_its_bytes():
    """Per header, not per field: the values, items and ranges by name, and the header's bytes as
    numbers (one string.byte call; the fields are then read by table lookups)."""
    body = function_body(generate_lua(), "local function add_header(")
    assert "local v, items, pos = {}, {}, {}" in body
    bytes_table = "local by = { sbyte(raw, 1, take) }"
    assert body.count(bytes_table) == 1
    rest = body.replace(bytes_table, "")
    assert rest.count("{}") == 3 and "{ " not in rest.replace("{}, {}, {}", "")


def test_crc_block_is_unrolled_without_tables():
    """The CRC loop reads a block with one string.byte call into locals, never into a table."""
    prelude = lua_source("prelude.lua")
    block = prelude[prelude.index("local crc_update"):prelude.index("-- bits of a header held")]
    assert "{ sbyte" not in block and "{sbyte" not in block
    assert "local CRC_SLICE = 64" in prelude


CRC_CHECK = r'''
assert(crc_update(T32C, 0, "123456789") == 0xE3069283)
assert(crc_update(T32, 0, "123456789") == 0xCBF43926)
local p = {}
for i = 1, 1000 do p[i] = string.char((i * 37 + 11) % 256) end
local s = table.concat(p)
for cut = 0, 200, 7 do
  assert(crc_update(T32C, crc_update(T32C, 0, s:sub(1, cut)), s:sub(cut + 1)) == crc_update(T32C, 0, s))
end
print(string.format("%08X %08X", crc_update(T32C, 0, s), crc_update(T32, 12345, s)))
'''


@pytest.mark.parametrize("lua", ["lua5.2", "lua5.4"])
def test_sliced_crc_matches_the_c_crcs(lua, tmp_path):
    """A.3 (CRC-32C trailer) and G.6 (RoCEv2 ICRC's CRC-32): the sliced Lua CRC equals uet.native's."""
    exe = shutil.which(lua)
    if exe is None:
        pytest.skip(f"{lua} not installed")
    import zlib

    from uet import native

    prelude = lua_source("prelude.lua")
    crc_part = prelude[prelude.index("-- bit operations"):prelude.index("-- bits of a header held")]
    script = tmp_path / "crc.lua"
    script.write_text(crc_part + CRC_CHECK, encoding="utf-8")
    out = subprocess.run([exe, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    data = bytes((i * 37 + 11) % 256 for i in range(1, 1001))
    assert out.stdout.split() == [f"{native.crc32c(data):08X}", f"{zlib.crc32(data, 12345):08X}"]


# --- the IP context read from the IP header's bytes (one extractor for ip, one for ipv6) -------

def _context_frames() -> list[tuple[int, bytes]]:
    """(dscp, frame): UDP and native-IP UET over IPv4 and IPv6, each with its CRC-32C trailer,
    at DSCP 0, 11 (trimmed, C.6), 46 and 63 (every DSCP bit, both halves of IPv6's traffic class)."""
    from uet.wire import build as B

    body = B.uet_bytes({"type": 2, "next_hdr": 3, "psn": 7, "spdcid": 1, "dpdcid": 2},
                       {"opcode": 5, "som": True, "eom": True, "request_length": 4}, payload=b"abcd")
    out = []
    for dscp in (0, 11, 46, 63):
        for src, dst in (("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2")):
            out.append((dscp, B.udp_frame(body, src=src, dst=dst, dscp=dscp, ecn=1)))
            out.append((dscp, B.native_ip_frame(body, 0x1234, src=src, dst=dst, dscp=dscp, ecn=2)))
    return out


@pytest.mark.tshark
def test_crc_seed_and_dscp_come_from_the_innermost_ip_header(tmp_path):
    """A.3: the trailer verifies with the addresses (and UDP header) read from the IP header's bytes,
    for IPv4 and IPv6; C.6: the trimmed note appears exactly at DSCP 11, with the DSCP taken from
    the TOS byte (IPv4) or across the traffic-class nibbles (IPv6). Fields equal uet decode's."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes
    from wshelpers import TSHARK, plugin_name, run_tshark

    if TSHARK is None:
        pytest.skip("tshark is not on PATH")
    from test_wireshark_tshark import _check_file

    cases = _context_frames()
    pcap = tmp_path / "context.pcap"
    pcap.write_bytes(pcap_bytes([f for _, f in cases]))
    lua = tmp_path / "uet.lua"
    lua.write_text(generate_lua(), encoding="utf-8")
    _check_file(pcap, lua)
    pn = plugin_name()
    run = run_tshark(pcap, [lua], prefs=(f"{pn}.check_crc:TRUE",))
    assert len(run.packets) == len(cases)
    for (dscp, _), pkt in zip(cases, run.packets):
        assert [a["show"] for a in pkt.fields[f"{pn}.crc.ok"]] in (["True"], ["1"]), pkt.number
        trimmed = [m for name, m in pkt.experts if name == f"{pn}.expert.trimmed"]
        assert trimmed == (["DSCP 11: packet trimmed by the fabric (C.6)"] if dscp == 11 else []), pkt.number
