"""Progress on stderr: runs done of the total, failed and timed out, and the time left (the time so far
per finished run, times the runs still to go). One line per finished run, or one line
rewritten in place when stderr is a terminal."""

from __future__ import annotations

import time
from typing import IO


class Progress:
    def __init__(self, total: int, out: IO[str], *, prog: str = "uet sweep"):
        self.total, self.out, self.prog = total, out, prog
        self.done = 0
        self.counts = {"failed": 0, "timeout": 0}
        self.t0 = time.monotonic()
        self.tty = bool(getattr(out, "isatty", lambda: False)())

    def update(self, status: str) -> None:
        self.done += 1
        if status in self.counts:
            self.counts[status] += 1
        left = (time.monotonic() - self.t0) / self.done * (self.total - self.done)
        line = (f"{self.prog}: {self.done}/{self.total} runs done, {self.counts['failed']} "
                f"failed, {self.counts['timeout']} timeout, {_duration(left)} left")
        self.out.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            self.out.write("\n")
        self.out.flush()


def _duration(s: float) -> str:
    s = round(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (
        f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")
