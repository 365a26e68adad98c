"""The local runner: ``workers`` runs at a time on this machine (default one per core), each run
its own process (uet.sweep.execute), fed and collected by a thread pool. ``on_done`` is called in
the caller's thread as each run ends, in the order they end."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from .execute import run_one
from .spec import Run

OnDone = Callable[[Run, dict[str, Any]], None]


def run_local(runs: Sequence[Run], *, workers: int, timeouts: Sequence[float],
              on_done: OnDone) -> None:
    """``timeouts``: each run's time limit in seconds."""
    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="uet-sweep")
    futs: dict[Future[dict[str, Any]], Run] = {
        ex.submit(run_one, r.command, r.argv, t, r.cpu_s): r for r, t in zip(runs, timeouts)}
    try:
        for fut in as_completed(futs):
            on_done(futs[fut], fut.result())
    finally:
        # Ctrl-C reached the runs' processes too (one process group): the threads end with them
        ex.shutdown(wait=True, cancel_futures=True)
