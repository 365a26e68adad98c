"""What both sides of a PDC have (uet-facts C.1): the endpoint it belongs to, its PDCID and its
peer's, the peer address, the delivery mode and the key the endpoint files it under. The sides'
rules are :mod:`uet.pds.initiator` and :mod:`uet.pds.target`."""

from __future__ import annotations

from typing import Any


class PdcSide:
    role = ""

    def __init__(self, ep: Any, pdcid: int, peer: str, peer_pdcid: int, mode: str, key: tuple):
        self.ep = ep
        self.cfg = ep.config
        self.pdcid = pdcid
        self.peer = peer
        self.peer_pdcid = peer_pdcid  # 0 until the initiator's first ACK names it (I2)
        self.mode = mode              # "rud" or "rod" (C.8)
        self.key = key
