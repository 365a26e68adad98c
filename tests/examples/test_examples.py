"""Every script in examples/ runs as a user runs it (its own process, from another directory)
and prints what it says it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(name: str, cwd: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                       cwd=cwd, env=env, timeout=300)  # a hang guard, not a time budget
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return p.stdout.splitlines()


def test_every_example_is_tested():
    assert {p.name for p in EXAMPLES.glob("*.py")} == {
        "codecs.py", "scapy_layers.py", "endpoint.py", "simulation.py", "decode_capture.py"}


def test_codecs(tmp_path):
    assert _run("codecs.py", tmp_path) == [
        "pds.rud_rod_req: 12 bytes, psn 1000 syn True",
        "frame: 107 bytes",
        "decoded: RUD_REQ psn 1000 | SEND job 42 | crc ok: True"]


def test_the_readme_shows_what_codecs_prints(tmp_path):
    readme = (EXAMPLES / "README.md").read_text()
    assert "$ python examples/codecs.py\n" + "\n".join(_run("codecs.py", tmp_path)) + "\n```" in readme


def test_scapy_layers(tmp_path):
    assert _run("scapy_layers.py", tmp_path) == [
        "built: 106 bytes", "psn 7 opcode WRITE crc ok True", "from the pcap: psn 7"]


def test_endpoint_on_loopback(tmp_path):
    out = _run("endpoint.py", tmp_path)
    assert out == ["SEND: 16384 bytes, sha256 a1f259d4365ed432",
                   "WRITE: region[100:105] = b'hello'", "READ: b'hello'"]


def test_simulation_is_seeded(tmp_path):
    out = _run("simulation.py", tmp_path)
    assert out[0].startswith("paths:4  ok=True  1048576 bytes in ")
    assert out[1].startswith("incast:8  ok=True  last flow done at ")
    assert _run("simulation.py", tmp_path) == out  # the same seeds, the same figures


def test_decode_capture(tmp_path):
    out = _run("decode_capture.py", tmp_path)
    assert len(out) == 17  # captures/README.md: uet_flows.pcap has 17 frames
    assert out[0] == "  1  10.0.0.1 -> 10.0.0.2  RUD_REQ SEND psn 65536"
    assert out[14] == " 15  fd00::1 -> fd00::2  UUD_REQ DATAGRAM_SEND"
    assert not any("problems" in line or "not UET" in line for line in out)
