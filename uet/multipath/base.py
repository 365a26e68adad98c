"""The entropy-selection interface, and the path health every spraying policy shares.

A selector gives the entropy value (EV, the UDP source port: facts A.1, E.5) of each packet of
one PDC. A policy (round-robin, random, one value; REPS later) implements :meth:`choose`; the
transport calls :meth:`next` for a new packet and :meth:`next_retransmit` for a resend, and tells
the selector what happened with the hooks: ``on_delivered`` (a packet sent on that EV arrived:
CACKed or SACKed), ``on_ack`` (an ACK echoed that EV, with its CE flag), ``on_nack``, ``on_loss``
(a packet sent on that EV was inferred lost: reorder timer or RTO), ``on_timeout`` and
``on_signal`` (a CSIG tag reflected for an EV, E.4). The hooks take keyword arguments only, named
and ordered as the congestion control's (:mod:`uet.cms.base`): ``now``, ``ev``, then what the
event says:

  on_delivered(now, ev)     on_nack(now, ev, code)    on_timeout(now)
  on_ack(now, ev, ce)       on_loss(now, ev)          on_signal(now, ev, bits)

Path health (issue 11 item 10; choices where the facts are silent, E.5 names the idea for REPS):

  MULTIPATH-H1  an EV whose last ``fail_threshold`` (2) packets were lost with nothing delivered on it in
      between is *failed*: :meth:`next` skips it (asking the policy again, at most once per
      value), so a failed path stops eating new packets whatever the policy.
  MULTIPATH-H2  a failed EV gets one probe: the first time the policy offers it after ``probe_every``
      further selections (4 x the number of values), the packet goes on it anyway; a delivery on
      it makes it healthy again, another loss keeps it failed.
  MULTIPATH-H3  a retransmission (and a control packet whose answer the sender needs: ACK_REQ, CLOSE)
      goes on the EV an ACK or NACK came back on last (its round trip works both ways: ECMP
      hashes the answer's 5-tuple on its own, so a request that arrived proves only half), so
      resends follow a working path instead of the policy back onto a dead one. Without one, and
      for probes (:meth:`next_probe`), an EV neither failed nor tried since the last progress (a
      delivery on any EV) is explored; when every EV has been tried, that set starts over.
  MULTIPATH-H4  when every EV is failed the policy's choice is used (there is nothing better to do).
"""

from __future__ import annotations

import random
from typing import Sequence

EPHEMERAL_LO = 49152  # entropy values are UDP source ports from the dynamic range


class EntropySelector:
    """Base class: the health rules MULTIPATH-H1 to MULTIPATH-H4 around a policy's :meth:`choose`. Subclasses call
    ``super().__init__(values)``."""

    fail_threshold: int = 2

    def __init__(self, values: Sequence[int]):
        if not values:
            raise ValueError("no entropy values")
        self.values: list[int] = list(values)
        self._failed: dict[int, int] = {}  # EV -> selection count when it failed / was probed
        self._losses: dict[int, int] = {}  # EV -> losses since its last delivery
        self._tried: set[int] = set()  # EVs of retransmissions since the last progress
        self._echoed: dict[int, None] = {}  # EVs ACKs echoed, the latest last (MULTIPATH-H3)
        self._picks = 0

    def choose(self, now: float) -> int:
        """The policy's EV for the next packet (subclasses)."""
        raise NotImplementedError

    # --- what the transport calls --------------------------------------------------------------

    def next(self, now: float) -> int:
        """The EV of a new packet: the policy's choice, failed EVs skipped (MULTIPATH-H1, MULTIPATH-H2, MULTIPATH-H4)."""
        ev = self.choose(now)
        failed = self._failed
        if not failed:
            return ev
        self._picks += 1
        first = ev
        for _ in range(len(self.values)):
            if ev not in failed:
                return ev
            if self._picks - failed[ev] >= self._probe_every():  # MULTIPATH-H2: probe it once
                failed[ev] = self._picks
                return ev
            ev = self.choose(now)
        return first  # MULTIPATH-H4

    def next_retransmit(self, now: float) -> int:
        """The EV of a resend or of a control packet whose answer is needed: the one an ACK
        echoed last (its round trip works), else an unexplored one (MULTIPATH-H3)."""
        failed = self._failed
        for ev in reversed(self._echoed):
            if ev not in failed:
                return ev
        return self.next_probe(now)

    def next_probe(self, now: float) -> int:
        """An EV to explore: not failed and not tried since the last progress (MULTIPATH-H3)."""
        tried = self._tried
        if len(tried) >= len(self.values):
            tried.clear()
        ev = self.next(now)
        if ev in tried or ev in self._failed:
            for cand in self.values:
                if cand not in tried and cand not in self._failed:
                    ev = cand
                    break
        tried.add(ev)
        return ev

    def known(self, ev: int) -> bool:
        """Whether an ACK or NACK recently came back on ``ev`` (its round trip works, MULTIPATH-H3)."""
        return ev in self._echoed

    # --- hooks: keyword-only, in one order (now, the EV, what the event says), as the congestion
    # control's (uet.cms.base) -------------------------------------------------------------------

    def on_delivered(self, *, now: float, ev: int) -> None:
        """A packet sent on ``ev`` arrived (CACK or SACK): the path works (MULTIPATH-H1 to MULTIPATH-H3)."""
        self._losses.pop(ev, None)
        self._failed.pop(ev, None)
        if self._tried:
            self._tried.clear()

    def on_ack(self, *, now: float, ev: int, ce: bool) -> None:
        """An ACK echoed ``ev`` (A.1); ``ce`` is its M flag (the acked packet was CE-marked)."""
        self._echo(ev)

    def on_nack(self, *, now: float, ev: int, code: int) -> None:
        """A NACK (B.11) came back on ``ev``: its round trip works (MULTIPATH-H3), whatever the code."""
        self._echo(ev)

    def _echo(self, ev: int) -> None:
        """MULTIPATH-H3: an answer came back on ``ev``; the latest last (a policy's ``on_ack`` is not
        called for a NACK: a NACK is not an ACK to recycle on)."""
        echoed = self._echoed
        if ev in echoed:
            del echoed[ev]
        elif len(echoed) >= len(self.values):
            del echoed[next(iter(echoed))]
        echoed[ev] = None

    def on_loss(self, *, now: float, ev: int) -> None:
        """A packet sent on ``ev`` was inferred lost (MULTIPATH-H1)."""
        n = self._losses.get(ev, 0) + 1
        self._losses[ev] = n
        self._echoed.pop(ev, None)
        if n >= self.fail_threshold and ev not in self._failed:
            self._failed[ev] = self._picks

    def on_timeout(self, *, now: float) -> None:
        """The retransmission timer expired."""

    def on_signal(self, *, now: float, ev: int, bits: int) -> None:
        """A CSIG tag (``bits``, uet.cms.csig CMS-C1) reflected for the path of ``ev`` (E.4)."""

    def _probe_every(self) -> int:
        return 4 * max(1, len(self.values))

    @property
    def failed(self) -> frozenset[int]:
        """The EVs now avoided (MULTIPATH-H1)."""
        return frozenset(self._failed)


def entropy_values(n: int, rng: random.Random, lo: int = EPHEMERAL_LO, hi: int = 65535) -> list[int]:
    """``n`` distinct entropy values (UDP source ports) drawn from [lo, hi] with ``rng``."""
    if not 1 <= n <= hi - lo + 1:
        raise ValueError(f"need 1..{hi - lo + 1} entropy values, got {n}")
    return sorted(rng.sample(range(lo, hi + 1), n))
