"""RCCC: receiver-credit congestion control (docs/facts.md E.2): the sender's credit accounting
(:class:`Rccc`) and the receiver's credit scheduler (:class:`CreditScheduler`).

E.2 gives the wire elements only: the sender states its demand in the CC request form (B.6
``credit_target``, 24 bits) and in CONTROL CREDIT_REQ (B.12 ctl 8, payload = target credit); the
receiver grants in ACK_CC cc_type 1 (B.8 ``credit``, 24 bits) and in CONTROL CREDIT (B.12 ctl 7,
payload = credit allocation). The credit unit and the scheduler were not found (H.2), so both are
the project's; they say "choice:". Both classes are pure: bytes and seconds, every call takes
``now``, no clock is read, nothing is sent (the PDS does the wire).

The sender (one per PDC, :class:`Rccc`):

  CMS-R1  Credit is the only gate: ``nbytes`` may go out only when ``nbytes <= credit``, new data and
      retransmissions alike; there is no "one packet may always be in flight" rule (E.2: the
      receiver admits). choice: the sender starts with one MTU of credit (``initial_credit``), so
      its first request can carry its demand without a CREDIT_REQ round trip first.
  CMS-R2  Every byte sent, new or resent, consumes credit (``used``). A send the gate did not allow
      (a PDS bug) leaves the credit at 0 and is counted (``overdrawn``): credit is never negative.
  CMS-R3  Demand (B.6, B.12 CREDIT_REQ): ``credit_target(backlog)`` is the backlog not yet covered by
      credit, ``max(0, backlog - credit)`` bytes; 0 when covered. The PDS converts it with
      :func:`to_units` for the wire.
  CMS-R4  Grants (B.8 cc_type 1, B.12 CREDIT): the sender keeps ``asked``, the demand stated and not
      yet granted: a statement raises it to at least the stated amount (the largest stands;
      choice: rounded up to whole units, as the wire carried it), an accepted grant lowers it. A
      grant beyond ``asked`` is cut to it (``clamped``); a grant while ``asked`` is 0 (no demand
      stated since the last grants covered it) is dropped whole (``unasked``). So the sender never
      holds more credit than the largest demand it stated, whatever a stale or buggy receiver
      sends.

The receiver (one per receiving host or link, :class:`CreditScheduler`); the facts give no
algorithm, so this is the project's (choice throughout):

  CMS-S1  Fair share: ``bdp = rate x base_rtt`` bytes; each active sender (one with demand left) may
      hold ``share`` bytes of outstanding credit (granted and not yet arrived): the receiver's
      link per RTT (``overcommit x bdp``) split evenly, rounded up to whole MTUs when
      ``whole_packets`` (the default for a PDS: a sender spends credit a full packet at a
      time, so 7.3 KB each for 8 senders would keep one 4 KB packet each in flight and leave
      the link 45% idle); the budget is then what the rounded shares add up to, at least
      ``overcommit x bdp``.
  CMS-S2  Demand (``demand``): a statement (B.6 on a request, B.12 CREDIT_REQ) replaces the sender's
      remaining demand. A stale statement (sent before the sender saw a grant) may overstate it by
      the grants still on their way; the sender's CMS-R4 clamp cuts what it did not need and CMS-S4
      returns that credit.
  CMS-S3  Grant (``grant``, and ``waiting`` for everyone at once): top the sender's outstanding up to
      its share, never beyond its remaining demand; the grant counts as outstanding and leaves the
      remaining demand. A sender whose demand is all granted stops counting as active although its
      last grant may still be in flight: the link is overcommitted by at most that one share.
      ``unit`` (default 1 byte): grants below the remaining demand are rounded down to whole
      units; a PDS passing ``CREDIT_UNIT`` makes every grant survive :func:`to_units` unchanged.
      Choice: one grant is at most ``max_grant`` (default two MTUs), so a sender's outstanding
      credit grows by about one MTU per packet that arrives (doubling per RTT, as a slow start)
      instead of jumping to its share: the first senders of an incast would otherwise hold
      shares computed before the others stated their demand, and overfill the last hop. And the
      credit outstanding at all senders together never exceeds the budget (``overcommit`` x
      BDP): when the number of senders changes, the shares change before the credit already
      granted under the old ones has come back.
  CMS-S4  Lost data (a granted packet that never arrives) does not hold credit forever: outstanding
      credit is kept in two buckets by age; arrivals match the oldest credit first; every
      ``expiry_rtts x base_rtt`` (E, default 4 base RTTs) the old bucket's remainder is returned
      (``expired_bytes``) and the young bucket becomes old. Credit unmatched for at least E is
      returned at the sender's first call (or ``waiting``) after about 2 E; credit younger than E
      never is. A sender stalled by its own windows for longer than E may therefore be granted
      again; its CMS-R4 clamp bounds what it holds by its stated demand.
  CMS-S5  ``arrived`` bytes beyond the outstanding credit (the sender's initial credit, CMS-R1, or a
      sender overstepping) are counted (``uncredited``), never made negative outstanding.
      ``done`` (the PDC closed) forgets the sender; its share returns to the others.

Units (choice, H.2: not found): ``credit`` (B.8) and ``credit_target`` (B.6), and the CONTROL
CREDIT / CREDIT_REQ payloads (B.12), count ``CREDIT_UNIT`` = 64-byte units, so the 24-bit fields
reach ~1 GiB. Bytes go on the wire rounded up (a demand of 1 byte is 1 unit), saturating at
``CREDIT_MAX`` units.
"""

from __future__ import annotations

from typing import Hashable

from .base import CongestionControl

CREDIT_UNIT = 64                 # choice (H.2: units not found): credit fields count 64-byte units
CREDIT_MAX = (1 << 24) - 1       # B.6 credit_target, B.8 credit: 24-bit fields
MAX_GRANT_MTUS = 2               # CMS-S3 choice: one grant is at most two MTUs
EXPIRY_RTTS = 4.0                # choice (CMS-S4): unmatched credit is returned after 4 base RTTs
OVERCOMMIT = 1.0                 # choice (CMS-S1): the senders' shares add up to one BDP


def to_units(nbytes: int) -> int:
    """Bytes -> credit units for the wire (B.6, B.8, B.12): rounded up, saturating at CREDIT_MAX."""
    if nbytes <= 0:
        return 0
    return min(-(-int(nbytes) // CREDIT_UNIT), CREDIT_MAX)


def to_bytes(units: int) -> int:
    """Credit units from the wire -> bytes (negative counts as 0, more than 24 bits saturates)."""
    return min(max(0, int(units)), CREDIT_MAX) * CREDIT_UNIT


def _stated(nbytes: int) -> int:
    """The demand as the wire carries it, back in bytes (CMS-R4)."""
    return to_bytes(to_units(nbytes))


class Rccc(CongestionControl):
    """The sender: it may send only within the credit the receiver granted (CMS-R1 to CMS-R4)."""

    wants_credit = True     # E.2: the PDS uses the CC request forms (B.6) and CREDIT_REQ (B.12)

    def __init__(self, *, mtu: int, initial_credit: int | None = None):
        if mtu <= 0:
            raise ValueError("mtu must be positive")
        self.mtu = int(mtu)
        initial = self.mtu if initial_credit is None else int(initial_credit)   # CMS-R1: one MTU
        if initial < 0:
            raise ValueError("initial_credit must not be negative")
        self.credit = initial   # CMS-R1: bytes it may still send
        self.asked = 0          # CMS-R4: demand stated and not yet granted, bytes (whole units)
        self.counters = dict.fromkeys((
            "granted", "offered", "used", "resent", "clamped", "clamped_bytes", "unasked",
            "unasked_bytes", "requests", "blocked", "overdrawn", "overdrawn_bytes"), 0)
        self.counters["initial"] = initial

    @property
    def cwnd_bytes(self) -> int:
        """The credit stands in for the window (what base's ``cwnd_packets`` reads)."""
        return self.credit

    def can_send(self, inflight_bytes: int, nbytes: int) -> bool:
        """CMS-R1: ``nbytes <= credit``, whatever is in flight."""
        if nbytes <= self.credit:
            return True
        self.counters["blocked"] += 1
        return False

    def on_send(self, *, now: float, size: int, retx: bool) -> None:
        """CMS-R2: every byte sent consumes credit; an overdraft stops at 0 and is counted."""
        nbytes = max(0, int(size))
        c = self.counters
        c["used"] += nbytes
        if retx:
            c["resent"] += nbytes
        if nbytes > self.credit:
            c["overdrawn"] += 1
            c["overdrawn_bytes"] += nbytes - self.credit
            self.credit = 0
        else:
            self.credit -= nbytes

    def credit_target(self, backlog_bytes: int) -> int:
        """CMS-R3: the demand to state, bytes: the backlog not yet covered by credit (0 if covered)."""
        demand = max(0, int(backlog_bytes) - self.credit)
        self.counters["requests"] += 1
        if demand:
            self.asked = max(self.asked, _stated(demand))     # CMS-R4: the largest stands
        return demand

    def on_credit(self, *, now: float, size: int) -> None:
        """CMS-R4: a grant (ACK_CC cc_type 1, B.8, or CONTROL CREDIT, B.12), bytes; clamped to the
        demand stated and not yet granted, dropped when there is none."""
        nbytes = int(size)
        if nbytes <= 0:
            return
        c = self.counters
        c["offered"] += nbytes
        if self.asked == 0:
            c["unasked"] += 1
            c["unasked_bytes"] += nbytes
            return
        take = min(nbytes, self.asked)
        if take < nbytes:
            c["clamped"] += 1
            c["clamped_bytes"] += nbytes - take
        self.asked -= take
        self.credit += take
        c["granted"] += take

    def __repr__(self) -> str:
        return f"Rccc(credit={self.credit}, asked={self.asked})"


class _Sender:
    """The scheduler's view of one sender."""

    __slots__ = ("remaining", "old", "young", "epoch")

    def __init__(self) -> None:
        self.remaining = 0              # CMS-S2: demand not yet granted, bytes
        self.old = 0                    # CMS-S4: outstanding credit granted before ``epoch``
        self.young = 0                  # CMS-S4: outstanding credit granted since ``epoch``
        self.epoch: float | None = None

    @property
    def outstanding(self) -> int:
        return self.old + self.young


class CreditScheduler:
    """The receiver: a fair share of its link per RTT among the senders with demand (CMS-S1 to CMS-S5)."""

    def __init__(self, *, rate_gbps: float, base_rtt: float, mtu: int,
                 overcommit: float = OVERCOMMIT, expiry_rtts: float = EXPIRY_RTTS,
                 unit: int = 1, max_grant: int | None = None, whole_packets: bool = False):
        if not (rate_gbps > 0 and base_rtt > 0 and mtu > 0 and overcommit > 0
                and expiry_rtts > 0 and unit > 0):
            raise ValueError("rate_gbps, base_rtt, mtu, overcommit, expiry_rtts and unit "
                             "must be positive")
        self.mtu = int(mtu)
        self.base_rtt = float(base_rtt)
        self.bdp = round(rate_gbps * 1e9 * base_rtt / 8)    # CMS-S1: bytes per base RTT
        self.overcommit = float(overcommit)
        self.expiry = float(expiry_rtts) * self.base_rtt     # CMS-S4: E, seconds
        self.unit = int(unit)
        self.whole_packets = whole_packets
        self.max_grant = int(max_grant) if max_grant is not None else MAX_GRANT_MTUS * self.mtu
        self._budget = int(self.overcommit * self.bdp)       # CMS-S1: what the shares add up to
        self._senders: dict[Hashable, _Sender] = {}
        self.total_outstanding = 0                           # CMS-S3: over all senders
        self._active: dict[Hashable, _Sender] = {}           # senders with demand left (CMS-S1)
        self.counters = dict.fromkeys((
            "demands", "grants", "granted", "arrived", "uncredited", "expiries",
            "expired_bytes", "done"), 0)

    # -- state --------------------------------------------------------------------------------
    @property
    def active(self) -> int:
        """Senders with demand left (CMS-S1)."""
        return len(self._active)

    @property
    def share(self) -> int:
        """CMS-S1: the outstanding credit each active sender may hold now, bytes."""
        share = max(self.mtu, self._budget // max(1, len(self._active)))
        if self.whole_packets:
            share = -(-share // self.mtu) * self.mtu
        return share

    @property
    def budget(self) -> int:
        """CMS-S1, CMS-S3: what all senders together may hold."""
        return max(self._budget, self.share * len(self._active))

    def outstanding(self, sender: Hashable) -> int:
        """Credit granted to ``sender`` and not yet arrived (nor expired, CMS-S4), bytes."""
        s = self._senders.get(sender)
        return 0 if s is None else s.outstanding

    def remaining(self, sender: Hashable) -> int:
        """``sender``'s demand not yet granted (CMS-S2), bytes."""
        s = self._senders.get(sender)
        return 0 if s is None else s.remaining

    # -- calls --------------------------------------------------------------------------------
    def demand(self, sender: Hashable, now: float, nbytes: int) -> None:
        """CMS-S2: ``sender`` stated (or restated) its remaining demand, bytes (B.6, B.12)."""
        s = self._get(sender)
        self._age(s, now)
        self.counters["demands"] += 1
        self._set_remaining(sender, s, max(0, int(nbytes)))

    def arrived(self, sender: Hashable, now: float, nbytes: int) -> None:
        """CMS-S4, CMS-S5: data bytes from ``sender`` arrived; they match its oldest credit first."""
        nbytes = max(0, int(nbytes))
        s = self._get(sender)
        self._age(s, now)
        self.counters["arrived"] += nbytes
        matched = nbytes
        take = min(s.old, nbytes)
        s.old -= take
        nbytes -= take
        take = min(s.young, nbytes)
        s.young -= take
        nbytes -= take
        self.total_outstanding -= matched - nbytes
        self.counters["uncredited"] += nbytes

    def grant(self, sender: Hashable, now: float) -> int:
        """CMS-S3: bytes to grant ``sender`` now (0 or more); they count as outstanding."""
        s = self._senders.get(sender)
        if s is None:
            return 0
        self._age(s, now)
        return self._grant(sender, s)

    def waiting(self, now: float) -> list[tuple[Hashable, int]]:
        """CMS-S3 for every active sender (O(active)): those that can get credit now, after others
        finished or shrank, with the amount, already granted (the PDS sends CONTROL CREDIT)."""
        out = []
        for sender, s in list(self._active.items()):
            self._age(s, now)
            g = self._grant(sender, s)
            if g:
                out.append((sender, g))
        return out

    def done(self, sender: Hashable) -> None:
        """CMS-S5: ``sender``'s PDC closed: it is forgotten and its share returns to the others."""
        s = self._senders.pop(sender, None)
        if s is not None:
            self.total_outstanding -= s.outstanding
            self._active.pop(sender, None)
            self.counters["done"] += 1

    # -- rules --------------------------------------------------------------------------------
    def _get(self, sender: Hashable) -> _Sender:
        s = self._senders.get(sender)
        if s is None:
            s = self._senders[sender] = _Sender()
        return s

    def _set_remaining(self, sender: Hashable, s: _Sender, value: int) -> None:
        s.remaining = value
        if value > 0:
            self._active[sender] = s
        else:
            self._active.pop(sender, None)

    def _grant(self, sender: Hashable, s: _Sender) -> int:
        g = min(self.share - s.outstanding, s.remaining, self.max_grant,
                self.budget - self.total_outstanding)
        if g < s.remaining:
            g -= g % self.unit          # CMS-S3: whole units, except the last piece of the demand
        if g <= 0:
            return 0
        s.young += g
        self.total_outstanding += g
        self._set_remaining(sender, s, s.remaining - g)
        self.counters["grants"] += 1
        self.counters["granted"] += g
        return g

    def _age(self, s: _Sender, now: float) -> None:
        """CMS-S4: rotate the buckets once E has passed since the last rotation; return the old
        bucket's remainder (and the young one's too after 2 E: all its grants are older than E,
        since every grant rotates first)."""
        if s.epoch is None:
            s.epoch = now
            return
        elapsed = now - s.epoch
        if not elapsed >= self.expiry:
            return
        expired = s.old
        if elapsed >= 2 * self.expiry:
            expired += s.young
            s.old = 0
        else:
            s.old = s.young
        s.young = 0
        s.epoch = now
        if expired:
            self.total_outstanding -= expired
            self.counters["expiries"] += 1
            self.counters["expired_bytes"] += expired

    def __repr__(self) -> str:
        return (f"CreditScheduler(bdp={self.bdp}, active={len(self._active)}, "
                f"share={self.share})")
