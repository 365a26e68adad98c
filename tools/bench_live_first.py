#!/usr/bin/env python3
"""First live goodput figure: ``uet send --bytes 64MiB`` to ``uet recv`` over loopback, each in its
own process (2 cores), with 4-8 entropy paths; prints one JSON object (medians over --runs).

    python tools/bench_live_first.py --bytes 64MiB --paths 4 --runs 3

Each run starts a fresh receiver on an ephemeral port, runs the sender with ``--json`` and checks
that the receiver's SHA-256 matches the sender's (``ok``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN = "import sys; from uet.io.command import main; sys.exit(main(sys.argv[1:]))"


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", RUN, *args]


def one_run(nbytes: str, paths: int, mode: str, extra: list[str], timeout: float,
            mtu: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rx = subprocess.Popen(_cmd("recv", "--bind", "127.0.0.1:0", "--count", "1", "--json", "--quiet",
                               "--mtu", str(mtu)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = rx.stderr.readline()
        if "listening on" not in line:
            raise RuntimeError(f"receiver did not start: {line!r}")
        addr = line.rsplit(" ", 1)[1].strip()
        tx = subprocess.run(_cmd("send", "--to", addr, "--bytes", nbytes, "--paths", str(paths),
                                 "--mode", mode, "--json", "--timeout", str(timeout), "--mtu",
                                 str(mtu), *extra),
                            capture_output=True, text=True, env=env, timeout=timeout + 30)
        res = json.loads(tx.stdout)
        out, _ = rx.communicate(timeout=30)
        rres = json.loads(out)
        res["receiver_sha256_ok"] = rres["sha256"] == res["sha256"]
        res["receiver_stats"] = rres.get("stats", {})
        return res
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bytes", default="64MiB")
    ap.add_argument("--paths", type=int, default=4)
    ap.add_argument("--mode", default="rud")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--window", default=None)
    ap.add_argument("--mtu", type=int, default=4096,
                    help="payload bytes per packet, both ends (facts A.1; default 4096; uet "
                         "send's own default on loopback is 8192)")
    args = ap.parse_args()
    extra = ["--window", args.window] if args.window else []
    runs = []
    for _ in range(args.runs):
        runs.append(one_run(args.bytes, args.paths, args.mode, extra, args.timeout, args.mtu))
        time.sleep(0.2)
    good = [r["goodput_MBps"] for r in runs]
    summary = {
        "benchmark": "live loopback, uet send -> uet recv, separate processes",
        "bytes": runs[0]["bytes"], "paths": args.paths, "mode": args.mode, "mtu": args.mtu,
        "runs": len(runs),
        "ok": all(r["ok"] and r["receiver_sha256_ok"] for r in runs),
        "goodput_MBps_median": statistics.median(good),
        "goodput_MBps": good,
        "wall_time_s": [r["wall_time_s"] for r in runs],
        "retransmissions": [r["retransmissions"] for r in runs],
        "packets_sent": [r["packets_sent"] for r in runs],
        "paths_used": [r["paths_used"] for r in runs],
        "rto": [r.get("rto", 0) for r in runs],
    }
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
