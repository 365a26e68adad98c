#!/usr/bin/env python3
"""``uet compare`` at its default sizes (issue 19: "about 30 s or less" per scenario): every scenario
- elephants, incast, degraded-link, pfc-victim, and matrix on docs/compare-matrix.cm - for seeds
1, 2 and 3, each run as the command runs it (uet.compare.run.compare, the three designs in turn).

Prints exactly one JSON object on stdout:

  {"seeds": [...], "options": {...}, "runs": {SCENARIO: {SEED: {
      "wall_time_s": the whole run (the three designs, the scenario built),
      "designs": {DESIGN: {"wall_time_s", "last_fct_s", "status", "completed", "flows"}}}}},
   "max_wall_time_s": {SCENARIO: the slowest seed}}

Progress goes to stderr. Not a test: nothing here asserts; compare the wall times with the issue's
bound by eye (this machine is shared, so a single slow run says little).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from uet.compare import scenarios  # noqa: E402
from uet.compare.run import DESIGNS, Options, compare  # noqa: E402

MATRIX = ROOT / "docs" / "compare-matrix.cm"


def one(name: str, seed: int, opts: dict[str, Any]) -> dict[str, Any]:
    wall0 = time.perf_counter()
    sc = scenarios.make(name, seed=seed, matrix=str(MATRIX) if name == "matrix" else None)
    rows, _ = compare(sc, Options(designs=DESIGNS, seed=seed, **opts))
    wall = time.perf_counter() - wall0
    return {"wall_time_s": round(wall, 3),
            "designs": {d: {"wall_time_s": r["wall_time_s"], "last_fct_s": r["last_fct_s"],
                            "status": r["status"], "completed": r["completed"],
                            "flows": r["flows"]} for d, r in rows.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default=",".join(scenarios.SCENARIOS),
                   help="comma-separated (default: all)")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated (default 1,2,3)")
    p.add_argument("--roce-op", choices=("write", "send"), default="write")
    p.add_argument("--roce-ack-class", choices=("same", "high"), default="same")
    args = p.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    opts = {"roce_op": args.roce_op, "ack_class": args.roce_ack_class}
    runs: dict[str, dict[str, Any]] = {}
    for name in names:
        runs[name] = {}
        for seed in seeds:
            r = runs[name][str(seed)] = one(name, seed, opts)
            fct = {d: v["last_fct_s"] for d, v in r["designs"].items()}
            print(f"bench_compare: {name} seed {seed}: {r['wall_time_s']:.1f} s, last FCT {fct}",
                  file=sys.stderr)
    out = {"seeds": seeds, "options": opts, "mtu": Options.mtu, "runs": runs,
           "max_wall_time_s": {n: max(r["wall_time_s"] for r in runs[n].values()) for n in runs}}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
