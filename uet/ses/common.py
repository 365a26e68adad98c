"""What the parts of the SES share: the opcode, header and return-code numbers (facts D.1,
B.2, D.7, D.8), the configuration, and the state of operations (initiator) and messages (target).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Mapping

from ..errors import DecodeError, UetError
from ..native.rxlane import MsgState, ip_bytes
from ..wire.psn import M32  # noqa: F401 (re-exported to the SES modules)

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
SES_HEADERS = ("auto", "standard")  # SesConfig.ses_header (A.1)
M14, M16, M64 = (1 << 14) - 1, 0xFFFF, (1 << 64) - 1  # field widths (M32: uet.wire.psn)


class SesError(UetError, ValueError):
    """An operation the local API cannot express (bad length, unknown datatype, ...)."""


@dataclass
class SesConfig:
    mtu: int = 4096                        # docs/design-notes.md Defaults: payload bytes per packet
    max_ack_data: int = MAX_ACK_DATA_SIZE  # C.3 / C.9: read data inside an ACK
    small_header: bool = True              # SES-S2 / docs/design-notes.md Defaults
    job_id: int = 0
    pid_on_fep: int = 0
    resource_index: int = 0
    initiator: int = 0                     # D.3 initiator id carried in requests
    check_job: bool = False                # SES-T2
    auto_receive: bool = False             # SES-M7: every untagged message finds a receive
    unexpected_limit: int = 64             # SES-M2
    unexpected_bytes: int = 1 << 24        # SES-M2
    max_message_bytes: int = 1 << 30       # SES-T5
    # SES-R1 to SES-R3: partial multi-packet messages and the bytes they hold, per peer and in all
    max_rx_messages: int = 256
    max_rx_messages_per_peer: int = 64
    rx_bytes: int = 2 << 30
    rx_bytes_per_peer: int = (1 << 30) + (256 << 20)
    partial_timeout: float = 5.0           # SES-R3: seconds a partial message may sit idle
    rendezvous_eager: int = 1024           # SES-M5: bytes sent eagerly (capped at mtu)
    seed: int = 0                          # restart tokens, rendezvous keys
    # A.1 (the reference provider parses standard requests, next_hdr 3, and responses 4 and 5
    # only): "standard" sends no small or medium request (D.4) and no small response with data
    # (next_hdr 6, D.7), whatever small_header says; "auto" (docs/design-notes.md Defaults) uses the small
    # forms where they serve, and answers with next_hdr 6 only a peer that sent small or medium
    # requests itself (SES-P3 of uet/ses/target.py)
    ses_header: str = field(default="auto", kw_only=True)
    # SES-M8 of uet/ses/target.py: a SEND is delivered as its digest, its bytes are not kept
    rx_digest: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        if self.ses_header not in SES_HEADERS:
            raise SesError(f"ses_header must be one of {', '.join(SES_HEADERS)}, not "
                           f"{self.ses_header!r}")

    @property
    def small_requests(self) -> bool:
        """SES-S2: whether a message that fits one packet may use a small or medium header."""
        return self.small_header and self.ses_header == "auto"


@dataclass
class MemoryRegion:
    key: int
    buffer: bytearray
    base: int = 0
    readable: bool = True
    writable: bool = True
    atomic: bool = True
    served: int = 0  # bytes read from it (rendezvous source regions, SES-M5)


@dataclass
class Posted:
    handle: int
    capacity: int | None
    match_bits: int | None  # None: untagged
    ignore_bits: int = 0

    def matches(self, tagged: bool, bits: int) -> bool:
        if (self.match_bits is None) == tagged:
            return False
        return not tagged or ((bits ^ self.match_bits) & ~self.ignore_bits & M64) == 0


@dataclass
class RxMessage:
    """Target state of one multi-packet message (keyed by (peer, message_id))."""
    peer: Any
    mid: int
    opcode: int
    length: int
    tag: int | None
    header_data: int = 0
    dc: bool = False
    buf: bytearray | None = None    # write: the region's buffer
    asm: Any = None                  # send: a uet.native.Reassembly (its storage grows with
    # the bytes that arrived, never with a claimed length, SES-R1)
    recv: Posted | None = None
    charged: int = 0                 # SES-R1: bytes charged to the peer's budget while partial
    last: float = 0.0                # SES-R3: when a packet of it last arrived
    unexpected: bool = False
    failed: bool = False            # SES-T8: swallow the rest, no more responses
    deferred: bool = False
    offsets: set = field(default_factory=set)
    got: int = 0
    done: bool = False               # every byte arrived (unexpected messages wait for a recv)
    pending_pull: int = 0            # rendezvous bytes still to read (SES-M5)
    kind: str = "send"               # send | write
    region: MemoryRegion | None = None
    base: int = 0                    # write: offset in region of message byte 0
    mkey: int = 0
    ids: tuple[int, int, int] = (0, 0, 0)  # D.2 job_id, pid_on_fep, resource_index

    def take_lane(self, lanes: Any, initiator: int) -> None:
        """Hand the per-packet fields to a C message lane of ``lanes`` (uet.native.rxlane), so
        that the C receive lane places this message's middle packets: only a message whose
        storage is a C chunk table, from an IPv4 or IPv6 peer, that has not failed."""
        state = self._lane
        lane_table = getattr(self.asm, "lane_table", None)
        table = lane_table() if lane_table is not None else None
        peer = ip_bytes(self.peer)
        if table is None or peer is None or not state.live or type(state) is not MsgState:
            return
        lane = lanes.add_msg(peer, initiator, self.mid)
        lane.got, lane.last, lane.live = state.got, state.last, state.live
        lane.opcode, lane.length, lane.asm_ = self.opcode, self.length, table
        self.__dict__["_lane"] = lane
        self.__dict__["_lanes"] = lanes

    def release_lane(self) -> None:
        """The message left reassembly: its C lane (if any) is freed, its fields kept."""
        lanes = self.__dict__.pop("_lanes", None)
        if lanes is not None:
            self.__dict__["_lane"] = lanes.remove_msg(self._lane)

    def release(self) -> None:
        """Drop the message's storage now (its endpoint stops), in order: the C lane that
        places into it goes first, then the storage (uet.native.Reassembly.release)."""
        self.release_lane()
        asm, self.asm = self.asm, None
        if asm is not None:
            asm.release()


# The fields the C receive lane changes (uet.native.rxlane) live in the message's lane: the C
# lane's while the message is in reassembly at an endpoint with lanes, a MsgState otherwise.
def _msg_lane(self: RxMessage) -> Any:
    lane = self.__dict__.get("_lane")
    if lane is None:
        lane = self.__dict__["_lane"] = MsgState()
    return lane


def _put_got(self: RxMessage, value: int) -> None:
    _msg_lane(self).got = value


def _put_last(self: RxMessage, value: float) -> None:
    _msg_lane(self).last = value


def _put_failed(self: RxMessage, value: bool) -> None:
    _msg_lane(self).live = 0 if value else 1  # SES-T8: a failed message is the reference's


RxMessage.got = property(attrgetter("_lane.got"), _put_got)  # type: ignore[assignment]
RxMessage.last = property(attrgetter("_lane.last"), _put_last)  # type: ignore[assignment]
RxMessage.failed = property(lambda self: not self._lane.live, _put_failed)  # type: ignore[assignment]


@dataclass
class Deferred:
    peer: Any
    itok: int
    ttok: int
    tagged: bool
    tag: int
    length: int
    opcode: int
    recv: Posted | None = None


@dataclass
class Operation:
    """Initiator state of one operation."""
    handle: int
    op: str
    peer: Any
    mid: int
    opcode: int
    length: int = 0
    data: bytes = b""
    result: bytearray | None = None   # read / fetch: marks a data-returning op (len = length)
    asm: Any = None                   # ... and reassembles what comes back (uet.native)
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
    acked: bool = False               # SES-I3 of uet.ses.initiator: the transport ACKed every request


def field_int(f: Mapping[str, Any], k: str, default: int = 0) -> int:
    """A header field as an int (flags as 0/1); a value of another type is bad input (SES-E1)."""
    v = f.get(k, default)
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    raise DecodeError(f"field {k!r} is {type(v).__name__}, not an integer", header="ses")


def rc_name(rc: int) -> str:
    from ..wire.enums import RETURN_CODE
    return RETURN_CODE.symbol(rc) or f"0x{rc:02X}"
