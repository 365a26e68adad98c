#!/usr/bin/env python3
"""CSIG path selection on a degraded fabric (uet.sim.fabric SIM-F1 to SIM-F3, uet.multipath.csig MULTIPATH-K1 to MULTIPATH-K5):
one flow h0 -> h1 on ``leafspine:1,2,8`` (one host per ToR, eight spines) with the link t0-s3 at
a quarter of its rate, without CSIG and with ``--csig`` (ABW by default), for flows of 2 MB and
16 MB under seeds 1..N.

Per run: the flow's completion time (``fct_us``), the share of its data packets that crossed
the degraded spine (``degraded_share``; the spines are 8, so 0.125 is an even spread), and, in
windows of one unloaded RTT, ``rtts_to_move_off``: the first window from which the degraded
spine carried fewer than 1/16 of the other spines' average over the next ``--span`` windows
(None: never), and ``tail_ratio``: the degraded spine's packets over the others' average in the
second half of the flow (1.0: no difference; below 1/16: moved off).

``--max-window X`` caps NSCC's window at X BDP (NsccParams.max_window): below 1 the sender no
longer fills the receiver's link. Prints one JSON object per run on stdout; ``--table`` adds a
table of medians over the seeds on stderr. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uet.sim.fabric import FabricSimConfig, FabricSimulator  # noqa: E402
from uet.sim.traffic import Flow, write_matrix  # noqa: E402

TOPOLOGY = "leafspine:1,2,8"
DEGRADED_LINK = ("t0", "s3", 0.25)
DEGRADED_SPINE = "s3"
MOVED_OFF = 1 / 16  # the degraded spine below 1/16 of the others' average: traffic moved off
FIELDS = ("fct_us", "degraded_share", "rtts_to_move_off", "tail_ratio", "csig_reasked",
          "wall_time_s")


def run(matrix: str, *, csig: str | None, seed: int, span: int,
        max_window: float | None, fraction: float = DEGRADED_LINK[2]) -> dict:
    nscc = {"max_window": max_window} if max_window is not None else {}
    sim = FabricSimulator(FabricSimConfig(
        topology=TOPOLOGY, traffic=("matrix", matrix), seed=seed, nscc=nscc, csig=csig,
        degrade=[(DEGRADED_LINK[0], DEGRADED_LINK[1], fraction)]))
    spines = [s for s in sim.topo.switches if s.startswith("s")]
    crossed: list[tuple[float, str]] = []
    at_switch = sim._at_switch

    def recording(now, sw, pkt):  # data packets as they reach a spine
        if not pkt.control and sw.name[0] == "s":
            crossed.append((now, sw.name))
        at_switch(now, sw, pkt)

    sim._at_switch = recording  # type: ignore[method-assign]
    s = sim.run()
    rtt = sim.base_rtt
    windows: list[dict[str, int]] = []
    for now, spine in crossed:
        k = int(now / rtt)
        while len(windows) <= k:
            windows.append(dict.fromkeys(spines, 0))
        windows[k][spine] += 1

    def ratio(ws: list[dict[str, int]]) -> float | None:
        deg = sum(w[DEGRADED_SPINE] for w in ws)
        others = sum(sum(w.values()) - w[DEGRADED_SPINE] for w in ws) / (len(spines) - 1)
        return deg / others if others else None

    moved = next((k for k in range(len(windows) - span + 1)
                  if (r := ratio(windows[k:k + span])) is not None and r < MOVED_OFF), None)
    total = len(crossed)
    return {
        "csig": s["csig"], "seed": seed, "bytes": s["bytes"], "ok": s["ok"],
        "fct_us": round(s["last_fct_s"] * 1e6, 2) if s["last_fct_s"] else None,
        "ideal_fct_us": round(s["ideal_fct_s"] * 1e6, 2),
        "degraded_share": round(sum(1 for _, x in crossed if x == DEGRADED_SPINE) / total, 4),
        "rtts_to_move_off": moved,
        "tail_ratio": round(r, 4) if (r := ratio(windows[len(windows) // 2:])) is not None
        else None,
        "rtt_us": round(rtt * 1e6, 3), "windows": len(windows), "data_packets": total,
        "csig_reasked": s.get("csig_reasked"), "csig_kept_bad": s.get("csig_kept_bad"),
        "csig_expired": s.get("csig_expired"), "trimmed": s["trimmed"],
        "ecn_marked": s["ecn_marked"], "wall_time_s": s["wall_time_s"],
        "max_window": max_window, "fraction": fraction,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csig", default="abw",
                    help="the signals to compare with none, comma separated (abw)")
    ap.add_argument("--fraction", type=float, default=DEGRADED_LINK[2],
                    help=f"the degraded link's share of its rate ({DEGRADED_LINK[2]})")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--sizes", default="2000000,16000000", help="flow bytes, comma separated")
    ap.add_argument("--span", type=int, default=8, help="RTT windows a move-off must last (8)")
    ap.add_argument("--max-window", type=float, default=None,
                    help="NSCC max_window in BDP (default: NSCC's own, 1.5)")
    ap.add_argument("--table", action="store_true", help="a table of medians on stderr")
    args = ap.parse_args(argv)
    rows: dict[tuple, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(x) for x in args.sizes.split(",")):
            matrix = str(Path(tmp) / f"h0-h1-{size}.cm")
            write_matrix(matrix, 2, [Flow(0, 1, size)])
            for csig in [None] + args.csig.split(","):
                for seed in range(1, args.seeds + 1):
                    t0 = time.perf_counter()
                    r = run(matrix, csig=csig, seed=seed, span=args.span,
                            max_window=args.max_window, fraction=args.fraction)
                    r["setup_and_run_s"] = round(time.perf_counter() - t0, 3)
                    r["mtu"] = FabricSimConfig.mtu  # the simulator's payload per packet
                    print(json.dumps(r, separators=(",", ":")), flush=True)
                    rows.setdefault((size, csig or "none"), []).append(r)
    if args.table:
        head = ("bytes", "csig", "ok") + FIELDS
        print(" | ".join(head), file=sys.stderr)
        for (size, csig), runs in rows.items():
            cells = [str(size), csig, f"{sum(r['ok'] for r in runs)}/{len(runs)}"]
            for f in FIELDS:
                vals = [r[f] for r in runs if r[f] is not None]
                cells.append(f"{statistics.median(vals):.4g}" if vals else "never"
                             if f == "rtts_to_move_off" else "-")
            print(" | ".join(cells), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
