"""``uet sweep SPEC.toml --out DIR``: a grid of ``uet sim`` or ``uet compare`` runs (the spec:
uet.sweep.spec), run in parallel, with one table of results (issue 30).

SPEC is TOML: command = "sim" or "compare"; seeds = [1, 2, 3]; a [grid] table (or several
[[grid]] tables, each its own cross product) of option names as on the command line and lists of
values, e.g. "--cc" = ["nscc", "fixed"] (true: the bare flag, false: left out; scenario = [...]
for compare's argument); the runs are the cross product x seeds. Optional: [options] (one value
for every run), run_timeout (seconds), run_cpu_limit (seconds of CPU, which a loaded machine does
not stretch: a run killed there is a timeout row too), merit (the column the plots put against
each option), and seeds, run_timeout and run_cpu_limit inside a [[grid]]. tools/bench_cc.toml is an example.

Every run is ``uet sim|compare ... --seed N --json`` in its own process, killed at
``--run-timeout`` seconds (default: the run's grid's ``run_timeout``, else the spec's, else
600). By default a local pool
runs ``--workers`` of them at a time (one per core); ``--scheduler ADDRESS`` sends them to a Dask
distributed cluster instead (pip install 'uet[cluster]'). Progress goes to stderr: runs done,
failed, timed out, time left.

DIR gets runs.jsonl (a row appended as each run ends), results.csv and results.parquet (one row
per run: its options, seed, status ok/failed/timeout, the error, wall time, the replay command
and every figure of its --json summary, flattened) and the plots fct.png and merit.png (with
matplotlib). A failed or timed-out run is a row, never a crash. Rerunning the same spec into the
same DIR runs only the runs that have no row yet: a failed or timed-out run is kept as it is (a
seeded run fails the same way again) unless --retry is given, which runs those again and replaces
their rows. --dry-run lists the runs (their key, state and command line) and runs nothing.

A bad spec is one line naming the key, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from .. import cliargs
from . import plots, results
from .progress import Progress
from .spec import Run, Spec, SpecError, load

DEFAULT_RUN_TIMEOUT = 600.0
PROG = "uet sweep"


def register(subparsers: Any) -> None:
    """Add ``sweep`` to the ``uet`` command's subparsers."""
    cliargs.add_command(subparsers, "sweep", help="a grid of uet sim/compare runs in parallel, one "
                        "table of results", description=__doc__, add_arguments=add_arguments,
                        run=run_command)


def main(argv: Sequence[str] | None = None) -> int:
    """``uet sweep`` in-process (the tests): the exit status, never SystemExit."""
    return cliargs.run_alone(PROG, add_arguments, run_command, argv, description=__doc__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC.toml", help="the sweep: command, seeds, [grid]")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="directory of the results (made if missing; a rerun resumes in it)")
    p.add_argument("--run-timeout", type=cliargs.real(0.0, 1e7, "seconds above 0, e.g. 600",
                                                      open_lo=True),
                   default=None, metavar="S",
                   help="kill a run after S seconds: a timeout row (default: the spec's "
                        f"run_timeout for the run, else {DEFAULT_RUN_TIMEOUT:g})")
    p.add_argument("--workers", type=cliargs.integer(1, 4096, "a number of runs at a time, "
                                                               "e.g. 2"),
                   default=None, metavar="N",
                   help="runs at a time on the local pool (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask distributed cluster, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--retry", action="store_true",
                   help="also run again the runs whose row is failed or timeout")
    p.add_argument("--dry-run", action="store_true", help="list the runs, run nothing")


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    if args.scheduler and args.workers:
        return cliargs.UsageError("argument --workers: the local pool only; a Dask cluster has "
                                  "its own workers").report(PROG, err)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return cliargs.UsageError(f"argument --out: {out}: not a directory",
                                  hint=False).report(PROG, err)
    try:
        spec = load(args.spec)
    except SpecError as exc:
        print(f"{PROG}: {exc}", file=err)
        return 2
    journal = results.Journal(out)
    todo = [r for r in spec.runs if _wanted(r, journal, retry=args.retry)]
    if args.dry_run:
        keys = {r.key for r in todo}
        for r in spec.runs:
            state = "todo" if r.key in keys else journal.rows[r.key]["status"]
            print(f"{r.key}  {state:<7}  {r.replay}")
        print(f"{PROG}: {spec.path}: {len(spec.runs)} runs, {len(todo)} to run", file=err)
        return 0
    client = None
    if args.scheduler and todo:
        from .cluster import ClusterError, connect

        try:
            client = connect(args.scheduler)
        except ClusterError as exc:
            print(f"{PROG}: {exc}", file=err)
            return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if client is not None:
            client.close()
        return cliargs.UsageError(f"argument --out: cannot make {out}: {exc.strerror or exc}",
                                  hint=False).report(PROG, err)
    # --run-timeout, else the run's grid's run_timeout, else the spec's, else the default
    timeouts = [args.run_timeout or r.timeout_s or DEFAULT_RUN_TIMEOUT for r in todo]
    lo, hi = min(timeouts, default=0.0), max(timeouts, default=0.0)
    workers = args.workers or os.cpu_count() or 1
    where = f"Dask at {args.scheduler}" if args.scheduler else f"{workers} local workers"
    print(f"{PROG}: {spec.path}: {len(spec.runs)} runs, {len(spec.runs) - len(todo)} already in "
          f"{out}, {len(todo)} to run on {where}"
          + (f", time limit {lo:g}{'' if lo == hi else f' to {hi:g}'} s per run" if todo else "")
          + (f", {cpu} of them with a CPU limit" if (cpu := sum(r.cpu_s is not None
                                                               for r in todo)) else ""),
          file=err)
    progress = Progress(len(todo), err, prog=PROG)

    def done(run: Run, outcome: dict[str, Any]) -> None:
        journal.append(results.make_row(run, outcome))
        progress.update(outcome["status"])

    status = 0
    try:
        if client is not None:
            from .cluster import run_dask

            run_dask(client, todo, timeouts=timeouts, on_done=done)
        elif todo:
            from .pool import run_local

            run_local(todo, workers=workers, timeouts=timeouts, on_done=done)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the finished runs are in {out / results.JOURNAL}", file=err)
        status = 130
    finally:
        _write(spec, journal, out, err)
    return status


def _wanted(run: Run, journal: results.Journal, *, retry: bool) -> bool:
    row = journal.rows.get(run.key)
    return row is None or (retry and row.get("status") != "ok")


def _write(spec: Spec, journal: results.Journal, out: Path, err: Any) -> None:
    """The table and the plots, from the journal's rows of this spec's runs."""
    rows = journal.table(spec.runs)
    cols = results.columns(rows, spec.columns)
    results.write_csv(out / results.CSV, rows, cols)
    notes = [str(out / results.CSV)]
    if importlib.util.find_spec("pyarrow") is None:
        notes.append("no results.parquet: pyarrow is missing (pip install 'uet[cluster]')")
    else:
        results.write_parquet(out / results.PARQUET, rows, cols)
        notes.append(str(out / results.PARQUET))
    if rows:
        notes.append(plots.draw(out, rows, spec.columns, merit=spec.merit, command=spec.command))
    counts = {s: sum(r.get("status") == s for r in rows) for s in results.STATUSES}
    print(f"{PROG}: {len(rows)}/{len(spec.runs)} runs in the table: "
          + ", ".join(f"{n} {s}" for s, n in counts.items()), file=err)
    for note in notes:
        print(f"{PROG}: {note}", file=err)
