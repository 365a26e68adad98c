"""``uet sweep`` end to end (uet/sweep/command.py), in this process: the issue's small grid (two
scenarios x two seeds, plus one run that must time out) on the local pool and on a two-worker
Dask LocalCluster gives the same table (run order aside); a resumed sweep runs nothing twice; a
bad spec is one line and exit 2; --dry-run lists the runs. Every run is seeded and small; the
run that times out is the fixed window on a 16-to-1 incast, which livelocks (tools/bench_cc.toml)
and so never ends within --run-timeout, whatever the machine's speed."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from uet.sim.command import main as sim_main
from uet.sweep import plots, results
from uet.sweep.command import main

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = "10"  # seconds: the small runs take about 1 s each, the livelock never ends
GRID = """\
command = "sim"
seeds = [1, 2]

[options]
"--bytes" = 50000

[[grid]]
"--topology" = ["leafspine:4,1,1"]
"--traffic" = ["incast:3", "permutation"]

[[grid]]
seeds = [1]
"--topology" = ["leafspine:17,1,1"]
"--traffic" = ["incast:16"]
"--cc" = ["fixed"]
"""
TIMED_OUT = ("uet sim --bytes 50000 --topology leafspine:17,1,1 --traffic incast:16 --cc fixed "
             "--seed 1 --json")
#: figures of the wall clock, which differ from one run of the same seed to the next
WALL = ("wall_s", "wall_time_s")


@pytest.fixture(scope="module", autouse=True)
def children_run_this_tree():
    """The runs are ``python -m uet`` child processes (and Dask workers): this tree, too."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        yield


def sweep(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def table(out_dir: Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows = pq.read_table(out_dir / results.PARQUET).to_pylist()
    return sorted(({k: v for k, v in r.items() if k not in WALL} for r in rows),
                  key=lambda r: r["run"])


def journal_lines(out_dir: Path) -> list[str]:
    return (out_dir / results.JOURNAL).read_text().splitlines()


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "grid.toml"
    path.write_text(GRID)
    return path


@pytest.fixture(scope="module")
def pooled(spec_file, tmp_path_factory):
    """The grid on the local pool, two workers: (DIR, stderr, the table as it was then)."""
    out = tmp_path_factory.mktemp("pool") / "out"
    code = main([str(spec_file), "--out", str(out), "--run-timeout", TIMEOUT, "--workers", "2"])
    assert code == 0
    return out, table(out)


def test_the_pool_gives_a_row_per_run_with_the_timeout_as_a_row(pooled):
    out, rows = pooled
    assert len(rows) == 5 and len(journal_lines(out)) == 5
    by_status = {}
    for r in rows:
        by_status.setdefault(r["status"], []).append(r)
    assert sorted(by_status) == ["ok", "timeout"] and len(by_status["ok"]) == 4
    (slow,) = by_status["timeout"]
    assert slow["replay"] == TIMED_OUT
    assert slow["error"] == f"killed after --run-timeout {TIMEOUT} s" and slow["completed"] is None
    for r in by_status["ok"]:
        assert r["command"] == "sim" and r["--bytes"] == 50000 and r["ok"] is True
        assert r["completed"] == (3 if r["--traffic"] == "incast:3" else 4)
        assert r["replay"] == ("uet sim --bytes 50000 --topology leafspine:4,1,1 --traffic "
                               f"{r['--traffic']} --seed {r['seed']} --json")
        assert len(json.loads(r["flows"])) == r["completed"]
    assert sorted((r["--traffic"], r["seed"]) for r in by_status["ok"]) == [
        ("incast:3", 1), ("incast:3", 2), ("permutation", 1), ("permutation", 2)]


def test_the_csv_holds_the_same_rows(pooled):
    out, rows = pooled
    with open(out / results.CSV, newline="") as fh:
        got = sorted(csv.DictReader(fh), key=lambda r: r["run"])
    assert [r["run"] for r in got] == [r["run"] for r in rows]
    for g, r in zip(got, rows):
        assert g["status"] == r["status"] and g["replay"] == r["replay"]
        assert g["last_fct_s"] == ("" if r["last_fct_s"] is None else repr(r["last_fct_s"]))


def test_the_replay_command_gives_the_same_figures(pooled, capsys):
    _, rows = pooled
    row = next(r for r in rows if r["status"] == "ok" and r["seed"] == 2)
    words = row["replay"].split()
    assert words[:2] == ["uet", "sim"]
    assert sim_main(words[2:]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["last_fct_s"] == row["last_fct_s"]
    assert summary["trimmed"] == row["trimmed"] and summary["seed"] == 2


def test_a_two_worker_dask_cluster_gives_the_same_table(pooled, spec_file, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        code, _, err = sweep([spec_file, "--out", tmp_path, "--run-timeout", TIMEOUT,
                              "--scheduler", cluster.scheduler_address], capsys)
    assert code == 0, err
    assert f"5 to run on Dask at {cluster.scheduler_address}" in err
    assert table(tmp_path) == pooled[1]


def test_a_scheduler_that_cannot_be_reached_is_one_line_and_exit_2(spec_file, tmp_path, capsys):
    pytest.importorskip("distributed")
    code, out, err = sweep([spec_file, "--out", tmp_path / "out", "--scheduler", "bogus::addr"],
                           capsys)
    assert code == 2 and not out and err.count("\n") == 1
    assert err.startswith("uet sweep: argument --scheduler: cannot reach bogus::addr: ")
    assert not (tmp_path / "out").exists()


def test_a_resumed_sweep_runs_nothing_twice(pooled, spec_file, capsys):
    out, rows = pooled
    before = journal_lines(out)
    code, _, err = sweep([spec_file, "--out", out, "--run-timeout", TIMEOUT], capsys)
    assert code == 0
    assert "5 runs, 5 already in" in err and "0 to run" in err
    assert journal_lines(out) == before  # the timeout row is kept too: no --retry
    # an interrupted sweep: two ok runs never finished; the rerun runs those two alone
    kept = [ln for ln in before if json.loads(ln)["status"] == "timeout"] + \
           [ln for ln in before if json.loads(ln)["status"] == "ok"][:2]
    (out / results.JOURNAL).write_text("\n".join(kept) + "\n")
    code, _, err = sweep([spec_file, "--out", out, "--run-timeout", TIMEOUT], capsys)
    assert code == 0 and "3 already in" in err and "2 to run" in err
    assert "2/2 runs done, 0 failed, 0 timeout" in err
    after = journal_lines(out)
    assert after[:3] == kept and len(after) == 5
    assert len({json.loads(ln)["run"] for ln in after}) == 5
    assert table(out) == rows


def test_a_failed_run_is_a_row_and_retry_runs_it_again(tmp_path, capsys):
    spec = tmp_path / "bad_run.toml"
    spec.write_text('command = "sim"\nseeds = [3]\n[grid]\n"--topology" = ["paths:2"]\n'
                    '"--no-trim" = [true]\n')
    out = tmp_path / "out"
    code, _, err = sweep([spec, "--out", out], capsys)
    assert code == 0 and "1 runs in the table: 0 ok, 1 failed, 0 timeout" in err
    (row,) = table(out)
    assert row["status"] == "failed" and row["--no-trim"] is True
    assert row["error"].startswith("uet sim: error: argument --no-trim: applies to --topology")
    assert sweep([spec, "--out", out], capsys)[0] == 0
    assert len(journal_lines(out)) == 1
    code, _, err = sweep([spec, "--out", out, "--retry"], capsys)
    assert code == 0 and "1 to run" in err and len(journal_lines(out)) == 2
    assert len(table(out)) == 1


def test_a_run_over_its_cpu_limit_is_a_timeout_row(tmp_path, capsys):
    spec = tmp_path / "cpu.toml"
    spec.write_text(GRID.split("[[grid]]")[0] + "[grid]\nrun_cpu_limit = 2\n"
                    + GRID.split("seeds = [1]\n")[1])
    code, _, err = sweep([spec, "--out", tmp_path / "out", "--dry-run"], capsys)
    assert code == 0 and "2 runs, 2 to run" in err  # the livelock under the spec's two seeds
    code, _, err = sweep([spec, "--out", tmp_path / "out"], capsys)
    assert code == 0, err
    rows = table(tmp_path / "out")
    assert [(r["status"], r["error"]) for r in rows] == [
        ("timeout", "killed after 2 s of CPU (run_cpu_limit)")] * 2


def test_compare_runs_take_the_scenario_and_flatten_the_designs(tmp_path, capsys):
    spec = tmp_path / "cmp.toml"
    spec.write_text('command = "compare"\nseeds = [1]\n[grid]\nscenario = ["incast", '
                    '"pfc-victim"]\n"--bytes" = ["16k"]\n"--designs" = ["roce,uet"]\n')
    code, _, err = sweep([spec, "--out", tmp_path / "out"], capsys)
    assert code == 0, err
    rows = table(tmp_path / "out")
    assert sorted(r["scenario"] for r in rows) == ["incast", "pfc-victim"]
    for r in rows:
        assert r["status"] == "ok" and r["replay"].startswith(f"uet compare {r['scenario']} ")
        assert r["designs.uet.status"] == "ok" and r["designs.roce.completed"] > 0
        assert "designs.adaptive.status" not in r
        assert len(json.loads(r["designs.uet.flow_fct_s"])) == r["designs.uet.flows"]


@pytest.mark.parametrize("text, key", [
    ('command = "sim"\nseeds = [1]\n[grid]\n"--topolgy" = ["fattree:4"]\n', "'grid.--topolgy'"),
    ('command = "sim"\nseeds = [1]\n[grid]\n"--cc" = ["bogus"]\n', "'grid.--cc'"),
    ('command = "sim"\nseeds = "1"\n[grid]\n"--cc" = ["nscc"]\n', "'seeds'"),
])
def test_a_bad_spec_is_one_line_naming_the_key_and_exit_2(text, key, tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    code, out, err = sweep([spec, "--out", tmp_path / "out"], capsys)
    assert code == 2 and not out
    assert err.startswith(f"uet sweep: {spec}: key {key}: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_spec_that_is_not_toml_or_not_there_is_one_line(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text("command = \n")
    code, _, err = sweep([spec, "--out", tmp_path / "out"], capsys)
    assert code == 2 and err.startswith(f"uet sweep: {spec}: not TOML: ") and err.count("\n") == 1
    code, _, err = sweep([tmp_path / "none.toml", "--out", tmp_path / "out"], capsys)
    assert code == 2 and "none.toml: cannot read: No such file" in err


def test_dry_run_lists_the_runs_and_their_state(pooled, spec_file, tmp_path, capsys):
    code, out, err = sweep([spec_file, "--out", tmp_path / "new", "--dry-run"], capsys)
    assert code == 0 and "5 runs, 5 to run" in err
    lines = out.splitlines()
    assert len(lines) == 5 and all(ln.split()[1] == "todo" for ln in lines)
    assert lines[-1].split(None, 2)[2] == TIMED_OUT
    assert not (tmp_path / "new").exists()
    code, out, _ = sweep([spec_file, "--out", pooled[0], "--dry-run"], capsys)
    states = sorted(ln.split()[1] for ln in out.splitlines())
    assert states == ["ok"] * 4 + ["timeout"]


def test_the_plots_are_drawn_or_a_note_says_why_not(pooled, monkeypatch):
    out, _ = pooled
    for name in plots.FILES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    real = plots.importlib.util.find_spec
    monkeypatch.setattr(plots.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert plots.draw(out, [], [], merit="x", command="sim") == (
        "no plots: matplotlib is missing (pip install matplotlib, or pip install -e '.[plot]' in "
        "the uet clone)")


def test_bench_cc_renders_its_table_from_a_sweep(pooled, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_cc", ROOT / "tools" / "bench_cc.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out, rows = pooled
    assert bench.main(["--from", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("scenario | cc | spray | ack | ok | last_over_ideal")
    cells = {tuple(ln.split(" | ")[:5]) for ln in lines[1:]}
    assert cells == {("incast3", "nscc", "reps", "16KiB", "2/2"),
                     ("perm", "nscc", "reps", "16KiB", "2/2"),
                     ("incast16", "fixed", "reps", "16KiB", "0/1 (1 timeout)")}
    incast3 = next(ln for ln in lines if ln.startswith("incast3")).split(" | ")
    want = sorted(r["last_over_ideal"] for r in rows if r["--traffic"] == "incast:3")
    assert incast3[5] == f"{(want[0] + want[1]) / 2:.3f}"
