#!/usr/bin/env python3
"""Simulator throughput: simulated packets per wall-clock second.

Default: a 64 MiB transfer over 8 paths with 1% loss; every packet is encoded, framed, carried as
bytes through the simulated links, parsed, CRC-checked and decoded through both PDS cores, and
every delivered byte is compared with what was sent. Prints one JSON object: the exact
configuration, the environment (Python, native backend, load average before and after: the
machine may be shared), per run the summary figures plus ``packets_per_s`` (every datagram on a
link, both directions, per wall second of ``Simulator.run``), ``data_packets_per_s`` and the CPU
time, and the median over ``--repeat`` runs (seeds ``--seed``, ``--seed + 1``, ...).

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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bytes", type=int, default=64 << 20, help="bytes per transfer (default 64 MiB)")
    p.add_argument("--paths", type=int, default=8)
    p.add_argument("--loss", type=float, default=0.01)
    p.add_argument("--reorder", type=float, default=0.0)
    p.add_argument("--mode", default="rud")
    p.add_argument("--seed", type=int, default=1, help="seed of the first run; run i uses seed + i")
    p.add_argument("--repeat", type=int, default=5, help="runs; the median is reported (default 5)")
    p.add_argument("--profile", action="store_true", help="cProfile one run, top functions on stderr")
    a = p.parse_args(argv)
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
