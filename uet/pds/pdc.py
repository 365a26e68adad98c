"""What both sides of a PDC have (facts C.1): the endpoint it belongs to, its PDCID and its
peer's, the peer address, the delivery mode, the key the endpoint files it under, and its state,
which changes only through :meth:`PdcSide.transition` and the side's table in
:mod:`uet.pds.states`. The sides' rules are :mod:`uet.pds.initiator` and :mod:`uet.pds.target`."""

from __future__ import annotations

from enum import StrEnum
from operator import attrgetter
from typing import Any, ClassVar

from .states import IllegalTransition, Transition


def _refuse(self: Any, value: Any) -> None:
    raise IllegalTransition(self.role, self._state, value)


class PdcSide:
    role = ""
    TABLE: ClassVar[dict[tuple[Any, Any], Transition]] = {}
    INITIAL: ClassVar[Any] = None

    # read-only: an assignment bypassing the table raises IllegalTransition
    state = property(attrgetter("_state"), _refuse, doc="the side's state (uet.pds.states)")

    def __init__(self, ep: Any, pdcid: int, peer: str, peer_pdcid: int, mode: str, key: tuple):
        self.ep = ep
        self.cfg = ep.config
        self.pdcid = pdcid
        self.peer = peer
        self.peer_pdcid = peer_pdcid  # 0 until the initiator's first ACK names it (PDS-I2)
        self.mode = mode              # "rud" or "rod" (C.8)
        self.key = key
        self._state = self.INITIAL

    def transition(self, event: StrEnum) -> None:
        """Take the table's transition for (state, event), or raise IllegalTransition."""
        row = self.TABLE.get((self._state, event))
        if row is None:
            raise IllegalTransition(self.role, self._state, event)
        self._state = row.new
        self._entered(row.new)

    def _entered(self, state: Any) -> None:
        """What a side does on entering a state (the target tells its C lane)."""
