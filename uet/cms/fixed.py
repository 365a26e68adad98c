"""Fixed window: the default congestion control. It ignores every signal, so a lossless run
never changes its rate; it exists so the PDS always has a window to ask."""

from __future__ import annotations

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

    def __repr__(self) -> str:
        return f"FixedWindow(window_bytes={self.window_bytes})"
