"""``uet fabric`` (uet.fabric.command): options mirroring ``uet sim``, the --json contract (one JSON
object on one line on stdout, tables on stderr), signals, the register() hook."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

import pytest

from uet.fabric.command import format_table, hostport, main, register

from .helpers import S, collect, psn_of, request, sealed, udp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = "import sys; from uet.fabric.command import main; sys.exit(main(sys.argv[1:]))"


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_register_adds_the_fabric_subcommand():
    p = argparse.ArgumentParser(prog="uet")
    register(p.add_subparsers(dest="command"))
    a = p.parse_args(["fabric", "--to", "127.0.0.1:5000", "--paths", "2", "--trim", "0.5",
                      "--fail-path", "1@2ms", "--fail-path", "0@30", "--listen", "127.0.0.1:0"])
    assert callable(a.func) and a.to == ("127.0.0.1", 5000) and a.listen == ("127.0.0.1", 0)
    assert a.fail_path == [(1, 2000.0), (0, 30.0)] and a.trim == 0.5 and a.paths == 2
    with pytest.raises(SystemExit):
        p.parse_args(["fabric", "--to", "127.0.0.1:5000", "--loss", "2"])
    assert hostport("[::1]:7") == ("::1", 7) and hostport("localhost") == ("127.0.0.1", 4793)


def test_duration_run_prints_one_json_line(capsys):
    rc = main(["--listen", "127.0.0.1:0", "--to", "127.0.0.1:9", "--duration", "0.2",
               "--interval", "0.05", "--json", "--paths", "3", "--fail-path", "2@0"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.count("\n") == 1
    doc = json.loads(out)
    assert [p["path"] for p in doc["paths"]] == [0, 1, 2] and doc["paths"][2]["failed"]
    assert doc["totals"]["received"] == 0 and doc["seed"] == 1 and doc["config"]["paths"] == 3
    assert "listening on 127.0.0.1:" in err and "FAILED" in err


def test_format_table_plain_text():
    from uet.fabric.relay import _zero

    z = _zero()
    c = {"paths": [dict(z, path=0, failed=False, packets=5, bytes=5_000_000)],
         "totals": dict(z, packets=5, bytes=5_000_000), "relay": {"flows": 1, "uptime_s": 1.0}}
    text = format_table(c)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["path", "state", "packets"]
    assert lines[1].split()[:4] == ["0", "up", "5", "5.0"] and lines[2].split()[0] == "all"


@pytest.mark.trio
async def test_serves_traffic_until_sigint_then_reports():
    import trio

    rx, tx = udp(), udp(S, tos=2)
    proc = subprocess.Popen([sys.executable, "-c", RUN, "--to",
                             "%s:%d" % rx.getsockname(), "--json", "--interval", "0.1", "--trim", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        with trio.fail_after(15):
            first = await trio.to_thread.run_sync(proc.stderr.readline)
            assert b"listening on" in first, first
            host, port = first.split(b"listening on ")[1].split(b",")[0].rsplit(b":", 1)
            front = (host.decode(), int(port))
            assert front[1] == rx.getsockname()[1] and front[0] != "127.0.0.1"  # A.1
            for i in range(20):
                tx.sendto(sealed(request(i, 600), tx.getsockname(), front), front)
            got = await collect(rx, 20)
            proc.send_signal(signal.SIGINT)
            out, err = await trio.to_thread.run_sync(proc.communicate)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert sorted(psn_of(d) for d, _, _ in got) == list(range(20))
    assert all(len(d) == 256 and tos >> 2 == 11 for d, tos, _ in got)
    doc = json.loads(out)
    assert out.count(b"\n") == 1
    t = doc["totals"]
    assert t["received"] == t["forwarded"] == t["trimmed"] == 20
    assert doc["relay"]["flows"] == 1 and doc["flows"][0]["entropy"] == tx.getsockname()[1]
    assert b"path" in err


def test_listen_port_must_be_the_uet_port_and_preserve_entropy_is_accepted(capsys):
    """A.1: the relay keeps every datagram's UET port, so a --listen port other than --to's is a
    usage error (one line, exit 2); --preserve-entropy is a documented no-op."""
    assert main(["--listen", "127.0.0.5:4000", "--to", "127.0.0.1:9", "--duration", "0"]) == 2
    err = capsys.readouterr().err
    assert "keeps the UET port, 9" in err and "A.1" in err
    rc = main(["--to", "127.0.0.1:9", "--duration", "0.05", "--interval", "0", "--json",
               "--preserve-entropy"])
    out, err = capsys.readouterr()
    assert rc == 0 and json.loads(out)["config"]["preserve_entropy"] is True
    assert "listening on 127.0.0." in err and "listening on 127.0.0.1:" not in err
