"""Receive-side TSS state: replay windows, epoch ages and authentication-failure latches.

Owns the per-source bookkeeping a TSS receiver keeps (uet-facts.md F: Counter rules, Receive
checks). Every check here is split into a read-only ``check`` and a ``commit``/``record`` that
changes state, so that the layer can refuse a packet before spending a decryption on it and
still change nothing unless the packet authenticated.

Rules:

1. F: Counter rules (the TSC never repeats) - choice: a sliding bitmap window over the 48-bit
   TSC, one per (SDI, AN, source identity, epoch). A TSC above the highest seen slides the
   window; one inside it is a replay when its bit is set; one below it is too old. The default
   size of 4096 packets is larger than any window the PDS keeps in flight (design.md: 256 in the
   prototype; NSCC may open it further), so a genuine packet that spraying over many paths
   reorders, or that the fabric delays behind a whole window of later ones, is never taken for a
   replay or for too old. The TSC is per sender and per SD, shared by every PDC the sender runs,
   so the window must cover the sender's total in-flight TSC span, not one PDC's. A
   retransmission takes a new TSC and so never looks old.
2. F: Receive checks (epoch age) - choice: epochs compare in 16-bit serial arithmetic (RFC 1982)
   against the newest epoch authenticated from that source; one more than ``max_epoch_age``
   behind is stale. A newer epoch (the sender restarted, keys.EpochStore) opens a new window and
   becomes the newest; windows whose epoch falls more than ``max_epoch_age`` behind are
   forgotten (so at most ``max_epoch_age + 1`` per source). An older epoch still within the age
   that has no window has never been accepted (its window would still be kept), so opening one
   for it admits no replay. An epoch exactly half the circle away counts as behind.
3. choice: the source identity is the SSI when the packet carries one, else its source IP
   address; never the UDP port (it is the entropy and changes per packet). The AN is part of the
   key because an AN change resets the epoch and the TSC (F: Counter rules).
4. F: Receive checks (auth-failure threshold) - choice: failures are counted per datagram source,
   (source address, source port), not per secure domain, so that a forger sending from its own
   port cannot shut the domain for the genuine sender. A source that reaches the threshold is
   latched: its datagrams are dropped before any decryption. As in the reference provider, a
   success does not reset the count.
5. choice: both tables are LRU-bounded (``max_sources``) so a flood cannot grow memory. Replay
   state is only created for packets that authenticated, so a forger without the key cannot evict
   a genuine source's windows; more than ``max_sources`` genuine sources would evict the least
   recently heard one (its old packets could then be replayed once), a documented limit.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable

ACCEPT, REPLAY, TOO_OLD, STALE_EPOCH = "accept", "replay", "too_old", "stale_epoch"


class ReplayWindow:
    """A sliding bitmap over TSC values; bit d of ``bits`` stands for TSC ``top - d``."""

    __slots__ = ("size", "top", "bits", "_mask")

    def __init__(self, size: int) -> None:
        self.size = size
        self.top = -1  # nothing seen: any TSC opens the window
        self.bits = 0
        self._mask = (1 << size) - 1

    def check(self, tsc: int) -> str:
        if tsc > self.top:
            return ACCEPT
        d = self.top - tsc
        if d >= self.size:
            return TOO_OLD
        return REPLAY if (self.bits >> d) & 1 else ACCEPT

    def commit(self, tsc: int) -> None:
        """Mark ``tsc`` seen; the caller has checked it (and authenticated the packet)."""
        if tsc > self.top:
            shift = tsc - self.top
            self.bits = ((self.bits << shift) | 1) & self._mask if shift < self.size else 1
            self.top = tsc
        else:
            self.bits |= 1 << (self.top - tsc)


def epoch_behind(newest: int, epoch: int) -> int:
    """How far ``epoch`` is behind ``newest`` in 16-bit serial arithmetic (negative: ahead)."""
    ahead = (epoch - newest) & 0xFFFF
    return -ahead if 0 < ahead < 0x8000 else (newest - epoch) & 0xFFFF


class _Source:
    __slots__ = ("newest", "windows")

    def __init__(self, epoch: int) -> None:
        self.newest = epoch
        self.windows: dict[int, ReplayWindow] = {}


class ReplayTracker:
    """Replay windows and epoch ages per (SDI, AN, source identity) (rules 1-3, 5)."""

    def __init__(self, *, window: int = 4096, max_epoch_age: int = 16,
                 max_sources: int = 4096) -> None:
        self.window = window
        self.max_epoch_age = max_epoch_age
        self.max_sources = max_sources
        self._sources: OrderedDict[Hashable, _Source] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sources)

    def check(self, key: Hashable, epoch: int, tsc: int) -> str:
        """ACCEPT, REPLAY, TOO_OLD or STALE_EPOCH; changes nothing."""
        src = self._sources.get(key)
        if src is None:
            return ACCEPT
        if epoch_behind(src.newest, epoch) > self.max_epoch_age:
            return STALE_EPOCH
        win = src.windows.get(epoch)
        return ACCEPT if win is None else win.check(tsc)

    def commit(self, key: Hashable, epoch: int, tsc: int) -> None:
        """Record an authenticated packet that :meth:`check` accepted."""
        src = self._sources.get(key)
        if src is None:
            if len(self._sources) >= self.max_sources:
                self._sources.popitem(last=False)
            src = self._sources[key] = _Source(epoch)
        else:
            self._sources.move_to_end(key)
        if epoch_behind(src.newest, epoch) < 0:
            src.newest = epoch
            for e in [e for e in src.windows if epoch_behind(epoch, e) > self.max_epoch_age]:
                del src.windows[e]
        win = src.windows.get(epoch)
        if win is None:
            win = src.windows[epoch] = ReplayWindow(self.window)
        win.commit(tsc)

    def snapshot(self) -> dict[Hashable, tuple[int, dict[int, tuple[int, int]]]]:
        """A comparable copy of the whole state (for tests: a dropped packet changes nothing)."""
        return {k: (s.newest, {e: (w.top, w.bits) for e, w in s.windows.items()})
                for k, s in self._sources.items()}


class FailureLatch:
    """Authentication failures per datagram source, latched at a threshold (rules 4, 5)."""

    def __init__(self, *, threshold: int = 1000, max_sources: int = 4096) -> None:
        self.threshold = threshold
        self.max_sources = max_sources
        self._fails: OrderedDict[Hashable, int] = OrderedDict()

    def latched(self, source: Hashable) -> bool:
        return self._fails.get(source, 0) >= self.threshold

    def failures(self, source: Hashable) -> int:
        return self._fails.get(source, 0)

    def record_failure(self, source: Hashable) -> bool:
        """Count one failure; True when this one latched the source."""
        n = self._fails.pop(source, 0) + 1
        if len(self._fails) >= self.max_sources:
            self._fails.popitem(last=False)
        self._fails[source] = n
        return n == self.threshold


__all__ = ["ACCEPT", "REPLAY", "STALE_EPOCH", "TOO_OLD", "FailureLatch", "ReplayTracker",
           "ReplayWindow", "epoch_behind"]
