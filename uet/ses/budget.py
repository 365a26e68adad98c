"""The receive budget of one endpoint: how many partial messages and how many reassembly bytes it
holds, per peer and in all (issue 11 items 2 and 3).

A receiver must not let one peer's claims (a header saying 1 GiB, hundreds of messages that never
finish) take what other peers need. The owner of the reassembly state asks :meth:`open_message`
before it starts a message and :meth:`charge` before it allocates storage, and gives both back
with :meth:`close_message` / :meth:`release`; a refusal is the caller's NACK (B.11 NO_SES_MSG_AVAIL
0x09, NO_PKT_BUFFER 0x07). Memory is charged as it is allocated (the reassembly chunks a byte
landed in, uet.native.reassembly), never for what a header claims. The budget only counts: idle
expiry is its owner's job (it knows the messages).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Hashable


@dataclass(frozen=True)
class BudgetLimits:
    """Defaults admit a 1 GiB message (and ``uet send``'s 64 MiB ones) from one peer while
    another peer still has room."""

    messages: int = 256                  # partial messages in reassembly, all peers
    messages_per_peer: int = 64          # ... from one peer address
    bytes: int = 2 << 30                 # reassembly storage, all peers
    bytes_per_peer: int = (1 << 30) + (256 << 20)  # ... for one peer: a 1 GiB message + room

    def __post_init__(self) -> None:
        for name in ("messages", "messages_per_peer", "bytes", "bytes_per_peer"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


class ReceiveBudget:
    """Counts partial messages and reassembly bytes per peer against :class:`BudgetLimits`."""

    def __init__(self, limits: BudgetLimits | None = None):
        self.limits = limits or BudgetLimits()
        self.messages = 0
        self.bytes = 0
        self._peer_messages: Counter[Hashable] = Counter()
        self._peer_bytes: Counter[Hashable] = Counter()
        #: refusals by kind ("messages", "messages_per_peer", "bytes", "bytes_per_peer")
        self.refused: Counter[str] = Counter()
        #: called with the peer after its bytes changed (the PDS's receiver penalty follows them)
        self.on_change: Callable[[Hashable], None] | None = None

    def fits_message(self, peer: Hashable) -> bool:
        """Whether one more partial message from ``peer`` is within the limits (counted as a
        refusal when not)."""
        lim = self.limits
        if self._peer_messages.get(peer, 0) >= lim.messages_per_peer:
            self.refused["messages_per_peer"] += 1
            return False
        if self.messages >= lim.messages:
            self.refused["messages"] += 1
            return False
        return True

    def open_message(self, peer: Hashable, *, force: bool = False) -> bool:
        """Count one more partial message from ``peer``; unless ``force``, only within the
        limits (False: nothing counted)."""
        if not force and not self.fits_message(peer):
            return False
        self._peer_messages[peer] += 1
        self.messages += 1
        return True

    def close_message(self, peer: Hashable) -> None:
        self.messages -= 1
        left = self._peer_messages[peer] - 1
        if left > 0:
            self._peer_messages[peer] = left
        else:
            del self._peer_messages[peer]

    def fits_bytes(self, peer: Hashable, nbytes: int) -> bool:
        """Whether ``nbytes`` more storage for ``peer`` is within the limits (counted as a refusal
        when not)."""
        if nbytes <= 0:
            return True
        lim = self.limits
        if self._peer_bytes.get(peer, 0) + nbytes > lim.bytes_per_peer:
            self.refused["bytes_per_peer"] += 1
            return False
        if self.bytes + nbytes > lim.bytes:
            self.refused["bytes"] += 1
            return False
        return True

    def charge(self, peer: Hashable, nbytes: int, *, force: bool = False) -> bool:
        """Charge ``nbytes`` of storage to ``peer``; unless ``force``, only within the limits
        (False: nothing charged)."""
        if nbytes <= 0:
            return True
        if not force and not self.fits_bytes(peer, nbytes):
            return False
        self._peer_bytes[peer] += nbytes
        self.bytes += nbytes
        if self.on_change is not None:
            self.on_change(peer)
        return True

    def release(self, peer: Hashable, nbytes: int) -> None:
        if nbytes <= 0:
            return
        self.bytes -= nbytes
        left = self._peer_bytes[peer] - nbytes
        if left > 0:
            self._peer_bytes[peer] = left
        else:
            del self._peer_bytes[peer]
        if self.on_change is not None:
            self.on_change(peer)

    def peer_messages(self, peer: Hashable) -> int:
        return self._peer_messages.get(peer, 0)

    def peer_bytes(self, peer: Hashable) -> int:
        return self._peer_bytes.get(peer, 0)
