"""The sans-IO semantic sublayer (SES): one :class:`SesEndpoint` per host, initiator and target.

The SES never sees a socket, a clock or a PSN window (docs/design-notes.md principle 2). It exchanges
``(next_hdr, SES header dict, extension dict, payload)`` per packet with whatever carries it: the
PDS (RUD/ROD: requests in PDC packets, responses in ACKs), RUDI (uet.pds.rudi: one response per
request) or UUD (uet.pds.uud: no response at all), or the in-memory channel of uet.ses.loopback.

Initiator: operations (:meth:`send`, :meth:`tsend`, :meth:`write`, :meth:`read`, :meth:`atomic`,
:meth:`cswap`, :meth:`datagram`, :meth:`deferrable_send`, :meth:`rendezvous_send`) queue
:class:`SesPacket` requests, drained with :meth:`packets_to_send`. Responses come back through
:meth:`receive` (or :meth:`receive_bytes`) and end each operation with OperationComplete or
OperationFailed. Target: :meth:`register` memory regions, :meth:`post_recv` receives; each request
fed to :meth:`receive` returns the response that rides on its ACK (or None); further packets (read
data beyond MAX_ACK_DATA_SIZE, DEFERRABLE_RTR, rendezvous pulls) go to :meth:`packets_to_send`.

The rules are written beside the code that carries them out: cutting messages into packets
(SES-S1, SES-S2) in :mod:`uet.ses.packets`; operations and their responses (SES-S3 to SES-S6, SES-I1, SES-I2) in
:mod:`uet.ses.initiator`; admission, return codes, matching, RMA, atomics, responses and the
receive budget (SES-T1 to SES-T9, SES-M1 to SES-M6, SES-P1, SES-P2, SES-R1 to SES-R3) in :mod:`uet.ses.target`.

Everywhere
  SES-E1  principle 6: nothing raises out of :meth:`receive` / :meth:`receive_bytes`; arbitrary
      dicts and bytes give a return code or a counted drop (``stats['malformed']``); a bug is
      counted as ``internal_errors`` (``last_error`` keeps it).

As the PDS's upper layer (uet/pds/upper.py), the endpoint admits and takes the SES bytes of
requests (:meth:`admit`, :meth:`deliver`), and hears about the items it handed over
(:meth:`items_to_send`): :meth:`acked`, :meth:`response`, :meth:`pending`, :meth:`failed`; the
C receive lane places its middle packets through the tables the PDS hands it
(:meth:`lane_fields`, :meth:`use_lanes`, :attr:`clock`, :meth:`advance`).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from typing import Any, Mapping

from ..errors import DecodeError, EncodeError
from . import events as ev
from .lanes import lane_fields as _lane_fields
from .budget import BudgetLimits, ReceiveBudget
from .common import (REQUEST_NH, RESPONSE_NH, RC_UNSUPPORTED_SIZE, Deferred, MemoryRegion,
                     Operation, Posted, RxMessage, SesConfig)
from .initiator import InitiatorSide
from .packets import SesPacket, decode_ses
from .target import TargetSide


class SesEndpoint(InitiatorSide, TargetSide):
    """Sans-IO SES for one host (initiator and target roles)."""

    def __init__(self, config: SesConfig | None = None):
        self.config = config or SesConfig()
        self._stats: Counter[str] = Counter()
        self._rng = random.Random(self.config.seed)
        self._events: deque[ev.Event] = deque()
        #: the events not yet taken (read-only: take them with next_event); a driver may look
        #: at it before calling anything
        self.event_queue = self._events
        self._out: list[Any] = []
        self.last_error: BaseException | None = None
        # initiator
        self._ops: dict[int, Operation] = {}
        self._next_mid = 1
        self._next_handle = 1
        # target
        self.regions: dict[int, MemoryRegion] = {}
        self._posted: list[Posted] = []
        self._rx: dict[tuple[Any, int, int], RxMessage] = {}  # SES-K1 of uet/ses/target.py
        self._compact_peers: dict[Any, None] = {}  # SES-P3 of uet/ses/target.py
        # the C receive lane's tables (uet.native.rxlane), which the PDS below owns and hands
        # over (use_lanes); none without a C backend, or when job ids are checked (SES-T2)
        self.lanes: Any = None
        c = self.config
        self.budget = ReceiveBudget(BudgetLimits(
            messages=c.max_rx_messages, messages_per_peer=c.max_rx_messages_per_peer,
            bytes=c.rx_bytes, bytes_per_peer=c.rx_bytes_per_peer))
        self._now = 0.0
        self._unexpected: list[RxMessage] = []
        self._unexpected_bytes = 0
        self._deferred: dict[tuple[Any, int], Deferred] = {}
        self._deferred_order: list[tuple[Any, int]] = []

    # --- plumbing ---------------------------------------------------------------------------

    def next_event(self) -> ev.Event | None:
        return self._events.popleft() if self._events else None

    def events(self) -> list[ev.Event]:
        out = list(self._events)
        self._events.clear()
        return out

    def items_to_send(self) -> list[Any]:
        """What to send: single packets (:class:`SesPacket`) and messages to cut
        (:class:`uet.ses.packets.Message`), each naming its ``peer``."""
        out, self._out = self._out, []
        return out

    @property
    def has_items(self) -> bool:
        """Whether :meth:`items_to_send` has anything."""
        return bool(self._out)

    def packets_to_send(self) -> list[SesPacket]:
        """What to send, every message cut into its packets."""
        return [p for item in self.items_to_send() for p in item.packets()]

    @property
    def outstanding(self) -> int:
        return len(self._ops)

    def pending(self, message_id: int) -> bool:
        """Whether an operation with this message id still waits for its response (a transport
        that may lose responses asks again while this holds: PDS-X5 of uet/pds/initiator.py)."""
        return message_id in self._ops

    def release(self) -> None:
        """The host stops (uet.host.Host.shutdown): the storage of every message this SES
        holds is freed now, in order, rather than left to the garbage collector (issue 25) -
        the messages in reassembly (SES-K1; each leaves its C lane before its storage goes), the
        unexpected ones waiting for a receive (SES-M2) and the read data of outstanding
        operations. Those messages are dropped without an event (``released`` counts them);
        nothing is sent. Idempotent; the counters stay readable."""
        partial = [rx for key in list(self._rx) if (rx := self._rx_pop(key)) is not None]
        # (_rx_pop gives their SES-R1 budget back; a partial unexpected message is in both lists)
        gone = {id(rx): rx for rx in partial + self._unexpected}
        for rx in gone.values():
            rx.release()
        self._unexpected.clear()
        self._unexpected_bytes = 0
        for op in self._ops.values():
            if op.asm is not None:
                op.asm.release()
                op.asm, op.got = None, 0
        if gone:
            self._stats["released"] += len(gone)

    # --- the PDS's upper layer (uet/pds/upper.py) ---------------------------------------------------

    def deliver(self, peer: Any, ref: int, next_hdr: int, data: Any,
                now: float) -> tuple[int, bytes] | None:
        rsp = self.receive_bytes(next_hdr, data, peer=peer, request_ref=ref, now=now)
        return None if rsp is None else (rsp.next_hdr, rsp.to_bytes())

    @property
    def stats(self) -> Counter[str]:
        """Counters (``requests``, ``duplicate_packets``, ``messages``, return codes ...), with
        what the C receive lane counted folded in (uet.native.rxlane)."""
        lanes = self.lanes
        if lanes is not None and lanes.dirty:
            lanes.fold()
        return self._stats

    def watch_pressure(self, watch: Any) -> None:
        """``watch(peer)`` after the reassembly bytes charged to ``peer`` change (SES-R1): the PDS
        below keeps whether its C lane may build that peer's ACKs (PDS-A5 of uet/pds/target.py)."""
        self.budget.on_change = watch

    def lane_fields(self) -> Mapping[str, Any] | None:
        """The SES's half of the C receive lane's layout (uet.ses.lanes), or None when job ids
        are checked (SES-T2: the lane does not read them, so every request goes the reference
        way)."""
        return None if self.config.check_job else _lane_fields()

    def use_lanes(self, lanes: Any) -> None:
        """The lane tables of the PDS below: each message in reassembly from then on gets a
        message lane there (SES-K1), and what the lane counted for the SES reaches :attr:`stats`."""
        self.lanes = lanes
        lanes.ses_stats = self._stats

    @property
    def clock(self) -> float:
        """The latest ``now`` this SES was given (SES-R3 stamps its messages with it)."""
        return self._now

    def advance(self, now: float) -> None:
        """The C lane took a request for this SES at ``now`` (uet/pds/upper.py)."""
        if now > self._now:
            self._now = now

    def pressure(self, peer: Any) -> float:
        """The share of ``peer``'s reassembly byte budget in use (SES-R1, uet.ses.budget): the
        PDS target's receiver penalty (PDS-A5 of uet/pds/target.py) grows from half of it."""
        limit = self.budget.limits.bytes_per_peer
        return min(1.0, self.budget.peer_bytes(peer) / limit) if limit else 1.0

    def acked(self, token: Any, now: float) -> None:
        self.transport_acked(token)  # noted (SES-I3); operations complete on their responses (SES-I2)

    def response(self, token: Any, next_hdr: int, data: Any, peer: Any, now: float) -> None:
        self.receive_bytes(next_hdr, data, peer=peer, message_id=token, now=now)

    def failed(self, token: Any, reason: str) -> None:
        self.transport_failed(token, reason)

    # --- receive ------------------------------------------------------------------------------

    def receive_bytes(self, next_hdr: int, data: bytes | bytearray | memoryview, *, peer: Any = None,
                      request_ref: Any = None, message_id: int | None = None, mode: str = "rud",
                      inline_limit: int | None = None, now: float | None = None) -> SesPacket | None:
        """Decode the SES header (+ extension) at the start of ``data`` and :meth:`receive` it."""
        if now is not None and now > self._now:
            self._now = now
        try:
            f, ext, payload = decode_ses(int(next_hdr), data)
        except (DecodeError, ValueError, TypeError):
            self.stats["malformed"] += 1
            if next_hdr in REQUEST_NH and mode != "uud":
                return self._rsp(peer, 0, RC_UNSUPPORTED_SIZE, request_ref)
            return None
        return self.receive(next_hdr, f, ext, payload, peer=peer, request_ref=request_ref,
                            message_id=message_id, mode=mode, inline_limit=inline_limit)

    def receive(self, next_hdr: int, ses: Mapping[str, Any], ext: Mapping[str, Any] | None = None,
                payload: bytes = b"", *, peer: Any = None, request_ref: Any = None,
                message_id: int | None = None, mode: str = "rud",
                inline_limit: int | None = None, now: float | None = None) -> SesPacket | None:
        """Take one SES packet. Requests (next_hdr 1-3) return the response that rides on their
        ACK (RUD/ROD) or forms the RUDI response, or None; responses (4-6) return None.
        ``mode`` is "rud" (also ROD), "rudi" or "uud" (SES-T3). ``now`` (the caller's clock) dates
        the packet for SES-R3."""
        if now is not None and now > self._now:
            self._now = now
        try:
            if next_hdr in REQUEST_NH:
                return self._on_request(int(next_hdr), ses, ext or {}, payload, peer,
                                        request_ref, mode, inline_limit)
            if next_hdr in RESPONSE_NH:
                self._on_response(int(next_hdr), ses, payload, peer, message_id)
                return None
            self.stats["malformed"] += 1
            return None
        except (DecodeError, EncodeError, OverflowError):  # SES-E1: fields the codecs refuse
            self.stats["malformed"] += 1
            if next_hdr in REQUEST_NH and mode != "uud":
                return self._rsp(peer, 0, RC_UNSUPPORTED_SIZE, request_ref)
            return None
        except Exception as exc:  # SES-E1: a bug here, not bad input: counted and kept
            self.stats["internal_errors"] += 1
            self.last_error = exc
            return None
