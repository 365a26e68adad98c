"""The target side of the SES: memory regions and posted receives, and what each request does -
its checks and return codes, matching, reassembly (:class:`uet.native.Reassembly`, charged to the
peer's receive budget), RMA, atomics, the responses.

RULES (each names its docs/facts.md row; "choice" marks a project decision where facts are silent)
================================================================================================
Target: admission and return codes (D.8)
  SES-T1  D.2: IE set -> INITIATOR_ERR (0x23, "echoes the IE flag"); the message is dropped.
  SES-T2  choice: ``check_job``: a request whose job_id is not ours -> BAD_JOB_ID (0x1B).
  SES-T3  C.8: on RUDI anything but WRITE/READ/NO_OP -> OP_VIOLATION (0x18); DATAGRAM_SEND outside
      UUD -> OP_VIOLATION; on UUD anything but DATAGRAM_SEND is dropped and counted (no response
      exists, B.14).
  SES-T4  D.1: opcodes this implementation does not execute (TSEND_ATOMIC, TSEND_FETCH_ATOMIC,
      reserved 0x10-0x2F, vendor 0x30-0x3E, extended 0x3F) -> UNSUPPORTED_OP (0x06).
  SES-T5  D.3: packet geometry: payload_length must equal the bytes present, message_offset +
      payload_length <= request_length, single-packet headers carry exactly request_length
      bytes -> otherwise UNSUPPORTED_SIZE (0x07); request_length beyond ``max_message_bytes`` ->
      TOO_LONG (0x22).
  SES-T6  RMA (WRITE, READ, ATOMIC): memory key not registered -> BAD_MKEY (0x1C); region without the
      needed permission -> PERM_VIOLATION (0x17); [offset, offset + request_length) not inside the
      region -> AT_OUT_OF_RANGE (0x0C); REL = 0 (absolute) offsets are taken relative to the
      region's registered base address (below it -> BAD_ADDR 0x1D).
  SES-T7  D.6: atomic datatype not supported -> AMO_UNSUPPORTED_DT (0x10), AMO opcode not supported ->
      AMO_UNSUPPORTED_OP (0x0F), operand length not the datatype size -> AMO_UNSUPPORTED_SIZE
      (0x11), offset not a multiple of the size -> AMO_UNALIGNED (0x12).
  SES-T8  a message fails at most once: the first failing packet gets the error response and a
      MessageError event; later packets of that message are swallowed without a response.
  SES-T9  MSG_ERROR (0x0F) terminates the named message in error: its partial state is dropped, a
      MessageError event is raised, the MSG_ERROR itself is answered OK.

Target: sends and matching
  SES-K1  choice (facts silent on the scope of a message id): a multi-packet message is named by
      (source address, initiator id, message id): the D.3 ``initiator`` field tells apart two
      initiators behind one address (processes of one host), whose message ids are drawn
      independently. Single-packet messages need no name.
  SES-M1  untagged sends match untagged posted receives in posting order; tagged ones match the
      first tagged receive with ``(bits ^ match_bits) & ~ignore_bits == 0``. The first packet of
      a message to arrive (any packet; RUD reorders) binds the whole message.
  SES-M2  no matching receive -> the message goes to the unexpected list (bounded by
      ``unexpected_limit`` messages and ``unexpected_bytes``, one peer at most half of each
      (choice, issue 11); beyond -> NO_MATCH 0x05) and its
      response says list = OVERFLOW (D.7); post_recv consults the unexpected list first.
  SES-M3  a message longer than the receive's capacity -> TOO_LONG, the receive completes in error.
  SES-M4  D.9 deferrable send (choice where facts are silent): no matching receive -> the target
      keeps only (initiator token, its own target token, tag, length), answers NO_MATCH and drops
      the payload; when a matching receive is posted it sends DEFERRABLE_RTR carrying both tokens;
      the initiator answers it OK and restarts the message (new message id) with both tokens;
      the restarted message lands in the bound receive. An unknown target token -> NO_MATCH,
      which fails the restarted send.
  SES-M5  D.5/D.9 rendezvous: the initiator registers its buffer under a fresh key and sends the
      eager part (at most one packet) with the rendezvous extension (eager_length, read_offset,
      read_match_bits = that key); the target places the eager bytes, answers OK, and READs the
      rest from the initiator; MessageReceived follows the pull. The initiator completes when the
      response arrived and every byte beyond the eager part was read.
  SES-M7  choice (``auto_receive``, what a sink such as ``uet recv`` wants): an untagged message
      with no posted receive gets a receive of its own, of any length, instead of going to the
      unexpected list.
  SES-M8  choice (``rx_digest``, for a sink that checks what arrived and need not keep it: the
      simulators, issue 29): a SEND's MessageReceived carries a uet.native.digest.Digest (length,
      a 64-bit hash of its bytes) as ``data``; its reassembly hashes and lets go of complete
      chunks as they line up (DigestReassembly), so it holds the window, not the message. Same
      packets, counts, budget charges and responses as without it.
  SES-M6  choice: every message gets one response, when its last byte lands (delivery complete:
      responses mean "placed at the target", so DC = 1 needs no extra step); opcode RESPONSE
      (1) with modified_length = bytes placed, RESPONSE_W_DATA (2) with data.

Target: responses (C.3, C.9, D.7)
  SES-P1  READ and fetching atomics: data up to ``max_ack_data`` (MAX_ACK_DATA_SIZE 16) rides on the
      ACK as a small response with data (next_hdr 6, original_request_psn = the transport's id
      of the request); beyond that it goes as separate response-with-data packets (next_hdr 5,
      at most ``mtu`` each, message_offset, read_request_message_id) and the ACK carries none.
      On RUDI (one response per request) the limit is the request's own response packet:
      ``inline_limit`` = mtu, next_hdr 5.
  SES-P2  errors answer with a plain response (next_hdr 4) carrying the return code.
  SES-P3  A.1 (the reference provider drops next_hdr 1, 2 and 6): a peer is answered in the header
      family it uses. The small response with data of SES-P1 goes only to a peer that sent a small
      or medium request itself (the last ``COMPACT_PEERS`` such peers are remembered), and never
      with ``ses_header = "standard"``; any other peer gets the response with data (next_hdr 5,
      20 bytes) in its place, on the ACK as SES-P1 says.

Target: resources (issue 11; uet.ses.budget)
  SES-R1  partial multi-packet messages (standard header, not SOM + EOM) are counted per peer and in
      all (``max_rx_messages_per_peer``, ``max_rx_messages``), with the reassembly storage they
      hold (``rx_bytes_per_peer``, ``rx_bytes``): the chunks of uet.native.Reassembly that bytes
      landed in, charged as they are taken, never the request_length a header claims.
  SES-R2  a transport that can refuse a packet before it counts as received asks :meth:`admit`
      first: a new partial message beyond SES-R1's message limits -> NACK NO_SES_MSG_AVAIL (B.11
      0x09), payload beyond the byte limits -> NO_PKT_BUFFER (0x07). What arrives anyway (a
      transport that does not ask) is counted all the same.
  SES-R3  choice: a partial message idle for ``partial_timeout`` (no packet of it arrived, by the
      ``now`` the transport passes) is dropped by :meth:`expire` with a MessageError (DROPPED,
      D.8 0x24); a posted receive it had bound is posted again.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..native import Reassembly
from ..native.digest import DigestReassembly
from ..wire.uet_headers import RENDEZVOUS_OPCODES
from . import atomics as amo
from . import events as ev
from .common import (ATOMIC, DATAGRAM_SEND, DEFERRABLE_OPCODES, DEFERRABLE_RTR, FETCHING_ATOMIC,
                     LIST_EXPECTED, LIST_OVERFLOW, M14, M16, M32, M64, MAX_ACK_DATA_SIZE,
                     MSG_ERROR, NH_RSP, NH_RSP_DATA, NH_RSP_DATA_SMALL, NH_STD, NO_OP, READ,
                     RC_AT_OUT_OF_RANGE, RC_BAD_ADDR, RC_BAD_JOB_ID, RC_BAD_MKEY, RC_CANCELLED,
                     RC_INITIATOR_ERR, RC_NO_MATCH, RC_OK, RC_OP_VIOLATION, RC_PERM_VIOLATION,
                     RC_TOO_LONG, RC_UNSUPPORTED_OP, RC_UNSUPPORTED_SIZE, RESPONSE,
                     RESPONSE_W_DATA, RUDI_OPCODES, SEND_OPCODES, SUPPORTED_OPCODES, TAGGED_OPCODES,
                     WRITE, Deferred, MemoryRegion, Operation, Posted, RxMessage, SesError,
                     field_int, rc_name)
from .packets import STD_SIZE, SesPacket, read_std




COMPACT_PEERS = 4096  # SES-P3: peers remembered as senders of small or medium requests


class TargetSide:
    """Regions, receives and the handling of requests (a part of :class:`uet.ses.SesEndpoint`)."""

    _rx: dict[tuple[Any, int, int], RxMessage]
    _compact_peers: dict[Any, None]  # SES-P3, oldest first
    lanes: Any = None  # the C receive lane's tables (uet.native.rxlane) the PDS below handed over

    def register(self, key: int, buffer: bytearray, *, base: int = 0, readable: bool = True,
                 writable: bool = True, atomic: bool = True) -> MemoryRegion:
        """Register ``buffer`` under memory key ``key`` (SES-T6)."""
        if not 0 <= key <= M64:
            raise SesError("memory key must fit 64 bits")
        r = MemoryRegion(key, buffer, base, readable, writable, atomic)
        self.regions[key] = r
        return r

    def deregister(self, key: int) -> None:
        self.regions.pop(key, None)

    def post_recv(self, capacity: int | None = None, *, match_bits: int | None = None,
                  ignore_bits: int = 0) -> int:
        """Post a receive (tagged when ``match_bits`` is given, SES-M1); returns its handle, which the
        MessageReceived event names."""
        p = Posted(self._handle(), capacity, match_bits, ignore_bits & M64)
        self._offer(p)
        return p.handle

    def _offer(self, p: Posted, *, front: bool = False) -> None:
        """A receive is free: the unexpected list first (SES-M2), then a deferred send waiting for
        it (SES-M4), else it waits (at the front of the queue when it was posted earlier, SES-R3)."""
        tagged = p.match_bits is not None
        capacity = p.capacity
        for rx in self._unexpected:  # SES-M2: unexpected list first
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
        for k in list(self._deferred_order):  # SES-M4: a deferred send waiting for this receive
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

    def reassembling(self, peer: Any, message_id: int, initiator: int = 0) -> bool:
        """Whether a multi-packet message (SES-K1) is in reassembly at this target."""
        return (peer, initiator, message_id) in self._rx

    @property
    def in_reassembly(self) -> int:
        """Multi-packet messages in reassembly (SES-R1; the host sweeps them while any is, HOST-H4 of
        uet/host.py)."""
        return len(self._rx)

    def admit(self, peer: Any, next_hdr: int, data: bytes | bytearray | memoryview) -> int:
        """SES-R1/SES-R2 for a transport that can refuse a packet before it counts as received (the PDS,
        PDS-W5 of uet/pds/target.py): 0, or the B.11 NACK code to answer with - NO_SES_MSG_AVAIL
        (0x09) for a new multi-packet message beyond the partial-message limits, NO_PKT_BUFFER
        (0x07) when the storage its payload needs would exceed the peer's or the endpoint's
        bytes."""
        if next_hdr != NH_STD:
            return 0  # small and medium requests are whole messages; responses hold nothing
        size = len(data) - STD_SIZE
        if size < 0:
            return 0  # receive() answers it (SES-E1)
        opcode, som, eom, _, mid, initiator, length, _, offset = read_std(data)
        if som and eom:
            return 0
        rx = self._rx.get((peer, initiator, mid))  # SES-K1
        if rx is None and not self.budget.fits_message(peer):
            return 0x09
        if opcode in SEND_OPCODES:
            mo = 0 if som else offset
            if rx is not None and rx.asm is not None:
                need = rx.asm.needed(mo, size)
            else:
                need = Reassembly(length).needed(mo, size)
            if not self.budget.fits_bytes(peer, need):
                return 0x07
        return 0

    def _rx_put(self, key: tuple[Any, int, int], rx: RxMessage) -> None:
        old = self._rx.get(key)
        if old is None:
            self.budget.open_message(rx.peer, force=True)
        elif old is not rx:
            old.release_lane()  # one C lane per SES-K1 name: the C lane must never see the old one
        rx.last = self._now
        self._rx[key] = rx

    def _rx_pop(self, key: tuple[Any, int, int]) -> RxMessage | None:
        rx = self._rx.pop(key, None)
        if rx is not None:
            rx.release_lane()
            self.budget.close_message(rx.peer)
            self.budget.release(rx.peer, rx.charged)
            rx.charged = 0
        return rx

    def expire(self, now: float) -> int:
        """SES-R3: drop the partial messages idle for ``partial_timeout`` (their initiator is gone, or
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

    def _rsp(self, peer: Any, mid: int, rc: int, ref: Any, *, modified: int = 0,
             lst: int = LIST_EXPECTED, opcode: int = RESPONSE) -> SesPacket:
        f = {"list": lst, "opcode": opcode, "return_code": rc, "message_id": mid & M16,
             "job_id": self.config.job_id, "modified_length": modified & M32}
        return SesPacket(NH_RSP, f, None, b"", peer, mid & M16, ref)

    def _fail(self, peer: Any, mid: int, opcode: int, rc: int, ref: Any, reason: str) -> SesPacket:
        self.stats["rc_" + rc_name(rc)] += 1
        self._events.append(ev.MessageError(peer, mid, opcode, rc, reason))
        return self._rsp(peer, mid, rc, ref)

    def _on_request(self, nh: int, f: Mapping[str, Any], ext: Mapping[str, Any], payload: bytes,
                    peer: Any, ref: Any, mode: str, inline_limit: int | None) -> SesPacket | None:
        op = field_int(f, "opcode")
        mid = field_int(f, "message_id") if nh == NH_STD else 0
        self.stats["requests"] += 1
        if nh != NH_STD:
            self._note_compact(peer)
        if mode == "uud":  # SES-T3: no response exists
            if op != DATAGRAM_SEND:
                self.stats["uud_not_datagram"] += 1
                self._events.append(ev.MessageError(peer, mid, op, RC_OP_VIOLATION,
                                                    "only DATAGRAM_SEND is legal over UUD"))
                return None
            return self._on_datagram(f, payload, peer, nh)
        if f.get("ie"):  # SES-T1
            self._rx_pop((peer, field_int(f, "initiator"), mid)) if nh == NH_STD else None
            return self._fail(peer, mid, op, RC_INITIATOR_ERR, ref, "initiator error (IE)")
        if self.config.check_job and field_int(f, "job_id") != self.config.job_id:  # SES-T2
            return self._fail(peer, mid, op, RC_BAD_JOB_ID, ref, f"job {field_int(f, 'job_id')} is not ours")
        if mode == "rudi" and op not in RUDI_OPCODES:  # SES-T3
            return self._fail(peer, mid, op, RC_OP_VIOLATION, ref,
                              "RUDI carries idempotent operations only (C.8)")
        if op == DATAGRAM_SEND:
            return self._fail(peer, mid, op, RC_OP_VIOLATION, ref, "DATAGRAM_SEND is UUD only (C.8)")
        if op == NO_OP:
            return self._rsp(peer, mid, RC_OK, ref)
        if op == MSG_ERROR:  # SES-T9
            rx = self._rx_pop((peer, field_int(f, "initiator"), mid))
            if rx is not None and rx.unexpected and rx in self._unexpected:
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
            self._events.append(ev.MessageError(peer, mid, op, RC_CANCELLED,
                                                "message terminated by the initiator (MSG_ERROR)"))
            return self._rsp(peer, mid, RC_OK, ref)
        if op not in SUPPORTED_OPCODES:  # SES-T4
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
        """SES-T5: (message_offset, request_length) or a return code."""
        rl = field_int(f, "request_length")
        op = field_int(f, "opcode")
        if rl < 0 or field_int(f, "message_offset") < 0:
            return RC_UNSUPPORTED_SIZE
        carries = op not in (READ, DEFERRABLE_RTR) and not (op in (ATOMIC, FETCHING_ATOMIC))
        if rl > self.config.max_message_bytes:
            return RC_TOO_LONG
        if nh != NH_STD or f.get("som"):
            mo = 0
            if nh != NH_STD and carries and rl != len(payload):
                return RC_UNSUPPORTED_SIZE
        else:
            mo = field_int(f, "message_offset")
            if field_int(f, "payload_length") != len(payload):
                return RC_UNSUPPORTED_SIZE
        if op in RENDEZVOUS_OPCODES:
            return mo, rl
        if carries and mo + len(payload) > rl:
            return RC_UNSUPPORTED_SIZE
        return mo, rl

    def _region(self, f: Mapping[str, Any], need: str, length: int) -> tuple[MemoryRegion, int] | int:
        """SES-T6: (region, offset in region) or a return code."""
        r = self.regions.get(field_int(f, "memory_key"))
        if r is None:
            return RC_BAD_MKEY
        if not getattr(r, need):
            return RC_PERM_VIOLATION
        off = field_int(f, "buffer_offset")
        if not f.get("rel"):
            off -= r.base
            if off < 0:
                return RC_BAD_ADDR
        if off < 0 or off + length > len(r.buffer):
            return RC_AT_OUT_OF_RANGE
        return r, off

    def _on_datagram(self, f: Mapping[str, Any], payload: bytes, peer: Any, nh: int) -> None:
        if not (f.get("som") and f.get("eom")) or field_int(f, "request_length") != len(payload):
            self.stats["malformed"] += 1
            return None
        self.stats["datagrams"] += 1
        self._events.append(ev.DatagramReceived(peer, payload))
        return None

    def _on_write(self, nh: int, f: Mapping[str, Any], payload: bytes, peer: Any, mid: int, mo: int,
                  rl: int, ref: Any) -> SesPacket | None:
        key = (peer, field_int(f, "initiator"), mid)  # SES-K1
        rx = self._rx.get(key) if nh == NH_STD else None
        if rx is None:
            reg = self._region(f, "writable", rl)
            if isinstance(reg, int):
                if nh == NH_STD and rl > len(payload):
                    self._rx_put(key, RxMessage(peer, mid, WRITE, rl, None, failed=True, kind="write"))
                    self._rx[key].offsets.add(mo)
                    self._rx[key].got = len(payload)
                return self._fail(peer, mid, WRITE, reg, ref, "write refused")
            region, base = reg
            rx = RxMessage(peer, mid, WRITE, rl, None, kind="write", region=region, base=base,
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
        """SES-P1: inline (small response with data) or separate response-with-data packets."""
        n = len(data)
        if n <= self.config.max_ack_data and n <= limit and self._compact_ok(peer):
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

    def _note_compact(self, peer: Any) -> None:
        """SES-P3: ``peer`` sent a small or medium request."""
        seen = self._compact_peers
        if peer in seen:
            return
        if len(seen) >= COMPACT_PEERS:
            del seen[next(iter(seen))]
        seen[peer] = None

    def _compact_ok(self, peer: Any) -> bool:
        """SES-P3: whether ``peer`` may be answered with a small response with data."""
        return self.config.ses_header == "auto" and peer in self._compact_peers

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
        a_op, dt = field_int(ext, "atomic_opcode"), field_int(ext, "atomic_datatype")
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
        rc, new = amo.apply(a_op, dt, old, payload, field_int(ext, "compare_value"), field_int(ext, "swap_value"))
        if rc != amo.RC_OK:
            return self._fail(peer, mid, op, rc, ref, "atomic failed")
        if new is not None:
            region.buffer[off:off + size] = new
        self._events.append(ev.AtomicDone(peer, mid, region.key, off, a_op, dt, new is not None))
        if op == FETCHING_ATOMIC:
            return self._data_responses(peer, mid, old, ref, max(size, MAX_ACK_DATA_SIZE))
        return self._rsp(peer, mid, RC_OK, ref, modified=size if new is not None else 0)

    def _unexpected_fits(self, peer: Any, length: int) -> bool:
        """SES-M2: room on the unexpected list for a message of ``length`` from ``peer``: within
        the list's limits, and within half of them for any one peer (so one sender's messages
        cannot take the whole list from the others)."""
        c = self.config
        if (len(self._unexpected) >= c.unexpected_limit
                or self._unexpected_bytes + length > c.unexpected_bytes):
            return False
        mine = [rx for rx in self._unexpected if rx.peer == peer]
        return (len(mine) < max(1, c.unexpected_limit // 2)
                and sum(rx.length for rx in mine) + length <= max(1, c.unexpected_bytes // 2))

    def _match_posted(self, tagged: bool, tag: int) -> Posted | None:
        for p in self._posted:
            if p.matches(tagged, tag):
                self._posted.remove(p)
                return p
        if not tagged and self.config.auto_receive:  # SES-M7: a sink takes every untagged message
            return Posted(self._handle(), None, None)
        return None

    def _recv_too_long(self, p: Posted, rx: RxMessage) -> None:
        self._events.append(ev.RecvFailed(p.handle, RC_TOO_LONG,
                                          f"message of {rx.length} bytes > capacity {p.capacity}"))

    def _on_send(self, nh: int, op: int, f: Mapping[str, Any], ext: Mapping[str, Any],
                 payload: bytes, peer: Any, mid: int, mo: int, rl: int, ref: Any) -> SesPacket | None:
        key = (peer, field_int(f, "initiator"), mid)  # SES-K1
        rx = self._rx.get(key) if nh == NH_STD else None
        tagged = op in TAGGED_OPCODES
        first = rx is None
        rsp: SesPacket | None = None
        if first:
            tag = field_int(f, "match_bits") if tagged else None
            rx = RxMessage(peer, mid, op, rl, tag,
                           header_data=field_int(f, "header_data") if f.get("hd") else 0,
                           dc=bool(f.get("dc")), ids=(field_int(f, "job_id"),
                                                      field_int(f, "pid_on_fep"),
                                                      field_int(f, "resource_index")))
            recv: Posted | None = None
            if op in RENDEZVOUS_OPCODES:
                el = field_int(ext, "eager_length")
                if el != len(payload) or el > rl:
                    return self._fail(peer, mid, op, RC_UNSUPPORTED_SIZE, ref, "rendezvous eager length")
            if op in DEFERRABLE_OPCODES and field_int(f, "target_restart_token"):
                d = self._deferred.pop((peer, field_int(f, "target_restart_token")), None)
                if d is None or d.recv is None:
                    rx.failed = True
                    rsp = self._fail(peer, mid, op, RC_NO_MATCH, ref, "unknown target restart token")
                else:
                    recv = d.recv
            else:
                recv = self._match_posted(tagged, tag or 0)
            if rsp is None and recv is None:
                if op in DEFERRABLE_OPCODES:  # SES-M4
                    ttok = self._rng.randrange(1, 1 << 32)
                    while (peer, ttok) in self._deferred:
                        ttok = self._rng.randrange(1, 1 << 32)
                    self._deferred[(peer, ttok)] = Deferred(peer, field_int(f, "initiator_restart_token"),
                                                             ttok, tagged, tag or 0, rl, op)
                    self._deferred_order.append((peer, ttok))
                    rx.deferred = True
                    self.stats["deferred"] += 1
                    rsp = self._rsp(peer, mid, RC_NO_MATCH, ref)
                elif self._unexpected_fits(peer, rl):  # SES-M2
                    rx.unexpected = True
                    self._unexpected.append(rx)
                    self._unexpected_bytes += rl
                    self.stats["unexpected"] += 1
                else:
                    rx.failed = True
                    rsp = self._fail(peer, mid, op, RC_NO_MATCH, ref, "no matching receive")
            elif recv is not None:
                rx.recv = recv
                if recv.capacity is not None and rl > recv.capacity:  # SES-M3
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
        rx.last = self._now
        if rx.failed or rx.deferred:  # SES-T8 / SES-M4: nothing kept, packets counted by offset
            if mo in rx.offsets:
                self.stats["duplicate_packets"] += 1
                return None
            rx.offsets.add(mo)
            rx.got += len(payload)
        else:
            if rx.asm is None:
                digest = self.config.rx_digest and op in SEND_OPCODES  # SES-M8
                rx.asm = DigestReassembly(rl) if digest else Reassembly(rl)
                if self.lanes is not None and key in self._rx:
                    rx.take_lane(self.lanes, key[1])  # middle packets may now go the C way
            need = rx.asm.needed(mo, len(payload))
            new = rx.asm.place(mo, payload)
            if not new and not (first and rl == 0):
                self.stats["duplicate_packets"] += 1
                return None
            rx.got += new
            if need and key in self._rx:  # SES-R1: storage charged while the message is partial
                self.budget.charge(peer, need, force=True)
                rx.charged += need
        if f.get("som") and f.get("hd"):  # header data rides on the SOM packet only (D.3)
            rx.header_data = field_int(f, "header_data")
        if op in RENDEZVOUS_OPCODES and first and not rx.failed:  # SES-M5: pull the rest
            rest = rl - len(payload)
            if rest > 0:
                rx.pending_pull = rest
                view = rx

                def done(ok: bool, data: bytes | None, rx: RxMessage = view) -> None:
                    self._pull_done(rx, ok, data)

                self._read(peer, field_int(ext, "read_match_bits"), field_int(ext, "read_offset"), rest, on_done=done)
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

    def _pull_done(self, rx: RxMessage, ok: bool, data: bytes | None) -> None:
        if not ok or data is None:
            self._events.append(ev.MessageError(rx.peer, rx.mid, rx.opcode, 0x1F,
                                                "rendezvous pull failed"))
            if rx.unexpected and rx in self._unexpected:
                self._unexpected.remove(rx)
                self._unexpected_bytes -= rx.length
            return
        if rx.asm is None:
            rx.asm = Reassembly(rx.length)
        rx.asm.place(rx.length - rx.pending_pull, data)
        rx.pending_pull = 0
        if not rx.unexpected or rx.recv is not None:
            self._deliver(rx)

    def _deliver(self, rx: RxMessage) -> None:
        assert rx.recv is not None
        self.stats["messages"] += 1
        data = rx.asm.take() if rx.asm is not None else bytearray()
        self._events.append(ev.MessageReceived(rx.peer, rx.mid, rx.opcode, data, rx.tag,
                                               rx.recv.handle, rx.header_data, rx.unexpected, rx.dc,
                                               *rx.ids))

    def _send_rtr(self, d: Deferred) -> None:
        """SES-M4: DEFERRABLE_RTR (0x0C) with both restart tokens, back to the initiator."""
        mid = self._mid()
        f = self._common(DEFERRABLE_RTR, message_id=mid, som=True, eom=True, request_length=0,
                         initiator_restart_token=d.itok, target_restart_token=d.ttok)
        self._ops[mid] = Operation(self._handle(), "rtr", d.peer, mid, DEFERRABLE_RTR)
        self._out.append(SesPacket(NH_STD, f, None, b"", d.peer, mid))
