"""SES operations for ``uet sim --op`` (issue 5): the workload and its check.

Host A runs the operations through its :class:`uet.ses.SesEndpoint`, attached to its PDS endpoint
(uet/pds/endpoint.py X1-X6); host B's SES serves them. ``ok`` needs every operation complete with
RC OK and the result right:

* ``write``: the ``--bytes`` are written in ``--messages`` writes into B's region; B's memory must
  equal what was written (CRC-32C, then byte for byte).
* ``read``: B's region holds the bytes; ``--messages`` reads fetch them; what came back must equal
  them.
* ``atomic``: ``--messages`` fetching SUMs of 1, 2, ... n on one UINT64 counter at B (D.6). The
  model: every SUM executed exactly once, so the counter ends at n(n+1)/2 and the fetched values,
  sorted, form the chain 0, v1 = 0 + a1, v2 = v1 + a2, ... (each fetched value plus its operand is
  the next fetched value, the last one's is the final counter).
* ``tsend``: B posts ``--messages`` tagged receives (match bits = the message index); A sends each
  message with its index as tag; every receive must get its own message intact.
* ``send`` with ``--mode uud``: each message is one DATAGRAM_SEND (B.14, C.8); ``ok`` = every
  datagram B got is one that was sent, intact; some may be lost and some may come twice
  (``delivered`` counts every datagram handed up, duplicates included; ``duplicates`` those). A
  UUD datagram carries no PSN (B.14), so a receiver cannot tell a copy the network made from a
  second datagram with the same bytes: UUD delivers duplicates (choice, uet-facts C.8: no
  reliability at all).

``--mode rudi`` (write and read only: C.8 idempotent operations) and ``--mode uud`` put a
:class:`MuxEndpoint` on each host: it sorts arriving datagrams by PDS type before the PDS endpoint
(M1) and drives the SES the way uet.ses.loopback does. RUDI and UUD carry single-packet requests,
so the bytes are cut into messages of at most ``mtu`` bytes (more messages than ``--messages``
when needed).

RULES
  M1  B.1 / B.13 / B.14 / B.10: types 4 and 5 (RUDI request, response), NACK (10) with NT = 1
      (``data[1] & 0x08``) go to the host's RudiEndpoint; type 6 to its UudEndpoint; everything
      else to the PDS endpoint.
  M2  C.8: a RUDI target answers each request with the SES response (``receive_bytes(mode=
      "rudi", inline_limit=mtu)``, P1 of uet/ses/endpoint.py); a request without one is counted
      (``rudi_no_response``). A RudiRequestFailed fails the operation (transport_failed).
  M3  C.8 / S5: only single-packet requests go over RUDI (others fail the operation); only
      DATAGRAM_SEND over UUD (the SES target drops others, T3).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import native
from ..pds.config import DatagramMeta
from ..pds.rudi import (NACK, RUDI_REQ, RUDI_RESP, UUD_REQ, RudiConfig, RudiEndpoint, RudiRequest,
                        RudiRequestFailed, RudiResponse)
from ..pds.uud import UudEndpoint
from ..ses import SesConfig, SesEndpoint
from ..ses import events as sev
from ..ses.atomics import SUM

OPS = ("send", "tsend", "write", "read", "atomic")
MODES = ("rud", "rod", "rudi", "uud")
MODE_OPS = {"rud": OPS, "rod": OPS, "rudi": ("write", "read"), "uud": ("send",)}
UINT64 = 0x07  # D.6 datatype
MKEY = 1


class SesWorkload:
    def __init__(self, op: str, msgs: list[bytes], a_ep: Any, b_ep: Any, b_addr: str, *,
                 mtu: int, mode: str, seed: int):
        if op not in MODE_OPS.get(mode, ()) or (op == "send" and mode != "uud"):
            raise ValueError(f"op {op!r} is not run over {mode!r}")
        self.op = op
        self.mode = mode
        self.msgs = msgs
        self.data = b"".join(msgs)
        self.a = SesEndpoint(SesConfig(mtu=mtu, seed=seed * 2 + 1))
        self.b = SesEndpoint(SesConfig(mtu=mtu, seed=seed * 2 + 2))
        if mode in ("rud", "rod"):
            a_ep.attach_ses(self.a, mode=mode)
            b_ep.attach_ses(self.b, mode=mode)
        self.failures: list[str] = []
        self.results: dict[int, Any] = {}  # handle -> result (read data, fetched bytes)
        self.handles: dict[int, int] = {}  # handle -> index of the message / operand
        self.received: dict[int, bytes] = {}  # tsend: tag -> data
        self.completed = 0
        n = len(msgs)
        offs = [0]
        for m in msgs:
            offs.append(offs[-1] + len(m))
        if op == "write":
            self.mem = bytearray(len(self.data))
            self.b.register(MKEY, self.mem)
            for i, m in enumerate(msgs):
                self.handles[self.a.write(b_addr, MKEY, offs[i], m)] = i
        elif op == "read":
            self.mem = bytearray(self.data)
            self.b.register(MKEY, self.mem)
            for i, m in enumerate(msgs):
                self.handles[self.a.read(b_addr, MKEY, offs[i], len(m))] = i
        elif op == "atomic":
            self.mem = bytearray(8)
            self.b.register(MKEY, self.mem)
            for i in range(n):
                self.handles[self.a.atomic(b_addr, MKEY, 0, SUM, UINT64, i + 1, fetch=True)] = i
        elif op == "send":  # UUD datagrams
            self.mem = bytearray(0)
            self.index = {m: i for i, m in enumerate(msgs)}
            self.sent_count = Counter(msgs)  # datagrams may repeat bytes: count by content
            self.got_count: Counter[bytes] = Counter()
            self.datagrams = 0  # delivered, duplicates included
            self.duplicates = 0  # deliveries of a content beyond the times it was sent
            for m in msgs:
                self.a.datagram(b_addr, m)
            self.handles = {}
        else:  # tsend
            self.mem = bytearray(0)
            for i in range(n):
                self.b.post_recv(match_bits=i)
            for i, m in enumerate(msgs):
                self.handles[self.a.tsend(b_addr, m, i)] = i
        self.pending = set(self.handles)

    @property
    def bytes(self) -> int:
        return 8 * len(self.msgs) if self.op == "atomic" else len(self.data)

    def poll(self) -> bool:
        """Take the SES events of both hosts; True when an operation or a receive completed."""
        progress = False
        while (e := self.a.next_event()) is not None:
            if isinstance(e, sev.OperationComplete):
                if e.handle in self.pending:
                    self.pending.discard(e.handle)
                    self.results[e.handle] = e.data
                    self.completed += 1
                    progress = True
            elif isinstance(e, sev.OperationFailed):
                self.pending.discard(e.handle)
                self.failures.append(f"{e.op} {e.message_id} failed: RC 0x{e.return_code:02X} "
                                     f"{e.reason}")
        while (e := self.b.next_event()) is not None:
            if isinstance(e, sev.DatagramReceived):
                i = self.index.get(e.data, -1)
                if i < 0:
                    self.failures.append("a datagram arrived that was never sent (or damaged)")
                else:
                    self.datagrams += 1
                    self.got_count[e.data] += 1
                    if self.got_count[e.data] > self.sent_count[e.data]:
                        self.duplicates += 1  # see the module docstring: UUD has no PSN
                    self.received[i] = e.data
                progress = True
            elif isinstance(e, sev.MessageReceived):
                if e.tag in self.received:
                    self.failures.append(f"tag {e.tag} received twice")
                self.received[e.tag if e.tag is not None else -1] = e.data
                progress = True
            elif isinstance(e, (sev.MessageError, sev.RecvFailed)):
                self.failures.append(f"target: {e!r:.200}")
        return progress

    def idle(self) -> bool:
        if self.op == "send":
            return False  # UUD: the run ends when nothing is in flight
        return not self.pending and (self.op != "tsend" or len(self.received) >= len(self.msgs)
                                     or bool(self.failures))

    def check(self) -> list[str]:
        """What is wrong with the result (empty: ok)."""
        bad = list(self.failures)
        if self.pending:
            bad.append(f"{len(self.pending)} operation(s) not complete")
        op = self.op
        if op == "write":
            if native.crc32c(bytes(self.mem)) != native.crc32c(self.data) or self.mem != self.data:
                bad.append("target memory differs from what was written")
        elif op == "read":
            got = bytearray(len(self.data))
            off = 0
            for h, i in sorted(self.handles.items(), key=lambda x: x[1]):
                r = self.results.get(h) or b""
                got[off:off + len(r)] = r
                off += len(self.msgs[i])
            if native.crc32c(bytes(got)) != native.crc32c(self.data) or got != self.data:
                bad.append("read data differs from the target's memory")
        elif op == "atomic":
            n = len(self.msgs)
            final = int.from_bytes(self.mem, "little")
            if final != n * (n + 1) // 2:
                bad.append(f"counter {final}, model {n * (n + 1) // 2}")
            chain = sorted((int.from_bytes(self.results.get(h) or b"", "little"), i + 1)
                           for h, i in self.handles.items())
            v = 0
            for fetched, operand in chain:
                if fetched != v:
                    bad.append(f"fetched {fetched}, model {v}: a SUM ran twice or not at all")
                    break
                v += operand
        elif op == "send":
            pass  # UUD: failures holds duplicates and strangers; losses are allowed
        else:
            for i, m in enumerate(self.msgs):
                if self.received.get(i) != m:
                    bad.append(f"tagged message {i} missing or wrong")
                    break
            if len(self.received) != len(self.msgs):
                bad.append(f"{len(self.received)} tagged messages received, {len(self.msgs)} sent")
        return bad


class MuxEndpoint:
    """One host's transports for ``--mode rudi|uud``: the PDS endpoint (its interface, as the
    simulator uses it), a RudiEndpoint and a UudEndpoint, and the SES driven over them (M1-M3)."""

    def __init__(self, pds: Any, ses: SesEndpoint, mode: str, seed: int, mtu: int):
        self.pds = pds
        self.ses = ses
        self.mode = mode
        self.address = pds.address
        self.rudi = RudiEndpoint(pds.address, RudiConfig(seed=seed))
        self.uud = UudEndpoint(pds.address, mtu=mtu + 64)
        self.counts: Counter[str] = Counter()
        self._peer: dict[int, Any] = {}  # outstanding RUDI pkt_id -> the SES peer it went to
        self.nacks_sent = pds.nacks_sent
        self.next_event = pds.next_event
        self.close = pds.close

    @property
    def stats(self) -> Counter:
        s = Counter(self.pds.stats)
        s["retransmissions"] += self.rudi.stats["rto_retransmissions"] + self.rudi.stats.get(
            "nack_retransmissions", 0)
        s["bad_crc"] += self.rudi.stats["bad_crc"] + self.uud.stats["bad_crc"]
        s.update(self.counts)
        return s

    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float) -> None:
        t = data[0] >> 3 if data else 0
        if t == RUDI_REQ or t == RUDI_RESP or (t == NACK and len(data) > 1 and data[1] & 0x08):
            self.rudi.receive_datagram(data, meta, now)
            self._rudi_events()
        elif t == UUD_REQ:
            u = self.uud
            u.receive_datagram(data, meta, now)
            while (e := u.next_event()) is not None:
                self.ses.receive_bytes(e.next_hdr, e.ses, peer=e.meta.src, mode="uud")
        else:
            self.pds.receive_datagram(data, meta, now)

    def _rudi_events(self) -> None:
        r, ses = self.rudi, self.ses
        while (e := r.next_event()) is not None:
            if isinstance(e, RudiRequest):
                rsp = ses.receive_bytes(e.next_hdr, e.ses, peer=e.meta.src, request_ref=e.pkt_id,
                                        mode="rudi", inline_limit=ses.config.mtu)
                if rsp is not None:
                    r.respond(e, rsp.next_hdr, rsp.to_bytes())
                else:
                    self.counts["rudi_no_response"] += 1
            elif isinstance(e, RudiResponse):
                ses.receive_bytes(e.next_hdr, e.ses, peer=self._peer.get(e.pkt_id),
                                  message_id=e.tag)
                self._peer.pop(e.pkt_id, None)
            elif isinstance(e, RudiRequestFailed):
                self._peer.pop(e.pkt_id, None)
                ses.transport_failed(e.tag, e.reason)

    def datagrams_to_send(self, now: float) -> list:
        for p in self.ses.packets_to_send():
            if self.mode == "rudi":
                if not p.is_request:
                    self.counts["rudi_stray_response"] += 1
                elif not (p.ses.get("som") and p.ses.get("eom")):
                    self.counts["rudi_multi_packet"] += 1
                    self.ses.transport_failed(p.message_id, "RUDI carries single-packet requests")
                else:
                    pid = self.rudi.send_request(str(p.peer), p.next_hdr, p.to_bytes(), now,
                                                 tag=p.message_id)
                    self._peer[pid] = p.peer
            elif not self.uud.send_datagram(str(p.peer), p.to_bytes(), next_hdr=p.next_hdr):
                self.counts["uud_too_long"] += 1
        out = self.pds.datagrams_to_send(now)
        out += self.rudi.datagrams_to_send(now)
        out += self.uud.datagrams_to_send(now)
        return out

    def get_timer(self) -> float | None:
        ts = [t for t in (self.pds.get_timer(), self.rudi.get_timer()) if t is not None]
        return min(ts) if ts else None

    def handle_timer(self, now: float) -> None:
        self.pds.handle_timer(now)
        self.rudi.handle_timer(now)
        self._rudi_events()
