"""The flow-completion summary of a many-host ``uet sim`` run: each flow's completion time (FCT),
the last one against the ideal the topology allows, their spread, and Jain's fairness index.

Nothing is rounded here: the numbers go to JSON, whose readers round.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from .traffic import Flow


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index of non-negative ``values``: (sum x)^2 / (n * sum x^2), from 1/n (one
    value holds everything) to 1.0 (all equal). 1.0 for an empty or all-zero list: nothing is
    shared unfairly. The values are scaled by their largest first: squaring subnormal values
    loses their precision (two equal values of 3e-161 gave 1.0014)."""
    n = len(values)
    top = max(values, default=0.0)
    if n == 0 or top == 0.0:
        return 1.0
    scaled = [x / top for x in values]
    total = math.fsum(scaled)
    return total * total / (n * math.fsum(x * x for x in scaled))


def ideal_fct(link_bytes: Mapping[Any, int], rate_bps_of: Callable[[Any], float],
              base_rtt_s: float) -> float:
    """A lower bound on the last FCT of flows that start together: the time the busiest link
    needs to carry the wire bytes that must cross it, plus the base RTT (the last byte still has
    to arrive and be acknowledged). ``link_bytes`` maps each link to the wire bytes (headers
    included) crossing it, ``rate_bps_of(link)`` is its rate in bits/s. "Busiest" means the
    largest bytes / rate, the longest to drain, which on links of mixed rates need not be the
    link with the most bytes."""
    busiest = 0.0
    for link, nbytes in link_bytes.items():
        rate = rate_bps_of(link)
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"link {link!r}: rate {rate} b/s; a positive, finite rate")
        busiest = max(busiest, nbytes * 8 / rate)
    return busiest + base_rtt_s


def fct_summary(flows: Sequence[tuple[Flow, float | None]], *,
                ideal_fct_s: float) -> dict[str, Any]:
    """The summary of ``flows``, each with its FCT in seconds (finish - start; None: it never
    completed). Keys:

    * ``flows``: ``{"src", "dst", "bytes", "fct_s"}`` per flow, in the order given;
    * ``last_fct_s``: the largest FCT of the completed flows;
    * ``ideal_fct_s`` (as given, see :func:`ideal_fct`) and ``last_over_ideal``;
    * ``avg_fct_s`` and ``max_over_avg_fct`` (the last FCT over the average: 1.0 when every flow
      took as long);
    * ``jain_fct``: Jain's index of the completed flows' FCTs;
    * ``completed`` and ``unfinished``: flows with and without an FCT.

    Unfinished flows are left out of every statistic (an FCT they do not have would be a guess);
    with no completed flow, the statistics are None. A ratio over a zero is None as well."""
    rows = []
    done: list[float] = []
    for f, fct in flows:
        if fct is not None:
            if not (math.isfinite(fct) and fct >= 0.0):  # finish before start: a caller's bug
                raise ValueError(f"flow {f.src}->{f.dst}: FCT {fct!r} s; a finite time >= 0")
            done.append(fct)
        rows.append({"src": f.src, "dst": f.dst, "bytes": f.bytes, "fct_s": fct})
    last = max(done) if done else None
    avg = math.fsum(done) / len(done) if done else None
    return {
        "flows": rows,
        "last_fct_s": last,
        "ideal_fct_s": ideal_fct_s,
        "last_over_ideal": last / ideal_fct_s if last is not None and ideal_fct_s > 0 else None,
        "avg_fct_s": avg,
        "max_over_avg_fct": last / avg if last is not None and avg else None,
        "jain_fct": jain(done) if done else None,
        "completed": len(done),
        "unfinished": len(rows) - len(done),
    }
