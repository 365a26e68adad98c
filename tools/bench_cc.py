#!/usr/bin/env python3
"""Congestion control and spraying on many-host fabrics (issue 13): the standard scenarios of
``uet sim --topology ...`` under several seeds, with the figures each one is judged by.

Scenarios (defaults of uet.sim.fabric: 100 Gb/s links of 1 us, one-BDP buffers, ECN 20%-80%,
trimming, 4 KiB MTU; flows of ``--bytes``, 2 MB by default):

* ``incast8``, ``incast16``: hosts 1..N to host 0 on one switch (``leafspine:17,1,1``), NSCC and
  RCCC with REPS, and the fixed window (1.5 BDP) beside them;
* ``perm``: a random permutation on ``fattree:8`` (128 hosts), NSCC with REPS and with oblivious
  spraying, each with ACKs every 16 KiB and every packet;
* ``perm-degraded``: the same with the core link a0-c0 at 25% of its rate.

Prints one JSON object per run on stdout (``--table`` adds a readable table on stderr with the
median over the seeds). Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uet.sim.fabric import FabricSimConfig, FabricSimulator  # noqa: E402

FIELDS = ("last_over_ideal", "max_over_avg_fct", "jain_fct", "trimmed", "dropped",
          "max_queue_bytes", "mean_queue_bytes", "wall_time_s")


def scenarios(flow_bytes: int) -> list[tuple[str, dict]]:
    out = []
    for n in (8, 16):
        for cc, spray in (("nscc", "reps"), ("rccc", "reps"), ("fixed", "reps")):
            out.append((f"incast{n}", dict(topology="leafspine:17,1,1", traffic=("incast", n),
                                           cc=cc, spray=spray)))
    for name, degrade in (("perm", []), ("perm-degraded", [("a0", "c0", 0.25)])):
        for spray in ("reps", "oblivious"):
            for per_packet in (False, True):
                out.append((name, dict(topology="fattree:8", traffic=("permutation", None),
                                       cc="nscc", spray=spray, ack_per_packet=per_packet,
                                       degrade=degrade)))
    for _, kw in out:
        kw["flow_bytes"] = flow_bytes
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--bytes", type=int, default=2_000_000, help="bytes per flow (default 2 MB)")
    ap.add_argument("--only", default="", help="run only scenarios whose name starts with this")
    ap.add_argument("--table", action="store_true", help="a table of medians on stderr")
    args = ap.parse_args(argv)
    rows: dict[tuple, list[dict]] = {}
    for name, kw in scenarios(args.bytes):
        if not name.startswith(args.only):
            continue
        for seed in range(1, args.seeds + 1):
            t0 = time.perf_counter()
            s = FabricSimulator(FabricSimConfig(seed=seed, **kw)).run()
            s.pop("flows")
            key = (name, kw["cc"], kw["spray"], "packet" if kw.get("ack_per_packet") else "16KiB")
            s.update(scenario=name, ack=key[3], mtu=kw.get("mtu", FabricSimConfig.mtu),
                     setup_and_run_s=round(time.perf_counter() - t0, 3),
                     packets_per_s=round(s["packets_sent"] / s["wall_time_s"]))
            print(json.dumps(s, separators=(",", ":")), flush=True)
            rows.setdefault(key, []).append(s)
    if args.table:
        head = ("scenario", "cc", "spray", "ack", "ok") + FIELDS
        print(" | ".join(head), file=sys.stderr)
        for key, runs in rows.items():
            cells = list(key) + [f"{sum(r['ok'] for r in runs)}/{len(runs)}"]
            for f in FIELDS:
                vals = [r[f] for r in runs if r[f] is not None]
                cells.append(f"{statistics.median(vals):.3f}" if vals else "-")
            print(" | ".join(map(str, cells)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
