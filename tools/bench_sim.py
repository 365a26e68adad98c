#!/usr/bin/env python3
"""Simulator throughput: simulated packets per wall-clock second.

Default: a 64 MiB transfer over 8 paths with 1% loss; every packet is encoded, framed, carried as
bytes, parsed, CRC-checked and decoded through both PDS cores. Prints one JSON object: the run's
summary plus ``packets_per_s`` (every datagram on a link, both directions, per wall second) and
``data_packets_per_s``, and the median over ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uet import native  # noqa: E402
from uet.sim import SimConfig, Simulator  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bytes", type=int, default=64 << 20)
    p.add_argument("--paths", type=int, default=8)
    p.add_argument("--loss", type=float, default=0.01)
    p.add_argument("--reorder", type=float, default=0.0)
    p.add_argument("--mode", default="rud")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--profile", action="store_true", help="cProfile one run, top functions on stderr")
    a = p.parse_args(argv)
    runs = []
    for i in range(a.repeat):
        cfg = SimConfig(bytes=a.bytes, paths=a.paths, loss=a.loss, reorder=a.reorder, mode=a.mode,
                        seed=a.seed + i)
        sim = Simulator(cfg)
        t0 = time.perf_counter()
        if a.profile:
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
        r["bench_wall_s"] = wall
        r["packets_per_s"] = r["packets_total"] / wall
        r["data_packets_per_s"] = r["data_packets"] / wall
        runs.append(r)
    med = statistics.median(x["packets_per_s"] for x in runs)
    out = {"benchmark": "sim_packets_per_second", "native_backend": native.BACKEND,
           "bytes": a.bytes, "paths": a.paths, "loss": a.loss, "reorder": a.reorder, "repeat": a.repeat,
           "packets_per_s_median": round(med),
           "data_packets_per_s_median": round(statistics.median(x["data_packets_per_s"] for x in runs)),
           "runs": [{k: x[k] for k in ("ok", "seed", "packets_total", "data_packets", "retransmissions",
                                       "spurious_retransmissions", "dropped", "sim_time_s",
                                       "goodput_gbps", "bench_wall_s", "packets_per_s")} for x in runs]}
    print(json.dumps(out))
    return 0 if all(x["ok"] for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
