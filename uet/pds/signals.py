"""What a target remembers of the CSIG tags (facts E.4) its requests arrived with, and the
reflection it puts on its ACKs (the project's ACK_CCX extension: rules CMS-C1 to CMS-C4 of uet.cms.csig).

  PDS-G1  CMS-C4: with ``PdsConfig.csig`` set (the signal type asked for), the newest tag per (sender
      address, EV) is kept; a tag of another type, or with the reserved bit r set (PDS-C1), is
      counted (``csig_other_type``, ``csig_reserved``) and ignored.
  PDS-G2  CMS-C4: an ACK to (sender, EV) reflects that EV's tag first, then up to three other EVs of the
      same sender whose tag changed since they were last reflected, oldest change first; with
      nothing to reflect the ACK is the usual ACK_CC.
  PDS-G3  choice (hostile input, issue 11's rule that a peer must not grow a table without bound):
      at most ``MAX_TAGS`` (sender, EV) entries; beyond it the table starts again.
"""

from __future__ import annotations

from collections import Counter

from ..cms.csig import REFLECT_ENTRIES, reflect

MAX_TAGS = 1 << 14  # PDS-G3: 16,384 (sender, EV) pairs: 256 senders x 64 EVs


class Reflector:
    """PDS-G1 to PDS-G3 for one endpoint; ``signal`` is the type asked for (uet.cms.csig CMS-C1)."""

    def __init__(self, signal: int, stats: Counter):
        self.signal = signal
        self.stats = stats
        self._tags: dict[tuple[str, int], int] = {}
        self._changed: dict[str, dict[int, None]] = {}  # sender -> EVs changed, oldest first

    def record(self, peer: str, ev: int, bits: int) -> None:
        """PDS-G1, PDS-G3: a request from ``peer`` arrived on ``ev`` with tag ``bits``."""
        if bits & 1:
            self.stats["csig_reserved"] += 1
            return
        if bits >> 14 != self.signal:
            self.stats["csig_other_type"] += 1
            return
        key = (peer, ev)
        if self._tags.get(key) == bits:
            return
        if len(self._tags) >= MAX_TAGS:
            self._tags.clear()
            self._changed.clear()
        self._tags[key] = bits
        changed = self._changed.setdefault(peer, {})
        changed.pop(ev, None)
        changed[ev] = None

    def state(self, peer: str, ev: int) -> int | None:
        """PDS-G2: the ACK_CCX state for an ACK to ``peer`` on ``ev``, or None."""
        changed = self._changed.get(peer)
        entries = []
        bits = self._tags.get((peer, ev))
        if bits is not None:
            entries.append((ev, bits))
            if changed:
                changed.pop(ev, None)
        while changed and len(entries) < REFLECT_ENTRIES:
            other = next(iter(changed))
            del changed[other]
            entries.append((other, self._tags[(peer, other)]))
        return reflect(entries) if entries else None
