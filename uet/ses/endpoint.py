"""The sans-IO semantic sublayer (SES): one :class:`SesEndpoint` per host, initiator and target.

The SES never sees a socket, a clock or a PSN window (design.md principle 2). It exchanges
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

RULES (each names its uet-facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================

Initiator: cutting messages into packets
  S1  D.2/D.3: a message is cut into packets of at most ``mtu`` payload bytes; the first has SOM
      (its std header carries header_data, message_offset 0 implied), the last EOM; the others
      carry payload_length (14 bits) and message_offset (32 bits); every packet carries
      request_length (the whole message) and the same message_id.
  S2  design.md Defaults / D.4: a message that fits one packet uses a smaller header when one
      serves: small (next_hdr 1) for SEND without header data; medium (next_hdr 2) for
      TAGGED_SEND, WRITE, ATOMIC and FETCHING_ATOMIC (match bits or memory key); length < 2^14.
      Standard otherwise, and always for READ (its data responses name read_request_message_id,
      D.7), the deferrable and rendezvous opcodes, DEFERRABLE_RTR and MSG_ERROR. B.14: a
      DATAGRAM_SEND uses the standard header ("normally 3").
  S3  choice: REL = 1 (buffer_offset relative to the memory region); message ids are 16-bit, per
      endpoint, never reused while an operation with that id is outstanding.
  S4  D.6: ATOMIC / FETCHING_ATOMIC carry the 4-byte atomic extension; AMO opcodes 0x0D-0x12 the
      36-byte compare-and-swap extension (the operand travels in the extension, no payload); other
      AMOs carry the operand as payload (little-endian, uet.ses.atomics).
  S6  D.3: an RMA offset outside 0..2^64-1 or a length beyond 32 bits raises SesError before
      anything is queued (never wrapped to a field's width).
  S5  C.8: DATAGRAM_SEND only over UUD; RUDI only for idempotent operations (WRITE, READ, NO_OP);
      the loopback channel and integrations enforce it, the target checks it (T3).

Target: admission and return codes (D.8)
  T1  D.2: IE set -> INITIATOR_ERR (0x23, "echoes the IE flag"); the message is dropped.
  T2  choice: ``check_job``: a request whose job_id is not ours -> BAD_JOB_ID (0x1B).
  T3  C.8: on RUDI anything but WRITE/READ/NO_OP -> OP_VIOLATION (0x18); DATAGRAM_SEND outside
      UUD -> OP_VIOLATION; on UUD anything but DATAGRAM_SEND is dropped and counted (no response
      exists, B.14).
  T4  D.1: opcodes this implementation does not execute (TSEND_ATOMIC, TSEND_FETCH_ATOMIC,
      reserved 0x10-0x2F, vendor 0x30-0x3E, extended 0x3F) -> UNSUPPORTED_OP (0x06).
  T5  D.3: packet geometry: payload_length must equal the bytes present, message_offset +
      payload_length <= request_length, single-packet headers carry exactly request_length
      bytes -> otherwise UNSUPPORTED_SIZE (0x07); request_length beyond ``max_message_bytes`` ->
      TOO_LONG (0x22).
  T6  RMA (WRITE, READ, ATOMIC): memory key not registered -> BAD_MKEY (0x1C); region without the
      needed permission -> PERM_VIOLATION (0x17); [offset, offset + request_length) not inside the
      region -> AT_OUT_OF_RANGE (0x0C); REL = 0 (absolute) offsets are taken relative to the
      region's registered base address (below it -> BAD_ADDR 0x1D).
  T7  D.6: atomic datatype not supported -> AMO_UNSUPPORTED_DT (0x10), AMO opcode not supported ->
      AMO_UNSUPPORTED_OP (0x0F), operand length not the datatype size -> AMO_UNSUPPORTED_SIZE
      (0x11), offset not a multiple of the size -> AMO_UNALIGNED (0x12).
  T8  a message fails at most once: the first failing packet gets the error response and a
      MessageError event; later packets of that message are swallowed without a response.
  T9  MSG_ERROR (0x0F) terminates the named message in error: its partial state is dropped, a
      MessageError event is raised, the MSG_ERROR itself is answered OK.

Target: sends and matching
  M1  untagged sends match untagged posted receives in posting order; tagged ones match the
      first tagged receive with ``(bits ^ match_bits) & ~ignore_bits == 0``. The first packet of
      a message to arrive (any packet; RUD reorders) binds the whole message.
  M2  no matching receive -> the message goes to the unexpected list (bounded by
      ``unexpected_limit`` messages and ``unexpected_bytes``, one peer at most half of each
      (choice, issue 11); beyond -> NO_MATCH 0x05) and its
      response says list = OVERFLOW (D.7); post_recv consults the unexpected list first.
  M3  a message longer than the receive's capacity -> TOO_LONG, the receive completes in error.
  M4  D.9 deferrable send (choice where facts are silent): no matching receive -> the target
      keeps only (initiator token, its own target token, tag, length), answers NO_MATCH and drops
      the payload; when a matching receive is posted it sends DEFERRABLE_RTR carrying both tokens;
      the initiator answers it OK and restarts the message (new message id) with both tokens;
      the restarted message lands in the bound receive. An unknown target token -> NO_MATCH,
      which fails the restarted send.
  M5  D.5/D.9 rendezvous: the initiator registers its buffer under a fresh key and sends the
      eager part (at most one packet) with the rendezvous extension (eager_length, read_offset,
      read_match_bits = that key); the target places the eager bytes, answers OK, and READs the
      rest from the initiator; MessageReceived follows the pull. The initiator completes when the
      response arrived and every byte beyond the eager part was read.
  M6  choice: every message gets one response, when its last byte lands (delivery complete:
      responses mean "placed at the target", so DC = 1 needs no extra step); opcode RESPONSE
      (1) with modified_length = bytes placed, RESPONSE_W_DATA (2) with data.

Target: responses (C.3, C.9, D.7)
  P1  READ and fetching atomics: data up to ``max_ack_data`` (MAX_ACK_DATA_SIZE 16) rides on the
      ACK as a small response with data (next_hdr 6, original_request_psn = the transport's id
      of the request); beyond that it goes as separate response-with-data packets (next_hdr 5,
      at most ``mtu`` each, message_offset, read_request_message_id) and the ACK carries none.
      On RUDI (one response per request) the limit is the request's own response packet:
      ``inline_limit`` = mtu, next_hdr 5.
  P2  errors answer with a plain response (next_hdr 4) carrying the return code.

Initiator: responses
  I1  the operation is found by the transport's attribution (``message_id=`` given by the
      caller that knows which request the ACK/response answers), else by the header's message_id
      (next_hdr 4) / read_request_message_id (next_hdr 5). None found (or the peer differs) ->
      dropped and counted (``stats['unknown_response']``).
  I2  RC OK completes sends, writes and non-fetching atomics; reads and fetching atomics complete
      when all their data arrived; any other RC fails the operation with that RC (deferrable
      sends: NO_MATCH means deferred, M4). A DEFAULT_RESPONSE with RC NULL (D.9, built by the
      PDS for cleared duplicates) changes nothing.

Target: resources (issue 11; uet.ses.budget)
  R1  partial multi-packet messages (standard header, not SOM + EOM) are counted per peer and in
      all (``max_rx_messages_per_peer``, ``max_rx_messages``), with the payload bytes they hold
      (``rx_bytes_per_peer``, ``rx_bytes``): memory is charged for bytes that arrived, never for
      a request_length a header claims.
  R2  a transport that can refuse a packet before it counts as received asks :meth:`admit`
      first: a new partial message beyond R1's message limits -> NACK NO_SES_MSG_AVAIL (B.11
      0x09), payload beyond the byte limits -> NO_PKT_BUFFER (0x07). What arrives anyway (a
      transport that does not ask) is counted all the same.
  R3  choice: a partial message idle for ``partial_timeout`` (no packet of it arrived, by the
      ``now`` the transport passes) is dropped by :meth:`expire` with a MessageError (DROPPED,
      D.8 0x24); a posted receive it had bound is posted again.

Everywhere
  E1  principle 6: nothing raises out of :meth:`receive` / :meth:`receive_bytes`; arbitrary
      dicts and bytes give a return code or a counted drop (``stats['malformed']``).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import DecodeError, EncodeError, UetError
from ..wire import codec
from ..wire.uet_headers import ATOMIC_OPCODES, CSWAP_AMO_OPCODES, RENDEZVOUS_OPCODES
from . import atomics as amo
from . import events as ev
from .budget import BudgetLimits, ReceiveBudget

# D.1 request opcodes
(NO_OP, WRITE, READ, ATOMIC, FETCHING_ATOMIC, SEND, RENDEZVOUS_SEND, DATAGRAM_SEND,
 DEFERRABLE_SEND, TAGGED_SEND, RENDEZVOUS_TSEND, DEFERRABLE_TSEND, DEFERRABLE_RTR, TSEND_ATOMIC,
 TSEND_FETCH_ATOMIC, MSG_ERROR) = range(16)
SEND_OPCODES = frozenset({SEND, TAGGED_SEND, DEFERRABLE_SEND, DEFERRABLE_TSEND, RENDEZVOUS_SEND,
                          RENDEZVOUS_TSEND})
TAGGED_OPCODES = frozenset({TAGGED_SEND, DEFERRABLE_TSEND, RENDEZVOUS_TSEND})
DEFERRABLE_OPCODES = frozenset({DEFERRABLE_SEND, DEFERRABLE_TSEND})
#: D.1 opcodes executed by this implementation.
SUPPORTED_OPCODES = frozenset({NO_OP, WRITE, READ, ATOMIC, FETCHING_ATOMIC, SEND, RENDEZVOUS_SEND,
                               DATAGRAM_SEND, DEFERRABLE_SEND, TAGGED_SEND, RENDEZVOUS_TSEND,
                               DEFERRABLE_TSEND, DEFERRABLE_RTR, MSG_ERROR})
#: D.1 opcodes answered with UNSUPPORTED_OP (README list).
UNSUPPORTED_OPCODES = frozenset({TSEND_ATOMIC, TSEND_FETCH_ATOMIC})
RUDI_OPCODES = frozenset({NO_OP, WRITE, READ})  # C.8 idempotent operations

# D.7 response opcodes and lists; next_hdr values (B.2)
DEFAULT_RESPONSE, RESPONSE, RESPONSE_W_DATA, NO_RESPONSE = range(4)
LIST_EXPECTED, LIST_OVERFLOW = 0, 1
NH_SMALL, NH_MEDIUM, NH_STD, NH_RSP, NH_RSP_DATA, NH_RSP_DATA_SMALL = 1, 2, 3, 4, 5, 6
REQUEST_NH = frozenset({NH_SMALL, NH_MEDIUM, NH_STD})
RESPONSE_NH = frozenset({NH_RSP, NH_RSP_DATA, NH_RSP_DATA_SMALL})
_HDR_KEY = {1: "ses.small", 2: "ses.medium", 3: "ses.std", 4: "ses.rsp", 5: "ses.rsp_data",
            6: "ses.rsp_data_small"}

# D.8 return codes
RC_NULL, RC_OK = 0x00, 0x01
RC_NO_MATCH, RC_UNSUPPORTED_OP, RC_UNSUPPORTED_SIZE = 0x05, 0x06, 0x07
RC_AT_OUT_OF_RANGE, RC_PERM_VIOLATION, RC_OP_VIOLATION = 0x0C, 0x17, 0x18
RC_BAD_JOB_ID, RC_BAD_MKEY, RC_BAD_ADDR, RC_TOO_LONG, RC_INITIATOR_ERR = 0x1B, 0x1C, 0x1D, 0x22, 0x23
RC_CANCELLED = 0x1E

MAX_ACK_DATA_SIZE = 16  # C.3 / C.9
M14, M16, M32, M64 = (1 << 14) - 1, 0xFFFF, 0xFFFFFFFF, (1 << 64) - 1


class SesError(UetError, ValueError):
    """An operation the local API cannot express (bad length, unknown datatype, ...)."""


@dataclass
class SesConfig:
    mtu: int = 4096                        # design.md Defaults: payload bytes per packet
    max_ack_data: int = MAX_ACK_DATA_SIZE  # C.3 / C.9: read data inside an ACK
    small_header: bool = True              # S2 / design.md Defaults
    job_id: int = 0
    pid_on_fep: int = 0
    resource_index: int = 0
    initiator: int = 0                     # D.3 initiator id carried in requests
    check_job: bool = False                # T2
    unexpected_limit: int = 64             # M2
    unexpected_bytes: int = 1 << 24        # M2
    max_message_bytes: int = 1 << 30       # T5
    # R1-R3: partial multi-packet messages and the bytes they hold, per peer and in all
    max_rx_messages: int = 256
    max_rx_messages_per_peer: int = 64
    rx_bytes: int = 2 << 30
    rx_bytes_per_peer: int = (1 << 30) + (256 << 20)
    partial_timeout: float = 5.0           # R3: seconds a partial message may sit idle
    rendezvous_eager: int = 1024           # M5: bytes sent eagerly (capped at mtu)
    seed: int = 0                          # restart tokens, rendezvous keys


@dataclass(slots=True)
class SesPacket:
    """One SES packet: header dict (``next_hdr`` says which header), extension dict, payload.

    ``message_id`` is the initiator's id of the operation (also for small/medium headers that do
    not carry it) so that a transport can attribute responses (I1); ``request_ref`` on a response
    is the transport id of the request it answers (the PSN whose ACK carries it, or the RUDI
    pkt_id)."""
    next_hdr: int
    ses: dict
    ext: dict | None = None
    payload: bytes = b""
    peer: Any = None
    message_id: int = 0
    request_ref: Any = None

    @property
    def opcode(self) -> int:
        return int(self.ses.get("opcode", 0))

    @property
    def is_request(self) -> bool:
        return self.next_hdr in REQUEST_NH

    def header_bytes(self) -> bytes:
        out = codec(_HDR_KEY[self.next_hdr]).encode(self.ses)
        if self.ext is not None:
            out += codec(_ext_key(self.opcode, self.ext, self.next_hdr)).encode(self.ext)
        return out

    def to_bytes(self) -> bytes:
        """SES header + extension + payload: what follows the PDS header on the wire."""
        return self.header_bytes() + bytes(self.payload)


def _ext_key(opcode: int, ext: Mapping[str, Any], nh: int) -> str:
    if opcode in ATOMIC_OPCODES:
        return "ses.cswap" if int(ext.get("atomic_opcode", 0)) in CSWAP_AMO_OPCODES else "ses.atomic"
    return "ses.rendezvous"


def decode_ses(next_hdr: int, data: bytes | bytearray | memoryview) -> tuple[dict, dict | None, bytes]:
    """(SES header, extension or None, payload) from the bytes after the PDS header.
    Raises :class:`DecodeError` only (E1 callers catch it)."""
    key = _HDR_KEY.get(next_hdr)
    if key is None:
        raise DecodeError(f"next_hdr {next_hdr} is not an SES header")
    f, n = codec(key).decode(data, 0)
    ext = None
    if next_hdr in REQUEST_NH:
        op = f["opcode"]
        if op in ATOMIC_OPCODES or (op in RENDEZVOUS_OPCODES and next_hdr == NH_STD):
            # the atomic extension is the cswap one when its first byte is a CSWAP AMO opcode
            if op in ATOMIC_OPCODES and n < len(data) and data[n] in CSWAP_AMO_OPCODES:
                ek = "ses.cswap"
            else:
                ek = "ses.atomic" if op in ATOMIC_OPCODES else "ses.rendezvous"
            ext, m = codec(ek).decode(data, n)
            n += m
    return f, ext, bytes(data[n:])


# ------------------------------------------------------------------------------------------------

@dataclass
class MemoryRegion:
    key: int
    buffer: bytearray
    base: int = 0
    readable: bool = True
    writable: bool = True
    atomic: bool = True
    served: int = 0  # bytes read from it (rendezvous source regions, M5)


@dataclass
class _Posted:
    handle: int
    capacity: int | None
    match_bits: int | None  # None: untagged
    ignore_bits: int = 0

    def matches(self, tagged: bool, bits: int) -> bool:
        if (self.match_bits is None) == tagged:
            return False
        return not tagged or ((bits ^ self.match_bits) & ~self.ignore_bits & M64) == 0


@dataclass
class _Rx:
    """Target state of one multi-packet message (keyed by (peer, message_id))."""
    peer: Any
    mid: int
    opcode: int
    length: int
    tag: int | None
    header_data: int = 0
    dc: bool = False
    buf: bytearray | None = None    # write: the region's buffer
    chunks: dict = field(default_factory=dict)  # send: message offset -> bytes (assembled at
    # delivery, so memory grows with bytes actually received, never with a claimed length)
    recv: _Posted | None = None
    charged: int = 0                 # R1: bytes charged to the peer's budget while partial
    last: float = 0.0                # R3: when a packet of it last arrived
    unexpected: bool = False
    failed: bool = False            # T8: swallow the rest, no more responses
    deferred: bool = False
    offsets: set = field(default_factory=set)
    got: int = 0
    done: bool = False               # every byte arrived (unexpected messages wait for a recv)
    pending_pull: int = 0            # rendezvous bytes still to read (M5)
    kind: str = "send"               # send | write
    region: MemoryRegion | None = None
    base: int = 0                    # write: offset in region of message byte 0
    mkey: int = 0


@dataclass
class _Deferred:
    peer: Any
    itok: int
    ttok: int
    tagged: bool
    tag: int
    length: int
    opcode: int
    recv: _Posted | None = None


@dataclass
class _Op:
    """Initiator state of one operation."""
    handle: int
    op: str
    peer: Any
    mid: int
    opcode: int
    length: int = 0
    data: bytes = b""
    result: bytearray | None = None   # read / fetch: marks a data-returning op (len = length)
    chunks: dict = field(default_factory=dict)
    offsets: set = field(default_factory=set)
    got: int = 0
    fetch: bool = False
    responded: bool = False
    modified: int = 0
    itok: int = 0
    rdv_key: int | None = None
    rdv_rest: int = 0
    restarted: bool = False
    params: dict = field(default_factory=dict)
    on_done: Any = None               # internal reads (rendezvous pull)


def _i(f: Mapping[str, Any], k: str, default: int = 0) -> int:
    v = f.get(k, default)
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    raise TypeError(k)


class SesEndpoint:
    """Sans-IO SES for one host (initiator and target roles)."""

    def __init__(self, config: SesConfig | None = None):
        self.config = config or SesConfig()
        self.stats: Counter[str] = Counter()
        self._rng = random.Random(self.config.seed)
        self._events: deque[ev.Event] = deque()
        self._out: list[SesPacket] = []
        # initiator
        self._ops: dict[int, _Op] = {}
        self._next_mid = 1
        self._next_handle = 1
        # target
        self.regions: dict[int, MemoryRegion] = {}
        self._posted: list[_Posted] = []
        self._rx: dict[tuple[Any, int], _Rx] = {}
        c = self.config
        self.budget = ReceiveBudget(BudgetLimits(
            messages=c.max_rx_messages, messages_per_peer=c.max_rx_messages_per_peer,
            bytes=c.rx_bytes, bytes_per_peer=c.rx_bytes_per_peer))
        self._now = 0.0
        self._unexpected: list[_Rx] = []
        self._unexpected_bytes = 0
        self._deferred: dict[tuple[Any, int], _Deferred] = {}
        self._deferred_order: list[tuple[Any, int]] = []

    # --- plumbing ---------------------------------------------------------------------------

    def next_event(self) -> ev.Event | None:
        return self._events.popleft() if self._events else None

    def events(self) -> list[ev.Event]:
        out = list(self._events)
        self._events.clear()
        return out

    def packets_to_send(self) -> list[SesPacket]:
        out, self._out = self._out, []
        return out

    @property
    def outstanding(self) -> int:
        return len(self._ops)

    def reassembling(self, peer: Any, message_id: int) -> bool:
        """Whether a multi-packet message (peer, message_id) is in reassembly at this target."""
        return (peer, message_id) in self._rx

    @property
    def in_reassembly(self) -> int:
        """Multi-packet messages in reassembly (a transport may refuse new ones beyond a limit:
        uet/pds/endpoint.py X2)."""
        return len(self._rx)

    def admit(self, peer: Any, next_hdr: int, data: bytes | bytearray | memoryview) -> int:
        """R1/R2 for a transport that can refuse a packet before it counts as received (the PDS,
        W5 of uet/pds/endpoint.py): 0, or the B.11 NACK code to answer with - NO_SES_MSG_AVAIL
        (0x09) for a new multi-packet message beyond the partial-message limits, NO_PKT_BUFFER
        (0x07) when its payload would exceed the peer's or the endpoint's bytes."""
        if next_hdr != NH_STD:
            return 0  # small and medium requests are whole messages; responses hold nothing
        try:
            f, n = codec("ses.std").decode(data, 0)
        except (DecodeError, ValueError):
            return 0  # receive() answers it (E1)
        if f.get("som") and f.get("eom"):
            return 0
        key = (peer, f["message_id"])
        if key not in self._rx and not self.budget.fits_message(peer):
            return 0x09
        if f["opcode"] in SEND_OPCODES and not self.budget.fits_bytes(peer, len(data) - n):
            return 0x07
        return 0

    def _rx_put(self, key: tuple[Any, int], rx: _Rx) -> None:
        if key not in self._rx:
            self.budget.open_message(rx.peer, force=True)
        rx.last = self._now
        self._rx[key] = rx

    def _rx_pop(self, key: tuple[Any, int]) -> _Rx | None:
        rx = self._rx.pop(key, None)
        if rx is not None:
            self.budget.close_message(rx.peer)
            self.budget.release(rx.peer, rx.charged)
            rx.charged = 0
        return rx

    def expire(self, now: float) -> int:
        """R3: drop the partial messages idle for ``partial_timeout`` (their initiator is gone, or
        never meant to finish); a receive one of them had bound is posted again. Returns how
        many were dropped."""
        self._now = max(self._now, now)
        limit = now - self.config.partial_timeout
        gone = [k for k, rx in self._rx.items() if rx.last <= limit]
        for k in gone:
            rx = self._rx_pop(k)
            if rx is None:
                continue
            if rx.unexpected and rx in self._unexpected:
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
            if rx.recv is not None and not rx.failed:
                self._offer(rx.recv, front=True)
            self.stats["partial_expired"] += 1
            self._events.append(ev.MessageError(rx.peer, rx.mid, rx.opcode, 0x24,
                                                "partial message idle: dropped"))  # DROPPED
        return len(gone)

    def pending(self, message_id: int) -> bool:
        """Whether an operation with this message id still waits for its response (a transport
        that may lose responses asks again while this holds: uet/pds/endpoint.py X5)."""
        return message_id in self._ops

    def _handle(self) -> int:
        h = self._next_handle
        self._next_handle += 1
        return h

    def _mid(self) -> int:
        for _ in range(M16 + 1):
            m = self._next_mid
            self._next_mid = (m % M16) + 1  # 1..65535 (0 is what small headers answer with)
            if m not in self._ops:
                return m
        raise SesError("no free message id: 65535 operations outstanding")

    def _common(self, opcode: int, **kw: Any) -> dict:
        c = self.config
        d = {"opcode": opcode, "job_id": c.job_id, "pid_on_fep": c.pid_on_fep,
             "resource_index": c.resource_index, "initiator": c.initiator, "rel": True}
        d.update(kw)
        return d

    # --- target: resources --------------------------------------------------------------------

    def register(self, key: int, buffer: bytearray, *, base: int = 0, readable: bool = True,
                 writable: bool = True, atomic: bool = True) -> MemoryRegion:
        """Register ``buffer`` under memory key ``key`` (T6)."""
        if not 0 <= key <= M64:
            raise SesError("memory key must fit 64 bits")
        r = MemoryRegion(key, buffer, base, readable, writable, atomic)
        self.regions[key] = r
        return r

    def deregister(self, key: int) -> None:
        self.regions.pop(key, None)

    def post_recv(self, capacity: int | None = None, *, match_bits: int | None = None,
                  ignore_bits: int = 0) -> int:
        """Post a receive (tagged when ``match_bits`` is given, M1); returns its handle, which the
        MessageReceived event names."""
        p = _Posted(self._handle(), capacity, match_bits, ignore_bits & M64)
        self._offer(p)
        return p.handle

    def _offer(self, p: _Posted, *, front: bool = False) -> None:
        """A receive is free: the unexpected list first (M2), then a deferred send waiting for
        it (M4), else it waits (at the front of the queue when it was posted earlier, R3)."""
        tagged = p.match_bits is not None
        capacity = p.capacity
        for rx in self._unexpected:  # M2: unexpected list first
            if p.matches(tagged, rx.tag or 0):
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
                rx.recv = p
                if capacity is not None and rx.length > capacity:
                    self._recv_too_long(p, rx)
                    rx.failed = True
                elif rx.done and not rx.pending_pull:
                    self._deliver(rx)
                return
        for k in list(self._deferred_order):  # M4: a deferred send waiting for this receive
            d = self._deferred.get(k)
            if d is None or d.recv is not None or not p.matches(d.tagged, d.tag):
                continue
            d.recv = p
            self._deferred_order.remove(k)
            self._send_rtr(d)
            return
        if front:
            self._posted.insert(0, p)
        else:
            self._posted.append(p)

    def cancel_recv(self, handle: int) -> bool:
        for p in self._posted:
            if p.handle == handle:
                self._posted.remove(p)
                return True
        return False

    # --- initiator: operations ------------------------------------------------------------------

    def _message_packets(self, peer: Any, opcode: int, data: bytes, mid: int, *, key: dict,
                         header_data: int | None = None, dc: bool = False,
                         buffer_offset: int = 0, ext: dict | None = None,
                         small_ok: bool = False, medium_ok: bool = False,
                         extra: dict | None = None) -> list[SesPacket]:
        c = self.config
        n = len(data)
        if n > M32:
            raise SesError("message longer than 2^32 - 1 bytes")
        mtu = max(1, c.mtu)
        extra = extra or {}
        if c.small_header and n <= mtu and n <= M14 and header_data is None and (small_ok or medium_ok):
            if small_ok and not key:
                f = self._common(opcode, som=True, eom=True, dc=dc, request_length=n,
                                 buffer_offset=buffer_offset)
                return [SesPacket(NH_SMALL, f, ext, bytes(data), peer, mid)]
            f = self._common(opcode, som=True, eom=True, dc=dc, request_length=n,
                             buffer_offset=buffer_offset, **key)
            return [SesPacket(NH_MEDIUM, f, ext, bytes(data), peer, mid)]
        out = []
        off = 0
        while True:
            chunk = data[off:off + mtu]
            last = off + len(chunk) >= n
            f = self._common(opcode, message_id=mid, som=off == 0, eom=last, dc=dc,
                             request_length=n, buffer_offset=buffer_offset, **key, **extra)
            if off == 0:
                if header_data is not None:
                    f["hd"] = True
                    f["header_data"] = header_data & M64
            else:
                f["payload_length"] = len(chunk)
                f["message_offset"] = off
            out.append(SesPacket(NH_STD, f, ext, bytes(chunk), peer, mid))
            off += len(chunk)
            if last:
                return out

    def _start(self, op: _Op, packets: list[SesPacket]) -> int:
        self._ops[op.mid] = op
        self._out.extend(packets)
        return op.handle

    def send(self, peer: Any, data: bytes, *, header_data: int | None = None, dc: bool = False) -> int:
        """SEND (D.1 0x05): the target places it in an untagged posted receive."""
        mid = self._mid()
        pk = self._message_packets(peer, SEND, bytes(data), mid, key={}, header_data=header_data,
                                   dc=dc, small_ok=True)
        return self._start(_Op(self._handle(), "send", peer, mid, SEND, len(data)), pk)

    def tsend(self, peer: Any, data: bytes, match_bits: int, *, header_data: int | None = None,
              dc: bool = False) -> int:
        """TAGGED_SEND (0x09) with 64 match bits."""
        mid = self._mid()
        pk = self._message_packets(peer, TAGGED_SEND, bytes(data), mid,
                                   key={"match_bits": match_bits & M64}, header_data=header_data,
                                   dc=dc, medium_ok=True)
        return self._start(_Op(self._handle(), "tsend", peer, mid, TAGGED_SEND, len(data)), pk)

    def deferrable_send(self, peer: Any, data: bytes, *, match_bits: int | None = None,
                        dc: bool = False) -> int:
        """DEFERRABLE_SEND (0x08) or, with ``match_bits``, DEFERRABLE_TSEND (0x0B) (M4)."""
        tagged = match_bits is not None
        opcode = DEFERRABLE_TSEND if tagged else DEFERRABLE_SEND
        mid = self._mid()
        itok = self._rng.randrange(1, 1 << 32)
        op = _Op(self._handle(), "deferrable_send", peer, mid, opcode, len(data), bytes(data),
                 itok=itok, params={"match_bits": match_bits, "dc": dc})
        return self._start(op, self._deferrable_packets(op, 0))

    def _deferrable_packets(self, op: _Op, ttok: int) -> list[SesPacket]:
        mb = op.params["match_bits"]
        key = {"match_bits": mb & M64} if mb is not None else {"memory_key": 0}
        key.update(initiator_restart_token=op.itok, target_restart_token=ttok)
        return self._message_packets(op.peer, op.opcode, op.data, op.mid, key=key, dc=op.params["dc"])

    def rendezvous_send(self, peer: Any, data: bytes, *, match_bits: int | None = None,
                        eager: int | None = None) -> int:
        """RENDEZVOUS_SEND (0x06) / RENDEZVOUS_TSEND (0x0A): eager part + target pull (M5)."""
        c = self.config
        data = bytes(data)
        if len(data) > M32:
            raise SesError("message longer than 2^32 - 1 bytes")
        n_eager = min(len(data), c.mtu, c.rendezvous_eager if eager is None else max(0, eager))
        tagged = match_bits is not None
        opcode = RENDEZVOUS_TSEND if tagged else RENDEZVOUS_SEND
        rkey = (1 << 63) | self._rng.randrange(1 << 48)
        while rkey in self.regions:
            rkey += 1
        self.register(rkey, bytearray(data), writable=False, atomic=False)
        mid = self._mid()
        key = {"match_bits": match_bits & M64} if tagged else {"memory_key": 0}
        f = self._common(opcode, message_id=mid, som=True, eom=True, request_length=len(data), **key)
        ext = {"eager_length": n_eager, "pid_on_fep": c.pid_on_fep,
               "resource_index": c.resource_index, "read_offset": n_eager, "read_match_bits": rkey}
        op = _Op(self._handle(), "rendezvous_send", peer, mid, opcode, len(data), rdv_key=rkey,
                 rdv_rest=len(data) - n_eager)
        return self._start(op, [SesPacket(NH_STD, f, ext, data[:n_eager], peer, mid)])

    @staticmethod
    def _check_rma(offset: int, length: int) -> None:
        """S6: an RMA range the wire can carry (64-bit buffer_offset, 32-bit request_length),
        checked before anything is queued."""
        if not 0 <= offset <= M64:
            raise SesError(f"offset {offset} is not a 64-bit buffer offset")
        if not 0 <= length <= M32:
            raise SesError(f"length {length} does not fit the 32-bit request_length")

    def write(self, peer: Any, memory_key: int, offset: int, data: bytes, *, dc: bool = False) -> int:
        """RMA WRITE (0x01) of ``data`` at ``offset`` in the target region ``memory_key``."""
        self._check_rma(offset, len(data))
        mid = self._mid()
        pk = self._message_packets(peer, WRITE, bytes(data), mid, key={"memory_key": memory_key & M64},
                                   buffer_offset=offset & M64, dc=dc, medium_ok=True)
        return self._start(_Op(self._handle(), "write", peer, mid, WRITE, len(data)), pk)

    def read(self, peer: Any, memory_key: int, offset: int, length: int) -> int:
        """RMA READ (0x02) of ``length`` bytes; OperationComplete.data holds them (P1)."""
        return self._read(peer, memory_key, offset, length)

    def _read(self, peer: Any, memory_key: int, offset: int, length: int, on_done: Any = None) -> int:
        self._check_rma(offset, length)
        mid = self._mid()
        f = self._common(READ, message_id=mid, som=True, eom=True, request_length=length,
                         memory_key=memory_key & M64, buffer_offset=offset & M64)
        op = _Op(self._handle(), "read", peer, mid, READ, length, result=bytearray(0),
                 on_done=on_done)
        return self._start(op, [SesPacket(NH_STD, f, None, b"", peer, mid)])

    def atomic(self, peer: Any, memory_key: int, offset: int, amo_opcode: int, datatype: int,
               operand: int | float | bytes = 0, *, fetch: bool = False) -> int:
        """ATOMIC (0x03) or FETCHING_ATOMIC (0x04) with AMO ``amo_opcode`` on ``datatype``
        (D.6); the fetched (old) value comes back in OperationComplete.data."""
        if amo_opcode in CSWAP_AMO_OPCODES:
            raise SesError("use cswap() for the compare-and-swap AMO opcodes")
        if isinstance(operand, (bytes, bytearray)):
            payload = bytes(operand)
        elif amo_opcode == amo.READ:
            payload = b""
        else:
            if amo.datatype_size(datatype) is None:
                raise SesError(f"datatype 0x{datatype:02x}: pass the operand as bytes")
            payload = amo.encode_value(datatype, operand)
        return self._atomic(peer, memory_key, offset, amo_opcode, datatype, payload,
                            {"atomic_opcode": amo_opcode, "atomic_datatype": datatype}, fetch)

    def cswap(self, peer: Any, memory_key: int, offset: int, datatype: int, compare: int | float,
              swap: int | float, *, amo_opcode: int = amo.CSWAP, fetch: bool = True) -> int:
        """Compare-and-swap family (AMO 0x0D-0x12) with the 36-byte extension; fetching by default."""
        if amo_opcode not in CSWAP_AMO_OPCODES:
            raise SesError("cswap() takes AMO opcodes 0x0D-0x12")
        if amo.datatype_size(datatype) is None:
            raise SesError(f"datatype 0x{datatype:02x} has no compare/swap encoding here")
        ext = {"atomic_opcode": amo_opcode, "atomic_datatype": datatype,
               "compare_value": amo.ext_value(datatype, compare),
               "swap_value": amo.ext_value(datatype, swap)}
        return self._atomic(peer, memory_key, offset, amo_opcode, datatype, b"", ext, fetch)

    def _atomic(self, peer: Any, mkey: int, offset: int, amo_op: int, dt: int, payload: bytes,
                ext: dict, fetch: bool) -> int:
        self._check_rma(offset, len(payload))
        opcode = FETCHING_ATOMIC if fetch else ATOMIC
        mid = self._mid()
        pk = self._message_packets(peer, opcode, payload, mid, key={"memory_key": mkey & M64},
                                   buffer_offset=offset & M64, ext=ext, medium_ok=True)
        size = amo.datatype_size(dt) or 0
        op = _Op(self._handle(), "fetching_atomic" if fetch else "atomic", peer, mid, opcode,
                 size if fetch else 0, result=bytearray(0) if fetch else None, fetch=fetch)
        return self._start(op, pk)

    def datagram(self, peer: Any, data: bytes) -> int:
        """DATAGRAM_SEND (0x07), UUD only (C.8): one packet, no response, nothing tracked."""
        data = bytes(data)
        if len(data) > min(self.config.mtu, M32):
            raise SesError("a datagram is a single packet (at most mtu bytes)")
        mid = self._mid()
        f = self._common(DATAGRAM_SEND, message_id=mid, som=True, eom=True, request_length=len(data))
        self._out.append(SesPacket(NH_STD, f, None, data, peer, mid))
        return self._handle()

    def no_op(self, peer: Any) -> int:
        """NO_OP (0x00): a request that only gets a response."""
        mid = self._mid()
        f = self._common(NO_OP, message_id=mid, som=True, eom=True, request_length=0)
        return self._start(_Op(self._handle(), "no_op", peer, mid, NO_OP), [SesPacket(NH_STD, f, None, b"", peer, mid)])

    def abort(self, handle: int, reason: str = "aborted") -> bool:
        """Terminate an outstanding message in error: MSG_ERROR (0x0F) to the target (T9)."""
        for mid, op in list(self._ops.items()):
            if op.handle == handle:
                del self._ops[mid]
                f = self._common(MSG_ERROR, message_id=mid, som=True, eom=True, request_length=0)
                self._out.append(SesPacket(NH_STD, f, None, b"", op.peer, mid))
                if op.rdv_key is not None:
                    self.deregister(op.rdv_key)
                self._events.append(ev.OperationFailed(op.handle, op.op, mid, RC_CANCELLED, reason))
                return True
        return False

    def transport_failed(self, message_id: int, reason: str) -> None:
        """The transport gave up on a request of this operation (PDC closed in error, RUDI retry
        limit): the operation fails with UNDELIVERABLE-like reason (C.5, C.7)."""
        op = self._ops.get(message_id)
        if op is not None:
            self._finish_failed(op, 0x1F, reason)  # UNDELIVERABLE

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
        ``mode`` is "rud" (also ROD), "rudi" or "uud" (T3). ``now`` (the caller's clock) dates
        the packet for R3."""
        if now is not None and now > self._now:
            self._now = now
        try:
            if next_hdr in REQUEST_NH:
                return self._on_request(int(next_hdr), ses, ext or {}, bytes(payload), peer,
                                        request_ref, mode, inline_limit)
            if next_hdr in RESPONSE_NH:
                self._on_response(int(next_hdr), ses, bytes(payload), peer, message_id)
                return None
            self.stats["malformed"] += 1
            return None
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError, EncodeError):
            self.stats["malformed"] += 1
            if next_hdr in REQUEST_NH and mode != "uud":
                return self._rsp(peer, 0, RC_UNSUPPORTED_SIZE, request_ref)
            return None

    # --- target ---------------------------------------------------------------------------------

    def _rsp(self, peer: Any, mid: int, rc: int, ref: Any, *, modified: int = 0,
             lst: int = LIST_EXPECTED, opcode: int = RESPONSE) -> SesPacket:
        f = {"list": lst, "opcode": opcode, "return_code": rc, "message_id": mid & M16,
             "job_id": self.config.job_id, "modified_length": modified & M32}
        return SesPacket(NH_RSP, f, None, b"", peer, mid & M16, ref)

    def _fail(self, peer: Any, mid: int, opcode: int, rc: int, ref: Any, reason: str) -> SesPacket:
        self.stats["rc_" + _rc_name(rc)] += 1
        self._events.append(ev.MessageError(peer, mid, opcode, rc, reason))
        return self._rsp(peer, mid, rc, ref)

    def _on_request(self, nh: int, f: Mapping[str, Any], ext: Mapping[str, Any], payload: bytes,
                    peer: Any, ref: Any, mode: str, inline_limit: int | None) -> SesPacket | None:
        op = _i(f, "opcode")
        mid = _i(f, "message_id") if nh == NH_STD else 0
        self.stats["requests"] += 1
        if mode == "uud":  # T3: no response exists
            if op != DATAGRAM_SEND:
                self.stats["uud_not_datagram"] += 1
                self._events.append(ev.MessageError(peer, mid, op, RC_OP_VIOLATION,
                                                    "only DATAGRAM_SEND is legal over UUD"))
                return None
            return self._on_datagram(f, payload, peer, nh)
        if f.get("ie"):  # T1
            self._rx_pop((peer, mid)) if nh == NH_STD else None
            return self._fail(peer, mid, op, RC_INITIATOR_ERR, ref, "initiator error (IE)")
        if self.config.check_job and _i(f, "job_id") != self.config.job_id:  # T2
            return self._fail(peer, mid, op, RC_BAD_JOB_ID, ref, f"job {_i(f, 'job_id')} is not ours")
        if mode == "rudi" and op not in RUDI_OPCODES:  # T3
            return self._fail(peer, mid, op, RC_OP_VIOLATION, ref,
                              "RUDI carries idempotent operations only (C.8)")
        if op == DATAGRAM_SEND:
            return self._fail(peer, mid, op, RC_OP_VIOLATION, ref, "DATAGRAM_SEND is UUD only (C.8)")
        if op == NO_OP:
            return self._rsp(peer, mid, RC_OK, ref)
        if op == MSG_ERROR:  # T9
            rx = self._rx_pop((peer, mid))
            if rx is not None and rx.unexpected and rx in self._unexpected:
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
            self._events.append(ev.MessageError(peer, mid, op, RC_CANCELLED,
                                                "message terminated by the initiator (MSG_ERROR)"))
            return self._rsp(peer, mid, RC_OK, ref)
        if op not in SUPPORTED_OPCODES:  # T4
            return self._fail(peer, mid, op, RC_UNSUPPORTED_OP, ref,
                              f"opcode 0x{op:02x} is not supported")
        geo = self._geometry(nh, f, payload)
        if isinstance(geo, int):
            return self._fail(peer, mid, op, geo, ref, "bad packet geometry")
        mo, rl = geo
        if op in SEND_OPCODES:
            return self._on_send(nh, op, f, ext, payload, peer, mid, mo, rl, ref)
        if op == WRITE:
            return self._on_write(nh, f, payload, peer, mid, mo, rl, ref)
        if op == READ:
            return self._on_read(f, peer, mid, rl, ref, inline_limit)
        if op in (ATOMIC, FETCHING_ATOMIC):
            return self._on_atomic(op, f, ext, payload, peer, mid, ref)
        if op == DEFERRABLE_RTR:
            return self._on_rtr(f, peer, mid, ref)
        return self._fail(peer, mid, op, RC_UNSUPPORTED_OP, ref, f"opcode 0x{op:02x} is not supported")

    def _geometry(self, nh: int, f: Mapping[str, Any], payload: bytes) -> tuple[int, int] | int:
        """T5: (message_offset, request_length) or a return code."""
        rl = _i(f, "request_length")
        op = _i(f, "opcode")
        if rl < 0 or _i(f, "message_offset") < 0:
            return RC_UNSUPPORTED_SIZE
        carries = op not in (READ, DEFERRABLE_RTR) and not (op in (ATOMIC, FETCHING_ATOMIC))
        if rl > self.config.max_message_bytes:
            return RC_TOO_LONG
        if nh != NH_STD or f.get("som"):
            mo = 0
            if nh != NH_STD and carries and rl != len(payload):
                return RC_UNSUPPORTED_SIZE
        else:
            mo = _i(f, "message_offset")
            if _i(f, "payload_length") != len(payload):
                return RC_UNSUPPORTED_SIZE
        if op in RENDEZVOUS_OPCODES:
            return mo, rl
        if carries and mo + len(payload) > rl:
            return RC_UNSUPPORTED_SIZE
        return mo, rl

    def _region(self, f: Mapping[str, Any], need: str, length: int) -> tuple[MemoryRegion, int] | int:
        """T6: (region, offset in region) or a return code."""
        r = self.regions.get(_i(f, "memory_key"))
        if r is None:
            return RC_BAD_MKEY
        if not getattr(r, need):
            return RC_PERM_VIOLATION
        off = _i(f, "buffer_offset")
        if not f.get("rel"):
            off -= r.base
            if off < 0:
                return RC_BAD_ADDR
        if off < 0 or off + length > len(r.buffer):
            return RC_AT_OUT_OF_RANGE
        return r, off

    def _on_datagram(self, f: Mapping[str, Any], payload: bytes, peer: Any, nh: int) -> None:
        if not (f.get("som") and f.get("eom")) or _i(f, "request_length") != len(payload):
            self.stats["malformed"] += 1
            return None
        self.stats["datagrams"] += 1
        self._events.append(ev.DatagramReceived(peer, payload))
        return None

    def _on_write(self, nh: int, f: Mapping[str, Any], payload: bytes, peer: Any, mid: int, mo: int,
                  rl: int, ref: Any) -> SesPacket | None:
        key = (peer, mid)
        rx = self._rx.get(key) if nh == NH_STD else None
        if rx is None:
            reg = self._region(f, "writable", rl)
            if isinstance(reg, int):
                if nh == NH_STD and rl > len(payload):
                    self._rx_put(key, _Rx(peer, mid, WRITE, rl, None, failed=True, kind="write"))
                    self._rx[key].offsets.add(mo)
                    self._rx[key].got = len(payload)
                return self._fail(peer, mid, WRITE, reg, ref, "write refused")
            region, base = reg
            rx = _Rx(peer, mid, WRITE, rl, None, kind="write", region=region, base=base,
                     mkey=region.key, buf=region.buffer)
            if nh == NH_STD:
                self._rx_put(key, rx)
        rx.last = self._now
        if rx.kind != "write" or rx.length != rl:
            return self._fail(peer, mid, WRITE, RC_UNSUPPORTED_SIZE, ref, "message changed shape")
        if mo in rx.offsets:
            self.stats["duplicate_packets"] += 1
            return None
        rx.offsets.add(mo)
        rx.got += len(payload)
        if not rx.failed and rx.buf is not None:
            rx.buf[rx.base + mo:rx.base + mo + len(payload)] = payload
        if rx.got < rl:
            return None
        self._rx_pop(key)
        if rx.failed:
            return None
        self._events.append(ev.RmaWriteDone(peer, mid, rx.mkey, rx.base, rl))
        return self._rsp(peer, mid, RC_OK, ref, modified=rl)

    def _data_responses(self, peer: Any, mid: int, data: bytes, ref: Any, limit: int,
                        ) -> SesPacket | None:
        """P1: inline (small response with data) or separate response-with-data packets."""
        n = len(data)
        if n <= self.config.max_ack_data and n <= limit:
            f = {"opcode": RESPONSE_W_DATA, "return_code": RC_OK, "payload_length": n,
                 "job_id": self.config.job_id,
                 "original_request_psn": ref & M32 if isinstance(ref, int) else 0}
            return SesPacket(NH_RSP_DATA_SMALL, f, None, data, peer, mid, ref)
        mtu = max(1, min(self.config.mtu, M14))
        pkts = []
        for off in range(0, max(n, 1), mtu):
            chunk = data[off:off + mtu]
            f = {"opcode": RESPONSE_W_DATA, "return_code": RC_OK, "message_id": mid & M16,
                 "job_id": self.config.job_id, "read_request_message_id": mid & M16,
                 "payload_length": len(chunk), "modified_length": n & M32, "message_offset": off}
            pkts.append(SesPacket(NH_RSP_DATA, f, None, chunk, peer, mid, ref))
        if n <= limit and len(pkts) == 1:
            return pkts[0]  # RUDI: the response packet itself carries it
        for p in pkts:
            p.request_ref = None
        self._out.extend(pkts)
        return None

    def _on_read(self, f: Mapping[str, Any], peer: Any, mid: int, rl: int, ref: Any,
                 inline_limit: int | None) -> SesPacket | None:
        reg = self._region(f, "readable", rl)
        if isinstance(reg, int):
            return self._fail(peer, mid, READ, reg, ref, "read refused")
        region, off = reg
        data = bytes(region.buffer[off:off + rl])
        region.served += rl
        self._events.append(ev.RmaReadDone(peer, mid, region.key, off, rl))
        self._rdv_served(region)
        limit = self.config.max_ack_data if inline_limit is None else inline_limit
        return self._data_responses(peer, mid, data, ref, limit)

    def _on_atomic(self, op: int, f: Mapping[str, Any], ext: Mapping[str, Any], payload: bytes,
                   peer: Any, mid: int, ref: Any) -> SesPacket | None:
        a_op, dt = _i(ext, "atomic_opcode"), _i(ext, "atomic_datatype")
        rc = amo.check(a_op, dt)
        if rc != amo.RC_OK:
            return self._fail(peer, mid, op, rc, ref, "atomic refused")
        size = amo.datatype_size(dt) or 0
        if a_op in amo.CSWAP_FAMILY or a_op == amo.READ:
            ok_len = len(payload) in (0, size)
        else:
            ok_len = len(payload) == size
        if not ok_len:
            return self._fail(peer, mid, op, amo.RC_AMO_UNSUPPORTED_SIZE, ref, "operand size")
        reg = self._region(f, "atomic", size)
        if isinstance(reg, int):
            return self._fail(peer, mid, op, reg, ref, "atomic refused")
        region, off = reg
        if off % size:
            return self._fail(peer, mid, op, amo.RC_AMO_UNALIGNED, ref, "misaligned atomic")
        old = bytes(region.buffer[off:off + size])
        rc, new = amo.apply(a_op, dt, old, payload, _i(ext, "compare_value"), _i(ext, "swap_value"))
        if rc != amo.RC_OK:
            return self._fail(peer, mid, op, rc, ref, "atomic failed")
        if new is not None:
            region.buffer[off:off + size] = new
        self._events.append(ev.AtomicDone(peer, mid, region.key, off, a_op, dt, new is not None))
        if op == FETCHING_ATOMIC:
            return self._data_responses(peer, mid, old, ref, max(size, MAX_ACK_DATA_SIZE))
        return self._rsp(peer, mid, RC_OK, ref, modified=size if new is not None else 0)

    def _unexpected_fits(self, peer: Any, length: int) -> bool:
        """M2: room on the unexpected list for a message of ``length`` from ``peer``: within
        the list's limits, and within half of them for any one peer (so one sender's messages
        cannot take the whole list from the others)."""
        c = self.config
        if (len(self._unexpected) >= c.unexpected_limit
                or self._unexpected_bytes + length > c.unexpected_bytes):
            return False
        mine = [rx for rx in self._unexpected if rx.peer == peer]
        return (len(mine) < max(1, c.unexpected_limit // 2)
                and sum(rx.length for rx in mine) + length <= max(1, c.unexpected_bytes // 2))

    def _match_posted(self, tagged: bool, tag: int) -> _Posted | None:
        for p in self._posted:
            if p.matches(tagged, tag):
                self._posted.remove(p)
                return p
        return None

    def _recv_too_long(self, p: _Posted, rx: _Rx) -> None:
        self._events.append(ev.RecvFailed(p.handle, RC_TOO_LONG,
                                          f"message of {rx.length} bytes > capacity {p.capacity}"))

    def _on_send(self, nh: int, op: int, f: Mapping[str, Any], ext: Mapping[str, Any],
                 payload: bytes, peer: Any, mid: int, mo: int, rl: int, ref: Any) -> SesPacket | None:
        key = (peer, mid)
        rx = self._rx.get(key) if nh == NH_STD else None
        tagged = op in TAGGED_OPCODES
        first = rx is None
        rsp: SesPacket | None = None
        if first:
            tag = _i(f, "match_bits") if tagged else None
            rx = _Rx(peer, mid, op, rl, tag, header_data=_i(f, "header_data") if f.get("hd") else 0,
                     dc=bool(f.get("dc")))
            recv: _Posted | None = None
            if op in RENDEZVOUS_OPCODES:
                el = _i(ext, "eager_length")
                if el != len(payload) or el > rl:
                    return self._fail(peer, mid, op, RC_UNSUPPORTED_SIZE, ref, "rendezvous eager length")
            if op in DEFERRABLE_OPCODES and _i(f, "target_restart_token"):
                d = self._deferred.pop((peer, _i(f, "target_restart_token")), None)
                if d is None or d.recv is None:
                    rx.failed = True
                    rsp = self._fail(peer, mid, op, RC_NO_MATCH, ref, "unknown target restart token")
                else:
                    recv = d.recv
            else:
                recv = self._match_posted(tagged, tag or 0)
            if rsp is None and recv is None:
                if op in DEFERRABLE_OPCODES:  # M4
                    ttok = self._rng.randrange(1, 1 << 32)
                    while (peer, ttok) in self._deferred:
                        ttok = self._rng.randrange(1, 1 << 32)
                    self._deferred[(peer, ttok)] = _Deferred(peer, _i(f, "initiator_restart_token"),
                                                             ttok, tagged, tag or 0, rl, op)
                    self._deferred_order.append((peer, ttok))
                    rx.deferred = True
                    self.stats["deferred"] += 1
                    rsp = self._rsp(peer, mid, RC_NO_MATCH, ref)
                elif self._unexpected_fits(peer, rl):  # M2
                    rx.unexpected = True
                    self._unexpected.append(rx)
                    self._unexpected_bytes += rl
                    self.stats["unexpected"] += 1
                else:
                    rx.failed = True
                    rsp = self._fail(peer, mid, op, RC_NO_MATCH, ref, "no matching receive")
            elif recv is not None:
                rx.recv = recv
                if recv.capacity is not None and rl > recv.capacity:  # M3
                    self._recv_too_long(recv, rx)
                    rx.failed = True
                    rsp = self._fail(peer, mid, op, RC_TOO_LONG, ref, "message longer than the receive")
            if nh == NH_STD:
                self._rx_put(key, rx)
        elif rx.length != rl or rx.opcode != op:
            if not rx.failed:
                rx.failed = True
                return self._fail(peer, mid, op, RC_UNSUPPORTED_SIZE, ref, "message changed shape")
            return None
        if mo in rx.offsets:
            self.stats["duplicate_packets"] += 1
            return None
        rx.offsets.add(mo)
        rx.got += len(payload)
        if f.get("som") and f.get("hd"):  # header data rides on the SOM packet only (D.3)
            rx.header_data = _i(f, "header_data")
        rx.last = self._now
        if not rx.failed and not rx.deferred:
            rx.chunks[mo] = payload
            if nh == NH_STD and key in self._rx:  # R1: bytes held while the message is partial
                self.budget.charge(peer, len(payload), force=True)
                rx.charged += len(payload)
        if op in RENDEZVOUS_OPCODES and first and not rx.failed:  # M5: pull the rest
            rest = rl - len(payload)
            if rest > 0:
                rx.pending_pull = rest
                view = rx

                def done(ok: bool, data: bytes | None, rx: _Rx = view) -> None:
                    self._pull_done(rx, ok, data)

                self._read(peer, _i(ext, "read_match_bits"), _i(ext, "read_offset"), rest, on_done=done)
            rx.got = rl
        if rx.got < rl:
            return rsp
        if nh == NH_STD:
            self._rx_pop(key)
        if rx.failed or rx.deferred:
            return rsp
        rx.done = True
        if not rx.unexpected and not rx.pending_pull:
            self._deliver(rx)
        elif rx.unexpected and rx.recv is not None and not rx.pending_pull:
            self._deliver(rx)
        n_placed = rl - rx.pending_pull
        return self._rsp(peer, mid, RC_OK, ref, modified=n_placed,
                         lst=LIST_OVERFLOW if rx.unexpected else LIST_EXPECTED)

    def _pull_done(self, rx: _Rx, ok: bool, data: bytes | None) -> None:
        if not ok or data is None:
            self._events.append(ev.MessageError(rx.peer, rx.mid, rx.opcode, 0x1F,
                                                "rendezvous pull failed"))
            if rx.unexpected and rx in self._unexpected:
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
            return
        rx.chunks[rx.length - rx.pending_pull] = data
        rx.pending_pull = 0
        if not rx.unexpected or rx.recv is not None:
            self._deliver(rx)

    def _deliver(self, rx: _Rx) -> None:
        assert rx.recv is not None
        self.stats["messages"] += 1
        data = _assemble(rx.length, rx.chunks)
        self._events.append(ev.MessageReceived(rx.peer, rx.mid, rx.opcode, data, rx.tag,
                                               rx.recv.handle, rx.header_data, rx.unexpected, rx.dc))

    def _send_rtr(self, d: _Deferred) -> None:
        """M4: DEFERRABLE_RTR (0x0C) with both restart tokens, back to the initiator."""
        mid = self._mid()
        f = self._common(DEFERRABLE_RTR, message_id=mid, som=True, eom=True, request_length=0,
                         initiator_restart_token=d.itok, target_restart_token=d.ttok)
        self._ops[mid] = _Op(self._handle(), "rtr", d.peer, mid, DEFERRABLE_RTR)
        self._out.append(SesPacket(NH_STD, f, None, b"", d.peer, mid))

    def _on_rtr(self, f: Mapping[str, Any], peer: Any, mid: int, ref: Any) -> SesPacket:
        itok, ttok = _i(f, "initiator_restart_token"), _i(f, "target_restart_token")
        for op in list(self._ops.values()):
            if op.op == "deferrable_send" and op.itok == itok and op.peer == peer and not op.restarted:
                del self._ops[op.mid]
                op.mid = self._mid()
                op.restarted = True
                self._ops[op.mid] = op
                self._out.extend(self._deferrable_packets(op, ttok))
                return self._rsp(peer, mid, RC_OK, ref)
        return self._fail(peer, mid, DEFERRABLE_RTR, RC_NO_MATCH, ref, "no deferred send with that token")

    def _rdv_served(self, region: MemoryRegion) -> None:
        for op in self._ops.values():
            if op.rdv_key == region.key:
                if region.served >= op.rdv_rest:
                    self._maybe_finish_rdv(op)
                return

    def _maybe_finish_rdv(self, op: _Op) -> None:
        r = self.regions.get(op.rdv_key) if op.rdv_key is not None else None
        if op.responded and (r is None or r.served >= op.rdv_rest):
            self.deregister(op.rdv_key)  # type: ignore[arg-type]
            self._ops.pop(op.mid, None)
            self._events.append(ev.OperationComplete(op.handle, op.op, op.mid, RC_OK, op.length))

    # --- initiator: responses -------------------------------------------------------------------

    def _on_response(self, nh: int, f: Mapping[str, Any], payload: bytes, peer: Any,
                     hint: int | None) -> None:
        if hint is not None:
            mid = hint
        elif nh == NH_RSP:
            mid = _i(f, "message_id")
        elif nh == NH_RSP_DATA:
            mid = _i(f, "read_request_message_id")
        else:
            mid = -1
        op = self._ops.get(mid)
        if op is None or (peer is not None and op.peer is not None and op.peer != peer):
            self.stats["unknown_response"] += 1
            return
        rc = _i(f, "return_code")
        if nh == NH_RSP and _i(f, "opcode") == DEFAULT_RESPONSE and rc == RC_NULL:
            self.stats["default_response"] += 1  # I2 / D.9
            return
        if rc != RC_OK:
            if op.op == "deferrable_send" and rc == RC_NO_MATCH and not op.restarted:
                self.stats["deferred_sends"] += 1
                self._events.append(ev.SendDeferred(op.handle, op.mid, op.itok))
                return
            self._finish_failed(op, rc, f"target answered {_rc_name(rc)}")
            return
        if nh == NH_RSP:
            if op.result is not None and op.length:  # data was expected
                if op.got < op.length:
                    self.stats["response_without_data"] += 1
                    return
            op.responded = True
            op.modified = _i(f, "modified_length")
            if op.rdv_key is not None:
                self._maybe_finish_rdv(op)
                return
            self._finish_ok(op)
            return
        mo = _i(f, "message_offset") if nh == NH_RSP_DATA else 0
        if op.result is None or mo < 0 or mo + len(payload) > op.length:
            self.stats["unknown_response"] += 1
            return
        if _i(f, "payload_length") != len(payload):
            self.stats["malformed"] += 1
            return
        if mo not in op.offsets:
            op.offsets.add(mo)
            op.chunks[mo] = payload
            op.got += len(payload)
        if op.got >= op.length:
            self._finish_ok(op)

    def _finish_ok(self, op: _Op) -> None:
        self._ops.pop(op.mid, None)
        data = _assemble(op.length, op.chunks) if op.result is not None else None
        if op.on_done is not None:
            op.on_done(True, data)
            return
        if op.op == "rtr":
            return
        self._events.append(ev.OperationComplete(op.handle, op.op, op.mid, RC_OK,
                                                 op.modified if data is None else len(data), data))

    def _finish_failed(self, op: _Op, rc: int, reason: str) -> None:
        self._ops.pop(op.mid, None)
        if op.rdv_key is not None:
            self.deregister(op.rdv_key)
        if op.on_done is not None:
            op.on_done(False, None)
            return
        if op.op == "rtr":
            return
        self._events.append(ev.OperationFailed(op.handle, op.op, op.mid, rc, reason))


def _assemble(length: int, chunks: Mapping[int, bytes]) -> bytes:
    out = bytearray(length)
    for off, c in chunks.items():
        out[off:off + len(c)] = c
    return bytes(out[:length])


def _rc_name(rc: int) -> str:
    from ..wire.enums import RETURN_CODE
    return RETURN_CODE.symbol(rc) or f"0x{rc:02X}"
