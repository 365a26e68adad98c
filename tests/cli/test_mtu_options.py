"""``--mtu`` (facts A.1: payload bytes per packet, from 256; by default the largest of the
reference provider's 1024, 2048, 4096 and 8192 that fits the route's MTU) on the live commands,
and ``--ses-header auto|standard`` on send, demo, sim and conformance: present, named in the help,
a bad value is one line and exit 2, and the default is resolved before any work starts."""

from __future__ import annotations

import pytest

from uet import cli

from .test_bad_options import no_runs, run_uet  # noqa: F401 (a fixture)

MTU_COMMANDS = ["send --to 127.0.0.1:9 --bytes 1", "recv --bind 127.0.0.1:0", "demo",
                "fabric --to 127.0.0.1:9", "conformance 127.0.0.1:9"]
SES_HEADER_COMMANDS = ["send --to 127.0.0.1:9 --bytes 1", "demo", "sim", "conformance 127.0.0.1:9"]


@pytest.mark.parametrize("cmd", MTU_COMMANDS)
def test_a1_mtu_is_in_the_help_with_the_reference_sizes(cmd, capsys):
    assert cli.main([cmd.split()[0], "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--mtu N" in out and "1024, 2048, 4096 and 8192" in out


@pytest.mark.parametrize("cmd", SES_HEADER_COMMANDS)
def test_a1_ses_header_is_in_the_help(cmd, capsys):
    assert cli.main([cmd.split()[0], "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--ses-header {auto,standard}" in out and "next_hdr 3" in out


BAD = ([(f"uet {c} --mtu {v}", "--mtu") for c in MTU_COMMANDS for v in ("255", "16384", "abc")]
       + [(f"uet {c} --ses-header {v}", "--ses-header") for c in SES_HEADER_COMMANDS
          for v in ("small", "")])


@pytest.mark.parametrize("line,needle", BAD, ids=[line for line, _ in BAD])
def test_bad_value_is_one_line_and_status_2(line, needle, capsys, no_runs):  # noqa: F811
    rc, out, err = run_uet(line, capsys)
    lines = err.splitlines()
    assert rc == 2 and out == "" and "Traceback" not in err
    assert len(lines) == 2 and needle in lines[0] and lines[1].startswith("try 'uet ")


@pytest.fixture
def seen(monkeypatch):
    """trio.run stubbed: records the namespace a live command would have run with."""
    import trio

    got: list = []

    def run(fn, args, *rest, **kw):
        got.append(args)
        return 0

    monkeypatch.setattr(trio, "run", run)
    return got


@pytest.mark.parametrize("line, mtu", [
    ("send --to 127.0.0.1:9 --bytes 1", 8192),           # loopback: MTU 65536
    ("send --to 127.0.0.1:9 --bytes 1 --mtu 1024", 1024),
    ("recv --bind 127.0.0.1:0", 8192),
    ("recv --bind 127.0.0.1:0 --mtu 300", 300),
    ("fabric --to 127.0.0.1:9 --duration 0 --interval 0", 8192),
])
def test_a1_default_mtu_is_resolved_from_the_route(line, mtu, seen):
    assert cli.main(line.split()) == 0
    assert seen[0].mtu == mtu


def test_send_passes_ses_header(seen):
    assert cli.main("send --to 127.0.0.1:9 --bytes 1 --ses-header standard".split()) == 0
    assert seen[0].ses_header == "standard"
