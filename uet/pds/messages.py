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

The endpoint's hot path (:meth:`uet.pds.Endpoint.receive_datagram`) handles the common case - a
SEND standard header for a message already in reassembly - inline, reading only the header fields
it needs; whatever it does not handle comes here, with identical results.

SES integration (issue 5; uet-facts C.3, C.8, D.7; rules X1-X6 in uet/pds/endpoint.py): when the
endpoint has an SES sublayer (``Endpoint.ses_layer``, a :class:`uet.ses.SesEndpoint`), ``admit``
hands every request with an SES header (next_hdr 1-6) to it instead of the SEND reassembly here,
and ``deliver`` calls ``ses_layer.receive_bytes`` (RUD: on arrival; ROD: in PSN order) and keeps
the response it returns for the ACK of that PSN. :class:`SesOut` carries one
:class:`uet.ses.SesPacket` as one PDS request (its header and payload verbatim).
"""

from __future__ import annotations

from typing import Any

from .. import native
from ..ses.budget import BudgetLimits, ReceiveBudget
from . import events as ev
from ..wire.fast import fast

SEND = 0x05  # D.1
RC_UNSUPPORTED_OP, RC_UNSUPPORTED_SIZE, RC_TOO_LONG = 0x06, 0x07, 0x22  # D.8
NACK_NO_PKT_BUFFER, NACK_NO_SES_MSG_AVAIL = 0x07, 0x09  # B.11

_STD = fast("ses.std")
_SMALL = fast("ses.small")
_MEDIUM = fast("ses.medium")
_STD_SOM = _STD.layout(opcode=SEND, som=1)
_STD_MID = _STD.layout(opcode=SEND, som=0)
_SMALL_L = _SMALL.layout()
# The endpoint's hot path reads a standard header with the positions of the SOM = 0 variant;
# the fields it also uses for SOM = 1 (opcode, flags, message_id, request_length) sit at the
# same place in both variants, so one reader serves both.
SES_STD_SIZE = _STD_MID.size
assert _STD_SOM.size == SES_STD_SIZE and all(
    _STD_SOM.position(n) == _STD_MID.position(n)
    for n in ("opcode", "eom", "som", "message_id", "request_length"))


class OutMessage:
    """One message being sent: its bytes and the SES header constants of its packets."""

    __slots__ = ("handle", "data", "view", "length", "job_id", "pid_on_fep", "resource_index",
                 "message_id", "next_off", "unacked", "all_queued", "done", "failed", "nh",
                 "ses_size", "pk", "_som", "_mid", "_small", "_small_int")

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
        self.ses_size = _STD_MID.size
        self.pk: Any = None  # the initiator's header constants for this message's packets
        self._som = 0
        self._mid = 0
        self._small = b""
        self._small_int = 0

    def prepare(self, cfg: Any) -> None:
        common = {"opcode": SEND, "job_id": self.job_id, "pid_on_fep": self.pid_on_fep,
                  "resource_index": self.resource_index, "request_length": self.length}
        if cfg.small_header and self.length <= cfg.mtu and self.length <= 0x3FFF:
            self.nh = 1
            self.ses_size = _SMALL_L.size
            self._small_int = _SMALL_L.const(dict(common, som=1, eom=1))
            self._small = self._small_int.to_bytes(_SMALL_L.size, "big")
            return
        self.nh = 3
        self.ses_size = _STD_MID.size
        ids = dict(common, message_id=self.message_id)
        self._som = _STD_SOM.const(dict(ids, som=1, eom=self.length <= cfg.mtu))
        self._mid = _STD_MID.const(dict(ids, som=0))

    def ses_int(self, off: int, ln: int, eom: bool, _sh_len=_STD_MID.shift["payload_length"],
                _sh_off=_STD_MID.shift["message_offset"], _eom=1 << _STD_MID.shift["eom"]) -> int:
        """The SES header of the packet at ``off`` as an int of ``ses_size`` bytes."""
        if self.nh == 1:
            return self._small_int
        if off == 0:
            return self._som
        v = self._mid | (ln << _sh_len) | (off << _sh_off)
        return v | _eom if eom else v

    def ses_mid_const(self) -> int:
        """The standard header of this message's packets after the first, with payload_length,
        message_offset and EOM still 0."""
        return self._mid

    def ses_header(self, off: int, ln: int, eom: bool) -> bytes:
        if self.nh == 1:
            return self._small
        return self.ses_int(off, ln, eom).to_bytes(self.ses_size, "big")


class SesOut(OutMessage):
    """One SES packet sent as one PDS request (X1): the header bytes (SES header + extension)
    and payload are the packet's, so the PDS never re-encodes them. The SES packet must fit one
    PDS packet (SesConfig.mtu <= PdsConfig.mtu)."""

    __slots__ = ("ses_mid", "is_req", "_hdr_int")

    def __init__(self, handle: int, pkt: Any):
        super().__init__(handle, bytes(pkt.payload))
        hdr = pkt.header_bytes()
        self.nh = pkt.next_hdr
        self.ses_size = len(hdr)
        self._hdr_int = int.from_bytes(hdr, "big")
        self.ses_mid = pkt.message_id
        self.is_req = pkt.next_hdr in (1, 2, 3)

    def prepare(self, cfg: Any) -> None:
        return None

    def ses_int(self, off: int, ln: int, eom: bool, *_: Any) -> int:  # type: ignore[override]
        return self._hdr_int

    def ses_mid_const(self) -> int:
        return self._hdr_int

    def ses_header(self, off: int, ln: int, eom: bool) -> bytes:
        return self._hdr_int.to_bytes(self.ses_size, "big")


_SES_ITEM = object()  # first element of an admitted item bound for the SES sublayer


class _RxMsg:
    """One message in reassembly. ``got`` mirrors ``asm.received`` (the sum of what ``place``
    reported new), so completion is a comparison instead of a call into the reassembly engine.
    Its storage (``asm.allocated``) is charged to ``peer`` in the endpoint's receive budget."""

    __slots__ = ("mid", "length", "asm", "got", "job_id", "pid_on_fep", "resource_index", "peer")

    def __init__(self, mid: int, length: int, f: dict, peer: str):
        self.mid = mid
        self.length = length
        self.asm = native.Reassembly(length)
        self.got = 0
        self.job_id = f.get("job_id", 0)
        self.pid_on_fep = f.get("pid_on_fep", 0)
        self.resource_index = f.get("resource_index", 0)
        self.peer = peer


class MessageLayer:
    """Target-side SEND reassembly; one per endpoint, state kept on each target PDC, partial
    messages and their storage counted per peer address in ``budget`` (W5)."""

    def __init__(self, ep: Any):
        self.ep = ep
        self.cfg = cfg = ep.config
        self.budget = ReceiveBudget(BudgetLimits(
            messages=cfg.max_rx_messages, messages_per_peer=cfg.max_rx_messages_per_peer,
            bytes=cfg.rx_buffer_limit, bytes_per_peer=cfg.rx_buffer_per_peer))

    @property
    def buffered(self) -> int:
        """Reassembly storage held, all peers (bytes)."""
        return self.budget.bytes

    def reserve(self, rx: _RxMsg, offset: int, n: int) -> bool:
        """Charge and allocate the storage a placement at ``offset`` needs (W5: False means NACK
        NO_PKT_BUFFER, nothing changed). Bytes are charged as they arrive, chunk by chunk."""
        need = rx.asm.needed(offset, n)
        if need:
            if not self.budget.charge(rx.peer, need):
                return False
            rx.asm.reserve(offset, n)
        return True

    def admit(self, t: Any, data: bytes, off: int, end: int, nh: int) -> tuple[int, Any]:
        sl = self.ep.ses_layer
        if sl is not None and 1 <= nh <= 6:  # X2: the SES sublayer takes it
            code = sl.admit(t.peer, nh, memoryview(data)[off:end])  # R2 of uet/ses/endpoint.py
            if code:
                return code, None
            return 0, (_SES_ITEM, nh, bytes(data[off:end]))
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
            if not self.budget.open_message(t.peer):
                return NACK_NO_SES_MSG_AVAIL, None
            rx = _RxMsg(mid, rl, f, t.peer)
            if not self.reserve(rx, mo, pl):
                self.budget.close_message(t.peer)
                return NACK_NO_PKT_BUFFER, None
            t.rx_msgs[mid] = rx
            self.ep.arm_sweep(self.cfg.target_idle_timeout)
        elif rx.length != rl:
            return -RC_UNSUPPORTED_SIZE, (RC_UNSUPPORTED_SIZE, mid)
        elif not self.reserve(rx, mo, pl):
            return NACK_NO_PKT_BUFFER, None
        return 0, (rx, mo, memoryview(data)[po:end], f)

    def deliver(self, t: Any, item: Any, psn: int, now: float) -> None:
        if item is None:
            return
        if item[0] is _SES_ITEM:
            self.deliver_ses(t, item[1], item[2], psn)
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
            rx.got += rx.asm.place(mo, payload)
        if rx.got == rx.length and t.rx_msgs.get(rx.mid) is rx:
            self.complete(t, rx)

    def deliver_ses(self, t: Any, nh: int, data: bytes, psn: int) -> None:
        """X2/X3: one SES packet to the SES sublayer; its response is kept for the ACK of
        ``psn`` (bounded: the oldest are forgotten beyond two windows, a choice)."""
        ep = self.ep
        sl = ep.ses_layer
        rsp = sl.receive_bytes(nh, data, peer=t.peer, request_ref=psn, now=ep._now)
        if sl.in_reassembly:
            ep.arm_sweep(sl.config.partial_timeout)  # R3 of uet/ses/endpoint.py
        if rsp is not None:
            store = t.ses_rsps
            store[psn] = (rsp.next_hdr, rsp.to_bytes())
            if len(store) > 2 * t.size:
                del store[next(iter(store))]
            t.ses_late.append(psn)

    def complete(self, t: Any, rx: _RxMsg) -> None:
        """Hand a whole message up: a bytes copy, or with ``zero_copy_delivery`` the reassembly
        buffer itself (a bytearray, or a memoryview of its lazily paged mapping when the
        message is longer than one reassembly chunk)."""
        del t.rx_msgs[rx.mid]
        self._forget(rx)
        data = rx.asm.take()
        if not self.cfg.zero_copy_delivery:
            data = bytes(data)
        self.ep._events.append(ev.MessageDelivered(t.pdcid, t.peer, rx.mid, data, rx.job_id,
                                                   rx.pid_on_fep, rx.resource_index))

    def _forget(self, rx: _RxMsg) -> None:
        self.budget.release(rx.peer, rx.asm.allocated)
        self.budget.close_message(rx.peer)

    def release(self, t: Any) -> None:
        """The PDC is gone: its partial messages and their storage are freed."""
        for rx in t.rx_msgs.values():
            self._forget(rx)
            rx.asm.take()
        t.rx_msgs.clear()
