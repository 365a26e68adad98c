"""The live endpoint: the sans-IO PDS core (:mod:`uet.pds`) on real UDP sockets, driven by trio.

This module (with :mod:`uet.io.command`) is the only place trio appears (design.md principle 3).

Sockets
  * one *UET-port socket* (``bind``, default UDP 4793): requests from initiators arrive here, and
    the core's answers (ACK, NACK, CLOSE_REQ) leave from it, so that they come from the port the
    request was sent to and go to the port it came from (the initiator's entropy port, A.1, C.5);
  * a pool of *entropy sockets*, one per entropy value: the UDP source port of each is the entropy
    value the core chooses per packet (A.1, E.5). They are bound to the endpoint's local address
    (``local``; ephemeral ports unless ``entropy_ports`` names them) and are read too: the target's
    ACKs and NACKs arrive on them.
  The core's "address" strings are IP literals; a datagram's socket address is (address, port)
  with the ports from :class:`~uet.pds.DatagramMeta` (sport picks the socket, dport the peer port).

Loop (design.md "Performance": never await per datagram)
  * one reader task per socket: ``wait_readable``, then non-blocking ``recvmsg`` in a loop until
    the socket would block, each datagram straight into ``receive_datagram``. After every
    ``batch`` datagrams (64) comes one *service* pass: everything the core wants to send goes out
    in a batch (``sendto``, or ``sendmsg`` with a TOS control message when the packet's DSCP/ECN
    differ from the socket's default), and the core's events are dispatched (send waiters, the
    inbox); then a checkpoint, so that other sockets and the API get a turn. Servicing every 64
    rather than after the whole queue lets the ACKs leave while the rest of a window is still
    queued, so sender and receiver overlap instead of taking turns (measured on 64 MiB loopback
    transfers, two processes: 256 per pass ~45 MB/s, 32-64 per pass 60-100 MB/s, with the
    same core);
  * one timer task sleeping until the core's deadline (``get_timer``), re-armed whenever a service
    pass sees an earlier one, calling ``handle_timer``;
  * a full kernel send buffer (EAGAIN) keeps the rest in a backlog that the timer task sends once
    the socket is writable (bounded wait; the core retransmits what is dropped).

Choices (documented here because the facts are silent)
  * Every peer is reached on one UET port, ``peer_port`` (the core's ``PdsConfig.port``; default the
    bound port, i.e. 4793): the core's PDC key is the peer's *address*, so one endpoint cannot
    tell two UET ports of one host apart. A send naming another port raises ValueError.
  * Delivered messages wait in an inbox of ``max_inbox`` messages (plus those completed by the
    batch being read when it filled); while it is full the readers stop reading (the kernel queue fills, then drops; the core's retransmission recovers),
    which bounds memory when the application does not call :meth:`LiveEndpoint.receive`.
  * A datagram whose source port is none of ours (the core may name an entropy value it picked
    itself) is sent from the entropy socket ``sport % paths`` and its trailer is recomputed, as a
    NAT would (design.md "Defaults").

SES operations (``open_endpoint(..., ses=True)``; issue 6)
  * The endpoint gets a :class:`uet.ses.SesEndpoint` and drives it the way the simulator's
    :class:`uet.sim.ses_ops.MuxEndpoint` does (its sorting of arriving datagrams is reused: types 4
    and 5 and NACK with NT = 1 to a RudiEndpoint, 6 to a UudEndpoint, the rest to the PDS core,
    M1 of uet/sim/ses_ops.py). The SES is attached to the core (X1-X6 of uet/pds/endpoint.py)
    through a view whose queue this module fills, so that each operation picks its delivery mode
    per call: "rud" / "rod" (PDCs of that mode), "rudi" (write and read only, C.8; split here
    into single-packet operations of at most ``mtu`` bytes) and UUD for :meth:`LiveEndpoint.
    datagram`. Packets the SES makes on its own (read data, DEFERRABLE_RTR at the target) go over
    ``ses_mode`` (default "rud"; choice: the facts do not tie a response's PDC to the request's).
  * API: ``write``, ``read``, ``atomic``, ``cswap``, ``tsend``, ``ses_send`` (awaitable, raise
    :class:`SesFailed` with the return code name, e.g. BAD_MKEY), ``datagram``; target side
    ``register``, ``deregister``, ``post_recv``. :meth:`LiveEndpoint.receive` returns SES
    messages too (``tag`` set for tagged ones, ``op`` "send", "tsend" or "datagram"). With an SES
    attached every arriving SEND goes through it (X2), so untagged messages need an untagged
    posted receive: ``auto_recv`` (default 16) of them are kept posted, so that plain
    :meth:`LiveEndpoint.send` keeps arriving at :meth:`receive`. Target-side completions
    (RmaWriteDone, RmaReadDone, AtomicDone, MessageError, RecvFailed) are kept in
    :attr:`LiveEndpoint.ses_events` (the last 1024).
  * Without ``ses`` nothing above exists: the core is driven directly, as before.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
from collections import Counter, deque
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

import trio

from .. import UET_UDP_PORT
from ..multipath import RandomSpray, RoundRobinSpray
from ..pds import (DatagramMeta, Endpoint, MessageDelivered, MessageFailed, PdcClosed,
                   PdcEstablished, PdsConfig, SendComplete, seal)
from . import sockets as S
from ._ses import AMO_BY_NAME, DT_BY_NAME, SesHost, rc_name, ses_config

INF = math.inf
OP_MODES = ("rud", "rod", "rudi")  # delivery modes of SES operations (UUD: datagram only, C.8)
RUDI_WINDOW = 256  # single-packet RUDI operations of one read/write outstanding at once
REQ_TYPES = frozenset((2, 3, 13, 14))  # B.1 RUD/ROD requests (plain and CC)
MSG_TRUNC = int(socket.MSG_TRUNC)

# PdsConfig values for a live endpoint when no ``config`` is given (keyword fields still win).
# The core's defaults (C.9: RTO_INIT 1 ms, floor 200 us) suit hardware and the simulator; a Python
# endpoint's round trip is milliseconds (a window queued in the socket buffer, batches of
# datagrams per side), and with srtt + 4 rttvar alone a standing queue makes rttvar tiny, so any
# jitter fires a spurious RTO that resends the whole window (measured: 2-90 RTOs and up to 5x
# the data sent per 16-64 MiB transfer with a 1-50 ms floor; the receiver's first packet of a
# 64 MiB message and its final reassembly copy each pause it for tens of ms). Floors like TCP's
# 200 ms keep RTO for real losses; RACK and tail-loss probes (I7, I9) still recover holes
# within about one RTT.
LIVE_DEFAULTS: dict[str, Any] = {"rto_initial": 250e-3, "rto_min": 200e-3}
# Hand delivered messages up without copying them (a 64 MiB copy is another such pause), when the
# core offers it; Message.data is then the reassembly bytearray.
if "zero_copy_delivery" in {f.name for f in dataclasses.fields(PdsConfig)}:
    LIVE_DEFAULTS["zero_copy_delivery"] = True


class SendFailed(Exception):
    """A message could not be delivered (the core's MessageFailed: retransmission limit, a NACK
    that closes the PDC, a SES error code)."""

    def __init__(self, reason: str, handle: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.handle = handle


class SesFailed(SendFailed):
    """An SES operation ended with a return code other than OK (D.8): ``rc_name`` (e.g.
    "BAD_MKEY"), ``return_code``, ``op``, ``detail`` (the SES's reason)."""

    def __init__(self, op: str, return_code: int, reason: str, handle: int = 0):
        self.op = op
        self.return_code = return_code
        self.rc_name = rc_name(return_code)
        self.detail = reason
        super().__init__(f"{op} failed: {self.rc_name} (0x{return_code:02X}) {reason}".rstrip(),
                         handle)


@dataclass(frozen=True, slots=True)
class Message:
    """One delivered message: its bytes, the initiator's address and the ids that name it.
    ``data`` is bytes-like: bytes, or (multi-packet messages, no copy) the reassembly buffer, a
    bytearray or a memoryview of its mapping (``bytes(m.data)`` makes a copy).
    Through the SES (``ses=True``): ``tag`` is the match bits of a tagged send (None otherwise),
    ``op`` "send", "tsend" or "datagram", ``pdcid`` 0."""
    data: bytes | bytearray | memoryview
    peer: str
    pdcid: int
    message_id: int
    job_id: int = 0
    pid_on_fep: int = 0
    resource_index: int = 0
    tag: int | None = None
    op: str = "send"


@dataclass(frozen=True, slots=True)
class SendResult:
    handle: int
    nbytes: int
    pdcid: int
    message_id: int


class _Waiter:
    __slots__ = ("event", "result", "error")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: SendResult | None = None
        self.error: SendFailed | None = None


class _Sock:
    __slots__ = ("sock", "family", "port", "local", "tos", "wildcard", "anc", "is_uet")

    def __init__(self, sock: socket.socket, local: str, tos: int, is_uet: bool):
        self.sock = sock
        self.family = sock.family
        self.port = sock.getsockname()[1]
        self.local = local
        self.tos = tos
        self.wildcard = S.is_wildcard(local)
        self.anc: dict[int, list] = {}
        self.is_uet = is_uet

    def cmsgs(self, tos: int, src: str) -> list:
        if self.wildcard:
            return [S.tos_cmsg(self.family, tos), S.src_cmsg(self.family, src)]
        a = self.anc.get(tos)
        if a is None:
            a = self.anc[tos] = [S.tos_cmsg(self.family, tos)]
        return a


class LiveEndpoint:
    """A PDS endpoint on UDP sockets. Make one with :func:`open_endpoint`."""

    def __init__(self, core: Endpoint, uet_sock: _Sock | None, entropy: list[_Sock], *,
                 peer_port: int, batch: int = 64, max_inbox: int = 1024,
                 recv_bufsize: int = 65535, host: Any = None, auto_recv: int = 16):
        self.core = core
        #: the sans-IO object the sockets and the timer drive: the core, or (ses=True) the SesHost
        self.host = host if host is not None else core
        self.ses = getattr(host, "ses", None)
        self._ses_waiters: dict[int, _Waiter] = {}
        self._auto_recv: set[int] = set()
        self.ses_events: deque = deque(maxlen=1024)
        self.local = core.address
        self.peer_port = peer_port
        self.uet_sock = uet_sock
        self.entropy = entropy
        self.socks = ([uet_sock] if uet_sock else []) + entropy
        self._by_port: dict[int, _Sock] = {s.port: s for s in self.socks}
        self.batch = batch
        self.max_inbox = max_inbox
        self.recv_bufsize = recv_bufsize
        self.io: Counter = Counter()        # adapter counters (see :attr:`stats`)
        self.tx_data_by_port: Counter = Counter()  # data requests sent per entropy port
        self.pdc_events: Counter = Counter()
        self._waiters: dict[int, _Waiter] = {}
        self._inbox: deque[Message] = deque()
        self._inbox_event = trio.Event()
        self._space = trio.Event()
        self._wake = trio.Event()
        self._armed = INF
        self._backlog: deque = deque()
        self._closed_waiters: list[trio.Event] = []
        self._first_tx: float | None = None
        self._clock = trio.current_time
        self.skip_close = False  # True: leave open_endpoint without closing the PDCs (C.7)
        if self.ses is not None:
            for _ in range(auto_recv):
                self._auto_recv.add(self.ses.post_recv())

    # --- public API -----------------------------------------------------------------------
    @property
    def port(self) -> int | None:
        """The bound UET port (None when the endpoint only sends)."""
        return self.uet_sock.port if self.uet_sock else None

    @property
    def entropy_ports(self) -> list[int]:
        return [s.port for s in self.entropy]

    def _dest(self, dest: str | tuple) -> str:
        if isinstance(dest, tuple):
            host, port = dest[0], int(dest[1])
            if port != self.peer_port:
                raise ValueError(f"this endpoint reaches peers on UET port {self.peer_port}, not "
                                 f"{port}: open another endpoint with peer_port={port}")
        else:
            host = dest
        host = S.canonical(host)
        if S.family_of(host) != S.family_of(self.local):
            raise ValueError(f"{host}: not the address family of the local address {self.local}")
        return host

    def send_nowait(self, dest: str | tuple, data: bytes, *, mode: str = "rud", job_id: int = 0,
                    pid_on_fep: int = 0, resource_index: int = 0, tc: int = 0, op: str = "send",
                    **ses: Any) -> int:
        """Queue one message and start sending it; returns the handle :meth:`wait` takes.

        ``op`` and further keyword arguments are reserved; only ``op="send"`` (SES SEND, D.1
        0x05) is taken. The SES operations are methods of an endpoint opened with ``ses=True``:
        :meth:`tsend`, :meth:`write`, :meth:`read`, :meth:`atomic`, :meth:`cswap`,
        :meth:`ses_send`, :meth:`datagram`."""
        if op != "send" or ses:
            raise NotImplementedError(f"SES operation {op!r} {sorted(ses)} is not implemented yet; "
                                      "only op='send'")
        host = self._dest(dest)
        handle = self.core.send_message(host, data, mode=mode, job_id=job_id,
                                        pid_on_fep=pid_on_fep, resource_index=resource_index, tc=tc)
        self._waiters[handle] = _Waiter()
        self._service()
        return handle

    async def wait(self, handle: int) -> SendResult:
        """Until the message is acknowledged (SendComplete); raises :class:`SendFailed`."""
        w = self._waiters.get(handle)
        if w is None:
            raise KeyError(f"unknown or already collected send handle {handle}")
        try:
            await w.event.wait()
        finally:
            if w.event.is_set():
                self._waiters.pop(handle, None)
        if w.error is not None:
            raise w.error
        assert w.result is not None
        return w.result

    async def send(self, dest: str | tuple, data: bytes, *, mode: str = "rud", **kw: Any) -> SendResult:
        """Send one message and return once every byte is acknowledged (C.2: CACK passed its last
        PSN); raises :class:`SendFailed` when the core gives up. Use ``trio.fail_after`` for a
        deadline. ``mode`` is the delivery mode of this message's PDC: "rud" or "rod" (C.8)."""
        return await self.wait(self.send_nowait(dest, data, mode=mode, **kw))

    async def receive(self) -> Message:
        """The next delivered message (from any initiator, for any job, PID and resource index)."""
        while not self._inbox:
            await self._inbox_event.wait()
        return self._take()

    def receive_nowait(self) -> Message | None:
        return self._take() if self._inbox else None

    # --- SES operations (ses=True) -----------------------------------------------------------
    def _need_ses(self) -> Any:
        if self.ses is None:
            raise RuntimeError("this endpoint has no SES: open it with open_endpoint(..., ses=True)")
        return self.ses

    def _start_op(self, mode: str, fn: Any, *args: Any, **kw: Any) -> int:
        """Start one SES operation whose packets go over ``mode``; returns its handle."""
        if mode not in OP_MODES:
            raise ValueError(f"mode must be one of {OP_MODES} (UUD: datagram()), not {mode!r}")
        self._need_ses()
        host = self.host
        host.route()            # what the SES queued before goes its own way
        handle = fn(*args, **kw)
        host.route(mode)        # this operation's packets
        self._ses_waiters[handle] = _Waiter()
        self._service()
        return handle

    async def _wait_op(self, handle: int) -> Any:
        w = self._ses_waiters[handle]
        try:
            await w.event.wait()
        finally:  # the handles are not public: nobody waits again (a cancelled operation
            self._ses_waiters.pop(handle, None)  # runs on; its result is dropped)
        if w.error is not None:
            raise w.error
        return w.result

    async def _wait_all(self, handles: list[int]) -> list[Any]:
        out = []
        err = None
        for h in handles:  # collect every one (no waiter left behind), then raise the first error
            try:
                out.append(await self._wait_op(h))
            except SesFailed as e:
                err = err or e
                out.append(None)
        if err is not None:
            raise err
        return out

    def _pieces(self, mode: str, offset: int, n: int) -> list[tuple[int, int]]:
        """The (offset, length) pieces of one RMA operation, after checking it against the local
        limits before anything is sent: a length up to ``SesConfig.max_message_bytes``, a range
        inside 64-bit offsets. RUDI carries single-packet operations (C.8): mtu pieces."""
        cfg = self._need_ses().config
        if mode not in OP_MODES:
            raise ValueError(f"mode must be one of {OP_MODES} (UUD: datagram()), not {mode!r}")
        if not 0 <= n <= cfg.max_message_bytes:
            raise ValueError(f"length {n} is outside 0..{cfg.max_message_bytes} "
                             "(SesConfig.max_message_bytes)")
        if offset < 0 or offset + n > 1 << 64:
            raise ValueError(f"offset {offset} + length {n} is outside the 64-bit buffer offsets")
        if mode != "rudi" or n <= cfg.mtu:
            return [(0, n)]
        return [(o, min(cfg.mtu, n - o)) for o in range(0, n, cfg.mtu)]

    async def _run_pieces(self, mode: str, start: Any, pieces: list[tuple[int, int]]) -> list[Any]:
        """Run one operation per piece, at most ``RUDI_WINDOW`` outstanding (message ids are 16
        bits, and a huge RUDI read must not starve every other operation); stops starting new
        pieces at the first failure, which it raises once the started ones are collected."""
        out: list[Any] = []
        for i in range(0, len(pieces), RUDI_WINDOW):
            hs = [self._start_op(mode, start, o, n) for o, n in pieces[i:i + RUDI_WINDOW]]
            out += await self._wait_all(hs)
        return out

    async def write(self, dest: str | tuple, key: int, offset: int, data: bytes, *,
                    mode: str = "rud") -> int:
        """RMA WRITE of ``data`` at ``offset`` of the peer's region ``key``; returns the bytes
        placed (modified_length). ``mode``: "rud", "rod" or "rudi" (split into mtu pieces)."""
        host = self._dest(dest)
        ses = self._need_ses()
        mv = memoryview(bytes(data))
        pieces = self._pieces(mode, offset, len(mv))
        rs = await self._run_pieces(
            mode, lambda o, n: ses.write(host, key, offset + o, mv[o:o + n]), pieces)
        return sum(r.modified_length for r in rs)

    async def read(self, dest: str | tuple, key: int, offset: int, length: int, *,
                   mode: str = "rud") -> bytes:
        """RMA READ of ``length`` bytes at ``offset`` of the peer's region ``key``."""
        host = self._dest(dest)
        ses = self._need_ses()
        pieces = self._pieces(mode, offset, length)
        rs = await self._run_pieces(mode, lambda o, n: ses.read(host, key, offset + o, n), pieces)
        return b"".join(bytes(r.data or b"") for r in rs)

    async def atomic(self, dest: str | tuple, key: int, offset: int, amo: str | int = "SUM",
                     dtype: str | int = "UINT64", operand: Any = 0, *, fetch: bool = False,
                     mode: str = "rud") -> Any:
        """ATOMIC / FETCHING_ATOMIC (D.6) on the peer's region ``key``; returns the old value
        (decoded by ``dtype``) when ``fetch``, else None. ``amo``/``dtype`` by name or code."""
        from ..ses import atomics
        host = self._dest(dest)
        ses = self._need_ses()
        a, dt = _code(amo, AMO_BY_NAME), _code(dtype, DT_BY_NAME)
        self._no_rudi(mode, "atomic")
        h = self._start_op(mode, ses.atomic, host, key, offset, a, dt, operand, fetch=fetch)
        r = await self._wait_op(h)
        if not fetch:
            return None
        raw = bytes(r.data or b"")
        return atomics.decode_value(dt, raw) if atomics.datatype_size(dt) else raw

    async def cswap(self, dest: str | tuple, key: int, offset: int, compare: Any, swap: Any, *,
                    dtype: str | int = "UINT64", amo: str | int = "CSWAP",
                    mode: str = "rud") -> Any:
        """Compare-and-swap (fetching); returns the old value."""
        from ..ses import atomics
        host = self._dest(dest)
        ses = self._need_ses()
        a, dt = _code(amo, AMO_BY_NAME), _code(dtype, DT_BY_NAME)
        self._no_rudi(mode, "cswap")
        r = await self._wait_op(self._start_op(mode, ses.cswap, host, key, offset, dt, compare,
                                               swap, amo_opcode=a))
        return atomics.decode_value(dt, bytes(r.data or b""))

    async def tsend(self, dest: str | tuple, data: bytes, match_bits: int, *, mode: str = "rud",
                    header_data: int | None = None) -> int:
        """TAGGED_SEND: lands in the peer's first posted receive whose bits match; returns the
        bytes placed."""
        host = self._dest(dest)
        ses = self._need_ses()
        self._no_rudi(mode, "tsend")
        h = self._start_op(mode, ses.tsend, host, data, match_bits, header_data=header_data)
        return (await self._wait_op(h)).modified_length

    async def ses_send(self, dest: str | tuple, data: bytes, *, mode: str = "rud") -> int:
        """SES SEND (untagged) with a response: completes when the target placed it."""
        host = self._dest(dest)
        ses = self._need_ses()
        self._no_rudi(mode, "send")
        return (await self._wait_op(self._start_op(mode, ses.send, host, data))).modified_length

    def datagram(self, dest: str | tuple, data: bytes) -> None:
        """DATAGRAM_SEND over UUD (B.14, C.8): one packet of at most mtu bytes, no response, no
        retransmission; the peer's :meth:`receive` gets it (``op`` "datagram") unless lost."""
        host = self._dest(dest)
        ses = self._need_ses()
        self.host.route()
        ses.datagram(host, data)
        self.host.route("uud")
        self._service()

    def register(self, key: int, buffer: bytearray, **perm: Any) -> Any:
        """Expose ``buffer`` (a bytearray, used in place) to the peers' RMA and atomics under
        memory key ``key``; ``perm``: readable, writable, atomic (True), base (0)."""
        return self._need_ses().register(key, buffer, **perm)

    def deregister(self, key: int) -> None:
        self._need_ses().deregister(key)

    def post_recv(self, capacity: int | None = None, *, match_bits: int | None = None,
                  ignore_bits: int = 0) -> int:
        """Post a receive (tagged with ``match_bits``); the message that matches it comes out of
        :meth:`receive`. Returns its handle."""
        h = self._need_ses().post_recv(capacity, match_bits=match_bits, ignore_bits=ignore_bits)
        self._service()  # it may have matched an unexpected message
        return h

    @staticmethod
    def _no_rudi(mode: str, what: str) -> None:
        if mode == "rudi":
            raise ValueError(f"{what} is not idempotent: RUDI carries write and read only (C.8)")

    def _ses_event(self, e: Any) -> None:
        from ..ses import events as sev
        if isinstance(e, sev.OperationComplete):
            w = self._ses_waiters.get(e.handle)
            if w is not None:
                w.result = e
                w.event.set()
        elif isinstance(e, sev.OperationFailed):
            self.io["ses_failed"] += 1
            w = self._ses_waiters.get(e.handle)
            if w is not None:
                w.error = SesFailed(e.op, e.return_code, e.reason, e.handle)
                w.event.set()
        elif isinstance(e, sev.MessageReceived):
            if e.recv_handle in self._auto_recv:
                self._auto_recv.discard(e.recv_handle)
                self._auto_recv.add(self.ses.post_recv())
            self._deliver(Message(e.data, str(e.peer), 0, e.message_id, tag=e.tag,
                                  op="send" if e.tag is None else "tsend"))
        elif isinstance(e, sev.DatagramReceived):
            self._deliver(Message(e.data, str(e.peer), 0, 0, op="datagram"))
        else:
            self.io["ses_" + type(e).__name__] += 1
            self.ses_events.append(e)

    def _deliver(self, m: Message) -> None:
        self._inbox.append(m)
        self.io["delivered"] += 1
        if not self._inbox_event.is_set():
            self._inbox_event.set()
        if len(self._inbox) >= self.max_inbox and self._space.is_set():
            self._space = trio.Event()

    def _take(self) -> Message:
        m = self._inbox.popleft()
        if not self._inbox:
            self._inbox_event = trio.Event()
        if len(self._inbox) < self.max_inbox and not self._space.is_set():
            self._space.set()
        return m

    async def close_pdcs(self, dest: str | tuple | None = None) -> None:
        """Close our initiator PDCs (to ``dest``, or all) once everything is acknowledged (C.7:
        CONTROL CLOSE, freed when it is ACKed); returns when none is left. Bound it with
        ``trio.move_on_after``."""
        host = self._dest(dest) if dest is not None else None
        self.core.close(host)
        self._service()
        while any(p.role == "initiator" and (host is None or p.peer == host)
                  for p in self.core.pdcs()):
            ev = trio.Event()
            self._closed_waiters.append(ev)
            await ev.wait()

    @property
    def stats(self) -> dict[str, Any]:
        """The core's counters (``Endpoint.stats``), the NACKs sent and received by code name,
        the live PDC count, ``paths_used`` (entropy ports that carried data requests) and the
        adapter's own counters as ``io_*``: datagrams sent and read, EAGAIN, send errors,
        truncated datagrams, timer firings, reader pauses (full inbox), deliveries."""
        d: dict[str, Any] = dict(self.core.stats)
        d.update({f"io_{k}": v for k, v in self.io.items()})
        d["nacks_sent"] = dict(self.core.nacks_sent)
        d["nacks_rcvd"] = dict(self.core.nacks_rcvd)
        d["pdcs"] = len(self.core.pdcs())
        d["paths_used"] = sum(1 for v in self.tx_data_by_port.values() if v)
        if self.ses is not None:
            d["ses"] = dict(self.ses.stats)
            d["rudi"] = dict(self.host.rudi.stats)
            d["uud"] = dict(self.host.uud.stats)
            d["ses_host"] = dict(self.host.counts)
        return d

    @property
    def first_tx_time(self) -> float | None:
        return self._first_tx

    # --- the engine (synchronous parts: no await per datagram) ----------------------------
    def _drain(self, s: _Sock, limit: int) -> int:
        core_rx = self.host.receive_datagram
        recv = s.sock.recvmsg
        bufsize = self.recv_bufsize
        clock = self._clock
        lport = s.port
        local = s.local
        fam = s.family
        wildcard = s.wildcard
        simple = not wildcard and fam == socket.AF_INET
        Meta = DatagramMeta
        n = 0
        while n < limit:
            try:
                data, anc, flags, addr = recv(bufsize, S.ANC_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.io["rx_errors"] += 1
                n += 1
                continue
            n += 1
            if flags & MSG_TRUNC:
                self.io["rx_truncated"] += 1
                continue
            if simple:
                tos = anc[0][2][0] if anc and anc[0][1] == S.IP_TOS and anc[0][2] else 0
                dst = local
            else:
                tos, dst = S.parse_anc(anc, fam)
                if dst is None:
                    dst = local
            core_rx(data, Meta(addr[0], dst, addr[1], lport, tos & 3, tos >> 2), clock())
        self.io["rx_datagrams"] += n
        return n

    def _send_batch(self, out: Sequence[tuple[bytes, DatagramMeta]], start: int = 0) -> None:
        by_port = self._by_port
        io = self.io
        tx_data = self.tx_data_by_port
        backlog = self._backlog
        sent = 0
        n = len(out)
        i = start
        while i < n:
            data, meta = out[i]
            s = by_port.get(meta.sport)
            if s is None:
                data, meta, s = self._renat(data, meta)
            tos = (meta.dscp << 2) | meta.ecn
            try:
                if tos == s.tos and not s.wildcard:
                    s.sock.sendto(data, (meta.dst, meta.dport))
                else:
                    s.sock.sendmsg([data], s.cmsgs(tos, meta.src), 0, (meta.dst, meta.dport))
            except (BlockingIOError, InterruptedError):
                io["tx_eagain"] += 1
                backlog.extend(out[i:])
                if not self._wake.is_set():
                    self._wake.set()
                break
            except OSError:
                io["tx_errors"] += 1
            else:
                sent += 1
                if data and (data[0] >> 3) in REQ_TYPES:
                    tx_data[s.port] += 1
            i += 1
        if sent:
            io["tx_datagrams"] += sent
            if self._first_tx is None:
                self._first_tx = self._clock()

    def _renat(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, DatagramMeta, _Sock]:
        pool = self.entropy or self.socks
        s = pool[meta.sport % len(pool)]
        self.io["tx_renat"] += 1
        m2 = DatagramMeta(meta.src, meta.dst, s.port, meta.dport, meta.ecn, meta.dscp)
        return seal((data[:-4],), m2), m2, s

    def _service(self, rearm: bool = True) -> None:
        """Send what the core has, dispatch its events, re-arm the timer if it moved earlier."""
        core = self.host
        if self._backlog:
            self.io["tx_deferred"] += 1
        else:
            out = core.datagrams_to_send(self._clock())
            if out:
                self._send_batch(out)
        self._dispatch()
        if rearm:
            t = core.get_timer()
            if t is not None and t < self._armed and not self._wake.is_set():
                self._wake.set()

    def _dispatch(self) -> None:
        core = self.core
        ses = self.ses
        if ses is not None:
            while (se := ses.next_event()) is not None:
                self._ses_event(se)
        while True:
            e = core.next_event()
            if e is None:
                return
            if isinstance(e, MessageDelivered):
                self._inbox.append(Message(e.data, e.peer, e.pdcid, e.message_id, e.job_id,
                                           e.pid_on_fep, e.resource_index))
                self.io["delivered"] += 1
                if not self._inbox_event.is_set():
                    self._inbox_event.set()
                if len(self._inbox) >= self.max_inbox and self._space.is_set():
                    self._space = trio.Event()
            elif isinstance(e, SendComplete):
                w = self._waiters.get(e.handle)
                if w is not None:
                    w.result = SendResult(e.handle, e.nbytes, e.pdcid, e.message_id)
                    w.event.set()
            elif isinstance(e, MessageFailed):
                w = self._waiters.get(e.handle)
                self.io["send_failed"] += 1
                if w is not None:
                    w.error = SendFailed(e.reason, e.handle)
                    w.event.set()
            elif isinstance(e, PdcEstablished):
                self.pdc_events[f"established_{e.role}"] += 1
            elif isinstance(e, PdcClosed):
                self.pdc_events[f"closed_{e.role}{'_error' if e.error else ''}"] += 1
                if self._closed_waiters:
                    ws, self._closed_waiters = self._closed_waiters, []
                    for w in ws:
                        w.set()

    # --- the engine (tasks) ---------------------------------------------------------------
    async def _reader(self, s: _Sock) -> None:
        wait_readable = trio.lowlevel.wait_readable
        checkpoint = trio.lowlevel.checkpoint
        batch = self.batch
        while True:
            await wait_readable(s.sock)
            while True:
                while len(self._inbox) >= self.max_inbox:
                    self.io["rx_paused"] += 1
                    await self._space.wait()
                n = self._drain(s, batch)
                self._service()
                if n < batch:
                    break
                await checkpoint()

    async def _timers(self) -> None:
        core = self.host
        clock = self._clock
        floor = -INF
        while True:
            if self._backlog:
                await self._flush_backlog()
                continue
            t = core.get_timer()
            if t is not None and t < floor:
                t = floor  # a deadline that handle_timer did not move: no busy loop
            self._armed = INF if t is None else t
            if not self._wake.is_set():
                with trio.move_on_at(self._armed):
                    await self._wake.wait()
            self._wake = trio.Event()
            now = clock()
            t = core.get_timer()
            if t is not None and t <= now:
                core.handle_timer(now)
                self.io["timer_fired"] += 1
                t2 = core.get_timer()
                if t2 is not None and t2 <= now:
                    floor = now + 200e-6
            self._service(rearm=False)

    async def _flush_backlog(self) -> None:
        bl = self._backlog
        while bl:
            data, meta = bl[0]
            s = self._by_port.get(meta.sport) or (self.entropy or self.socks)[
                meta.sport % len(self.entropy or self.socks)]
            with trio.move_on_after(0.05) as cs:
                await trio.lowlevel.wait_writable(s.sock)
            if cs.cancelled_caught:  # the datagram is lost; the core retransmits
                self.io["tx_dropped"] += 1
                bl.popleft()
                continue
            items = list(bl)
            bl.clear()
            self._send_batch(items)
        self._service(rearm=False)


def _code(v: str | int, names: dict[str, int]) -> int:
    if isinstance(v, str):
        try:
            return names[v.upper()]
        except KeyError:
            raise ValueError(f"unknown name {v!r}; one of {sorted(names)}") from None
    return int(v)


def _family_local(bind: tuple[str, int] | None, local: str | None, peer: str | None) -> str:
    if local is not None:
        return S.canonical(local)
    if bind is not None and not S.is_wildcard(bind[0]):
        return S.canonical(bind[0])
    if peer is not None:
        return S.source_for(peer)
    fam = S.family_of(bind[0]) if bind is not None else socket.AF_INET
    return S.loopback_of(fam)


@asynccontextmanager
async def open_endpoint(bind: tuple[str, int] | str | None = ("127.0.0.1", UET_UDP_PORT), *,
                        paths: int = 8, local: str | None = None, peer: str | None = None,
                        peer_port: int | None = None, config: PdsConfig | None = None,
                        seed: int | None = None, spray: str = "rr",
                        entropy_ports: Sequence[int] | None = None, zero_checksum: bool = True,
                        rcvbuf: int = 8 << 20, sndbuf: int = 4 << 20, batch: int = 64,
                        max_inbox: int = 1024, close_timeout: float = 1.0,
                        ses: Any = False, ses_mode: str = "rud", auto_recv: int = 16,
                        rudi_config: Any = None, **config_fields: Any) -> AsyncIterator[LiveEndpoint]:
    """Open a live endpoint; ``async with open_endpoint(("127.0.0.1", 4793)) as ep:``.

    ``bind``: (address, port) of the UET-port socket that serves initiators (port 0 = ephemeral;
    None = send only, no serving socket). ``paths``: entropy sockets (entropy values), or
    ``entropy_ports`` to bind given source ports. ``local``: the address the entropy sockets bind
    and the core calls its own (default: the bind address, or the route source towards ``peer``,
    or loopback). ``peer_port``: the UET port of the peers this endpoint sends to (default: the
    bound port, else 4793). ``config`` / keyword ``config_fields``: :class:`PdsConfig` (the
    ``port`` and ``entropy_factory`` fields are set here). ``spray``: "rr" or "random" over the
    entropy sockets. ``zero_checksum``: UDP checksum 0 (IPv4 SO_NO_CHECK, IPv6
    UDP_NO_CHECK6_TX); False lets the kernel compute it. ``seed``: the core's random choices
    (start PSNs, first PDCID); default random, so that endpoints sharing an address differ. On a normal exit the initiator PDCs are
    closed (C.7) for at most ``close_timeout`` seconds. ``ses``: True or a
    :class:`uet.ses.SesConfig` gives the endpoint an SES (module docstring "SES operations");
    ``ses_mode`` the mode of the packets the SES makes on its own, ``auto_recv`` the untagged
    receives kept posted, ``rudi_config`` a :class:`uet.pds.rudi.RudiConfig` (its port is set).
    """
    if isinstance(bind, str):
        bind = S.parse_hostport(bind)
    if bind is not None:
        bind = (S.canonical(bind[0]), int(bind[1]))
    local_addr = _family_local(bind, local, peer)
    if bind is not None and S.family_of(bind[0]) != S.family_of(local_addr):
        raise ValueError(f"bind address {bind[0]} and local address {local_addr} differ in family")
    socks: list[socket.socket] = []
    try:
        uet_sock = None
        if bind is not None:
            raw = S.udp_socket(bind[0], bind[1], tos=46 << 2, rcvbuf=rcvbuf, sndbuf=sndbuf,
                               zero_checksum=zero_checksum)
            socks.append(raw)
            uet_sock = _Sock(raw, bind[0], 46 << 2, True)
        ports = list(entropy_ports) if entropy_ports is not None else [0] * paths
        if not ports:
            raise ValueError("need at least one entropy socket")
        entropy = []
        for p in ports:
            raw = S.udp_socket(local_addr, p, tos=2, rcvbuf=rcvbuf, sndbuf=sndbuf,
                               zero_checksum=zero_checksum)
            socks.append(raw)
            entropy.append(_Sock(raw, local_addr, 2, False))
        values = [s.port for s in entropy]
        if peer_port is None:
            peer_port = uet_sock.port if uet_sock is not None else UET_UDP_PORT

        def selector(cfg: PdsConfig, rng: Any) -> Any:
            return RandomSpray(values, rng) if spray == "random" else RoundRobinSpray(values)

        base = config if config is not None else PdsConfig(**LIVE_DEFAULTS)
        cfg = dataclasses.replace(base, port=peer_port, entropy_factory=selector,
                                  entropy_values=len(values), **config_fields)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "big")
        core = Endpoint(local_addr, cfg, seed=seed)
        host = None
        if ses:
            host = SesHost(core, ses_config(ses, cfg, seed), seed=seed, port=peer_port,
                           entropy=values, rudi_config=rudi_config, ses_mode=ses_mode)
        ep = LiveEndpoint(core, uet_sock, entropy, peer_port=peer_port, batch=batch,
                          max_inbox=max_inbox, host=host, auto_recv=auto_recv)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ep._timers)
            for s in ep.socks:
                nursery.start_soon(ep._reader, s)
            try:
                yield ep
            except BaseException:
                nursery.cancel_scope.cancel()
                raise
            if not ep.skip_close and any(p.role == "initiator" for p in core.pdcs()):
                with trio.move_on_after(close_timeout):
                    await ep.close_pdcs()
            nursery.cancel_scope.cancel()
    finally:
        for s in socks:
            s.close()
