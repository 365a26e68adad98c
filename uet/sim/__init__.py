"""The deterministic simulated fabric behind ``uet sim`` (docs/design-notes.md "Test beds" item 1)."""

from .simulator import SimConfig, Simulator, run

__all__ = ["SimConfig", "Simulator", "run"]
