"""The one description of a multipath network (docs/design-notes.md "Test beds" 1 and 2): paths with their
rate, delay and queues, ECN marking, trimming, the impairments and path failures, and ECMP.
``uet sim`` (virtual time), ``uet fabric`` and ``uet demo`` (wall time) each extend it with what
only they have; the names and meanings are the same everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field

TRIM_KEEP = 256  # docs/design-notes.md "Defaults": a trimming switch keeps the first 256 bytes of UDP payload


@dataclass
class NetConfig:
    paths: int = 4
    rate_gbps: float = 100.0                 # per path and direction
    rtt_us: float = 10.0                     # base round trip: each one-way link delays rtt / 2
    loss: float = 0.0                        # fraction lost, per packet per path
    trim: float = 0.0                        # fraction of trimmable data packets trimmed
    reorder: float = 0.0                     # fraction delayed by up to reorder_delay_us
    reorder_delay_us: float | None = None    # None: one base RTT (at least reorder_floor_us)
    dup: float = 0.0                         # fraction duplicated (the copy up to reorder_delay_us later)
    corrupt: float = 0.0                     # fraction with one bit of the UDP payload flipped
    fail: list[tuple[int, float]] = field(default_factory=list)  # (path, microseconds) it fails at
    skew_us: float = 0.0                     # path i gets i * skew_us more one-way delay
    queue_bytes: int | None = None           # per link; None: the driver's choice
    kmin_bytes: int = 64 * 1024              # CE marking starts above this queue depth (RED-style) ...
    kmax_bytes: int = 512 * 1024             # ... and marks every ECN-capable packet above this one
    trim_on_overflow: bool = True            # a full queue trims a trimmable packet instead of dropping
    trim_bytes: int = TRIM_KEEP
    ecmp: str = "hash"                       # "hash": salted hash of the 5-tuple; "mod": entropy % paths
    seed: int = 1
    reorder_floor_us: float = 0.0            # the least reorder delay a driver can honour

    def __post_init__(self) -> None:
        self.fail = [(int(i), float(t)) for i, t in self.fail]
        self.validate()

    def validate(self) -> None:
        """Raises ValueError with the first field that is out of its range."""
        if self.paths < 1:
            raise ValueError("paths must be at least 1")
        if not self.rate_gbps > 0 or self.rtt_us < 0 or self.skew_us < 0:
            raise ValueError("rate must be positive; rtt and skew not negative")
        for name in ("loss", "trim", "reorder", "dup", "corrupt"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} is a fraction from 0 to 1, not {v}")
        if self.kmax_bytes <= self.kmin_bytes:
            raise ValueError("kmax_bytes must exceed kmin_bytes")
        if (self.queue_bytes is not None and self.queue_bytes < 1) or self.trim_bytes < 1:
            raise ValueError("queue_bytes and trim_bytes must be positive")
        if self.ecmp not in ("hash", "mod"):
            raise ValueError("ecmp is 'hash' or 'mod'")

    @property
    def reorder_delay_s(self) -> float:
        d = self.reorder_delay_us if self.reorder_delay_us is not None else max(
            self.rtt_us, self.reorder_floor_us)
        return d * 1e-6

    def fail_times(self) -> list[float]:
        """When each path fails, in seconds from the start (inf: never); paths that do not
        exist are ignored."""
        at = [float("inf")] * self.paths
        for i, t in self.fail:
            if 0 <= i < self.paths:
                at[i] = min(at[i], t * 1e-6)
        return at

    def bdp_bytes(self) -> int:
        """Bandwidth-delay product of all paths together."""
        return int(self.paths * self.rate_gbps * 1e9 / 8 * self.rtt_us * 1e-6)
