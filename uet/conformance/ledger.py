"""What the target said about each PSN, per peer: the contradictions a check must not pass with.

What this module owns
  * :class:`Ledger` - kept by every :class:`uet.conformance.peer.Peer`: the PSNs the peer sent
    (requests and CONTROL packets, each datagram one transmission) and, per PDC the target
    answered from (its SPDCID and DPDCID) and per PSN, the ACKs and NACKs that named it.
  * the rule that an ACK and a NACK of one PSN from one PDC contradict each other (issue 25
    item 6). A check reads the first answer it is waiting for (:meth:`Peer.expect`); the runner
    reads on until the check's window has settled and fails a check whose peers saw a
    contradiction (:func:`uet.conformance.checks.run_one`), whatever the check concluded.

What counts (facts C.2, C.5)
  * ACKed: the ACK_PSN of an ACK (not a probe's, B.7), or a PSN this peer sent up to the ACK's
    CACK_PSN (serial arithmetic, C.2: every PSN up to CACK was received). PSNs the peer never
    sent are not judged by CACK, so that a target's view of older PSNs cannot clash.
  * A NACK (NT = 0; a RUDI NACK names a packet id, not a PSN) of an ACKed PSN contradicts the
    ACK: a PSN already received is answered with its stored ACK, never a NACK (C.5).
  * An ACK of a PSN after NACKs of it contradicts them when no transmission of the PSN is left
    unanswered by a NACK (as many NACKs as transmissions): the ACK would answer a transmission
    the target had refused (a choice: the facts do not order the two). A NACK TRIMMED, then the
    retransmission's ACK (C.6) is not one; an ACK_REQ asks about its PSN again and counts as a
    transmission of it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

from ..wire.enums import CONTROL_TYPE, REQUEST_TYPES
from ..wire.packet import decode_uet
from ..wire.psn import M32

WHY = "a PSN already received is answered with its stored ACK, never a NACK (C.5)"


class Answer(Protocol):
    """What the ledger reads of :class:`uet.conformance.peer.Answer` (which imports this module)."""

    pds: dict[str, Any]

    @property
    def is_ack(self) -> bool: ...

    @property
    def is_nack(self) -> bool: ...

    def brief(self) -> str: ...


def _after(a: int, b: int) -> bool:
    """``a`` is at or after ``b`` in 32-bit serial arithmetic (C.2)."""
    return (a - b) & M32 < 1 << 31


class Ledger:
    """The answers one peer received, by PDC and PSN, and the contradictions among them."""

    def __init__(self) -> None:
        self.sent: Counter = Counter()                     # PSN -> transmissions
        self._acks: dict[tuple, Answer] = {}               # (PDC, PSN) -> first ACK naming it
        self._cack: dict[tuple, Answer] = {}               # PDC -> the ACK with the top CACK
        self._nacks: dict[tuple, list[Answer]] = {}        # (PDC, PSN) -> its NACKs
        self.clashes: dict[tuple, str] = {}                # (PDC, PSN) -> the first contradiction

    def on_send(self, data: bytes) -> None:
        """One datagram sent: a transmission of its PSN when it is a request or CONTROL."""
        pds = decode_uet(data, None, trailer="none").layer.get("pds") or {}
        if (pds.get("type") in REQUEST_TYPES or pds.get("type") == CONTROL_TYPE) \
                and pds.get("psn") is not None:
            self.sent[pds["psn"]] += 1

    def _acked_by(self, pdc: tuple, psn: int) -> Answer | None:
        a = self._acks.get((pdc, psn))
        if a is None and self.sent[psn]:
            top = self._cack.get(pdc)
            if top is not None and _after(int(top.pds.get("cack_psn", 0)), psn):
                a = top
        return a

    def _clash(self, pdc: tuple, psn: int, first: Answer, then: Answer, why: str) -> None:
        """One contradiction per PSN of a PDC: the answers that follow from it are not more."""
        self.clashes.setdefault((pdc, psn), (
            f"contradictory answers about PSN {psn} from PDC {pdc[0]} -> {pdc[1]}: "
            f"{first.brief()}, then {then.brief()}{why}; {WHY}"))

    def on_answer(self, a: Answer) -> None:
        pds = a.pds
        pdc = (pds.get("spdcid"), pds.get("dpdcid"))
        if a.is_nack and not pds.get("nt") and pds.get("nack_psn") is not None:
            psn = int(pds["nack_psn"])
            ack = self._acked_by(pdc, psn)
            if ack is not None:
                self._clash(pdc, psn, ack, a, "")
            self._nacks.setdefault((pdc, psn), []).append(a)
        elif a.is_ack:
            cack = int(pds.get("cack_psn", 0))
            named = None if pds.get("p") or pds.get("ack_psn") is None else int(pds["ack_psn"])
            top = self._cack.get(pdc)
            if top is None or _after(cack, int(top.pds.get("cack_psn", 0))):
                self._cack[pdc] = a
            if named is not None:
                self._acks.setdefault((pdc, named), a)
            for (p, psn), nacks in self._nacks.items():
                covered = psn == named or (self.sent[psn] and _after(cack, psn))
                if p == pdc and covered and len(nacks) >= self.sent[psn]:
                    self._clash(pdc, psn, nacks[-1], a, " with no retransmission between")


def verdict(ledgers: list[Ledger]) -> str | None:
    """The first contradiction the ledgers hold and how many more PSNs were answered both ways,
    as one sentence; None when there was none."""
    found = [text for led in ledgers for text in led.clashes.values()]
    if not found:
        return None
    more = f" ({len(found) - 1} more PSN(s) were ACKed and NACKed)" if len(found) > 1 else ""
    return found[0] + more
