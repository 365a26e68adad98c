"""``uet compare --plot FILE``: one figure of three panels from the designs' results.

  1. the FCT distribution per design (an empirical CDF of the flows' completion times);
  2. throughput over time per design: the bytes the switches delivered to hosts in each sampling
     interval (uet.compare.rocefabric COMPARE-F5, uet.compare.uetrun COMPARE-U2), in Gb/s;
  3. a queue over time per design: the data queue of that design's busiest switch port.

Sized for a slide: 16 x 5 inches at 120 dpi, a PNG of 1920 x 600 pixels (SVG: vector).

matplotlib is imported here only, when a plot is asked for (the optional extra ``plot``), with
the Agg backend so that no display is needed. PNG or SVG follows the file's suffix.
"""

from __future__ import annotations

from typing import Any

from .scenarios import Scenario

COLOURS = {"roce": "tab:red", "adaptive": "tab:orange", "uet": "tab:blue"}
FIGSIZE = (16, 5)  # inches: three panels side by side on a 16:9 slide
DPI = 120          # 1920 x 600 pixels as PNG


def plot(path: str, sc: Scenario, raws: dict[str, Any], rows: dict[str, Any], *,
         title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=FIGSIZE)
    for d, raw in raws.items():
        c = COLOURS.get(d)
        fcts = sorted(x * 1e6 for x in rows[d]["flow_fct_s"] if x is not None)
        if fcts:
            n = len(fcts)
            ax1.step([0.0] + fcts, [0.0] + [(i + 1) / n for i in range(n)], where="post",
                     color=c, label=f"{d} ({rows[d]['completed']}/{rows[d]['flows']})")
        s = raw["series"]
        t, b = s["t"], s["bytes"]
        if len(t) > 1:
            xs = [t[i] * 1e6 for i in range(1, len(t))]
            ys = [(b[i] - b[i - 1]) * 8 / (t[i] - t[i - 1]) / 1e9 if t[i] > t[i - 1] else 0.0
                  for i in range(1, len(t))]
            ax2.plot(xs, ys, color=c, label=d, linewidth=1)
        port = rows[d].get("max_queue_port")
        q = s["queues"].get(port) if port else None
        if q:
            ax3.plot([x * 1e6 for x in t[:len(q)]], [v / 1000 for v in q], color=c,
                     label=f"{d}: {port}", linewidth=1)
    ax1.set(xlabel="flow completion time (us)", ylabel="fraction of flows", title="FCT CDF")
    ax2.set(xlabel="time (us)", ylabel="Gb/s delivered to hosts", title="throughput")
    ax3.set(xlabel="time (us)", ylabel="KB queued", title="busiest switch queue")
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
