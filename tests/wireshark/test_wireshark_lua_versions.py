"""The generated script on both Lua generations Wireshark ships: Lua 5.2 with bit32 (Wireshark 4.0,
Debian 12) and Lua 5.4 with native bit operators (Wireshark 4.4+). tshark here has 5.2 only, so the
script runs under the plain interpreters with a small stand-in for Wireshark's Lua API
(mock_wireshark.lua); both must print the same Info columns, derived values, CRC verdicts and expert
messages - and, where tshark is installed, the same Info column as tshark itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import CAPTURES, INTEROP, TSHARK, lua_file, plugin_name, tshark_proc  # noqa: E402

__all__ = ["lua_file"]

HERE = Path(__file__).resolve().parent
MOCK = HERE / "mock_wireshark.lua"
LUA52, LUA54 = shutil.which("lua5.2"), shutil.which("lua5.4")
FILES = sorted(CAPTURES.glob("*.pcap")) + sorted(INTEROP.glob("*/*.pcap"))

needs_both = pytest.mark.skipif(not (LUA52 and LUA54), reason="lua5.2 and lua5.4 interpreters not "
                                "installed (Debian: apt-get install lua5.2 lua5.4)")


def mock_run(lua: str, script: Path, pcap: Path, *prefs: str) -> list[str]:
    """The mock's lines for each frame; ``prefs`` as tshark's ``-o`` (``uet.check_crc:TRUE``)."""
    proc = subprocess.run([lua, str(MOCK), str(script), str(pcap), *prefs], capture_output=True, text=True,
                          cwd=HERE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not [ln for ln in lines if "\tERROR " in ln], lines
    return lines


@needs_both
@pytest.mark.parametrize("pcap", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_lua52_and_lua54_agree(pcap, lua_file):
    a = mock_run(LUA52, lua_file, pcap, "uet.check_crc:TRUE")
    b = mock_run(LUA54, lua_file, pcap, "uet.check_crc:TRUE")
    assert a == b
    if pcap.parent == CAPTURES and pcap.name != "bad.pcap":  # CRCs really verified on both
        assert sum("crc.ok=true" in ln for ln in a) >= len(a) - 2


@needs_both
@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("name", ["uet_pds.pcap", "uet_ses.pcap", "uet_control_nack.pcap",
                                  "uet_flows.pcap", "bad.pcap"])
def test_lua54_info_column_equals_tshark(name, lua_file):
    pcap = CAPTURES / name
    mock = [ln.split("\t", 1)[0] for ln in mock_run(LUA54, lua_file, pcap)]
    proc = tshark_proc(pcap, [lua_file], output="fields",
                       extra=("-e", "_ws.col.Protocol", "-e", "_ws.col.Info"))
    rows = [ln.split("\t", 1) for ln in proc.stdout.splitlines()]
    assert len(rows) == len(mock)
    compared = 0
    for (proto, info), m in zip(rows, mock):
        if proto == plugin_name().upper():  # UET, or UETREF beside a built-in uet dissector
            assert info == m
            compared += 1
    assert compared >= len(mock) - 5
