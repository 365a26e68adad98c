"""A minimal message layer over the PDS: the seam where the full SES (tagged sends, RMA, atomics;
a later issue) plugs in.

Initiator side (:class:`OutMessage`): a message is split into requests of at most ``mtu`` payload
bytes, each with an SES header (D.3 standard: SEND, SOM/EOM, message_id, request_length, and
payload_length + message_offset when SOM = 0; D.4 small header for a message that fits one packet
and 14 bits of length, design.md "Defaults").

Target side (:class:`MessageLayer`): the PDS calls ``admit`` when a new PSN arrives (before it is
recorded as received) and ``deliver`` when the PSN may be handed up (RUD: at once; ROD: in PSN
order). ``admit`` returns ``(0, item)`` to accept, ``(nack_code, None)`` for a resource shortage
(the PSN stays unreceived and the initiator retries, B.11), or ``(-return_code, (rc, message_id))``
for a semantic error that is accepted and answered with a SES response in the ACK (D.7, D.8).
Reassembly uses :class:`uet.native.Reassembly`.
"""

from __future__ import annotations

from typing import Any

from .. import native
from . import events as ev
from .fastwire import fast

SEND = 0x05  # D.1
RC_UNSUPPORTED_OP, RC_UNSUPPORTED_SIZE, RC_TOO_LONG = 0x06, 0x07, 0x22  # D.8
NACK_NO_PKT_BUFFER, NACK_NO_SES_MSG_AVAIL = 0x07, 0x09  # B.11

_STD = fast("ses.std")
_SMALL = fast("ses.small")
_MEDIUM = fast("ses.medium")
_STD_SOM = _STD.layout(opcode=SEND, som=1)
_STD_MID = _STD.layout(opcode=SEND, som=0)
_SMALL_L = _SMALL.layout()


class OutMessage:
    """One message being sent: its bytes and the SES header constants of its packets."""

    __slots__ = ("handle", "data", "view", "length", "job_id", "pid_on_fep", "resource_index",
                 "message_id", "next_off", "unacked", "all_queued", "done", "failed", "nh",
                 "_som", "_mid", "_small")

    def __init__(self, handle: int, data: bytes, job_id: int = 0, pid_on_fep: int = 0,
                 resource_index: int = 0):
        self.handle = handle
        self.data = data
        self.view = memoryview(data)
        self.length = len(data)
        self.job_id = job_id
        self.pid_on_fep = pid_on_fep
        self.resource_index = resource_index
        self.message_id = 0
        self.next_off = 0
        self.unacked = 0
        self.all_queued = False
        self.done = False
        self.failed = False
        self.nh = 3
        self._som = 0
        self._mid = 0
        self._small = b""

    def prepare(self, cfg: Any) -> None:
        common = {"opcode": SEND, "job_id": self.job_id, "pid_on_fep": self.pid_on_fep,
                  "resource_index": self.resource_index, "request_length": self.length}
        if cfg.small_header and self.length <= cfg.mtu and self.length <= 0x3FFF:
            self.nh = 1
            self._small = _SMALL_L.const(dict(common, som=1, eom=1)).to_bytes(_SMALL_L.size, "big")
            return
        self.nh = 3
        ids = dict(common, message_id=self.message_id)
        self._som = _STD_SOM.const(dict(ids, som=1, eom=self.length <= cfg.mtu))
        self._mid = _STD_MID.const(dict(ids, som=0))

    def ses_header(self, off: int, ln: int, eom: bool) -> bytes:
        if self.nh == 1:
            return self._small
        if off == 0:
            return self._som.to_bytes(44, "big")
        L = _STD_MID
        sh = L.shift
        v = self._mid | (ln << sh["payload_length"]) | (off << sh["message_offset"])
        if eom:
            v |= 1 << sh["eom"]
        return v.to_bytes(44, "big")


class _RxMsg:
    __slots__ = ("mid", "length", "asm", "job_id", "pid_on_fep", "resource_index")

    def __init__(self, mid: int, length: int, f: dict):
        self.mid = mid
        self.length = length
        self.asm = native.Reassembly(length)
        self.job_id = f.get("job_id", 0)
        self.pid_on_fep = f.get("pid_on_fep", 0)
        self.resource_index = f.get("resource_index", 0)


class MessageLayer:
    """Target-side SEND reassembly; one per endpoint, state kept on each target PDC."""

    def __init__(self, ep: Any):
        self.ep = ep
        self.cfg = ep.config
        self.buffered = 0

    def admit(self, t: Any, data: bytes, off: int, end: int, nh: int) -> tuple[int, Any]:
        if nh == 3:
            f, size = _STD.decode(data, off)
        elif nh == 1:
            f, size = _SMALL.decode(data, off)
        elif nh == 2:
            f, size = _MEDIUM.decode(data, off)
        elif nh == 0:
            return 0, None  # no SES header: nothing to hand up
        else:
            return -RC_UNSUPPORTED_OP, (RC_UNSUPPORTED_OP, 0)
        po = off + size
        if po > end:
            return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, f.get("message_id", 0))
        rest = end - po
        mid = f.get("message_id", 0)
        if f["opcode"] != SEND:
            return -RC_UNSUPPORTED_OP, (RC_UNSUPPORTED_OP, mid)
        rl = f["request_length"]
        if nh != 3:
            # single-packet forms (D.4): the whole message is here
            if rl != rest:
                return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, mid)
            return 0, (None, 0, memoryview(data)[po:end], f)
        if f["som"]:
            mo, pl = 0, rest
        else:
            mo, pl = f["message_offset"], f["payload_length"]
            if pl != rest:
                return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, mid)
        if rl > self.cfg.max_message_bytes:
            return -RC_TOO_LONG, (RC_TOO_LONG, mid)
        if mo + pl > rl:
            return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, mid)
        rx = t.rx_msgs.get(mid)
        if rx is None:
            if len(t.rx_msgs) >= self.cfg.max_rx_messages:
                return NACK_NO_SES_MSG_AVAIL, None
            if self.buffered + rl > self.cfg.rx_buffer_limit:
                return NACK_NO_PKT_BUFFER, None
            rx = _RxMsg(mid, rl, f)
            t.rx_msgs[mid] = rx
            self.buffered += rl
        elif rx.length != rl:
            return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, mid)
        return 0, (rx, mo, memoryview(data)[po:end], f)

    def deliver(self, t: Any, item: Any, psn: int, now: float) -> None:
        if item is None:
            return
        rx, mo, payload, f = item
        ep = self.ep
        if self.cfg.packet_events:
            ep._events.append(ev.DataReceived(t.pdcid, psn, rx.mid if rx else 0, mo, len(payload)))
        if rx is None:
            ep._events.append(ev.MessageDelivered(t.pdcid, t.peer, 0, bytes(payload),
                                                  f.get("job_id", 0), f.get("pid_on_fep", 0),
                                                  f.get("resource_index", 0)))
            return
        if len(payload):
            rx.asm.place(mo, payload)
        if rx.asm.complete and t.rx_msgs.get(rx.mid) is rx:
            del t.rx_msgs[rx.mid]
            self.buffered -= rx.length
            ep._events.append(ev.MessageDelivered(t.pdcid, t.peer, rx.mid, bytes(rx.asm.buffer),
                                                  rx.job_id, rx.pid_on_fep, rx.resource_index))

    def release(self, t: Any) -> None:
        for rx in t.rx_msgs.values():
            self.buffered -= rx.length
        t.rx_msgs.clear()
