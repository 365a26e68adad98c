"""Issue 16: ``uet conformance`` against the reference endpoint passes every must, prints its
report on stderr, one JSON object on stdout with ``--json``, and JUnit XML with ``--junit``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from uet.cli import main
from uet.conformance import all_checks
from uet.conformance.ses_checks import NO_REGION

from .targets import MKEY, MKEY_LEN, ROOT, RecvProcess, ThreadTarget, env

CHECK_KEYS = {"name", "facts", "level", "profile", "result", "detail"}
SUMMARY_KEYS = {"total", "pass", "fail", "skip", "must_failed", "should_failed"}


def _target(addr: tuple[str, int]) -> str:
    return f"[{addr[0]}]:{addr[1]}" if ":" in addr[0] else f"{addr[0]}:{addr[1]}"


def test_uet_recv_passes_every_must_and_prints_one_json_object(uet_recv, tmp_path):
    """The command as a user runs it, against ``uet recv`` in its own process."""
    junit = tmp_path / "conformance.xml"
    p = subprocess.run([sys.executable, "-m", "uet.cli", "conformance", _target(uet_recv.addr),
                        "--json", "--junit", str(junit)], capture_output=True, text=True,
                       env=env(), cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 1                               # exactly one JSON object on stdout
    obj = json.loads(lines[0])
    assert set(obj) >= {"target", "checks", "summary"}
    assert obj["target"] == _target(uet_recv.addr)
    assert obj["ok"] is True and obj["target_answered"] is True
    names = [c["name"] for c in obj["checks"]]
    assert names == [c.name for c in all_checks()]
    for c in obj["checks"]:
        assert set(c) == CHECK_KEYS
        assert c["result"] in ("pass", "fail", "skip") and c["level"] in ("must", "should")
        assert c["profile"] in ("pds", "ses") and c["detail"]
        if c["level"] == "must":
            assert c["result"] != "fail", c
    assert set(obj["summary"]) == SUMMARY_KEYS
    assert obj["summary"]["must_failed"] == 0
    assert obj["summary"]["total"] == len(names)
    # what uet recv offers: no memory region, so the RMA checks skip; everything else passes
    skipped = {c["name"] for c in obj["checks"] if c["result"] == "skip"}
    assert skipped == {"ses_write_read", "ses_atomic", "ses_out_of_range"}
    # and their detail does not tell the user to give --mkey, which uet recv cannot serve
    assert {c["detail"] for c in obj["checks"] if c["result"] == "skip"} == {NO_REGION}
    assert "give --mkey" not in p.stderr and "such as uet recv" in NO_REGION
    # the readable report is on stderr, one line per check
    assert "uet conformance: target" in p.stderr
    for n in names:
        assert n in p.stderr
    assert "Traceback" not in p.stderr
    # JUnit: valid XML, one testcase per check
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuite"
    cases = root.findall("testcase")
    assert [c.get("name") for c in cases] == names
    assert int(root.get("tests")) == len(names)
    assert int(root.get("skipped")) == 3 and int(root.get("failures")) == 0
    assert sum(1 for c in cases if c.find("skipped") is not None) == 3


def test_ses_checks_run_where_the_target_exposes_memory(capsys):
    """With ``--mkey KEY:LEN`` naming a region the target registered, WRITE, READ, atomics and
    out-of-range run and pass; the whole suite passes."""
    with ThreadTarget() as t:
        code = main(["conformance", _target(t.addr), "--json", "--mkey", f"{MKEY:#x}:{MKEY_LEN}",
                     "--seed", "3"])
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert code == 0, err
    assert {c["name"]: c["result"] for c in obj["checks"]} == {
        c.name: "pass" for c in all_checks()}


def test_profile_and_level_select_checks(uet_recv, capsys):
    code = main(["conformance", _target(uet_recv.addr), "--profile", "ses", "--level", "must",
                 "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {c["profile"] for c in obj["checks"]} == {"ses"}
    assert {c["level"] for c in obj["checks"]} == {"must"}
    assert [c["name"] for c in obj["checks"]] == [
        c.name for c in all_checks() if c.profile == "ses" and c.level == "must"]


def test_list_names_every_check(capsys):
    assert main(["conformance", "127.0.0.1:4793", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in out] == [c.name for c in all_checks()]


def test_list_needs_no_target(capsys):
    """Issue 25 item 7b: listing the checks sends nothing, so it asks for no HOST:PORT."""
    assert main(["conformance", "--list", "--profile", "pds"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert [ln.split()[0] for ln in out.splitlines()] == [
        c.name for c in all_checks() if c.profile == "pds"]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
def test_an_ipv6_target_passes_every_must(capsys):
    """IPv6: the trailer covers 16-byte addresses, and the zero UDP checksum UET sends must be
    accepted by the suite's sockets (UDP_NO_CHECK6_RX)."""
    rp = RecvProcess("[::1]:0")
    try:
        code = main(["conformance", _target(rp.addr), "--profile", "pds", "--level", "must",
                     "--json"])
    finally:
        rp.stop()
    obj = json.loads(capsys.readouterr().out)
    assert code == 0 and obj["target"] == _target(rp.addr)
    assert {c["result"] for c in obj["checks"]} == {"pass"}
