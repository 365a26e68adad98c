"""Receive-side TSS state: replay windows, epoch ages and authentication-failure limits.

Owns the per-source bookkeeping a TSS receiver keeps (docs/facts.md F: Counter rules, Receive
checks). Every check here is split into a read-only ``check`` and a ``commit``/``record`` that
changes state, so that the layer can refuse a packet before spending a decryption on it and
still change nothing unless the packet authenticated.

Rules:

1. F: Counter rules (the TSC never repeats) - choice: a sliding bitmap window over the 48-bit
   TSC, one per (SDI, AN, source identity, epoch). A TSC above the highest seen slides the
   window; one inside it is a replay when its bit is set; one below it is too old. The default
   size of 4096 packets is larger than any window the PDS keeps in flight (docs/design-notes.md: 256 in the
   prototype; NSCC may open it further), so a genuine packet that spraying over many paths
   reorders, or that the fabric delays behind a whole window of later ones, is never taken for a
   replay or for too old. The TSC is per sender and per SD, shared by every PDC the sender runs,
   so the window must cover the sender's total in-flight TSC span, not one PDC's. A
   retransmission takes a new TSC and so never looks old.
2. F: Receive checks (epoch age) - choice: epochs compare in 16-bit serial arithmetic (RFC 1982)
   against the newest epoch authenticated from that source; an epoch that has no window and is
   more than ``max_epoch_age`` behind is stale. A newer epoch (a sender that restarted, or
   another process on the same address: keys.EpochStore hands out one per process) opens a new
   window and becomes the newest. Several processes may legitimately share a key and a source
   address at once (distinct UET ports, one epoch file), so the newest epoch says nothing about
   whether an older one is still in use: twenty short senders must not make a long transfer's
   epoch stale. So a window, once opened, is kept whatever its epoch's age, and its epoch is
   judged by the window alone (replays and too-old TSCs stay refused); only windows are let go,
   never judged. Windows within the age are always kept (at most ``max_epoch_age + 1``); of the
   older ones, the ``max_old_epochs`` most recently active are kept (least recently accepted a
   packet goes first), so at most ``max_epoch_age + 1 + max_old_epochs`` per source. An epoch
   whose window was let go is then stale for good, as an epoch never accepted is (a capture
   replayed from it is refused); an older epoch still within the age that has no window has
   never been accepted (its window would still be kept), so opening one for it admits no
   replay. The limit: a long-idle process whose window was pushed out by ``max_old_epochs``
   more recently active older ones finds its epoch stale and must restart (a new epoch). An
   epoch exactly half the circle away counts as behind.
3. choice: the source identity is the SSI when the packet carries one, else its source IP
   address; never the UDP port (it is the entropy and changes per packet). The AN is part of the
   key because an AN change resets the epoch and the TSC (F: Counter rules).
4. F: Receive checks (auth-failure threshold) - choice: failures are counted per datagram source,
   (source address, source port), not per secure domain, so that a forger sending from its own
   port cannot shut the domain for the genuine sender. Neither address nor port is
   authenticated, so anyone who can spoof them (a raw socket on the host, an on-path observer)
   can make failures count against the genuine peer's source: a latch that stayed shut, as the
   reference provider's does, would be a kill switch for them. So, unlike it, the count is of
   failures since the source's last success, and a success clears it; a source at the threshold
   is limited, not latched: of its datagrams only one in ``probe`` is decrypted (the rest are
   dropped before any work), and the first that authenticates clears the limit. What this
   bounds: a source that never authenticates (a peer with the wrong key, a flood of forgeries
   from one address and port) costs ``threshold`` decryptions, then one per ``probe``
   datagrams. What it cannot: a forger who varies the source port or address is never limited
   (each new source has its own count), and one who sends more than ``threshold`` forgeries
   between two genuine packets of a source slows that source down (one datagram in ``probe``
   is tried) until one of its packets is tried and authenticates; it never shuts it out.
5. choice: both tables are LRU-bounded (``max_sources``) so a flood cannot grow memory (a flood
   from many sources thereby clears the oldest failure counts, a documented limit). Replay
   state is only created for packets that authenticated, so a forger without the key cannot evict
   a genuine source's windows; more than ``max_sources`` genuine sources would evict the least
   recently heard one (its old packets could then be replayed once), a documented limit.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
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
        # by epoch, least recently active first (rule 2)
        self.windows: OrderedDict[int, ReplayWindow] = OrderedDict()


@dataclass(kw_only=True, eq=False)
class ReplayTracker:
    """Replay windows and epoch ages per (SDI, AN, source identity) (rules 1-3, 5)."""

    window: int = 4096
    max_epoch_age: int = 16
    max_old_epochs: int = 16
    max_sources: int = 4096
    _sources: OrderedDict[Hashable, _Source] = field(default_factory=OrderedDict, init=False,
                                                     repr=False)

    def __len__(self) -> int:
        return len(self._sources)

    def check(self, key: Hashable, epoch: int, tsc: int) -> str:
        """ACCEPT, REPLAY, TOO_OLD or STALE_EPOCH; changes nothing."""
        src = self._sources.get(key)
        if src is None:
            return ACCEPT
        win = src.windows.get(epoch)
        if win is not None:  # a kept window: judged by it alone, whatever the age (rule 2)
            return win.check(tsc)
        if epoch_behind(src.newest, epoch) > self.max_epoch_age:
            return STALE_EPOCH
        return ACCEPT

    def commit(self, key: Hashable, epoch: int, tsc: int) -> None:
        """Record an authenticated packet that :meth:`check` accepted."""
        src = self._sources.get(key)
        if src is None:
            if len(self._sources) >= self.max_sources:
                self._sources.popitem(last=False)
            src = self._sources[key] = _Source(epoch)
        else:
            self._sources.move_to_end(key)
        windows = src.windows
        win = windows.get(epoch)
        if win is None:
            if epoch_behind(src.newest, epoch) < 0:
                src.newest = epoch
                self._let_go(src)
            win = windows[epoch] = ReplayWindow(self.window)
        else:
            windows.move_to_end(epoch)
        win.commit(tsc)

    def _let_go(self, src: _Source) -> None:
        """Rule 2: of the windows older than the age, keep the most recently active few."""
        newest, age = src.newest, self.max_epoch_age
        old = [e for e in src.windows if not 0 <= epoch_behind(newest, e) <= age]
        for e in old[:max(0, len(old) - self.max_old_epochs)]:
            del src.windows[e]

    def snapshot(self) -> dict[Hashable, tuple[int, dict[int, tuple[int, int]]]]:
        """A comparable copy of the whole state (for tests: a dropped packet changes nothing)."""
        return {k: (s.newest, {e: (w.top, w.bits) for e, w in s.windows.items()})
                for k, s in self._sources.items()}


@dataclass(kw_only=True, eq=False)
class FailureLimiter:
    """Authentication failures per datagram source since its last success, and the limit they
    lead to (rules 4, 5)."""

    threshold: int = 1000
    probe: int = 16
    max_sources: int = 4096
    # per source: failures since its last success, plus datagrams skipped while limited
    _count: OrderedDict[Hashable, int] = field(default_factory=OrderedDict, init=False, repr=False)

    def __len__(self) -> int:
        return len(self._count)

    def limited(self, source: Hashable) -> bool:
        return self._count.get(source, 0) >= self.threshold

    def failures(self, source: Hashable) -> int:
        """Failures and skipped datagrams since the source's last success."""
        return self._count.get(source, 0)

    def allow(self, source: Hashable) -> bool:
        """Whether to try a datagram from ``source``; False counts it as skipped. A limited
        source is tried on every ``probe``-th datagram: the count moves on with each skip and
        each failure, and stays put on a try that ends neither way, so tries are at most one in
        ``probe`` datagrams."""
        n = self._count.get(source, 0)
        if n < self.threshold or (n - self.threshold) % self.probe == 0:
            return True
        self._count[source] = n + 1
        return False

    def record_failure(self, source: Hashable) -> None:
        count = self._count
        n = count.pop(source, 0) + 1
        if len(count) >= self.max_sources:
            count.popitem(last=False)
        count[source] = n

    def record_success(self, source: Hashable) -> None:
        if self._count:  # the common case, nothing ever failed, costs one test
            self._count.pop(source, None)


__all__ = ["ACCEPT", "REPLAY", "STALE_EPOCH", "TOO_OLD", "FailureLimiter", "ReplayTracker",
           "ReplayWindow", "epoch_behind"]
