#!/usr/bin/env python3
"""CSIG-style signalling, REPS and congestion control through the live fabric (``uet demo``, wall
time, loopback): each run is one ``uet demo --json`` subprocess, under several seeds.

Scenarios (the demo's defaults otherwise: 0.25 Gb/s per path, 10 us RTT, loss 0.002, trim 0.01):

* ``slow-path``: ``--cc nscc --spray reps --paths 8 --degrade-path 3:0.25`` without and with
  ``--csig abw``: path 3 runs at a quarter of the rate; what share of the data packets still
  takes it (``slow_share``; an even spray gives 1/8 = 0.125) and the goodput;
* ``cc``: the default demo with ``--cc nscc`` and with ``--cc rccc``.

Prints one JSON object per run on stdout (``--table`` adds the medians over the seeds on stderr).
Not a test: nothing here asserts. ``--bytes`` (default 64 MiB) sets the length of a run: about
one to three seconds each on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW = 3

FIELDS = ("ok", "goodput_MBps", "wall_time_s", "slow_share", "slow_max_queue_KiB",
          "retransmissions", "trimmed", "ecn_marked", "cwnd_mean_KiB", "credit_granted_MiB",
          "csig_reasked")


def scenarios() -> list[tuple[str, str, list[str]]]:
    slow = ["--cc", "nscc", "--spray", "reps", "--paths", "8", "--degrade-path", f"{SLOW}:0.25"]
    return [("slow-path", "no csig", slow),
            ("slow-path", "csig abw", slow + ["--csig", "abw"]),
            ("cc", "nscc", ["--cc", "nscc"]),
            ("cc", "rccc", ["--cc", "rccc"])]


def run(argv: list[str], timeout: float) -> dict:
    cmd = [sys.executable, "-m", "uet", "demo", "--json", "-q", "--timeout", f"{timeout:g}", *argv]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout + 60)
    try:
        s = json.loads(out.stdout.splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        s = {"ok": False, "error": out.stderr[-500:]}
    s["process_s"] = round(time.perf_counter() - t0, 3)
    return s


def figures(s: dict) -> dict:
    pp = s.get("per_path") or []
    data = sum(p.get("data_packets", 0) for p in pp)
    slow = pp[SLOW] if len(pp) > SLOW else {}
    cw = s.get("cwnd_bytes") or {}
    sel = s.get("csig_selector") or {}
    granted = s.get("credit_granted")
    return {"ok": s.get("ok", False), "goodput_MBps": s.get("goodput_MBps"),
            "wall_time_s": s.get("wall_time_s"),
            "slow_share": round(slow.get("data_packets", 0) / data, 4) if data and len(pp) == 8
            else None,
            "slow_max_queue_KiB": round(slow.get("max_queue_bytes", 0) / 1024, 1)
            if len(pp) == 8 else None,
            "retransmissions": s.get("retransmissions"), "trimmed": s.get("trimmed"),
            "ecn_marked": s.get("ecn_marked"),
            "cwnd_mean_KiB": round(cw["mean"] / 1024, 1) if cw else None,
            "credit_granted_MiB": round(granted / (1 << 20), 2) if granted else None,
            "csig_reasked": sel.get("reasked")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--bytes", default="64MiB", help="bytes per run (default 64MiB)")
    ap.add_argument("--timeout", type=float, default=120.0, help="per run, seconds (default 120)")
    ap.add_argument("--mtu", type=int, default=4096,
                    help="payload bytes per packet (facts A.1; default 4096; uet demo's own "
                         "default on loopback is 8192)")
    ap.add_argument("--only", default="", help="run only scenarios whose name starts with this")
    ap.add_argument("--table", action="store_true", help="a table of medians on stderr")
    args = ap.parse_args(argv)
    rows: dict[tuple, list[dict]] = {}
    for name, variant, extra in scenarios():
        if not name.startswith(args.only):
            continue
        for seed in range(1, args.seeds + 1):
            s = run(["--bytes", args.bytes, "--seed", str(seed), "--mtu", str(args.mtu), *extra],
                    args.timeout)
            f = figures(s)
            print(json.dumps({"scenario": name, "variant": variant, "seed": seed, "mtu": args.mtu,
                              "argv": extra, **f, "process_s": s["process_s"],
                              "cc_counters": s.get("cc_counters"),
                              "per_path_data_packets": [p.get("data_packets")
                                                        for p in s.get("per_path") or []],
                              "csig_selector": s.get("csig_selector"),
                              "failures": s.get("failures")}, separators=(",", ":")), flush=True)
            rows.setdefault((name, variant), []).append(f)
    if args.table:
        head = ("scenario", "variant") + FIELDS
        print(" | ".join(head), file=sys.stderr)
        for key, runs in rows.items():
            cells = list(key)
            for k in FIELDS:
                if k == "ok":
                    cells.append(f"{sum(bool(r['ok']) for r in runs)}/{len(runs)}")
                    continue
                vals = [r[k] for r in runs if r[k] is not None]
                cells.append(f"{statistics.median(vals):.4g}" if vals else "-")
            print(" | ".join(map(str, cells)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
