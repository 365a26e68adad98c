"""DCQCN (facts G.7): the congestion control of RoCEv2, as pure code. The reaction point (RP,
the sender's rate limiter) and the notification point (NP, the receiver's CNP gate) take ``now``
and events in and hand rates and deadlines out; nothing here reads a clock.

Sources. [Z] Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015 (the
DCQCN paper: the RP state machine of its Figure 6 / Algorithm 1). [H] the UEC's htsim
(``dcqcn.cpp``, the source G.7 quotes for its constants: CNP interval 50 us, update period 55 us,
g = 1/256, B = 10,000,000 bytes, F = 5, R_AI = line rate / 20, R_HAI = line rate / 10, minimum
rate 100 Mb/s). [M] the NVIDIA/Mellanox ConnectX knobs of the same algorithm (Linux dcbnl.h names
them ``rpg_time_reset``, ``rpg_byte_reset``, ``rpg_threshold``, ``rpg_ai_rate``, ``rpg_hai_rate``,
``rpg_min_rate``): the vendor's defaults are tuned for long-lived production flows (5 Mb/s AI
steps, 300 us timers), which would leave a flow of a few MB at its first cut for its whole life,
so the defaults here are [Z]/[H]'s, and every field can be set to [M]'s.

Rules (numbered; tests name them):

  ROCE-D1  NP: a CE-marked data packet makes the receiver send a CNP to the sender's QP, at most one
      per ``cnp_interval_s`` per QP (G.7; [H] 50 us). A CE mark inside the interval is counted
      and otherwise ignored.
  ROCE-D2  RP, on a CNP: R_T := R_C; R_C := R_C x (1 - alpha / 2); alpha := (1 - g) alpha + g
      ([Z] eq. 1-2, G.7); the timer and byte counter stages restart at 0 and the alpha timer
      restarts. R_C never goes below ``min_rate_bps``. The first CNP turns the RP on (before
      it the flow runs at line rate and no timer runs, [Z] 3.2, [H] ``_cc_active``).
  ROCE-D3  RP, alpha timer: every ``alpha_period_s`` without a CNP, alpha := (1 - g) alpha
      ([Z] eq. 2, K = 55 us).
  ROCE-D4  RP, rate increase events: one every ``timer_s`` of time (stage T += 1) and one every
      ``byte_counter`` bytes sent (stage BC += 1). At each event, with F = ``fast_recovery_steps``:
      max(T, BC) < F: fast recovery, R_C := (R_T + R_C) / 2;
      min(T, BC) > F: hyper increase, R_T += i x R_HAI with i = min(T, BC) - F, then R_C as above;
      otherwise: additive increase, R_T += R_AI, then R_C as above ([Z] Algorithm 1).
      R_T and R_C never exceed the line rate.
"""

from __future__ import annotations

from dataclasses import dataclass

INF = float("inf")


@dataclass(frozen=True)
class DcqcnParams:
    """The named DCQCN parameters; ``None`` rates scale with the line rate as [H] does."""

    g: float = 1 / 256                    # [Z] 5, [H] _g, G.7: alpha's gain
    alpha0: float = 1.0                   # [Z] 3.2, [H]: alpha starts at 1 ([M] initial_alpha 1023/1024)
    alpha_period_s: float = 55e-6         # [Z] K = 55 us, [H] _cc_update_period, G.7 (~55 us)
    timer_s: float = 55e-6                # [Z] T = 55 us, [H] (one period drives both); G.7: 50-55 us
    byte_counter: int = 10_000_000        # [Z] B = 10 MB, [H] _B = 10000000, G.7
    fast_recovery_steps: int = 5          # [Z] F = 5, [H] _F = 5 (G.7 notes it)
    rate_ai_bps: float | None = None      # [H] line / 20 ([Z] 40 Mb/s at 40 Gb/s; [M] 5 Mb/s)
    rate_hai_bps: float | None = None     # [H] line / 10 ([M] rpg_hai_rate 50 Mb/s)
    min_rate_bps: float = 100e6           # [H] _minimum_rate_bps 100 Mb/s ([M] rpg_min_rate 1 Mb/s)
    cnp_interval_s: float = 50e-6         # ROCE-D1: G.7 and [H] _cnp_interval 50 us

    def __post_init__(self) -> None:
        if not 0 < self.g <= 1 or not 0 <= self.alpha0 <= 1:
            raise ValueError("g is in (0, 1] and alpha0 in [0, 1]")
        if min(self.alpha_period_s, self.timer_s, self.cnp_interval_s) < 0 or self.byte_counter < 1:
            raise ValueError("DCQCN periods must not be negative, the byte counter positive")
        if self.fast_recovery_steps < 0 or self.min_rate_bps <= 0:
            raise ValueError("F is not negative and the minimum rate is positive")


class DcqcnRp:
    """The reaction point of one QP (ROCE-D2 to ROCE-D4). ``rate`` is R_C in bits/s; :meth:`next_timer` is
    the earliest deadline (inf while the RP is off); :meth:`on_timer` runs what is due."""

    __slots__ = ("p", "line", "rc", "rt", "alpha", "t_stage", "bc_stage", "bytes_acc", "active",
                 "t_alpha", "t_rate", "r_ai", "r_hai", "cnps", "cuts", "increases")

    def __init__(self, line_rate_bps: float, params: DcqcnParams | None = None):
        p = params or DcqcnParams()
        self.p = p
        self.line = float(line_rate_bps)
        self.rc = self.rt = self.line
        self.alpha = p.alpha0
        self.t_stage = self.bc_stage = 0
        self.bytes_acc = 0
        self.active = False
        self.t_alpha = self.t_rate = INF
        # [H]: the increase steps scale with the link; explicit values win
        self.r_ai = p.rate_ai_bps if p.rate_ai_bps is not None else self.line / 20
        self.r_hai = p.rate_hai_bps if p.rate_hai_bps is not None else self.line / 10
        self.cnps = self.cuts = self.increases = 0

    @property
    def rate(self) -> float:
        return self.rc

    def on_cnp(self, now: float) -> None:
        """ROCE-D2."""
        p = self.p
        self.cnps += 1
        self.cuts += 1
        self.rt = self.rc
        self.rc = max(self.rc * (1 - self.alpha / 2), p.min_rate_bps)
        self.alpha = (1 - p.g) * self.alpha + p.g
        self.t_stage = self.bc_stage = 0
        self.bytes_acc = 0
        self.active = True
        self.t_alpha = now + p.alpha_period_s  # ROCE-D3 counts from the last CNP
        self.t_rate = now + p.timer_s

    def on_sent(self, nbytes: int, now: float) -> None:
        """ROCE-D4's byte counter: ``nbytes`` more were sent."""
        if not self.active:
            return
        self.bytes_acc += nbytes
        while self.bytes_acc >= self.p.byte_counter:
            self.bytes_acc -= self.p.byte_counter
            self.bc_stage += 1
            self._increase()

    def next_timer(self) -> float:
        return min(self.t_alpha, self.t_rate) if self.active else INF

    def on_timer(self, now: float) -> None:
        """ROCE-D3 and ROCE-D4's timer, each as many times as its period passed by ``now``."""
        p = self.p
        while self.active and self.t_alpha <= now:
            self.alpha *= 1 - p.g
            self.t_alpha += p.alpha_period_s if p.alpha_period_s > 0 else INF
        while self.active and self.t_rate <= now:
            self.t_stage += 1
            self._increase()
            self.t_rate += p.timer_s if p.timer_s > 0 else INF
        if self.active and self.rc >= self.line and self.rt >= self.line:
            # back at line rate: the RP turns off until the next CNP ([H]: no timer runs then)
            self.active = False
            self.t_alpha = self.t_rate = INF

    def _increase(self) -> None:
        """ROCE-D4: one rate increase event."""
        f = self.p.fast_recovery_steps
        t, bc = self.t_stage, self.bc_stage
        if max(t, bc) < f:
            pass  # fast recovery: towards R_T only
        elif min(t, bc) > f:
            self.rt += (min(t, bc) - f) * self.r_hai
        else:
            self.rt += self.r_ai
        self.rt = min(self.rt, self.line)
        self.rc = min((self.rt + self.rc) / 2, self.line)
        self.increases += 1


class CnpGate:
    """ROCE-D1: whether a CE-marked packet on this QP sends a CNP now."""

    __slots__ = ("interval", "last", "marked", "sent")

    def __init__(self, interval_s: float = DcqcnParams.cnp_interval_s):
        self.interval = interval_s
        self.last = -INF
        self.marked = 0
        self.sent = 0

    def on_ce(self, now: float) -> bool:
        self.marked += 1
        if now - self.last >= self.interval:
            self.last = now
            self.sent += 1
            return True
        return False
