"""What ``uet demo`` tells a person (uet/demo/report.py): first one line that says what happened
(bytes, paths, addresses, intact by SHA-256 or NOT, time, goodput), then the table with units and
a legend, then the summary in words (yes/no, no Python reprs, rto and tlp spelt out). ``--json``
is the run's summary as it is. Small live runs bounded by ``--timeout``; no timing assertions."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys

import pytest

from uet.demo import report
from uet.demo.command import main
from uet.demo.report import headline, intact, plain, summary_rows
from uet.payload import seeded_bytes

from .test_demo import MIB, TIMEOUT

REPRS = re.compile(r"\b(True|False|None)\b|\{'|\['|\[\]|\{\}")
HEAD = re.compile(r"uet demo: (?P<size>\S+ \S+) sent over (?P<paths>\d+) paths on (?P<tx>\S+) -> "
                  r"fabric (?P<fab>\S+) -> (?P<rx>\S+) \(UET port (?P<port>\d+)\), received intact "
                  r"\(SHA-256 (?P<sha>[0-9a-f]{16})\.\.\.\) in (?P<time>\S+) (?P<unit>s|µs), "
                  r"(?P<mbps>\S+) MB/s \((?P<gbps>\S+) Gb/s\)$")


def run(capsys, *argv: str) -> tuple[int, dict, list[str]]:
    rc = main(["--json", "--timeout", TIMEOUT, *argv])
    cap = capsys.readouterr()
    return rc, json.loads(cap.out), cap.err.splitlines()


def test_the_first_line_says_what_happened(capsys):
    rc, s, err = run(capsys, "--bytes", "1MiB", "--loss", "0", "--trim", "0", "--seed", "3")
    assert rc == 0 and s["ok"]
    m = HEAD.match(err[0])
    assert m, err[0]
    host = lambda who: s["addresses"][who].rsplit(":", 1)[0]  # noqa: E731
    assert (m["size"], m["paths"], m["port"]) == ("1 MiB", "4", str(s["ports"]["receiver"]))
    assert (m["tx"], m["fab"], m["rx"]) == (host("sender"), host("fabric"), host("receiver"))
    # the SHA-256 of the bytes sent (uet.demo.run.payload: the seeded stream), which arrived
    want = hashlib.sha256(seeded_bytes(3 ^ 0x5EED, MIB)).hexdigest()
    assert m["sha"] == want[:16]
    assert float(m["time"]) * (1e-6 if m["unit"] == "µs" else 1) == pytest.approx(
        s["wall_time_s"], rel=5e-3)
    assert float(m["mbps"]) == pytest.approx(s["goodput_MBps"], rel=5e-3)
    assert float(m["gbps"]) == pytest.approx(s["goodput_gbps"], rel=5e-3)


def test_a_run_that_fails_says_not_intact_first(capsys):
    rc, s, err = run(capsys, "--bytes", "256k", "--loss", "1", "--seed", "7", "--timeout", "1")
    assert rc == 1 and not s["ok"]
    assert err[0].startswith("uet demo: NOT received intact: 256 KiB sent over 4 paths on ")
    assert err[0].endswith(s["failures"][0]) and "timed out after 1 s" in err[0]
    assert "SHA-256" not in err[0]
    assert any("replay with: uet demo" in ln for ln in err)


def test_the_table_has_units_and_a_legend_and_the_summary_has_no_reprs(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich.console", None)  # the plain text, rich installed or not
    rc, s, err = run(capsys, "--bytes", "1MiB", "--trim", "0.05", "--seed", "2")
    assert rc == 0 and s["nacks"].get("TRIMMED")
    text = "\n".join(err)
    head = next(ln for ln in err if ln.lstrip().startswith("path "))
    assert "rate Gb/s" in head and "max q KiB" in head and "mean q KiB" in head
    assert any(ln.startswith("packets: ") and "answers: ACKs and NACKs" in ln for ln in err)
    assert REPRS.search(text) is None, REPRS.search(text)
    rows = dict(ln.strip().split(": ", 1) for ln in err if ": " in ln and not ln.startswith("uet "))
    assert rows["ok (all intact and acknowledged, in time)"] == "yes"
    assert rows["through the fabric"] == "yes"
    assert rows["NACKs by code"] == f"TRIMMED {s['nacks']['TRIMMED']}"
    assert rows["retransmission timeouts (rto)"] == str(s["rto"])
    assert rows["tail loss probes (tlp)"] == str(s["tlp"])
    assert rows["congestion signal (CSIG)"] == "none" and rows["failures"] == "none"
    assert rows["addresses (ADDRESS:UET port)"] == (
        f"sender {s['addresses']['sender']}, receiver {s['addresses']['receiver']}, "
        f"fabric {s['addresses']['fabric']}")


def test_quiet_keeps_the_one_line(capsys):
    rc, s, err = run(capsys, "--bytes", "256k", "--no-fabric", "--quiet", "--seed", "4")
    assert rc == 0 and len(err) == 1
    assert err[0].startswith("uet demo: 256 KiB sent over 4 entropy ports (no fabric) on ")
    assert "received intact (SHA-256 " in err[0]


SUMMARY = {"ok": False, "bytes": 3 << 20, "messages": 3, "delivered": 3, "fabric": True,
           "paths": 2, "addresses": {"sender": "[::3]:4793", "fabric": "[::2]:4793",
                                     "receiver": "[::1]:4793"},
           "ports": {"receiver": 4793}, "wall_time_s": 0.5, "goodput_MBps": 6.291,
           "goodput_gbps": 0.050332, "failures": ["the PDC did not close within 1 s"]}


def test_intact_but_not_ok_and_not_intact_are_told_apart():
    """The data intact and the run not ok (here the PDC close) is FAILED with the digest; bytes
    that arrived wrong (uet.demo.run WRONG_BYTES) are NOT intact."""
    assert intact(SUMMARY)
    line = headline(SUMMARY, "ab" * 32)
    assert line == ("FAILED: 3 MiB in 3 messages sent over 2 paths on [::3] -> fabric [::2] -> "
                    "[::1] (UET port 4793), received intact (SHA-256 abababababababab...) in "
                    "0.5 s, 6.29 MB/s (0.0503 Gb/s), but the PDC did not close within 1 s")
    wrong = {**SUMMARY, "failures": ["1 delivered message(s) match nothing that was sent"]}
    assert not intact(wrong)
    assert headline(wrong, None) == (
        "NOT received intact: 3 MiB in 3 messages sent over 2 paths on [::3] -> fabric [::2] -> "
        "[::1] (UET port 4793); 3 of 3 messages delivered; 1 delivered message(s) match nothing "
        "that was sent")
    short = {**SUMMARY, "delivered": 2, "failures": ["message 2 failed: retry limit"]}
    assert headline(short, None).endswith("; 2 of 3 messages delivered; message 2 failed: "
                                          "retry limit")


@pytest.mark.parametrize("value, text", [(True, "yes"), (False, "no"), (None, "none"),
                                         ({"TRIMMED": 39, "SEQ_GAP": 2}, "TRIMMED 39, SEQ_GAP 2"),
                                         ({}, "none"), ([], "none"), (["a", "b"], "a; b"),
                                         (0.1234567891, "0.123457"), (7, "7")])
def test_plain_words(value, text):
    assert plain(value) == text


def test_every_summary_row_is_plain():
    s = {**SUMMARY, "ok": True, "failures": [], "mode": "rod", "nacks": {}, "csig": None,
         "credit_granted": None, "cwnd_bytes": {"min": 65536, "mean": 98304.0, "final": 1 << 20,
                                                "samples": 9},
         "socket_drops": {"sender": 0, "receiver": 1}, "rto": 2, "tlp": 1}
    rows = dict(summary_rows(s))
    assert rows["delivery mode"] == "rod (reliable, ordered)"
    assert rows["sender's window"] == "min 64 KiB, mean 96 KiB, last 1 MiB (9 samples)"
    assert rows["retransmission timeouts (rto)"] == "2" and rows["tail loss probes (tlp)"] == "1"
    assert "credit granted (rccc)" not in rows and rows["NACKs by code"] == "none"
    assert all(REPRS.search(v) is None for v in rows.values()), rows


def test_with_rich_the_first_line_is_still_one_plain_line(capsys):
    pytest.importorskip("rich")
    rc, s, err = run(capsys, "--bytes", "256k", "--seed", "3", "--loss", "0", "--trim", "0")
    assert rc == 0 and HEAD.match(err[0]), err[:2]
    assert REPRS.search("\n".join(err)) is None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_draws_only_on_a_terminal_and_a_pipe_gets_plain_columns(capsys):
    """With rich installed, a terminal gets its table; a file or a pipe the plain columns (the
    same whatever is installed), and the headline is one plain line either way."""
    pytest.importorskip("rich")  # the dev extra installs it
    rc, summary, _ = run(capsys, "--bytes", "256k", "--seed", "3", "--loss", "0", "--trim", "0")
    assert rc == 0
    pipe, tty = io.StringIO(), _Terminal()
    report.show(summary, pipe, sha256="ab" * 32)
    report.show(summary, tty, sha256="ab" * 32)
    plain = pipe.getvalue().splitlines()
    assert plain[0] == tty.getvalue().splitlines()[0] and HEAD.match(plain[0])
    assert plain[1].split()[:2] == ["path", "state"]  # format_table's header
    assert "\u2500" not in pipe.getvalue() and "\u2500" in tty.getvalue()  # rich's box lines
