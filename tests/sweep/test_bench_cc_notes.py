"""``tools/bench_cc.py``'s notes under its table (issue 31): a row whose runs timed out or failed
gets one line on stderr, and the fixed window's incast16, which livelocks (tools/bench_cc.toml),
says so; stdout keeps the table alone (tests/sweep/test_sweep.py reads it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_cc():
    spec = importlib.util.spec_from_file_location("bench_cc", ROOT / "tools" / "bench_cc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


OK = {"status": "ok", "ok": True, "last_over_ideal": 1.2}
ROWS = {("incast8", "nscc", "reps", "16KiB"): [OK, OK],
        ("incast16", "fixed", "reps", "16KiB"): [{"status": "timeout", "ok": False}] * 3,
        ("perm", "nscc", "reps", "16KiB"): [OK, {"status": "ok", "ok": False}]}


def test_notes_name_the_rows_that_did_not_finish_and_the_livelock():
    notes = bench_cc().notes(ROWS)
    assert len(notes) == 2
    assert notes[0].startswith("bench_cc: incast16 fixed reps 16KiB: 3 of 3 runs timed out: "
                               "the fixed window livelocks here")
    assert "not a slow machine" in notes[0]
    assert notes[1] == "bench_cc: perm nscc reps 16KiB: 1 of 2 runs not ok"


def test_from_a_sweep_the_table_is_on_stdout_and_the_notes_on_stderr(monkeypatch, capsys):
    mod = bench_cc()
    monkeypatch.setattr(mod, "from_sweep", lambda directory: ROWS)
    assert mod.main(["--from", "somewhere"]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines()[0].startswith("scenario | cc | spray | ack | ok")
    assert "livelock" not in cap.out and len(cap.out.splitlines()) == 1 + len(ROWS)
    assert "incast16 | fixed | reps | 16KiB | 0/3 (3 timeout)" in cap.out
    assert "incast16 fixed reps 16KiB: 3 of 3 runs timed out: the fixed window livelocks" in cap.err


def test_no_notes_when_every_run_is_ok(monkeypatch, capsys):
    mod = bench_cc()
    monkeypatch.setattr(mod, "from_sweep", lambda directory: {("incast8", "nscc", "reps", "16KiB"): [OK]})
    assert mod.main(["--from", "somewhere"]) == 0
    assert capsys.readouterr().err == ""
