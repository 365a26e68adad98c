"""Issue 16, bad input: a target that never answers, answers garbage or floods gets a verdict
(exit 1) within its time bound, never a traceback or a hang; bad options exit 2 with one line."""

from __future__ import annotations

import json

import pytest

from uet.cli import main
from uet.conformance import all_checks

from .targets import ThreadTarget, UdpTarget, ack_then_nack

TIMEOUT = "0.2"


def run(capsys, addr, *extra: str) -> tuple[int, dict, str]:
    code = main(["conformance", f"{addr[0]}:{addr[1]}", "--json", "--timeout", TIMEOUT, *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    assert len(out.splitlines()) == 1
    return code, json.loads(out), err


def test_a_target_that_never_answers_fails_after_one_timeout(capsys):
    with UdpTarget("silent") as t:
        code, obj, err = run(capsys, t.addr)
    assert code == 1
    assert obj["ok"] is False and obj["target_answered"] is False
    res = {c["name"]: c for c in obj["checks"]}
    assert res["syn_establishment"]["result"] == "fail"
    assert "nothing" in res["syn_establishment"]["detail"]
    # the rest is not run (one timeout, not one per check), except the rule that nothing comes
    # back, which a silent target keeps
    assert {n for n, c in res.items() if c["result"] == "skip"} == {
        c.name for c in all_checks()} - {"syn_establishment", "uud_no_answer"}
    assert res["uud_no_answer"]["result"] == "pass"
    assert "never answered" in err


def test_a_target_that_answers_garbage_gets_a_verdict(capsys):
    with UdpTarget("garbage") as t:
        code, obj, _ = run(capsys, t.addr)
    assert code == 1 and obj["target_answered"] is False
    syn = obj["checks"][0]
    assert syn["name"] == "syn_establishment" and syn["result"] == "fail"
    assert "undecodable" in syn["detail"] or "bad CRC" in syn["detail"]


def test_a_flooding_target_gets_a_verdict(capsys):
    """Thousands of (valid, irrelevant) NACKs for each datagram: the run ends within its bound
    with exit 1, the checks that expect an answer fail or skip, nothing waits for the flood."""
    with UdpTarget("flood") as t:
        code, obj, _ = run(capsys, t.addr, "--profile", "pds")
    assert code == 1 and obj["target_answered"] is True
    res = {c["name"]: c for c in obj["checks"]}
    assert res["syn_establishment"]["result"] == "fail"
    assert res["uud_no_answer"]["result"] == "fail"
    assert not any(c["result"] == "pass" for c in obj["checks"])


CONTRADICTED = ("syn_establishment", "dpdcid_learning", "ack_on_ar", "close_acked")


def test_an_ack_then_a_nack_of_one_psn_fails_the_checks_that_saw_them(monkeypatch, capsys):
    """Issue 25 item 6, C.5: a target that follows each ACK with a NACK of the same PSN from the
    same PDC fails each of these checks, which took the first answer (the ACK) and passed; the
    same target without the break passes them (the control)."""
    # --settle as long as the wait for an answer: the NACK that follows the last ACK a check
    # takes is read in it (the default, shorter, costs less per check)
    argv = [f"--check={name}" for name in CONTRADICTED] + ["--settle", TIMEOUT]
    with ThreadTarget() as t:
        code, obj, _ = run(capsys, t.addr, *argv)
    assert code == 0 and {c["name"]: c["result"] for c in obj["checks"]} == dict.fromkeys(
        CONTRADICTED, "pass")
    ack_then_nack(monkeypatch)
    with ThreadTarget() as t:
        code, obj, _ = run(capsys, t.addr, *argv)
    assert code == 1 and obj["summary"]["must_failed"] == len(CONTRADICTED)
    for c in obj["checks"]:
        assert c["result"] == "fail", c
        psn = c["detail"].removeprefix("contradictory answers about PSN ").split()[0]
        assert c["detail"].startswith("contradictory answers about PSN ")
        assert f"ack_psn={psn} " in c["detail"]
        assert f"then NACK NO_RESOURCE psn={psn};" in c["detail"]
        assert "never a NACK (C.5)" in c["detail"]
        assert "(otherwise passed: " in c["detail"]   # the ACK alone would have passed


def test_a_check_stops_reading_at_its_datagram_cap():
    """The count bound: a check that has read ``max_datagrams`` datagrams fails as flooded
    (the API's Context takes the cap; the command uses 512)."""
    from uet.conformance import Context, run_checks
    from uet.conformance.pds_checks import CHECKS

    with UdpTarget("flood") as t:
        run_ = run_checks([c for c in CHECKS if c.name == "unknown_dpdcid"],
                          Context(t.addr, timeout=2.0, max_datagrams=50))
    (r,) = run_.results
    assert r.result == "fail" and "flooded" in r.detail


def test_the_junit_report_of_a_failed_run_names_the_failures(capsys, tmp_path):
    import xml.etree.ElementTree as ET

    out = tmp_path / "j.xml"
    with UdpTarget("silent") as t:
        code, obj, _ = run(capsys, t.addr, "--junit", str(out))
    assert code == 1
    cases = ET.parse(out).getroot().findall("testcase")
    assert len(cases) == len(obj["checks"])
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["syn_establishment"]


@pytest.mark.parametrize("argv, needle", [
    (["conformance", "nowhere:port"], "HOST:PORT"),
    (["conformance", "127.0.0.1:0"], "port from 1 to 65535"),
    (["conformance", "127.0.0.1:99999"], "HOST:PORT"),
    (["conformance", "127.0.0.1:4793", "--timeout", "0"], "--timeout"),
    (["conformance", "127.0.0.1:4793", "--timeout", "-1"], "--timeout"),
    (["conformance", "127.0.0.1:4793", "--timeout", "nan"], "--timeout"),
    (["conformance", "127.0.0.1:4793", "--settle", "-0.1"], "--settle"),
    (["conformance", "127.0.0.1:4793", "--profile", "rdma"], "--profile"),
    (["conformance", "127.0.0.1:4793", "--level", "may"], "--level"),
    (["conformance", "127.0.0.1:4793", "--check", "no_such_check"], "--check"),
    (["conformance", "127.0.0.1:4793", "--mkey", "zz"], "--mkey"),
    (["conformance", "127.0.0.1:4793", "--bind", "::1"], "--bind"),
    (["conformance", "127.0.0.1:4793", "--junit", "/nonexistent/dir/j.xml"], "cannot write"),
    (["conformance"], "HOST:PORT"),
])
def test_bad_options_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    assert needle in err.splitlines()[0]
    assert len(err.splitlines()) <= 2   # the error, and the hint
