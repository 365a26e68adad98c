"""The workloads of ``uet sim``: what host A runs against host B (both :class:`uet.host.Host`),
and the check of what arrived. ``ok`` needs every operation complete and the result right:

* ``send`` over RUD or ROD: the ``--bytes`` as ``--messages`` SENDs (D.1) into B's automatically
  posted receives (SES-M7 of uet/ses/target.py); every message must arrive once, intact (its
  digest, CRC-32C and CRC-32: uet.native.digest; B delivers it without keeping the bytes,
  SES-M8), ROD in the order sent (C.8), RUD in any order.
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
  second datagram with the same bytes: UUD delivers duplicates (choice, facts C.8: no
  reliability at all). ``goodput_gbps`` counts the bytes of the datagrams delivered, each at most
  as often as it was sent (``delivered_bytes``); ``offered_gbps`` those sent, over the same time.

``--mode rudi`` (write and read only: C.8 idempotent operations) and ``--mode uud`` carry
single-packet requests (HOST-H2 of uet/host.py), so the simulator cuts the bytes into messages of at
most ``mtu`` bytes (more messages than ``--messages`` when needed).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import native
from ..host import Host
from ..native.digest import Digest
from ..ses import events as sev
from ..ses.atomics import SUM

OPS = ("send", "tsend", "write", "read", "atomic")
MODES = ("rud", "rod", "rudi", "uud")
MODE_OPS = {"rud": OPS, "rod": OPS, "rudi": ("write", "read"), "uud": ("send",)}
UINT64 = 0x07  # D.6 datatype
MKEY = 1


def buffer_len(data: Any) -> int:
    """The bytes in ``data``: bytes, a bytearray or a memoryview of any format."""
    return len(data) if type(data) is not memoryview else data.nbytes


def same_bytes(want: bytes, data: Any) -> bool:
    """``want == data`` for ``data`` any bytes-like object, without copying it: a memoryview
    compares with bytes element by element, ``bytes.startswith`` takes any buffer and compares
    with memcmp, and the lengths being equal makes the prefix the whole."""
    return len(want) == buffer_len(data) and want.startswith(data)


class Workload:
    """``messages`` operations of kind ``op`` from host ``a`` to host ``b`` over ``mode``."""

    def __init__(self, op: str, msgs: list[bytes], a: Host, b: Host, *, mode: str,
                 digests: list[Digest] | None = None):
        """``digests``: the :class:`uet.native.digest.Digest` of each message when the caller
        made them in advance (the simulator does, so that a run does not spend its time on
        them); None: made here. A SEND is checked by its digest: the one a receiver with
        ``rx_digest`` (SES-M8) delivers, or that of the bytes delivered."""
        if op not in MODE_OPS.get(mode, ()):
            raise ValueError(f"op {op!r} is not run over {mode!r}")
        self.op = op
        self.mode = mode
        self.msgs = msgs
        self.a = a.ses
        self.b = b.ses
        b_addr = b.address
        self.failures: list[str] = []
        self.results: dict[int, Any] = {}  # handle -> result (read data, fetched bytes)
        self.handles: dict[int, int] = {}  # handle -> index of the message / operand
        self.received: dict[int, bytes] = {}  # tsend: tag -> data
        self.completed = 0
        self.wrong = 0  # send: messages that arrived damaged, twice or (ROD) out of order
        self.got: list[int] = []  # send over RUD/ROD: indexes of the messages delivered
        n = len(msgs)
        offs = [0]
        for m in msgs:
            offs.append(offs[-1] + len(m))
        if op in ("write", "read"):
            self.data = b"".join(msgs)
        self.mem = bytearray(0)
        if op == "write":
            self.mem = bytearray(len(self.data))
            self.b.register(MKEY, self.mem)
            for i, m in enumerate(msgs):
                self.handles[a.op(mode, self.a.write, b_addr, MKEY, offs[i], m)] = i
        elif op == "read":
            self.mem = bytearray(self.data)
            self.b.register(MKEY, self.mem)
            for i, m in enumerate(msgs):
                self.handles[a.op(mode, self.a.read, b_addr, MKEY, offs[i], len(m))] = i
        elif op == "atomic":
            self.mem = bytearray(8)
            self.b.register(MKEY, self.mem)
            for i in range(n):
                self.handles[a.op(mode, self.a.atomic, b_addr, MKEY, 0, SUM, UINT64, i + 1,
                                  fetch=True)] = i
        elif op == "send" and mode == "uud":  # datagrams
            self.index = {m: i for i, m in enumerate(msgs)}
            self.sent_count = Counter(msgs)  # datagrams may repeat bytes: count by content
            self.got_count: Counter[bytes] = Counter()
            self.datagrams = 0  # delivered, duplicates included
            self.duplicates = 0  # deliveries of a content beyond the times it was sent
            for m in msgs:
                a.op(mode, self.a.datagram, b_addr, m)
        elif op == "send":  # RUD / ROD messages into B's automatically posted receives
            self.digests = digests or [Digest.of(m) for m in msgs]
            self.want: dict[Digest, list[int]] = {}
            for i, digest in enumerate(self.digests):
                self.want.setdefault(digest, []).append(i)
            for i, m in enumerate(msgs):
                self.handles[a.send(b_addr, m, mode=mode)] = i
        else:  # tsend
            for i in range(n):
                self.b.post_recv(match_bits=i)
            for i, m in enumerate(msgs):
                self.handles[a.op(mode, self.a.tsend, b_addr, m, i)] = i
        self.pending = set(self.handles)

    @property
    def bytes(self) -> int:
        return 8 * len(self.msgs) if self.op == "atomic" else sum(len(m) for m in self.msgs)

    @property
    def delivered_bytes(self) -> int:
        """UUD: the bytes of the datagrams B got, each sent datagram counted at most as many times
        as it was sent (a copy the network made delivers nothing new); else :attr:`bytes` (the
        other workloads are ok only when every byte arrived)."""
        if self.op == "send" and self.mode == "uud":
            return sum(len(m) * min(k, self.sent_count[m]) for m, k in self.got_count.items())
        return self.bytes

    @property
    def delivered(self) -> int:
        """Messages delivered (send), datagrams handed up (UUD), receives filled (tsend), or
        operations completed."""
        if self.op == "send":
            return self.datagrams if self.mode == "uud" else len(self.got)
        return len(self.received) if self.op == "tsend" else self.completed

    def poll(self) -> bool:
        """Take the SES events of both hosts; True when a message or datagram arrived or an
        operation completed."""
        progress = False
        while (e := self.a.next_event()) is not None:
            if isinstance(e, sev.OperationComplete):
                if e.handle in self.pending:
                    self.pending.discard(e.handle)
                    self.results[e.handle] = e.data
                    self.completed += 1
                    progress = self.op != "send"  # a SEND's progress is its arrival at B
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
                if self.op == "send":
                    self._arrived(e.data)
                else:
                    if e.tag in self.received:
                        self.failures.append(f"tag {e.tag} received twice")
                    self.received[e.tag if e.tag is not None else -1] = bytes(e.data)
                progress = True
            elif isinstance(e, (sev.MessageError, sev.RecvFailed)):
                self.failures.append(f"target: {e!r:.200}")
        return progress

    def _arrived(self, data: Any) -> None:
        """A SEND arrived: RUD in any order, ROD the next one sent, by digest (CRC-32C and
        CRC-32 of every byte: uet.native.digest). The message arrived as its digest (SES-M8),
        or is read where it landed (a mapped one is not copied out)."""
        d = data if type(data) is Digest else Digest.of(data)
        if self.mode == "rod":
            k = len(self.got)
            if k < len(self.msgs) and self.digests[k] == d:
                self.got.append(k)
            else:
                self.wrong += 1
            return
        cand = self.want.get(d)
        if not cand:
            self.wrong += 1
        else:
            self.got.append(cand.pop(0))

    def idle(self) -> bool:
        if self.op == "send" and self.mode == "uud":
            return False  # UUD: the run ends when nothing is in flight
        if self.failures:
            return not self.pending
        if self.op == "send":
            return not self.pending and len(self.got) + self.wrong >= len(self.msgs)
        return not self.pending and (self.op != "tsend" or len(self.received) >= len(self.msgs))

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
        elif op == "send" and self.mode == "uud":
            pass  # failures holds duplicates and strangers; losses are allowed
        elif op == "send":
            if self.wrong:
                bad.append(f"{self.wrong} message(s) arrived damaged, twice or out of order")
            if len(self.got) != len(self.msgs):
                bad.append(f"{len(self.got)} of {len(self.msgs)} messages delivered")
        else:
            for i, m in enumerate(self.msgs):
                if self.received.get(i) != m:
                    bad.append(f"tagged message {i} missing or wrong")
                    break
            if len(self.received) != len(self.msgs):
                bad.append(f"{len(self.received)} tagged messages received, {len(self.msgs)} sent")
        return bad
