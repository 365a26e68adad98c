"""One run of a sweep, wherever it runs (a thread of the local pool, a Dask worker): ``uet COMMAND
ARGV`` as a child process of this Python (``sys.executable -m uet``, so the tree that runs the
sweep runs the run), killed at the time limit (wall clock) or at its CPU limit (the spec's
``run_cpu_limit``). The outcome is a plain dict (it travels back from a Dask worker): ``status``
``ok``, ``failed`` or ``timeout`` (killed at either limit), ``error`` (the run's last line on
stderr, or why it stopped), ``wall_s`` and ``summary`` (its ``--json`` object, or None).

A sim run that is not ok exits 1 with its summary: ``failed``, with the figures kept. A compare
run exits 0 when a design did not finish (the design's own ``status`` says so): ``ok``.
"""

from __future__ import annotations

import contextlib
import json
import math
import resource
import signal
import subprocess
import sys
import time
from typing import Any, Sequence

ERROR_CHARS = 500  # the error text kept per row: the one line a run prints, not a whole log


def run_one(command: str, argv: Sequence[str], timeout_s: float,
            cpu_s: float | None = None) -> dict[str, Any]:
    """``cpu_s``: also a limit on the run's CPU time (RLIMIT_CPU, set on the child just after it
    starts: the time it used before counts too), which a busy machine does not stretch."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "uet", command, *argv],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return {"status": "failed", "error": f"cannot start {sys.executable}: {exc}",
                "wall_s": round(time.monotonic() - t0, 3), "summary": None}
    if cpu_s is not None:
        limit = max(1, math.ceil(cpu_s))
        with contextlib.suppress(OSError, AttributeError):  # gone already; not Linux
            resource.prlimit(proc.pid, resource.RLIMIT_CPU, (limit, limit + 1))
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"status": "timeout", "error": f"killed after --run-timeout {timeout_s:g} s",
                "wall_s": round(time.monotonic() - t0, 3), "summary": None}
    if cpu_s is not None and proc.returncode == -signal.SIGXCPU:
        return {"status": "timeout", "error": f"killed after {math.ceil(cpu_s)} s of CPU "
                                              "(run_cpu_limit)",
                "wall_s": round(time.monotonic() - t0, 3), "summary": None}
    wall = round(time.monotonic() - t0, 3)
    summary = _summary(stdout)
    # the run's own message: its last line, but not the "try 'uet sim --help'" hint after it
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("try '")]
    if proc.returncode == 0 and summary is not None:
        return {"status": "ok", "error": "", "wall_s": wall, "summary": summary}
    failures = summary.get("failures") if summary else None
    if proc.returncode < 0:
        why = f"killed by signal {-proc.returncode}"
    elif failures and isinstance(failures, list):  # uet sim's own account of a run not ok
        why = "; ".join(map(str, failures))
    elif summary is None and proc.returncode == 0:
        why = "no JSON object on stdout"
    else:
        why = lines[-1] if lines else f"exit status {proc.returncode}"
    return {"status": "failed", "error": why[:ERROR_CHARS], "wall_s": wall, "summary": summary}


def _summary(stdout: str) -> dict[str, Any] | None:
    """The one JSON object ``--json`` prints (the last line holding one)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                return None
            return obj if isinstance(obj, dict) else None
    return None
