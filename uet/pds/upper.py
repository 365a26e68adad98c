"""The typed seam between the PDS and the layer above it (the SES, facts C.3, C.8, D.7).

The PDS carries opaque SES bytes: on the initiator side it sends the requests of an
:class:`Outgoing` (one SES message: a header and payload per request) over one PDC and reports
back by the item's ``token``; on the target side it hands each accepted request's SES bytes up
(RUD: on arrival; ROD: in PSN order) and carries the response the upper layer returns on the ACK
of that PSN. It never parses an SES header. :class:`uet.ses.SesEndpoint` is the upper layer the
host (uet/host.py) attaches; tests attach recorders.

The C receive lane (uet.native.rxlane) takes the common request - a middle packet of a message in
reassembly - for both layers in one call. The PDS owns its tables (uet.pds.lanes); the upper layer
says what of its header the lane reads (:meth:`Upper.lane_fields`), registers its messages in the
tables the PDS hands it (:meth:`Upper.use_lanes`) and lends its clock (:attr:`Upper.clock`,
:meth:`Upper.advance`); nothing else of either layer is reached across this seam.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol


@dataclass(frozen=True, slots=True)
class RequestTemplate:
    """How an :class:`Outgoing` cuts its requests by one fixed layout (D.3), for a request builder
    that writes a run of them in one step (:mod:`uet.native.txbuild`) instead of asking
    :meth:`Outgoing.header` and :meth:`Outgoing.payload_of` packet by packet. Request ``k``
    carries ``data[k * mtu:(k + 1) * mtu]``; its SES header is ``som`` for k = 0, else ``mid``
    (``mid_size`` bytes, big-endian) ORed with the payload length at ``len_shift``, the offset
    ``k * mtu`` at ``off_shift`` and, on the last request, 1 at ``eom_shift``; ``ext`` (the
    extension header, D.5/D.6) follows every header. The builder's output must equal what
    ``header(k)`` and ``payload_of(k)`` give (tests/native/test_txbuild.py)."""

    data: memoryview  # the message's bytes
    mtu: int          # payload bytes per request
    som: bytes        # the first request's header
    mid: int          # the other requests' constant header fields
    mid_size: int     # their header's length in bytes
    len_shift: int    # payload_length
    off_shift: int    # message_offset
    eom_shift: int    # EOM (the last request)
    ext: bytes        # the extension header of every request


class Outgoing(Protocol):
    """One SES message to send as ``count`` requests of one PDC."""

    token: Any      # the upper layer's name for it (the SES message id)
    next_hdr: int   # B.2: the SES header type of its requests
    count: int      # requests it takes (at least 1)

    def payload_of(self, k: int) -> bytes | memoryview:
        """The payload of request ``k``."""

    def size_of(self, k: int) -> int:
        """``len(payload_of(k))``, without making the payload (the initiator asks it of every
        request its congestion window may refuse)."""

    def header(self, k: int) -> bytes:
        """The SES header (and extension) of request ``k``."""

    def template(self) -> RequestTemplate | None:
        """Its requests as one :class:`RequestTemplate`, or None when they are not cut by one
        (the builder then asks :meth:`header` and :meth:`payload_of`)."""


class Upper(Protocol):
    """What the PDS asks of and tells the layer above."""

    # target side -----------------------------------------------------------------------------
    def admit(self, peer: str, next_hdr: int, data: memoryview) -> int:
        """0, or the NACK code (B.11: a resource shortage) to refuse a new request with; nothing
        may change (the PSN stays unreceived and the initiator resends)."""

    def deliver(self, peer: str, ref: int, next_hdr: int, data: memoryview,
                now: float) -> tuple[int, bytes] | None:
        """A request's SES bytes (``ref``: its PSN). Returns the SES response to carry on the
        ACK of that PSN as (next_hdr, bytes), or None."""

    def pressure(self, peer: str) -> float:
        """How full the upper layer's receive resources for ``peer`` are, 0.0 (empty) to 1.0
        (full): the target turns it into the NSCC receiver penalty of its ACKs (PDS-A5)."""

    def watch_pressure(self, watch: Callable[[Any], None]) -> None:
        """Call ``watch(peer)`` after :meth:`pressure` of ``peer`` may have changed (the PDS
        then decides again whether the C lane may build that peer's ACKs, PDS-A5)."""

    # the C receive lane (uet.native.rxlane) ---------------------------------------------------
    def lane_fields(self) -> Mapping[str, Any] | None:
        """The upper layer's half of the C lane's layout (``uet_rx_layout`` of native/rxlane.h:
        the fields of its header the lane reads, by name, and its constants), or None: it takes
        nothing through the lane, and the PDS makes no lane tables."""

    def use_lanes(self, lanes: Any) -> None:
        """The lane tables the PDS made (a :class:`uet.native.rxlane.RxLanes`): the upper layer
        registers there the messages whose middle packets the lane may place (taken as
        :meth:`admit` + :meth:`deliver` would take them, admitted and with no response), and
        folds what the lane counted for it into its counters."""

    @property
    def clock(self) -> float:
        """The latest ``now`` the upper layer was given: the C lane stamps the messages it places
        with the later of this and the packet's ``now`` (SES-R3 of uet/ses/target.py)."""

    def advance(self, now: float) -> None:
        """The C lane took a request for the upper layer at ``now``: :attr:`clock` moves to
        ``now`` if that is later."""

    # initiator side --------------------------------------------------------------------------
    def acked(self, token: Any, now: float) -> None:
        """Every request of the item ``token`` is acknowledged (CACK, C.2)."""

    def response(self, token: Any, next_hdr: int, data: memoryview, peer: str,
                 now: float) -> None:
        """An SES response arrived on an ACK of a request of ``token`` (PDS-X4)."""

    def pending(self, token: Any) -> bool:
        """Whether ``token`` still waits for its response (PDS-X5: the PDS asks for it again)."""

    def failed(self, token: Any, reason: str) -> None:
        """The PDS gave up on ``token``'s requests (its PDC closed in error, PDS-X6)."""


class Accepting:
    """An upper layer that takes every request, answers none and has nothing pending: what a PDS
    endpoint uses when nothing is attached (its requests then reach nobody)."""

    def admit(self, peer: str, next_hdr: int, data: memoryview) -> int:
        return 0

    def deliver(self, peer: str, ref: int, next_hdr: int, data: memoryview,
                now: float) -> tuple[int, bytes] | None:
        return None

    def pressure(self, peer: str) -> float:
        return 0.0

    def watch_pressure(self, watch: Callable[[Any], None]) -> None:
        return None

    def lane_fields(self) -> Mapping[str, Any] | None:
        return None  # nothing to place: every request goes through admit and deliver

    def use_lanes(self, lanes: Any) -> None:
        return None

    @property
    def clock(self) -> float:
        return 0.0

    def advance(self, now: float) -> None:
        return None

    def acked(self, token: Any, now: float) -> None:
        return None

    def response(self, token: Any, next_hdr: int, data: memoryview, peer: str,
                 now: float) -> None:
        return None

    def pending(self, token: Any) -> bool:
        return False

    def failed(self, token: Any, reason: str) -> None:
        return None
