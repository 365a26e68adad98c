"""The sweep's plots in ``DIR``, drawn from the table's rows (uet.sweep.results):

  ``fct.png``    the FCT distribution (an empirical CDF of every flow of the runs) per value of
                 each swept option, one panel per option (compare: one curve per design too);
  ``merit.png``  the figure of merit (the spec's ``merit``, a column of the table) of every run
                 against the value of each swept option, with the median per value.

matplotlib is imported here only (the ``plot`` extra, with the Agg backend, as uet compare
--plot): without it :func:`draw` returns a one-line note and draws nothing.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path
from typing import Any

FILES = ("fct.png", "merit.png")
DPI = 120  # sized for a slide: a panel is 5.3 x 4.5 inches, 636 x 540 pixels; one alone 960


def _figsize(panels: int) -> tuple[float, float]:
    return max(8.0, 5.3 * panels), 4.5


def draw(directory: Path, rows: list[dict[str, Any]], options: list[str], *, merit: str,
         command: str) -> str:
    """Draw the plots; the line to tell the user (what was written, or why nothing was)."""
    if importlib.util.find_spec("matplotlib") is None:
        from ..clihelp import MATPLOTLIB_HINT

        return f"no plots: matplotlib is missing ({MATPLOTLIB_HINT})"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    swept = [c for c in options if len({_label(r.get(c)) for r in rows}) > 1] or [None]
    n = len(swept)
    fig, axes = plt.subplots(1, n, figsize=_figsize(n), squeeze=False)
    for ax, opt in zip(axes[0], swept):
        for label, fcts in _fct_groups(rows, opt, command).items():
            xs = sorted(x * 1e6 for x in fcts)
            if xs:
                ax.step([0.0] + xs, [0.0] + [(i + 1) / len(xs) for i in range(len(xs))],
                        where="post", label=label, linewidth=1)
        ax.set(xlabel="flow completion time (us)", ylabel="fraction of flows",
               title=f"FCT by {opt}" if opt else "FCT, all runs")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(directory / FILES[0], dpi=DPI)
    plt.close(fig)
    fig, axes = plt.subplots(1, n, figsize=_figsize(n), squeeze=False)
    for ax, opt in zip(axes[0], swept):
        groups: dict[str, list[float]] = {}
        for r in rows:
            v = r.get(merit)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                groups.setdefault(_label(r.get(opt)) if opt else "all", []).append(float(v))
        for i, (label, ys) in enumerate(groups.items()):
            ax.plot([i] * len(ys), ys, "o", alpha=0.5, color="tab:blue")
            ax.plot([i - 0.2, i + 0.2], [statistics.median(ys)] * 2, color="tab:red")
        ax.set_xticks(range(len(groups)), list(groups), rotation=30, fontsize=7)
        ax.set(xlabel=opt or "", ylabel=merit, title=f"{merit} by {opt}" if opt else merit)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(directory / FILES[1], dpi=DPI)
    plt.close(fig)
    return f"plots: {', '.join(str(directory / f) for f in FILES)}"


def _label(v: Any) -> str:
    """A value of an option as the legend says it; a run of another grid, without it: default."""
    return v if isinstance(v, str) else "default" if v is None else json.dumps(v)


def _fct_groups(rows: list[dict[str, Any]], opt: str | None,
                command: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        base = _label(r.get(opt)) if opt else "all"
        if command == "sim":
            fcts = [f.get("fct_s") for f in r.get("flows") or [] if isinstance(f, dict)]
            out.setdefault(base, []).extend(x for x in fcts if isinstance(x, (int, float)))
            continue
        for k, v in r.items():  # compare: designs.<design>.flow_fct_s
            if k.startswith("designs.") and k.endswith(".flow_fct_s") and isinstance(v, list):
                design = k.split(".")[1]
                out.setdefault(f"{base} {design}", []).extend(
                    x for x in v if isinstance(x, (int, float)))
    return out
