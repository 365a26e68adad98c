#!/usr/bin/env python3
"""Congestion control and spraying on many-host fabrics (issue 13): the standard scenarios of
``uet sim --topology ...`` under several seeds, with the figures each one is judged by. The runs
are the sweep ``tools/bench_cc.toml`` (issue 30), where the scenarios are written down:

* ``incast8``, ``incast16``: hosts 1..N to host 0 on one switch (``leafspine:17,1,1``), NSCC and
  RCCC with REPS, and the fixed window (1.5 BDP) beside them;
* ``perm``: a random permutation on ``fattree:8`` (128 hosts), NSCC with REPS and with oblivious
  spraying, each with ACKs every 16 KiB and every packet;
* ``perm-degraded``: the same with the core link a0-c0 at 25% of its rate.

Run them in parallel and render this table from the sweep's results::

    uet sweep tools/bench_cc.toml --out cc-results
    python tools/bench_cc.py --from cc-results

Without ``--from`` the runs go one at a time in this process (the serial baseline; no time
limit: the fixed window's incast16 runs 26 s of CPU until its flows fail) and each prints one
JSON object on stdout (``--table`` adds a readable table on stderr with the median over the
seeds). Under the table, on stderr, one line for each row with runs that timed out or failed,
with the reason where it is known: the fixed window's incast16 is a livelock, never a result
(``LIVELOCKS``). Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uet import cliargs  # noqa: E402
from uet.sim import command as sim_command  # noqa: E402
from uet.sim.fabric import FabricSimulator  # noqa: E402
from uet.sweep import results, spec as sweep_spec  # noqa: E402

SPEC = Path(__file__).with_suffix(".toml")
FIELDS = ("last_over_ideal", "max_over_avg_fct", "jain_fct", "trimmed", "dropped",
          "max_queue_bytes", "mean_queue_bytes", "wall_time_s")


def scenario_of(opts: dict[str, Any]) -> str:
    """bench_cc's name of a run: incast8, incast16, perm, perm-degraded."""
    traffic = str(opts.get("--traffic") or "permutation")
    if traffic.startswith("incast:"):
        return "incast" + traffic.split(":", 1)[1]
    degraded = opts.get("--degrade-link") not in (None, False, "", "false", [], "[]")
    return "perm-degraded" if degraded else "perm"


def key_of(opts: dict[str, Any], ack_per_packet: bool) -> tuple[str, str, str, str]:
    return (scenario_of(opts), str(opts.get("--cc") or "nscc"), str(opts.get("--spray") or "reps"),
            "packet" if ack_per_packet else "16KiB")


def table(rows: dict[tuple, list[dict[str, Any]]]) -> str:
    """Medians over the seeds, one line per scenario; a run with no figures (a timeout) counts
    in the ``ok`` column only."""
    lines = [" | ".join(("scenario", "cc", "spray", "ack", "ok") + FIELDS)]
    for key, runs in rows.items():
        timeouts = sum(r.get("status") == "timeout" for r in runs)
        ok = f"{sum(bool(r.get('ok')) for r in runs)}/{len(runs)}"
        cells = list(key) + [ok + (f" ({timeouts} timeout)" if timeouts else "")]
        for f in FIELDS:
            vals = [r[f] for r in runs if r.get(f) is not None]
            cells.append(f"{statistics.median(vals):.3f}" if vals else "-")
        lines.append(" | ".join(map(str, cells)))
    return "\n".join(lines)


#: rows whose runs are known never to finish, and why (printed under the table, on stderr)
LIVELOCKS = {
    ("incast16", "fixed"): "the fixed window livelocks here: 16 flows each keep 1.5 BDP in flight "
                           "into one port, so the switch trims nearly every data packet (seed 1: "
                           "334,783 trims for 334,463 retransmissions), the retransmissions are "
                           "trimmed again, and the flows fail on NACK TRIMMED retry limits after "
                           "20-26 s of CPU (uet sim ... --progress shows it: virtual time "
                           "advances, no flow completes). NSCC and RCCC finish the same incast; a "
                           "timeout in this row is the expected result, not a slow machine",
}


def notes(rows: dict[tuple, list[dict[str, Any]]]) -> list[str]:
    """What the table cannot say: rows of runs that timed out or failed, and why when it is
    known (LIVELOCKS)."""
    out = []
    for key, runs in rows.items():
        bad = [r for r in runs if r.get("status") == "timeout" or not r.get("ok")]
        if not bad:
            continue
        name = " ".join(key)
        why = LIVELOCKS.get(key[:2])
        timeouts = sum(r.get("status") == "timeout" for r in bad)
        what = (f"{timeouts} of {len(runs)} runs timed out" if timeouts
                else f"{len(bad)} of {len(runs)} runs not ok")
        out.append(f"bench_cc: {name}: {what}" + (f": {why}" if why else ""))
    return out


def from_sweep(directory: str) -> dict[tuple, list[dict[str, Any]]]:
    """The rows of a sweep of tools/bench_cc.toml (``DIR/results.csv``), as the table wants."""
    rows: dict[tuple, list[dict[str, Any]]] = {}
    for r in results.read_csv(Path(directory) / results.CSV):
        if r.get("command") != "sim":
            continue
        opts = {k: r[k] for k in r if k.startswith("--")}
        run = {"status": r["status"], "ok": r.get("ok") == "true"}
        for f in FIELDS:
            run[f] = float(r[f]) if r.get(f) else None
        rows.setdefault(key_of(opts, r.get("--ack-every-packet") == "true"), []).append(run)
    return rows


def serial(*, seeds: int, flow_bytes: int | None, only: str) -> dict[tuple, list[dict[str, Any]]]:
    """The spec's runs one at a time in this process, each printed as JSON."""
    spec = sweep_spec.load(str(SPEC))
    parser = cliargs.Parser(prog="uet sim")
    sim_command.add_arguments(parser)
    rows: dict[tuple, list[dict[str, Any]]] = {}
    for run in spec.runs:
        opts = dict(run.options)
        if run.seed > seeds or not scenario_of(opts).startswith(only):
            continue
        args = parser.parse_args(list(run.argv))
        if flow_bytes is not None:
            args.bytes = flow_bytes
        sim_command.check_topology(args)
        t0 = time.perf_counter()
        s = FabricSimulator(sim_command.fabric_config_from_args(args)).run()
        s.pop("flows")
        key = key_of(opts, args.ack_every_packet)
        s.update(scenario=key[0], ack=key[3], mtu=args.mtu,
                 setup_and_run_s=round(time.perf_counter() - t0, 3),
                 packets_per_s=round(s["packets_sent"] / s["wall_time_s"]))
        print(json.dumps(s, separators=(",", ":")), flush=True)
        rows.setdefault(key, []).append(s)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N of the spec (default 3)")
    ap.add_argument("--bytes", type=int, default=None,
                    help="bytes per flow (default: the spec's, 2 MB)")
    ap.add_argument("--only", default="", help="run only scenarios whose name starts with this")
    ap.add_argument("--table", action="store_true", help="a table of medians on stderr")
    ap.add_argument("--from", dest="sweep_dir", metavar="DIR",
                    help="run nothing: print the table of a sweep's results (uet sweep "
                         "tools/bench_cc.toml --out DIR) on stdout")
    args = ap.parse_args(argv)
    if args.sweep_dir:
        try:
            rows = from_sweep(args.sweep_dir)
        except OSError as exc:
            print(f"bench_cc: {args.sweep_dir}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(table(rows))
        for note in notes(rows):  # stdout: the table alone
            print(note, file=sys.stderr)
        return 0
    rows = serial(seeds=args.seeds, flow_bytes=args.bytes, only=args.only)
    if args.table:
        print(table(rows), file=sys.stderr)
        for note in notes(rows):
            print(note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
