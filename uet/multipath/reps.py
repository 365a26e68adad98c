"""The two spraying policies of the UEC's reference simulator: REPS (recycled entropy packet
spraying, facts E.5, with the details of uet-htsim, E.6) and its oblivious spraying (E.6).
Path health (MULTIPATH-H1 to MULTIPATH-H4 of base.py) wraps both, as it wraps every policy: :meth:`next` still skips a
failed EV, whatever these policies choose.

REPS keeps a ring of ``ring_size`` slots {EV, valid}; the rules:

  MULTIPATH-R1  recycle (E.5, E.6): an ACK without CE puts EVs into the next slots of the ring,
      overwriting what was there, as valid. Which EVs is ``recycle``'s choice (E.6's rule and its
      note on htsim's ACKs differ; E.5 says "an EV that comes back on an ACK"):
      ``"acked"`` (the default) recycles the EV of every packet the ACK newly acknowledges (CACK
      or SACK: the ``on_delivered`` calls since the last ACK, in that order, the last
      ``ring_size`` of them: more would overwrite each other), and the EV it
      echoes if that is not among them: E.6's "the EV of a packet acknowledged without CE is put
      back". ``"echoed"`` recycles only the EV the ACK echoes (the EV of the request that made
      it), as htsim does, where a 16 KiB coalesced ACK returns about a quarter of the EVs (E.6):
      with 4 KiB packets three EVs in four are then explored at random (MULTIPATH-R4), so a PDC
      goes on spreading evenly over a slow path (``uet compare degraded-link``). A coalesced
      ACK without CE speaks for every packet it covers: the receiver ACKs a CE-marked packet at
      once (C.3 ACK_ON_ECN), so the packets before it were not marked. An ACK with CE recycles
      the other EVs it acknowledges, then forgets its own (MULTIPATH-R3). Only EVs of ``values`` are
      recycled: an echo of an EV this sender never sprays on (RP's fixed control EV, E.5; a
      peer's bug) must not become a path to send on.
  MULTIPATH-R2  reuse (E.5, E.6): :meth:`choose` takes the oldest valid EV and invalidates its slot, so a
      recycled EV carries one packet per recycling (one acknowledged packet, one reuse).
  MULTIPATH-R3  forget (E.6): CE on an ACK, or a NACK, forgets that EV: every valid slot holding it is
      invalidated. TRIMMED (0x01) and TRIMMED_ACK (0x03) NACKs forget only with
      ``forget_on_trim`` (default True). htsim counts a trim at the last hop as good (the
      receiver, not the path, is congested); this project cannot tell a last-hop trim apart
      (C.6: how a receiver knows was not found; it never sends TRIMMED_LASTHOP), so a plain
      TRIMMED may be either and forgetting is the safe reading; ``forget_on_trim=False`` treats
      every trim as htsim treats a last-hop one. A TRIMMED_LASTHOP (0x02) from a peer that does
      tell them apart never forgets (E.6). A NACK never recycles.
  MULTIPATH-R4  explore (E.5): with no valid EV in the ring, the next EV is drawn at random (the seeded
      ``rng``) from ``values``, the N EVs ``--entropies N`` gives the sender.
  MULTIPATH-R5  freeze (E.5, E.6): :meth:`on_timeout` freezes the sender for ``freeze_time`` (10 ms) from
      that moment (a timeout while frozen extends it): :meth:`choose` cycles round-robin over
      the EVs stored in the ring, valid or not, in slot order, without invalidating them (with
      an empty ring there is nothing to cycle over, so it explores, MULTIPATH-R4). MULTIPATH-R1 and MULTIPATH-R3 go on.
  MULTIPATH-R6  thaw (E.6): at the first :meth:`choose` at or after the end of the freeze the ring is
      cleared and the next ``explore_after_freeze`` (16) choices are fresh random EVs (MULTIPATH-R4),
      whatever the ring holds by then; after that MULTIPATH-R2 and MULTIPATH-R4 again.

``ring`` (a list of (EV or None, valid) in slot order) and ``counters`` (recycled, explored,
forgotten: slots invalidated by MULTIPATH-R3, frozen_picks, freezes: timeouts) are for tests and the
simulator's statistics. ``counters`` counts :meth:`choose` calls, which :meth:`next` may make
several of for one packet when it skips failed EVs (MULTIPATH-H1).

Oblivious spraying (E.6, :class:`ObliviousSpray`):

  MULTIPATH-O1  every EV of ``values`` is used exactly once per round of N = len(values) choices, in a
      new seeded random order each round. htsim's order is EV index = (i XOR x) mod N with a new
      random x in [0, N) every N packets; that is a permutation only when N is a power of two,
      so it is used then (htsim's sequence, and two rounds may repeat, as in htsim, when x
      repeats); for any other N the round is a seeded shuffle of the values.
"""

from __future__ import annotations

import random
from typing import Sequence

from ..wire.enums import NACK_BY_NAME
from .base import EntropySelector

REPS_RING_SIZE = 8  # E.5 (ns-3 RepsRouting buffer) and E.6 (htsim's 8-slot ring)
REPS_FREEZE_TIME = 10e-3  # E.6: a retransmission timeout freezes the sender for 10 ms
REPS_EXPLORE_AFTER_FREEZE = 16  # E.6: 16 random EVs are explored after a freeze

NACK_TRIMMED = NACK_BY_NAME["TRIMMED"]  # B.11 0x01: trimmed somewhere in the fabric (MULTIPATH-R3)
NACK_TRIMMED_LASTHOP = NACK_BY_NAME["TRIMMED_LASTHOP"]  # B.11 0x02: the receiver's hop (MULTIPATH-R3)
NACK_TRIMMED_ACK = NACK_BY_NAME["TRIMMED_ACK"]  # B.11 0x03: a read-data ACK trimmed (MULTIPATH-R3)
_FABRIC_TRIMS = frozenset({NACK_TRIMMED, NACK_TRIMMED_ACK})  # the trims forget_on_trim governs
REPS_RECYCLE_CHOICES = ("acked", "echoed")  # MULTIPATH-R1: E.6's per packet, or htsim's echo only
REPS_RECYCLE = "acked"  # MULTIPATH-R1's default (E.6: "the EV of a packet acknowledged without CE")


class Reps(EntropySelector):
    """REPS (MULTIPATH-R1 to MULTIPATH-R6 above) over ``values``, exploring with the seeded ``rng``."""

    def __init__(self, values: Sequence[int], rng: random.Random, *,
                 ring_size: int = REPS_RING_SIZE, freeze_time: float = REPS_FREEZE_TIME,
                 explore_after_freeze: int = REPS_EXPLORE_AFTER_FREEZE,
                 forget_on_trim: bool = True, recycle: str = REPS_RECYCLE):
        super().__init__(values)
        if recycle not in REPS_RECYCLE_CHOICES:
            raise ValueError(f"recycle must be one of {', '.join(REPS_RECYCLE_CHOICES)}, "
                             f"got {recycle!r}")
        self.recycle = recycle
        self._acked: list[int] = []  # MULTIPATH-R1 "acked": EVs delivered since the last ACK
        if ring_size < 1:
            raise ValueError(f"ring_size must be at least 1, got {ring_size}")
        if freeze_time < 0 or explore_after_freeze < 0:
            raise ValueError("freeze_time and explore_after_freeze must not be negative")
        self._rng = rng
        self._members = frozenset(self.values)  # MULTIPATH-R1: only these are recycled
        self.ring_size = ring_size
        self.freeze_time = freeze_time
        self.explore_after_freeze = explore_after_freeze
        self.forget_on_trim = forget_on_trim
        self._evs: list[int | None] = [None] * ring_size  # None: the slot never held an EV
        self._valid: list[bool] = [False] * ring_size
        self._head = 0  # the next slot MULTIPATH-R1 writes, so also the oldest one (MULTIPATH-R2 scans from it)
        self._frozen_until: float | None = None  # MULTIPATH-R5: end of the freeze, None when not frozen
        self._cursor = 0  # MULTIPATH-R5: the next slot the frozen round-robin looks at
        self._explore_left = 0  # MULTIPATH-R6: fresh explorations still owed after a freeze
        self.counters: dict[str, int] = dict.fromkeys(
            ("recycled", "explored", "forgotten", "frozen_picks", "freezes"), 0)

    @property
    def ring(self) -> list[tuple[int | None, bool]]:
        """The slots in order: (EV, or None if the slot never held one since the last clear,
        valid)."""
        return list(zip(self._evs, self._valid))

    @property
    def frozen(self) -> bool:
        """Whether a freeze (MULTIPATH-R5) is on, or over but not yet ended by a :meth:`choose` (MULTIPATH-R6)."""
        return self._frozen_until is not None

    # --- the policy ----------------------------------------------------------------------------

    def choose(self, now: float) -> int:
        if self._frozen_until is not None:
            if now < self._frozen_until:
                ev = self._frozen_pick()
                if ev is not None:
                    self.counters["frozen_picks"] += 1
                    return ev
                return self._explore()  # MULTIPATH-R5: an empty ring has nothing to cycle over
            self._thaw()  # MULTIPATH-R6
        if self._explore_left:
            self._explore_left -= 1
            return self._explore()  # MULTIPATH-R6
        evs, valid, n = self._evs, self._valid, self.ring_size
        for k in range(n):  # MULTIPATH-R2: the oldest valid slot, starting at the oldest slot
            i = (self._head + k) % n
            if valid[i]:
                valid[i] = False
                return evs[i]  # type: ignore[return-value]  # a valid slot holds an EV
        return self._explore()  # MULTIPATH-R4

    def _explore(self) -> int:
        self.counters["explored"] += 1
        return self.values[self._rng.randrange(len(self.values))]

    def _frozen_pick(self) -> int | None:
        """MULTIPATH-R5: the next stored EV in slot order from the cursor, valid or not; None if none."""
        evs, n = self._evs, self.ring_size
        for k in range(n):
            i = (self._cursor + k) % n
            if evs[i] is not None:
                self._cursor = (i + 1) % n
                return evs[i]
        return None

    def _thaw(self) -> None:
        """MULTIPATH-R6: the freeze is over: forget the ring, owe ``explore_after_freeze`` explorations."""
        self._frozen_until = None
        self._evs = [None] * self.ring_size
        self._valid = [False] * self.ring_size
        self._head = 0
        self._explore_left = self.explore_after_freeze

    def _recycle(self, ev: int) -> None:
        """MULTIPATH-R1: ``ev`` into the next slot, overwriting the oldest."""
        i = self._head
        self._evs[i] = ev
        self._valid[i] = True
        self._head = (i + 1) % self.ring_size
        self.counters["recycled"] += 1

    def _forget(self, ev: int) -> None:
        """MULTIPATH-R3: invalidate every valid slot holding ``ev`` (it stays stored for MULTIPATH-R5)."""
        evs, valid = self._evs, self._valid
        for i in range(self.ring_size):
            if valid[i] and evs[i] == ev:
                valid[i] = False
                self.counters["forgotten"] += 1

    # --- hooks (each keeps the base's health rules MULTIPATH-H1 to MULTIPATH-H4 going first) --------------------------

    def on_delivered(self, *, now: float, ev: int) -> None:
        super().on_delivered(now=now, ev=ev)
        if self.recycle == "acked" and ev in self._members:
            acked = self._acked
            if len(acked) >= self.ring_size:
                del acked[0]  # more would only overwrite each other in the ring
            acked.append(ev)  # MULTIPATH-R1: recycled (or not) when its ACK is done

    def on_ack(self, *, now: float, ev: int, ce: bool) -> None:
        super().on_ack(now=now, ev=ev, ce=ce)
        acked = self._acked
        if acked:
            self._acked = []
            if ce and ev in acked:
                # the marked packet made the ACK (ACK_ON_ECN), so it is the last one on ``ev``:
                # its EV is forgotten below (MULTIPATH-R3), the others' are recycled
                del acked[len(acked) - 1 - acked[::-1].index(ev)]
            for e in acked:
                self._recycle(e)  # MULTIPATH-R1 "acked"
        if ce:
            self._forget(ev)  # MULTIPATH-R3
        elif ev in self._members and ev not in acked:
            self._recycle(ev)  # MULTIPATH-R1 (the echo; "acked": if no packet it acknowledged)

    def on_nack(self, *, now: float, ev: int, code: int) -> None:
        super().on_nack(now=now, ev=ev, code=code)
        if code == NACK_TRIMMED_LASTHOP:
            return  # MULTIPATH-R3: the receiver is congested, not the path (E.6)
        if code in _FABRIC_TRIMS and not self.forget_on_trim:
            return  # MULTIPATH-R3: every trim taken as a last-hop one
        self._forget(ev)  # MULTIPATH-R3

    def on_timeout(self, *, now: float) -> None:
        super().on_timeout(now=now)
        if self._frozen_until is None:
            self._cursor = 0  # MULTIPATH-R5: a new freeze cycles from the first slot
        self._frozen_until = now + self.freeze_time  # MULTIPATH-R5 (a timeout while frozen extends it)
        self.counters["freezes"] += 1


class ObliviousSpray(EntropySelector):
    """Oblivious spraying (MULTIPATH-O1 above): each EV once per round of N, a new seeded order each round."""

    def __init__(self, values: Sequence[int], rng: random.Random):
        super().__init__(values)
        self._rng = rng
        self._n = len(self.values)
        self._xor = self._n & (self._n - 1) == 0  # MULTIPATH-O1: htsim's XOR order when N is 2^k
        self._order: list[int] = []
        self._i = self._n  # position in the round; a new round when it reaches N (so at once)
        self.rounds = 0  # rounds started (for tests and statistics)

    def choose(self, now: float) -> int:
        if self._i >= self._n:
            self._new_round()
        i = self._i
        self._i = i + 1
        return self.values[self._order[i]]

    def _new_round(self) -> None:
        n = self._n
        if self._xor:
            x = self._rng.randrange(n)  # MULTIPATH-O1: (i XOR x) mod N, a permutation for N = 2^k
            self._order = [(i ^ x) % n for i in range(n)]
        else:
            order = list(range(n))
            self._rng.shuffle(order)  # MULTIPATH-O1: XOR would repeat and skip EVs for other N
            self._order = order
        self._i = 0
        self.rounds += 1
