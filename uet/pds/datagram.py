"""What travels beside the UET bytes of a datagram (addresses, ports, ECN, DSCP), the code points
the PDS uses, and the CRC-32C trailer sealed and checked for that addressing (A.3, through the one
trailer context of :mod:`uet.wire.trailer`), and the outbox of the endpoints without PDCs."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable

from .. import UET_UDP_PORT
# A.2: the code points the PDS uses, defined once in uet.wire.enums (re-exported)
from ..wire.enums import (CE, DSCP_CONTROL, DSCP_DATA, DSCP_TRIMMED, ECT0, ECT1,  # noqa: F401
                          NOT_ECT)
from ..wire.trailer import seal_udp, udp_trailer_ok


@dataclass(slots=True, eq=True, repr=False)
class DatagramMeta:
    """What travels beside the UET bytes: addresses, UDP ports (sport = entropy), ECN, DSCP."""

    src: str
    dst: str
    sport: int
    dport: int = UET_UDP_PORT
    ecn: int = 0
    dscp: int = 0

    def __repr__(self) -> str:
        return (f"DatagramMeta({self.src}:{self.sport} -> {self.dst}:{self.dport}, dscp={self.dscp}, "
                f"ecn={self.ecn})")


class Outbox:
    """The sans-IO plumbing of an endpoint without PDCs (RUDI, UUD): datagrams to send and
    events, each taken once, and the bugs it kept."""

    _tx: list[tuple[bytes, DatagramMeta]]
    _events: deque
    stats: Any
    last_error: BaseException | None = None
    last_error_datagram = ""
    #: whether the endpoint ever queued or received anything: a host polls the queues and timers
    #: of the modes in use only (issue 28), and most hosts never use RUDI or UUD
    used = False

    def _internal_error(self, exc: BaseException, data: Any) -> None:
        """A bug, not bad input (PDS-R3 of uet/pds/endpoint.py): counted as ``internal_errors`` and
        kept with the datagram in hex, never raised to the caller."""
        self.stats["internal_errors"] += 1
        self.last_error = exc
        self.last_error_datagram = bytes(data).hex()

    def next_event(self) -> Any:
        return self._events.popleft() if self._events else None

    def datagrams_to_send(self, now: float = 0.0) -> list[tuple[bytes, DatagramMeta]]:
        out, self._tx = self._tx, []
        return out

    @property
    def has_datagrams(self) -> bool:
        """Whether :meth:`datagrams_to_send` has anything (a host skips the call otherwise)."""
        return bool(self._tx)


def seal(parts: Iterable[bytes] | bytes, meta: DatagramMeta) -> bytes:
    """The UET bytes (``parts`` joined) and their CRC-32C trailer for ``meta``'s addressing."""
    return seal_udp(parts, meta.src, meta.dst, meta.sport, meta.dport)


def trailer_ok(data: bytes | bytearray | memoryview, meta: DatagramMeta) -> bool:
    """Whether ``data`` ends in the right trailer for ``meta``'s addressing."""
    return udp_trailer_ok(data, meta.src, meta.dst, meta.sport, meta.dport)
