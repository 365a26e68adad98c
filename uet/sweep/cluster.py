"""The Dask runner (``--scheduler ADDRESS``): the runs go to a Dask distributed cluster as tasks
of uet.sweep.execute.run_one, each a ``uet`` process on a worker, killed there at the time limit.
The workers need this package importable (``pip install -e '.[cluster]'`` on each). A task that
raises (a worker lost too often: Dask's KilledWorker) is a ``failed`` row, never a crash.
``distributed`` is imported here only, when a scheduler is named."""

from __future__ import annotations

from typing import Any, Sequence

from .execute import run_one
from .pool import OnDone
from .spec import Run

CONNECT_TIMEOUT = "20s"


class ClusterError(Exception):
    """No cluster to run on: one line (the command exits 2)."""


def connect(address: str) -> Any:
    """A ``distributed.Client`` of the cluster at ``address``, or a ClusterError."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError("argument --scheduler: needs dask[distributed] (pip install "
                           "'uet[cluster]')") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"argument --scheduler: cannot reach {address}: {exc}") from None


def run_dask(client: Any, runs: Sequence[Run], *, timeouts: Sequence[float],
             on_done: OnDone) -> None:
    """The runs as tasks of ``client``'s cluster (``timeouts``: each run's time limit in
    seconds); closes the client."""
    from distributed import as_completed

    with client:
        keys = [f"uet-sweep-{r.key}" for r in runs]
        by_key = dict(zip(keys, runs))
        futs = client.map(run_one, [r.command for r in runs], [list(r.argv) for r in runs],
                          list(timeouts), [r.cpu_s for r in runs], key=keys, pure=False)
        try:
            for fut in as_completed(futs):
                try:
                    outcome: dict[str, Any] = fut.result()
                except Exception as exc:  # noqa: BLE001 - whatever the cluster says is the row's error
                    outcome = {"status": "failed", "error": f"dask: {type(exc).__name__}: {exc}",
                               "wall_s": None, "summary": None}
                on_done(by_key[fut.key], outcome)
        finally:
            client.cancel(futs)
