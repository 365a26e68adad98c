"""The initiator side of the SES: operations become request messages (cut by
:mod:`uet.ses.packets`), their responses complete them.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
  SES-S3  choice: REL = 1 (buffer_offset relative to the memory region); message ids are 16-bit, per
      endpoint, never reused while an operation with that id is outstanding.
  SES-S4  D.6: ATOMIC / FETCHING_ATOMIC carry the 4-byte atomic extension; AMO opcodes 0x0D-0x12 the
      36-byte compare-and-swap extension (the operand travels in the extension, no payload); other
      AMOs carry the operand as payload (little-endian, uet.ses.atomics).
  SES-S5  C.8: DATAGRAM_SEND only over UUD; RUDI only for idempotent operations (WRITE, READ, NO_OP);
      the loopback channel and integrations enforce it, the target checks it (SES-T3).
  SES-S6  D.3: an RMA offset outside 0..2^64-1 or a length beyond 32 bits raises SesError before
      anything is queued (never wrapped to a field's width).
  SES-I1  the operation is found by the transport's attribution (``message_id=`` given by the
      caller that knows which request the ACK/response answers), else by the header's message_id
      (next_hdr 4) / read_request_message_id (next_hdr 5). None found (or the peer differs) ->
      dropped and counted (``stats['unknown_response']``).
  SES-I2  RC OK completes sends, writes and non-fetching atomics; reads and fetching atomics complete
      when all their data arrived; any other RC fails the operation with that RC (deferrable
      sends: NO_MATCH means deferred, SES-M4). A DEFAULT_RESPONSE with RC NULL (D.9, built by the
      PDS for cleared duplicates) changes nothing.
  SES-I3  choice: when the transport says every request of an operation is acknowledged (the PDS's
      CACK, C.2, through ``acked``), the operation notes it (``Operation.acked``) and still
      completes only on its response (SES-I2, D.7): a driver can then tell a target that took the
      bytes but never answered from one that never got them (:meth:`acked_by_transport`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..native import Reassembly
from ..wire.uet_headers import CSWAP_AMO_OPCODES
from . import atomics as amo
from . import events as ev
from .common import (ATOMIC, DATAGRAM_SEND, DEFAULT_RESPONSE,
                     DEFERRABLE_RTR, DEFERRABLE_SEND, DEFERRABLE_TSEND, FETCHING_ATOMIC, M16, M32,
                     M64, MSG_ERROR, NH_RSP, NH_RSP_DATA, NH_STD, NO_OP, READ, RC_CANCELLED,
                     RC_NO_MATCH, RC_NULL, RC_OK, RENDEZVOUS_SEND, RENDEZVOUS_TSEND, SEND,
                     TAGGED_SEND, WRITE, MemoryRegion, Operation, SesError, field_int, rc_name)
from .packets import SesPacket, cut


def frozen(data: Any) -> bytes | memoryview:
    """``data`` as bytes nobody can change before it is sent: a read-only view of a ``bytes``
    object is kept as it is (a window of a larger immutable buffer, such as the simulators'
    one seeded stream that all their flows are views of, is not copied); anything else is
    copied, since its owner may change it after the call."""
    if type(data) is memoryview and data.readonly and type(data.obj) is bytes:
        return data
    return bytes(data)


class InitiatorSide:
    """Operations and their responses (a part of :class:`uet.ses.SesEndpoint`)."""

    _ops: dict[int, Operation]
    _out: list[Any]

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

    def _start(self, op: Operation, items: list[Any]) -> int:
        self._ops[op.mid] = op
        self._out.extend(items)
        return op.handle

    def _cut(self, peer: Any, opcode: int, data: bytes, mid: int, *, key: dict,
             header_data: int | None = None, dc: bool = False, buffer_offset: int = 0,
             ext: dict | None = None, small_ok: bool = False, medium_ok: bool = False,
             extra: dict | None = None) -> list[Any]:
        """SES-S1, SES-S2 (uet/ses/packets.py): the message as one packet or a Message to cut."""
        c = self.config
        common = self._common(opcode, dc=dc, buffer_offset=buffer_offset, **(extra or {}))
        return [cut(peer, mid, data, mtu=c.mtu, small_header=c.small_requests, common=common,
                    key=key, header_data=header_data, ext=ext, small_ok=small_ok,
                    medium_ok=medium_ok)]

    def send(self, peer: Any, data: bytes, *, header_data: int | None = None, dc: bool = False,
             job_id: int | None = None, pid_on_fep: int | None = None,
             resource_index: int | None = None) -> int:
        """SEND (D.1 0x05): the target places it in an untagged posted receive. The D.2 ids
        default to the configuration's."""
        mid = self._mid()
        ids = {k: v for k, v in (("job_id", job_id), ("pid_on_fep", pid_on_fep),
                                 ("resource_index", resource_index)) if v is not None}
        pk = self._cut(peer, SEND, frozen(data), mid, key={}, header_data=header_data,
                       dc=dc, small_ok=True, extra=ids)
        return self._start(Operation(self._handle(), "send", peer, mid, SEND, len(data)), pk)

    def tsend(self, peer: Any, data: bytes, match_bits: int, *, header_data: int | None = None,
              dc: bool = False) -> int:
        """TAGGED_SEND (0x09) with 64 match bits."""
        mid = self._mid()
        pk = self._cut(peer, TAGGED_SEND, bytes(data), mid,
                                   key={"match_bits": match_bits & M64}, header_data=header_data,
                                   dc=dc, medium_ok=True)
        return self._start(Operation(self._handle(), "tsend", peer, mid, TAGGED_SEND, len(data)), pk)

    def deferrable_send(self, peer: Any, data: bytes, *, match_bits: int | None = None,
                        dc: bool = False) -> int:
        """DEFERRABLE_SEND (0x08) or, with ``match_bits``, DEFERRABLE_TSEND (0x0B) (SES-M4)."""
        tagged = match_bits is not None
        opcode = DEFERRABLE_TSEND if tagged else DEFERRABLE_SEND
        mid = self._mid()
        itok = self._rng.randrange(1, 1 << 32)
        op = Operation(self._handle(), "deferrable_send", peer, mid, opcode, len(data), bytes(data),
                 itok=itok, params={"match_bits": match_bits, "dc": dc})
        return self._start(op, self._deferrable_packets(op, 0))

    def _deferrable_packets(self, op: Operation, ttok: int) -> list[SesPacket]:
        mb = op.params["match_bits"]
        key = {"match_bits": mb & M64} if mb is not None else {"memory_key": 0}
        key.update(initiator_restart_token=op.itok, target_restart_token=ttok)
        return self._cut(op.peer, op.opcode, op.data, op.mid, key=key, dc=op.params["dc"])

    def rendezvous_send(self, peer: Any, data: bytes, *, match_bits: int | None = None,
                        eager: int | None = None) -> int:
        """RENDEZVOUS_SEND (0x06) / RENDEZVOUS_TSEND (0x0A): eager part + target pull (SES-M5)."""
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
        op = Operation(self._handle(), "rendezvous_send", peer, mid, opcode, len(data), rdv_key=rkey,
                 rdv_rest=len(data) - n_eager)
        return self._start(op, [SesPacket(NH_STD, f, ext, data[:n_eager], peer, mid)])

    @staticmethod
    def _check_rma(offset: int, length: int) -> None:
        """SES-S6: an RMA range the wire can carry (64-bit buffer_offset, 32-bit request_length),
        checked before anything is queued."""
        if not 0 <= offset <= M64:
            raise SesError(f"offset {offset} is not a 64-bit buffer offset")
        if not 0 <= length <= M32:
            raise SesError(f"length {length} does not fit the 32-bit request_length")

    def write(self, peer: Any, memory_key: int, offset: int, data: bytes, *, dc: bool = False) -> int:
        """RMA WRITE (0x01) of ``data`` at ``offset`` in the target region ``memory_key``."""
        self._check_rma(offset, len(data))
        mid = self._mid()
        pk = self._cut(peer, WRITE, bytes(data), mid, key={"memory_key": memory_key & M64},
                                   buffer_offset=offset & M64, dc=dc, medium_ok=True)
        return self._start(Operation(self._handle(), "write", peer, mid, WRITE, len(data)), pk)

    def read(self, peer: Any, memory_key: int, offset: int, length: int) -> int:
        """RMA READ (0x02) of ``length`` bytes; OperationComplete.data holds them (SES-P1)."""
        return self._read(peer, memory_key, offset, length)

    def _read(self, peer: Any, memory_key: int, offset: int, length: int, on_done: Any = None) -> int:
        self._check_rma(offset, length)
        mid = self._mid()
        f = self._common(READ, message_id=mid, som=True, eom=True, request_length=length,
                         memory_key=memory_key & M64, buffer_offset=offset & M64)
        op = Operation(self._handle(), "read", peer, mid, READ, length, result=bytearray(0),
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
        pk = self._cut(peer, opcode, payload, mid, key={"memory_key": mkey & M64},
                                   buffer_offset=offset & M64, ext=ext, medium_ok=True)
        size = amo.datatype_size(dt) or 0
        op = Operation(self._handle(), "fetching_atomic" if fetch else "atomic", peer, mid, opcode,
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
        return self._start(Operation(self._handle(), "no_op", peer, mid, NO_OP), [SesPacket(NH_STD, f, None, b"", peer, mid)])

    def abort(self, handle: int, reason: str = "aborted") -> bool:
        """Terminate an outstanding message in error: MSG_ERROR (0x0F) to the target (SES-T9)."""
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

    def transport_acked(self, message_id: int) -> None:
        """SES-I3: the transport acknowledged every request of this operation."""
        op = self._ops.get(message_id)
        if op is not None:
            op.acked = True

    def acked_by_transport(self, handle: int) -> bool:
        """SES-I3: whether the outstanding operation ``handle`` had every request acknowledged by the
        transport while its response has not come (False once it completed or failed)."""
        return any(op.handle == handle and op.acked for op in self._ops.values())

    def transport_failed(self, message_id: int, reason: str) -> None:
        """The transport gave up on a request of this operation (PDC closed in error, RUDI retry
        limit): the operation fails with UNDELIVERABLE-like reason (C.5, C.7)."""
        op = self._ops.get(message_id)
        if op is not None:
            self._finish_failed(op, 0x1F, reason)  # UNDELIVERABLE

    def _on_response(self, nh: int, f: Mapping[str, Any], payload: bytes, peer: Any,
                     hint: int | None) -> None:
        if hint is not None:
            mid = hint
        elif nh == NH_RSP:
            mid = field_int(f, "message_id")
        elif nh == NH_RSP_DATA:
            mid = field_int(f, "read_request_message_id")
        else:
            mid = -1
        op = self._ops.get(mid)
        if op is None or (peer is not None and op.peer is not None and op.peer != peer):
            self.stats["unknown_response"] += 1
            return
        rc = field_int(f, "return_code")
        if nh == NH_RSP and field_int(f, "opcode") == DEFAULT_RESPONSE and rc == RC_NULL:
            self.stats["default_response"] += 1  # SES-I2 / D.9
            return
        if rc != RC_OK:
            if op.op == "deferrable_send" and rc == RC_NO_MATCH and not op.restarted:
                self.stats["deferred_sends"] += 1
                self._events.append(ev.SendDeferred(op.handle, op.mid, op.itok))
                return
            self._finish_failed(op, rc, f"target answered {rc_name(rc)}")
            return
        if nh == NH_RSP:
            if op.result is not None and op.length:  # data was expected
                if op.got < op.length:
                    self.stats["response_without_data"] += 1
                    return
            op.responded = True
            op.modified = field_int(f, "modified_length")
            if op.rdv_key is not None:
                self._maybe_finish_rdv(op)
                return
            self._finish_ok(op)
            return
        mo = field_int(f, "message_offset") if nh == NH_RSP_DATA else 0
        if op.result is None or mo < 0 or mo + len(payload) > op.length:
            self.stats["unknown_response"] += 1
            return
        if field_int(f, "payload_length") != len(payload):
            self.stats["malformed"] += 1
            return
        if op.asm is None:
            op.asm = Reassembly(op.length)
        op.got += op.asm.place(mo, payload)  # exact: a repeated piece adds nothing
        if op.got >= op.length:
            self._finish_ok(op)

    def _finish_ok(self, op: Operation) -> None:
        self._ops.pop(op.mid, None)
        data = None
        if op.result is not None:  # a data-returning operation: its bytes (zeros if none came)
            data = bytes(op.asm.take()) if op.asm is not None else bytes(op.length)
        if op.on_done is not None:
            op.on_done(True, data)
            return
        if op.op == "rtr":
            return
        self._events.append(ev.OperationComplete(op.handle, op.op, op.mid, RC_OK,
                                                 op.modified if data is None else len(data), data))

    def _finish_failed(self, op: Operation, rc: int, reason: str) -> None:
        self._ops.pop(op.mid, None)
        if op.rdv_key is not None:
            self.deregister(op.rdv_key)
        if op.on_done is not None:
            op.on_done(False, None)
            return
        if op.op == "rtr":
            return
        self._events.append(ev.OperationFailed(op.handle, op.op, op.mid, rc, reason))

    def _maybe_finish_rdv(self, op: Operation) -> None:
        r = self.regions.get(op.rdv_key) if op.rdv_key is not None else None
        if op.responded and (r is None or r.served >= op.rdv_rest):
            self.deregister(op.rdv_key)  # type: ignore[arg-type]
            self._ops.pop(op.mid, None)
            self._events.append(ev.OperationComplete(op.handle, op.op, op.mid, RC_OK, op.length))

    def _rdv_served(self, region: MemoryRegion) -> None:
        for op in self._ops.values():
            if op.rdv_key == region.key:
                if region.served >= op.rdv_rest:
                    self._maybe_finish_rdv(op)
                return

    def _on_rtr(self, f: Mapping[str, Any], peer: Any, mid: int, ref: Any) -> SesPacket:
        itok, ttok = field_int(f, "initiator_restart_token"), field_int(f, "target_restart_token")
        for op in list(self._ops.values()):
            if op.op == "deferrable_send" and op.itok == itok and op.peer == peer and not op.restarted:
                del self._ops[op.mid]
                op.mid = self._mid()
                op.restarted = True
                self._ops[op.mid] = op
                self._out.extend(self._deferrable_packets(op, ttok))
                return self._rsp(peer, mid, RC_OK, ref)
        return self._fail(peer, mid, DEFERRABLE_RTR, RC_NO_MATCH, ref, "no deferred send with that token")
