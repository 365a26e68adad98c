"""``uet compare``'s driver: run the chosen designs on one scenario with one seed, and turn their
results into rows of the same figures (the table, the JSON ``designs`` map, the plot's series).

Rules (numbered):

  COMPARE-C1  every design gets the same topology, flows, degraded links, link rate and delay, MTU, buffer
      per port (the UET design's, uet.compare.uetrun.uet_buffer), seed and simulated-time bound.
  COMPARE-C2  a row: ``status`` ("ok", or why the run stopped: "stalled", "time-limit", "failed") and
      ``stopped_at_s``; ``throughput_gbps`` = the bytes of the completed flows x 8 / (the last
      completion - the first start); ``last_fct_s``, ``avg_fct_s``, ``max_over_avg_fct`` and
      ``jain_fct`` from uet.sim.metrics over the completed flows; ``completed`` of ``flows``;
      ``drops``, ``trims``, ``retx_bytes``, ``pause_frames`` (XOFF frames, refreshes included),
      ``xon_frames``, ``paused_time_s`` (summed over every paused port), ``max_queue_bytes`` (the
      largest data queue of any switch port), ``ecn_marked``.
  COMPARE-C3  structural facts beside the figures: ``shared_uplinks`` (RoCE designs: switch up ports that
      carried data of two or more flows), ``acks_paused`` (RoCE designs: how often an ACK or NAK
      waited in a paused queue, uet.compare.rocefabric COMPARE-F6) and, for pfc-victim, ``victim_paused``
      (the victim's pause count, uet.compare.rocefabric COMPARE-F3; 0 for UET, which has no PFC).
  COMPARE-C4  a design that did not finish is a row like the others (its status says so): a result,
      not an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import IO, Any, Callable

from ..sim.metrics import fct_summary
from .rocefabric import RoceFabric
from .scenarios import Scenario
from .uetrun import run_uet, uet_buffer

DESIGNS = ("roce", "adaptive", "uet")


@dataclass
class Options:
    designs: tuple[str, ...] = DESIGNS
    seed: int = 1
    pfc: bool = True
    rate_gbps: float = 100.0
    link_delay_us: float = 1.0
    mtu: int = 4096
    time_limit_s: float = 0.05
    csig: str | None = None
    roce_op: str = "write"        # uet.roce.qp ROCE-Q1: every QP's operation, write or send
    ack_class: str = "same"       # uet.compare.rocefabric COMPARE-F6: ACK/NAK class, same or high


def bin_for(sc: Scenario, opts: Options) -> float:
    """The series' interval: about 200 samples over the time the busiest host link needs."""
    per_host: dict[int, int] = {}
    for f in sc.flows:
        per_host[f.dst] = per_host.get(f.dst, 0) + f.bytes
        per_host[f.src] = per_host.get(f.src, 0) + f.bytes
    busiest = max(per_host.values()) * 8 / (opts.rate_gbps * 1e9)
    start = max(f.start_s for f in sc.flows)
    return max((busiest + start) / 200, 1e-6)


def run_design(design: str, sc: Scenario, opts: Options, pcap: IO[bytes] | None = None,
               ) -> dict[str, Any]:
    """One design's raw result (COMPARE-C1)."""
    bin_s = bin_for(sc, opts)
    if design == "uet":
        return run_uet(sc, seed=opts.seed, rate_gbps=opts.rate_gbps,
                       link_delay_us=opts.link_delay_us, mtu=opts.mtu,
                       time_limit_s=opts.time_limit_s, bin_s=bin_s, csig=opts.csig, pcap=pcap)
    buf = uet_buffer(sc, rate_gbps=opts.rate_gbps, link_delay_us=opts.link_delay_us, mtu=opts.mtu)
    fab = RoceFabric(topology=sc.topology, flows=sc.flows, design=design, pfc=opts.pfc,
                     seed=opts.seed, rate_gbps=opts.rate_gbps, link_delay_us=opts.link_delay_us,
                     mtu=opts.mtu, buffer_bytes=buf, degrade=list(sc.degrade),
                     time_limit_s=opts.time_limit_s, bin_s=bin_s, pcap=pcap, op=opts.roce_op,
                     ack_class=opts.ack_class)
    r = fab.run()
    if fab.pcap is not None:
        fab.pcap.flush()
    return r


def row(sc: Scenario, r: dict[str, Any]) -> dict[str, Any]:
    """COMPARE-C2, COMPARE-C3: the figures of one raw result."""
    s = fct_summary(r["fct"], ideal_fct_s=0.0)
    done = [(f, fct) for f, fct in r["fct"] if fct is not None]
    if done:
        first = min(f.start_s for f, _ in done)
        last = max(f.start_s + fct for f, fct in done)
        span = last - first
        thr = sum(f.bytes for f, _ in done) * 8 / span / 1e9 if span > 0 else None
    else:
        thr = None
    out: dict[str, Any] = {
        "status": r["status"], "stopped_at_s": r["stopped_at_s"],
        "throughput_gbps": thr,
        "last_fct_s": s["last_fct_s"], "avg_fct_s": s["avg_fct_s"],
        "max_over_avg_fct": s["max_over_avg_fct"], "jain_fct": s["jain_fct"],
        "completed": s["completed"], "flows": len(r["fct"]),
    }
    for k in ("drops", "trims", "retx_bytes", "pause_frames", "xon_frames", "paused_time_s",
              "max_queue_bytes", "max_queue_port", "ecn_marked"):
        out[k] = r[k]
    for k in ("cnps", "naks", "timeouts", "bad_icrc", "bad_opcode", "acks_paused", "rto",
              "per_switch", "failures"):
        if k in r:
            out[k] = r[k]
    if "flow_uplinks" in r:
        count: dict[str, int] = {}
        for ups in r["flow_uplinks"]:
            for p in ups:
                count[p] = count.get(p, 0) + 1
        out["shared_uplinks"] = sorted(p for p, n in count.items() if n >= 2)
    if sc.victim is not None:
        out["victim_paused"] = r["flow_paused"][sc.victim] if "flow_paused" in r else 0
    out["flow_fct_s"] = [fct for _, fct in r["fct"]]
    out["sim_time_s"] = r["sim_time_s"]
    out["wall_time_s"] = round(r["wall_time_s"], 3)
    return out


def compare(sc: Scenario, opts: Options, *, pcap_for: Callable[[str], IO[bytes] | None] = lambda d: None,
            progress: Callable[[str], None] = lambda s: None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(rows by design, raw results by design) for the designs of ``opts``, in their order."""
    rows: dict[str, Any] = {}
    raws: dict[str, Any] = {}
    for d in opts.designs:
        progress(f"running {d} ...")
        raw = run_design(d, sc, opts, pcap=pcap_for(d))
        raws[d] = raw
        rows[d] = row(sc, raw)
    return rows, raws


# --- the table ----------------------------------------------------------------------------------

COLUMNS = [  # (header, key, format)
    ("design", None, None), ("status", "status", None),
    ("Gb/s", "throughput_gbps", "{:.1f}"), ("last FCT us", "last_fct_s", "us"),
    ("avg FCT us", "avg_fct_s", "us"), ("max/avg", "max_over_avg_fct", "{:.2f}"),
    ("Jain", "jain_fct", "{:.3f}"), ("drops", "drops", "{}"), ("trims", "trims", "{}"),
    ("retx KB", "retx_bytes", "kb"), ("pauses", "pause_frames", "{}"),
    ("paused us", "paused_time_s", "us"), ("max q KB", "max_queue_bytes", "kb"),
]


def _cell(v: Any, fmt: str | None) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if fmt == "us":
        return f"{v * 1e6:.1f}"
    if fmt == "kb":
        return f"{v / 1000:.1f}"
    return fmt.format(v) if fmt else str(v)


def table(rows: dict[str, Any]) -> str:
    """Plain text, one row per design; an unfinished design's status says when it stopped."""
    lines = [[h for h, _, _ in COLUMNS]]
    for d, r in rows.items():
        status = r["status"] if r["status"] == "ok" else \
            f"{r['status']}@{r['stopped_at_s'] * 1e6:.0f}us ({r['completed']}/{r['flows']})"
        cells = [d, status] + [_cell(r[k], f) for _, k, f in COLUMNS[2:]]
        lines.append(cells)
    widths = [max(len(l[i]) for l in lines) for i in range(len(COLUMNS))]
    out = []
    for n, l in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(l, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def notes(sc: Scenario, rows: dict[str, Any]) -> str:
    """COMPARE-C3's structural facts as lines under the table: the victim's FCT and pauses (pfc-victim),
    the uplinks shared by two or more flows under ECMP."""
    out = []
    if sc.victim is not None:
        f = sc.flows[sc.victim]
        parts = [f"{d} {_cell(r['flow_fct_s'][sc.victim], 'us')} us, paused "
                 f"{r.get('victim_paused', 0)}x" for d, r in rows.items()]
        out.append(f"victim h{f.src}->h{f.dst} (goes nowhere congested): FCT " + "; ".join(parts))
    for d, r in rows.items():
        if "shared_uplinks" in r and d == "roce" and sc.name in ("elephants", "degraded-link"):
            out.append(f"{d}: {len(r['shared_uplinks'])} switch uplink(s) carried 2+ flows "
                       "(ECMP collisions)")
    waits = [f"{d} {r['acks_paused']}x" for d, r in rows.items() if r.get("acks_paused")]
    if waits:  # uet.compare.rocefabric COMPARE-F6
        out.append("ACKs/NAKs in the QP's class waited in a paused queue: " + "; ".join(waits))
    return "\n".join(out)
