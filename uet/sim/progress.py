"""``uet sim``'s progress on stderr: how far a long run is, never on stdout.

The simulators call a hook every :data:`EVERY_EVENTS` events of their loop (virtual time knows
nothing of the wall clock: uet.sim.simulator, uet.sim.fabric) with a snapshot of the run; this
module turns snapshots into one line and decides, by the wall clock, whether to write it:

* at most one line every :data:`INTERVAL_S` seconds, and none in a run's first ``INTERVAL_S``:
  a run of a few seconds shows progress, a short one prints nothing;
* on a terminal the line is rewritten in place (``\\r``), elsewhere one line each time;
* :meth:`Progress.finish` writes the last state once the run is over, when a line was written
  before or when progress was asked for (``--progress``), so that a forced run always shows one.

Off unless stderr is a terminal or ``--progress`` is given; ``--no-progress`` turns it off. With
``--json`` too (stdout holds only the JSON object; the progress is on stderr).
"""

from __future__ import annotations

import time
from typing import Any, Callable, TextIO

EVERY_EVENTS = 1 << 12  # loop events between two snapshots (cheap to count, fine enough)
INTERVAL_S = 1.0        # wall-clock seconds between two lines


def line(snap: dict[str, Any]) -> str:
    """A snapshot in words: virtual time, then the ideal run's time and the flows complete
    (switched fabrics: the flows of a permutation all end near the end) or the data packets A
    sent and the messages (operations) delivered (two hosts)."""
    text = f"uet sim: {snap['sim_time_s'] * 1e3:.4g} ms simulated"
    if "flows" in snap:
        if snap.get("ideal_s") is not None:
            text += f" (an ideal run ends at {snap['ideal_s'] * 1e3:.4g} ms)"
        text += f", {snap['flows_complete']} of {snap['flows']} flows complete"
        if snap.get("flows_failed"):
            text += f", {snap['flows_failed']} failed"
    else:
        text += (f", {snap['data_packets']} data packets sent, {snap['delivered']} of "
                 f"{snap['sent']} delivered")
    return text + f", {snap['wall_s']:.0f} s"


class Progress:
    """The hook the simulators call, with the wall clock's throttle (module docstring)."""

    def __init__(self, out: TextIO, *, forced: bool, clock: Callable[[], float] = time.monotonic):
        self.out = out
        self.forced = forced
        self.clock = clock
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.t0 = clock()
        self.last = self.t0  # nothing in the first INTERVAL_S
        self.shown = False
        self.snap: dict[str, Any] | None = None

    def __call__(self, snap: dict[str, Any]) -> None:
        if snap.get("final"):
            self.finish(snap)
            return
        self.snap = snap
        now = self.clock()
        if now - self.last < INTERVAL_S:
            return
        self.last = now
        self._write(snap, now)

    def _write(self, snap: dict[str, Any], now: float) -> None:
        text = line({**snap, "wall_s": now - self.t0})
        self.out.write("\r" + text + "\x1b[K" if self.tty else text + "\n")
        self.out.flush()
        self.shown = True

    def finish(self, snap: dict[str, Any] | None = None) -> None:
        """The last state (``snap``, else the last one seen), when a line was shown or progress
        was asked for; a terminal's line ends."""
        snap = snap or self.snap
        if snap is not None and (self.shown or self.forced):
            self._write(snap, self.clock())
        if self.shown and self.tty:
            self.out.write("\n")
            self.out.flush()
        self.shown = False
