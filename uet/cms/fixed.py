"""Fixed window: the default congestion control. It ignores every signal, so a lossless run
never changes its rate; it exists so the PDS always has a window to ask."""

from __future__ import annotations

from typing import Any

from .base import CongestionControl


class FixedWindow(CongestionControl):
    def __init__(self, window_bytes: int = 1 << 20, mtu: int = 4096):
        if window_bytes <= 0:
            raise ValueError("window_bytes must be positive")
        self.window_bytes = int(window_bytes)
        self.mtu = mtu

    @property
    def cwnd_bytes(self) -> int:
        return self.window_bytes

    def can_send(self, inflight_bytes: int, nbytes: int) -> bool:
        return inflight_bytes == 0 or inflight_bytes + nbytes <= self.window_bytes

    # The signals of every packet and every ACK, which this window ignores by design (the module
    # docstring): its own hooks, so that a send is answered here and not by the base class's
    # interface (issue 28: one SEND followed through few files). The rarer hooks are the base's.
    def on_send(self, *, now: float, size: int, retx: bool) -> None:
        """Ignored: the window does not depend on what was sent."""

    def on_ack(self, *, now: float, size: int, inflight: int, ack: Any = None) -> None:
        """Ignored: the window does not grow with acknowledgements."""

    def on_rtt_sample(self, *, now: float, rtt: float) -> None:
        """Ignored: the window does not follow the RTT."""

    def __repr__(self) -> str:
        return f"FixedWindow(window_bytes={self.window_bytes})"
