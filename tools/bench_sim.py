#!/usr/bin/env python3
"""Simulator throughput: simulated packets per wall-clock second.

Default: a 64 MiB transfer over 8 paths with 1% loss; every packet is encoded, framed, carried as
bytes through the simulated links, parsed, CRC-checked and decoded through both PDS cores, and
every delivered byte is compared with what was sent. Prints one JSON object: the exact
configuration, the environment (Python, native backend, load average before and after: the
machine may be shared), per run the summary figures plus ``packets_per_s`` (every datagram on a
link, both directions, per wall second of ``Simulator.run``), ``data_packets_per_s`` and the CPU
time, and the median over ``--repeat`` runs (seeds ``--seed``, ``--seed + 1``, ...).

``--scale`` runs instead the many-host experiments the simulator is judged by, each in a child
``uet sim --json`` process (wall and CPU time and peak memory from the child's rusage), and prints
them beside their goals and, for the 128-host permutation, beside the UEC's own simulator
(uet-htsim: last flow at 1.062 of ideal, max/avg 1.03 on this experiment, docs/facts.md E.6):

* ``fattree8_16mb``: ``uet sim --topology fattree:8 --traffic permutation --bytes 16000000
  --ack-every-packet`` (NSCC, REPS), goal at most 60 s of wall time and 1.5 GB
* ``fattree16_2mb``: the same on ``fattree:16`` (1,024 hosts) with 2 MB flows, goal at most
  10 minutes and 4 GB

``setup_s`` is building the simulator (generating the payload and its digests); it is reported but
not counted, since it is not simulation. Exit status 1 when a run was not ok.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uet import native  # noqa: E402
from uet.sim import SimConfig, Simulator, cfabric  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# The many-host experiments of --scale: (name, uet sim arguments, wall goal s, memory goal MiB).
SCALE = (
    ("fattree8_16mb", ["--topology", "fattree:8", "--traffic", "permutation", "--bytes", "16000000",
                       "--ack-every-packet"], 60.0, 1536),
    ("fattree16_2mb", ["--topology", "fattree:16", "--traffic", "permutation", "--bytes", "2000000",
                       "--ack-every-packet"], 600.0, 4096),
)
# uet-htsim on its own 128-flow matrix of the fattree:8 16 MB permutation (seeds 1-3: 1.060-1.064)
HTSIM_LAST_OVER_IDEAL = 1.062
HTSIM_MAX_OVER_AVG = 1.03


def scale_run(name: str, args: list[str], seed: int, wall_goal: float, mem_goal_mib: int,
              extra: list[str]) -> dict:
    """One many-host run in a child process; its figures, costs and whether it met the goals."""
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "uet", "sim", *args, "--seed", str(seed), "--json",
                           "--no-progress", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of children is the largest of any child so far: runs go from small to large
    rss_mib = after.ru_maxrss / 1024
    row = {"name": name, "command": "uet sim " + " ".join(args + ["--seed", str(seed), *extra]),
           "seed": seed, "exit": proc.returncode, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "max_rss_mib": round(rss_mib), "wall_goal_s": wall_goal, "mem_goal_mib": mem_goal_mib}
    if proc.returncode != 0:
        return row | {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    r = json.loads(proc.stdout)
    row |= {k: r.get(k) for k in ("ok", "last_fct_s", "ideal_fct_s", "last_over_ideal",
                                  "max_over_avg_fct", "trimmed", "retransmissions")}
    row["meets_goals"] = bool(r.get("ok")) and wall <= wall_goal and rss_mib <= mem_goal_mib
    if name == "fattree8_16mb":
        row["htsim_last_over_ideal"] = HTSIM_LAST_OVER_IDEAL
        row["htsim_max_over_avg"] = HTSIM_MAX_OVER_AVG
        row["last_within_3pct_of_htsim"] = abs(r["last_over_ideal"] / HTSIM_LAST_OVER_IDEAL - 1) <= 0.03
        row["max_over_avg_at_most_1_05"] = r["max_over_avg_fct"] <= 1.05
    return row


def scale(a: argparse.Namespace) -> int:
    """--scale: the many-host experiments, one JSON object with a row per run."""
    load_before = os.getloadavg()
    rows = [scale_run(name, args, seed, wall, mem, a.sim_arg)
            for name, args, wall, mem in SCALE if not a.only or name.startswith(a.only)
            for seed in range(a.seed, a.seed + max(1, a.repeat))]
    print(json.dumps({"benchmark": "sim_scale", "date": time.strftime("%Y-%m-%d"),
                      "env": {"python": platform.python_version(), "native_backend": native.BACKEND,
                              "fabric_engine": cfabric.resolve(None), "cpus": os.cpu_count(),
                              "loadavg_before": [round(x, 2) for x in load_before],
                              "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
                      "runs": rows}))
    return 0 if all(r.get("ok") for r in rows) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bytes", type=int, default=64 << 20, help="bytes per transfer (default 64 MiB)")
    p.add_argument("--paths", type=int, default=8)
    p.add_argument("--loss", type=float, default=0.01)
    p.add_argument("--reorder", type=float, default=0.0)
    p.add_argument("--mode", default="rud")
    p.add_argument("--seed", type=int, default=1, help="seed of the first run; run i uses seed + i")
    p.add_argument("--repeat", type=int, default=None,
                   help="runs; the median is reported (default 5; with --scale, seeds: default 1)")
    p.add_argument("--profile", action="store_true", help="cProfile one run, top functions on stderr")
    p.add_argument("--scale", action="store_true",
                   help="the many-host experiments (fattree:8 16 MB, fattree:16 2 MB) instead; "
                        "--repeat counts seeds there (default 1)")
    p.add_argument("--only", default="", help="with --scale: only the runs whose name starts so")
    p.add_argument("--sim-arg", action="append", default=[], metavar="ARG",
                   help="with --scale: one more argument for uet sim (repeatable; "
                        "--sim-arg=--reps-recycle=echoed for one that starts with --)")
    a = p.parse_args(argv)
    if a.scale:
        a.repeat = a.repeat or 1
        return scale(a)
    a.repeat = a.repeat or 5
    runs = []
    config = None
    load_before = os.getloadavg()
    for i in range(max(1, a.repeat)):
        cfg = SimConfig(bytes=a.bytes, paths=a.paths, loss=a.loss, reorder=a.reorder, mode=a.mode,
                        seed=a.seed + i)
        if config is None:
            config = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "seed"}
        t0 = time.perf_counter()
        sim = Simulator(cfg)
        setup = time.perf_counter() - t0
        c0 = _cpu()
        t0 = time.perf_counter()
        if a.profile and i == 0:
            import cProfile
            import pstats
            pr = cProfile.Profile()
            pr.enable()
            r = sim.run()
            pr.disable()
            pstats.Stats(pr, stream=sys.stderr).sort_stats("tottime").print_stats(25)
        else:
            r = sim.run()
        wall = time.perf_counter() - t0
        cpu = _cpu() - c0
        runs.append({k: r[k] for k in ("ok", "seed", "packets_total", "data_packets",
                                       "retransmissions", "spurious_retransmissions", "dropped",
                                       "sim_time_s", "goodput_gbps")}
                    | {"setup_s": round(setup, 4), "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
                       "packets_per_s": round(r["packets_total"] / wall),
                       "data_packets_per_s": round(r["data_packets"] / wall),
                       "profiled": a.profile and i == 0})
    timed = [x for x in runs if not x["profiled"]] or runs
    out = {
        "benchmark": "sim_packets_per_second",
        "config": config,
        "repeat": len(runs),
        "packets_per_s_median": round(statistics.median(x["packets_per_s"] for x in timed)),
        "data_packets_per_s_median": round(statistics.median(x["data_packets_per_s"] for x in timed)),
        "packets_per_cpu_s_median": round(statistics.median(x["packets_total"] / x["cpu_s"]
                                                            for x in timed if x["cpu_s"] > 0)),
        "env": {"python": platform.python_version(), "native_backend": native.BACKEND,
                # the engine the many-host simulator's switches run on by default (uet.sim.cfabric)
                "fabric_engine": cfabric.resolve(None),
                "cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
        "runs": runs,
    }
    print(json.dumps(out))
    return 0 if all(x["ok"] for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
