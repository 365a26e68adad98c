"""NSCC: the sender-side congestion window of UET congestion management (docs/facts.md E.1, E.6).

Owns one sender's window in bytes and every rule that moves it: the four ACK cases (delay against
target, CE or not), fast increase, QuickAdapt, the trim / loss / timeout cuts, the receiver's hints
in ACK_CC (B.8) and the periodic application of the accumulated increase. E.1 gives the rules and
defaults (one source, H.1 row 17: all are parameters); where E.1 is open this follows E.6 (htsim).
Project choices say "choice:". Seconds and bytes; no clock is read. Per ACK the PDS calls
``on_rtt_sample`` (Karn permitting), ``on_ce`` (flag M), then ``on_ack``, which decides.

The CSIG variant (``NsccParams.csig``; choice: E.4 says CSIG's signals serve congestion control,
not how): the PDS gives the reflected CSIG tags of an ACK_CCX (uet.cms.csig CMS-C4) to
:meth:`Nscc.on_signal` before that ACK's ``on_ack`` (its rule PDS-I16), the ACK's own EV first (CMS-C4);
that first tag is the signal of the path the ACK came on. With it, in ``on_ack``:

  CMS-V1  ABW, ABW/C: while that path says (almost) no bandwidth is available (bucket <=
      ``CSIG_STARVED``, 1), neither the proportional nor the fast increase is applied
      (``csig_held``): the queue has not grown yet but the bottleneck is full. The fair
      increase still is (it is what shares a full link).
  CMS-V2  DELAY: the reflected per-hop delay (the bucket's lower edge on ``csig_scale``) replaces
      RTT - base RTT as the delay input when it is larger (``csig_delay``): one hop's queue
      is seen even when reordering on other paths hides it in the RTT.
  CMS-V3  a tag with d or r set (CMS-C1, CMS-C3), of nQD (no rule uses it), or an ACK without a tag changes
      nothing. (An ACK whose own request carried no tag reflects other EVs only (PDS-G2 of
      uet.pds.signals); the hook names no ACK EV, so the first of those stands in.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..wire.enums import NACK_BY_NAME, REQUEST_TRIM_CODES
from .base import CongestionControl
from .csig import ABW, ABW_C, DELAY, Scale

NACK_TRIMMED = NACK_BY_NAME["TRIMMED"]                  # B.11 0x01
NACK_TRIMMED_LASTHOP = NACK_BY_NAME["TRIMMED_LASTHOP"]  # B.11 0x02: also our packet, trimmed
NACK_RCVR_INFER_LOSS = NACK_BY_NAME["RCVR_INFER_LOSS"]  # B.11 0x1A: the receiver saw a loss
CC_TYPE_NSCC = 0                 # B.8: cc_type 0 carries the NSCC state
RCVD_BYTES_MOD = 1 << 24         # B.8: rcvd_bytes is a 24-bit count that wraps
PEND_MAX = 127                   # B.8: rcv_cwnd_pend is 7 bits
PEND_SCALE = 128                 # E.1: the penalty is pend/128 of the newly received bytes
FAST_INCREASE_DELAY = 1e-6       # E.1: fast increase when the delay is ~0, "< 1 us"
BAD_DELTA_WINDOWS = 4            # choice: a rcvd_bytes delta above 4 x MaxWnd is nonsense
TARGET_QDELAY_TRIM = 0.75        # E.1: target_qdelay for trimming networks, x base RTT
TARGET_QDELAY_NO_TRIM = 1.0      # E.6: htsim's target without trimming
QA_THRESHOLD_NO_TRIM = 4.0       # E.1/E.6: qa_threshold = 4 x target without trimming
CSIG_STARVED = 1                 # CMS-V1 choice: buckets 0 and 1 (under 2/31 of full scale) = none


@dataclass
class NsccParams:
    """E.1 table defaults (H.1 row 17), in the table's units. ``target_qdelay`` None follows
    ``trimming``: 0.75 with it (the E.1 value for trimming networks), 1.0 without (E.6)."""

    target_qdelay: float | None = None  # x base RTT; None: 0.75 trimming, 1.0 without (E.1, E.6)
    max_window: float = 1.5         # x BDP
    gamma: float = 0.8
    max_md_jump: float = 0.5        # smallest multiplicative factor
    fair_increase: float = 5        # MTU x scaling_a
    fast_increase_scale: float = 0.25   # x scaling_a
    eta: float = 0.15               # MTU x scaling_a
    alpha: float = 4                # MTU x scaling_a x scaling_b per target_qdelay
    qa_gate: int = 3                # MaxWnd >> qa_gate
    qa_threshold: float | None = None   # x target; None: 0 with trimming, 4 without (E.1/E.6)
    adjust_bytes: float = 8         # MTUs
    adjust_period: float = 1        # base RTTs
    delay_ewma: float = 0.0125      # E.6 averaging weight
    trimming: bool = True
    reference_bdp: int = 150_000    # scaling_a = BDP / 150000 B (100 Gb/s x 12 us)
    reference_delay: float = 12e-6  # scaling_b = target / 12 us
    csig: bool = False              # CMS-V1 to CMS-V3: the CSIG variant (choice)
    csig_scale: Scale = Scale()     # CMS-C2: what the buckets mean (the fabric's own scale)


class Nscc(CongestionControl):
    """One sender's NSCC window. ``base_rtt`` is the network's largest unloaded RTT as configured
    (E.6); a smaller measured RTT replaces it (and MaxWnd) later."""

    def __init__(self, *, mtu: int, rate_gbps: float, base_rtt: float,
                 params: NsccParams | None = None):
        if mtu <= 0 or rate_gbps <= 0 or not base_rtt > 0:
            raise ValueError("mtu, rate_gbps and base_rtt must be positive")
        p = self.params = params or NsccParams()
        self.mtu = int(mtu)
        self.rate = rate_gbps * 1e9 / 8                 # bytes per second
        self.network_rtt = float(base_rtt)
        # E.6: target comes from the configured (network) RTT and stays put when a lower base RTT
        # is measured; so do the scalings, which describe the network (E.1 scaling_a, scaling_b)
        qdelay = p.target_qdelay
        if qdelay is None:
            qdelay = TARGET_QDELAY_TRIM if p.trimming else TARGET_QDELAY_NO_TRIM
        self.target = qdelay * self.network_rtt
        self.scaling_a = self.rate * self.network_rtt / p.reference_bdp
        self.scaling_b = self.target / p.reference_delay
        a, b = self.scaling_a, self.scaling_b
        self._fi = p.fair_increase * self.mtu * a       # E.1: bytes added per window acked
        self._fi_scale = p.fast_increase_scale * a      # E.1: cwnd += fi_scale x bytes
        self._eta = p.eta * self.mtu * a                # E.1: bytes added per adjust period
        # E.1 "per target_qdelay": divide by the target in seconds, so alpha is bytes/second and
        # alpha x (target - delay) at delay 0 adds alpha x MTU x a x b per window acked (E.6 too)
        self._alpha = p.alpha * self.mtu * a * b / self.target
        qa = p.qa_threshold if p.qa_threshold is not None else (
            0.0 if p.trimming else QA_THRESHOLD_NO_TRIM)
        self.qa_threshold = qa * self.target            # seconds; 0 = no delay trigger (choice)
        self.base_rtt = self.network_rtt
        self.max_wnd = self._max_wnd_for(self.base_rtt)
        self._cwnd = self.max_wnd                       # E.1: cwnd starts at MaxWnd
        self.avg_delay = 0.0                            # E.6 averaged queueing delay, seconds
        self.counters = dict.fromkeys((
            "md", "fair_increase", "proportional_increase", "fast_increase", "quick_adapt",
            "trims", "losses", "timeouts", "rcv_pend", "restores", "bad_cc_state", "stale_cc_state",
            "ce_ignored",
            "nacks_other", "csig_held", "csig_delay"), 0)
        self._sample: float | None = None   # RTT of this ACK (on_rtt_sample), used in on_ack
        self._ce = False                    # on_ce seen for this ACK
        self._inc = 0.0                     # E.1 accumulated increase (bytes x bytes)
        self._adjust_acked = 0              # bytes acked since the last application
        self._last_adjust: float | None = None
        self._fi_count, self._fast = 0, False   # fast increase: bytes at ~0 delay in a row, on
        self._last_md = -math.inf
        self._qa_end: float | None = None   # QuickAdapt period end
        self._qa_acked = 0                  # bytes acked in this QuickAdapt period
        self._qa_armed = False              # trim / loss / timeout seen in this period
        self._qa_delay_hit = False          # delay above qa_threshold seen in this period
        self._ignore_left = 0               # bytes to ack before CE counts again (after QA)
        self._inflight = 0                  # last known bytes in flight
        self._rcvd_bytes: int | None = None  # last rcvd_bytes of an ACK_CC (B.8)
        self._saved_cwnd: float | None = None   # window before receiver penalties began
        self._path_sig: int | None = None   # CMS-V1 to CMS-V3: the tag of this ACK's path (on_signal)

    # -- the window ------------------------------------------------------------------------
    @property
    def cwnd(self) -> float:
        return self._cwnd

    @cwnd.setter
    def cwnd(self, value: float) -> None:
        # E.1: floor 1 MTU, never above MaxWnd; a NaN (from an absurd RTT) leaves it as it was
        if value == value:
            self._cwnd = min(max(float(value), float(self.mtu)), self.max_wnd)

    @property
    def cwnd_bytes(self) -> int:
        return max(self.mtu, int(self._cwnd))

    def _max_wnd_for(self, rtt: float) -> float:
        # E.1 MaxWnd = max_window x BDP; choice: never below one MTU, so [MTU, MaxWnd] holds
        return max(self.params.max_window * self.rate * rtt, float(self.mtu))

    def _start(self, now: float) -> None:
        if self._qa_end is None:    # the first event opens the QuickAdapt and adjust periods
            self._qa_end = now + self.base_rtt + self.target
            self._last_adjust = now

    # -- hooks -----------------------------------------------------------------------------
    def on_send(self, *, now: float, size: int, retx: bool) -> None:
        self._start(now)
        self._inflight += max(0, size)

    def on_rtt_sample(self, *, now: float, rtt: float) -> None:
        if not (math.isfinite(rtt) and rtt > 0):
            return
        if rtt < self.base_rtt:     # E.6 smallest RTT seen; E.1 MaxWnd recomputed with it
            self.base_rtt = rtt
            self.max_wnd = self._max_wnd_for(rtt)
            self.cwnd = self._cwnd
        self._sample = rtt

    def on_ce(self, *, now: float, size: int) -> None:
        self._ce = True

    def on_ack(self, *, now: float, size: int, inflight: int, ack: Any = None) -> None:
        self._start(now)
        nbytes = max(0, size)
        self._inflight = max(0, inflight)
        ce = self._ce or bool(getattr(ack, "m", 0))
        rtt, self._sample, self._ce = self._sample, None, False
        sig, self._path_sig = self._path_sig, None
        hop = starved = None
        if sig is not None and not sig & 3:     # CMS-V3: d or r set
            t, s = sig >> 14, (sig >> 9) & 31
            if t == DELAY:
                hop = self.params.csig_scale.value(t, s)    # CMS-V2
            elif t in (ABW, ABW_C):
                starved = s <= CSIG_STARVED                  # CMS-V1
        if rtt is None:
            delay = self.avg_delay  # E.6: no sample (Karn) -> the averaged delay stands in
        else:
            delay = max(0.0, rtt - self.base_rtt)           # E.6 delay = RTT - base RTT
        if hop is not None and hop > delay:
            delay = hop                                     # CMS-V2: the path's own queue
            self.counters["csig_delay"] += 1
        if rtt is not None:
            self._average(self.base_rtt / 4 if not ce and delay > self.target else delay)
        if self.qa_threshold > 0 and delay > self.qa_threshold:
            self._qa_delay_hit = True                       # E.1 QuickAdapt delay trigger
        self._qa_acked += nbytes
        self._adjust_acked += nbytes
        hold = self._receiver_state(ack)    # choice: no increase on an ACK that penalises
        if self._quick_adapt(now):
            return
        if ce and self._ignore_left > 0:    # E.6: marks ignored until QA's flight is acked
            self.counters["ce_ignored"] += 1
            ce, hold = False, True          # choice: the ignored ACK neither cuts nor grows
        self._ignore_left -= nbytes
        if not ce and not hold:
            if delay >= self.target:        # E.1 not CE, delay >= target: fair increase
                self._fast, self._fi_count = False, 0
                self._inc += self._fi * nbytes
                self.counters["fair_increase"] += 1
            elif starved:                   # CMS-V1: the path's bottleneck is full
                self._fast, self._fi_count = False, 0
                self.counters["csig_held"] += 1
            elif not self._fast_increase(nbytes, delay):    # E.1 not CE, delay < target
                self._inc += self._alpha * nbytes * (self.target - delay)
                self.counters["proportional_increase"] += 1
        elif ce and delay >= self.target:   # E.1 CE, delay >= target: MD
            self._multiplicative_decrease(now)
        # E.1 CE, delay < target: no window change (the path changes instead, E.5)
        self._adjust(now)

    def on_nack(self, *, now: float, size: int, code: int) -> None:
        self._start(now)
        self._sample = None         # a NACK's RTT only lowers the base RTT (E.6)
        nbytes = size
        if code == NACK_RCVR_INFER_LOSS:
            self.on_loss(now=now, size=nbytes)
            return
        if code not in REQUEST_TRIM_CODES:  # choice: resource NACKs say nothing about the network
            self.counters["nacks_other"] += 1
            return
        self.counters["trims"] += 1
        nbytes = max(0, nbytes)
        self._inflight = max(0, self._inflight - nbytes)
        self._average(self.network_rtt)     # E.6: a trim is a (marked) sample of the network RTT
        self._qa_armed = True       # E.1/E.6: a trim arms QuickAdapt
        ignoring = self._ignore_left > 0    # choice: QuickAdapt already sized this flight
        self._ignore_left -= nbytes
        if not self._quick_adapt(now) and not ignoring:
            self.cwnd = self._cwnd - nbytes     # E.6: no QuickAdapt -> shrink by the packet

    def on_signal(self, *, now: float, ev: int, bits: int) -> None:
        """A reflected CSIG tag for ``ev`` (PDS-I16 of the PDS): the first one since the last ACK is
        that ACK's own path (CMS-C4), the one ``on_ack`` uses (CMS-V1 to CMS-V3); off without ``csig``."""
        if self.params.csig and self._path_sig is None:
            self._path_sig = bits

    def on_loss(self, *, now: float, size: int) -> None:
        self._start(now)
        self._lost("losses", max(0, size))

    def on_timeout(self, *, now: float) -> None:
        self._start(now)
        self._lost("timeouts", self.mtu)        # choice: the lost bytes unknown, one MTU

    # -- rules -----------------------------------------------------------------------------
    def _lost(self, counter: str, nbytes: int) -> None:
        self.counters[counter] += 1
        self._inflight = max(0, self._inflight - nbytes)
        self._qa_armed = True                   # E.1: a loss arms QuickAdapt
        self.cwnd = self._cwnd - nbytes         # E.1: shrink by the lost bytes

    def _average(self, delay: float) -> None:
        w = self.params.delay_ewma              # E.6 weight 0.0125
        self.avg_delay = w * delay + (1 - w) * self.avg_delay

    def _fast_increase(self, nbytes: int, delay: float) -> bool:
        """E.1 row 1: ~0 delay for more than a window of bytes -> grow at once by fi_scale."""
        if delay >= FAST_INCREASE_DELAY:
            self._fast, self._fi_count = False, 0
            return False
        self._fi_count += nbytes
        if not (self._fast or self._fi_count > self._cwnd):
            return False
        self._fast = True
        self.cwnd = self._cwnd + self._fi_scale * nbytes
        self.counters["fast_increase"] += 1
        return True

    def _multiplicative_decrease(self, now: float) -> None:
        self._fast, self._fi_count = False, 0
        avg, target = self.avg_delay, self.target
        # E.6: only when the averaged delay is above target; E.1: at most once per base RTT
        if avg <= target or now - self._last_md < self.base_rtt:
            return
        factor = 1 - self.params.gamma * (avg - target) / avg
        self.cwnd = self._cwnd * max(factor, self.params.max_md_jump)
        self._last_md = now
        self.counters["md"] += 1

    def _quick_adapt(self, now: float) -> bool:
        """E.1/E.6: at the end of each (base RTT + target) period; True when it fired."""
        if self._qa_end is None or now <= self._qa_end:
            return False
        fire = ((self._qa_armed or self._qa_delay_hit)
                and self._qa_acked < self.max_wnd / (1 << self.params.qa_gate))
        if fire:
            self.cwnd = max(self._qa_acked, self.mtu)
            self._ignore_left = self._inflight  # E.6: ignore CE until this flight is acked
            self._inc, self._adjust_acked = 0.0, 0
            self.counters["quick_adapt"] += 1
        self._qa_acked, self._qa_armed, self._qa_delay_hit = 0, False, False
        self._qa_end = now + self.base_rtt + self.target
        return fire

    def _adjust(self, now: float) -> None:
        """E.1: apply the accumulated increase (divided by cwnd) after more than adjust_bytes
        MTUs acked or every adjust_period base RTTs; each period also adds eta."""
        p = self.params
        period = self._last_adjust is not None and (
            now - self._last_adjust >= p.adjust_period * self.base_rtt)
        if not (period or self._adjust_acked > p.adjust_bytes * self.mtu):
            return
        grow = self._inc / self._cwnd
        if period:
            grow += self._eta
            self._last_adjust = now
        self.cwnd = self._cwnd + grow
        self._inc, self._adjust_acked = 0.0, 0

    def _receiver_state(self, ack: Any) -> bool:
        """B.8/E.1 hints of an NSCC ACK_CC; True when a penalty was applied to this ACK."""
        if ack is None or getattr(ack, "cc_type", None) != CC_TYPE_NSCC:
            return False
        try:
            rcvd, pend, restore = int(ack.rcvd_bytes), int(ack.rcv_cwnd_pend), ack.restore_cwnd
        except (AttributeError, TypeError, ValueError):
            self.counters["bad_cc_state"] += 1
            return False
        if not 0 <= pend <= PEND_MAX:
            self.counters["bad_cc_state"] += 1  # cannot be 7 bits: ignore the whole state
            return False
        rcvd %= RCVD_BYTES_MOD
        last = self._rcvd_bytes
        newly = 0 if last is None else (rcvd - last) % RCVD_BYTES_MOD
        if newly >= RCVD_BYTES_MOD // 2:
            # choice: an ACK older than the last one read (ACKs sprayed over paths overtake
            # each other): its count went backwards; it says nothing new
            self.counters["stale_cc_state"] += 1
            return False
        self._rcvd_bytes = rcvd
        if newly > BAD_DELTA_WINDOWS * self.max_wnd:
            self.counters["bad_cc_state"] += 1  # choice: resync rcvd_bytes, ignore the rest
            return False
        if restore and self._saved_cwnd is not None:
            # choice (facts name only the flag): back to the window before penalties began
            self.cwnd = max(self._cwnd, self._saved_cwnd)
            self._saved_cwnd = None
            self.counters["restores"] += 1
        if pend == 0:
            return False
        if self._saved_cwnd is None:
            self._saved_cwnd = self._cwnd
        # E.1: cwnd = min(cwnd, inflight), then minus newly received x pend / 128
        self.cwnd = min(self._cwnd, self._inflight) - newly * pend / PEND_SCALE
        self.counters["rcv_pend"] += 1
        return True

    def __repr__(self) -> str:
        return (f"Nscc(cwnd={self._cwnd:.0f}, max_wnd={self.max_wnd:.0f}, "
                f"base_rtt={self.base_rtt:.3g}, avg_delay={self.avg_delay:.3g})")
