"""The live endpoint: a sans-IO :class:`uet.host.Host` (PDS, RUDI, UUD and the SES) on real UDP
sockets, driven by trio; the socket engine is :mod:`uet.io.engine`, the API this module.

This package (:mod:`uet.io`) is the only place trio appears (docs/design-notes.md principle 3).

Sockets (facts A.1, H.1 #19: every UET datagram, requests and answers alike, goes to UDP
destination port = the UET port; its source port is the entropy value, and an answer copies the EV
of the request it answers into its own source port)
  * one *UET-port socket*, bound to (the endpoint's own address, the UET port): everything this
    endpoint receives arrives here, requests and answers alike, initiators included. ``bind``
    names it; ``bind=None`` (an initiator) binds (``local``, ``peer_port``), and without
    ``local`` the first free loopback address when the peer is on loopback (uet.ownaddr OWNADDR-O1:
    127.0.0.2, 127.0.0.3, ...; a bind that cannot be done says why in one line, O2);
  * a pool of *entropy sockets*, one per entropy value: the UDP source port of each is the entropy
    value the core chooses per request (A.1, E.5), bound to ``local`` (ephemeral ports unless
    ``entropy_ports`` names them);
  * *EV sockets*: answers leave from a socket bound to (our address, the EV they copy).
  The core's "address" strings are IP literals; a datagram's socket address is (address, port)
  with the ports from :class:`~uet.pds.DatagramMeta`: dport the peer's UET port, sport the socket:
  IO-P1  a datagram whose source port is one of ours (the UET-port or an entropy socket, on its
      source address) leaves by that socket;
  IO-P2  any other (an answer: its EV is the initiator's) leaves by the EV socket bound to (its
      source address, its source port), from a cache of ``ev_sockets`` (default
      :data:`uet.io.engine.EV_SOCKETS`, 256: 32 initiators of 8 EVs each; beyond it the least
      recently used is closed and opened again when needed). EV sockets are never read;
  IO-P3  an EV port that cannot be bound (another socket of this host holds that address and
      port) is counted (``io_ev_unbound``, once per EV until it ages out of the cache) and its
      answers leave by the UET-port socket instead, their trailer recomputed (``io_tx_renat``):
      they still arrive, with the UET port as their source port, so only the EV echo is lost
      (under TSS with an AAD that covers the source port they do not authenticate);
  IO-P4  only the UET-port socket is read into the core: a datagram that reaches an entropy socket
      (a peer answering to the request's source port, as this project did before A.1's row
      was known) is dropped and counted (``io_rx_not_uet_port``), as the reference provider
      drops any datagram whose destination port is not the UET port.

Loop (docs/design-notes.md "Performance": never await per datagram)
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
  * One UET port for every endpoint, ``peer_port`` (the core's ``PdsConfig.port``; default the
    bound port, i.e. 4793): the port peers receive on is the port this endpoint receives on
    (A.1), and the core's PDC key is the peer's *address*. A send naming another port raises
    ValueError, and so does a ``bind`` port other than ``peer_port``.
  * Delivered messages wait in an inbox of ``max_inbox`` messages (plus those completed by the
    batch being read when it filled); while it is full the readers stop reading (the kernel queue fills, then drops; the core's retransmission recovers),
    which bounds memory when the application does not call :meth:`LiveEndpoint.receive`.
  * Entropy selection (``spray``): any kind of :data:`uet.multipath.SELECTOR_KINDS` over the
    entropy sockets' ports: rr, random, single (the first port; no rehash on timeout, since only
    our sockets' ports can be sent from), reps (REPS, E.5) or oblivious (E.6).
  * CSIG (facts E.4; ``csig=`` a signal type, the core's ``PdsConfig.csig``): the tags the
    live fabric puts ahead of the UET bytes are stripped and handed to the core (rules IO-T1, IO-T2 of
    :mod:`uet.io.engine`; without ``csig`` they are stripped, counted and ignored), the core
    reflects them in its ACKs, and the sender's ``spray`` policy runs inside a
    :class:`uet.multipath.CsigSelector` (built by :class:`uet.multipath.SelectorFactory` from the
    endpoint's description of its entropy sockets) with live times: signals expire after ``csig_max_age``
    and the reference is the best of the last ``csig_recent`` (``LIVE_CSIG_MAX_AGE``,
    ``LIVE_CSIG_RECENT``: the selector's own defaults suit simulated fabrics with round trips of
    about 10 us; a live round trip is about a millisecond). The relay keeps source ports (uet.fabric)
    unless two senders share one; then the receiver names the relay's port in its reflections,
    and ``ev_alias`` maps it back to our own entropy value (``uet demo`` passes the fabric's map).

Messages and SES operations (uet/host.py HOST-H2)
  * :meth:`LiveEndpoint.send` is an SES SEND (D.1) over the mode it names ("rud" or "rod"); it
    completes when the target's response arrives (placed: C.3, D.7). The receiving SES keeps an
    untagged receive posted for every SEND (SES-M7 of uet/ses/target.py: ``auto_receive``), so
    every message comes out of :meth:`LiveEndpoint.receive`.
  * The other operations pick their delivery mode per call: "rud" / "rod" (PDCs of that mode),
    "rudi" (write and read only, C.8; split here into single-packet operations of at most
    ``mtu`` bytes) and UUD for :meth:`LiveEndpoint.datagram`. Packets the SES makes on its own
    (read data, DEFERRABLE_RTR at the target) go over ``ses_mode`` (default "rud"; choice: the
    facts do not tie a response's PDC to the request's).
  * API: ``write``, ``read``, ``atomic``, ``cswap``, ``tsend``, ``ses_send`` (awaitable, raise
    :class:`SesFailed` with the return code name, e.g. BAD_MKEY), ``datagram``; target side
    ``register``, ``deregister``, ``post_recv``. :meth:`LiveEndpoint.receive` returns tagged
    messages and datagrams too (``tag`` set for tagged ones, ``op`` "send", "tsend" or
    "datagram"). Target-side completions (RmaWriteDone, RmaReadDone, AtomicDone, MessageError,
    RecvFailed) are kept in :attr:`LiveEndpoint.ses_events` (the last 1024).
"""

from __future__ import annotations

import dataclasses
import os
import random
import socket
from collections import Counter, deque
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Sequence

import trio

from .. import UET_IP_PROTO, UET_UDP_PORT
from ..host import Host, with_port
from ..cms.csig import CSIG_ETHERTYPE, Scale
from ..multipath import EntropySelector, SelectorFactory, SelectorSpec
from ..pds import PdcClosed, PdcEstablished, PdsConfig
from ..pds.rudi import RudiConfig
from ..ses import SesConfig
from ..ses import events as sev
from ..ses.common import rc_name
from ..wire.enums import AMO_DATATYPE, AMO_OPCODE
from . import sockets as S
from ..ownaddr import bind_own
from .engine import EV_SOCKETS, SocketEngine, _Sock
from .native_ip import ENCAPS, NativeIp, raw_socket

OP_MODES = ("rud", "rod", "rudi")  # delivery modes of SES operations (UUD: datagram only, C.8)
RUDI_WINDOW = 256  # single-packet RUDI operations of one read/write outstanding at once
AMO_BY_NAME = {v: k for k, v in AMO_OPCODE.table.items()}
DT_BY_NAME = {v: k for k, v in AMO_DATATYPE.table.items()}
# RUDI timers for a Python endpoint (the C.9 1 ms suits hardware; a live round trip is ms)
LIVE_RUDI = {"rto": 50e-3, "rto_max": 1.0, "max_retx": 8, "nack_retx_time": 50e-3}

# PdsConfig values for a live endpoint when no ``config`` is given (keyword fields still win).
# The core's defaults (C.9: RTO_INIT 1 ms, floor 200 us) suit hardware and the simulator; a Python
# endpoint's round trip is milliseconds (a window queued in the socket buffer, batches of
# datagrams per side), and with srtt + 4 rttvar alone a standing queue makes rttvar tiny, so any
# jitter fires a spurious RTO that resends the whole window (measured: 2-90 RTOs and up to 5x
# the data sent per 16-64 MiB transfer with a 1-50 ms floor; the receiver's first packet of a
# 64 MiB message and its final reassembly copy each pause it for tens of ms). Floors like TCP's
# 200 ms keep RTO for real losses; RACK and tail-loss probes (PDS-I7, PDS-I9) still recover holes
# within about one RTT. Once a PDC is established its backoff may grow to 4 s and it gives up
# after 8 timeouts in a row (PDS-I8 of uet.pds.recovery): with a 200 ms floor they span 22 s of
# silence instead of C.9's five in 2.6 s, what a peer on a loaded host needs when a SYN flood
# queues many seconds of datagrams ahead of ours in its socket (issue 25: 6-16 s measured on two
# busy cores); a peer that never answered is still given up after 2.6 s.
LIVE_DEFAULTS: dict[str, Any] = {"rto_initial": 250e-3, "rto_min": 200e-3,
                                 "rto_max_established": 4.0, "max_rto_retx_established": 8}
# MULTIPATH-K2, MULTIPATH-K3 of uet.multipath.csig for a live endpoint, whose round trip is about 1 ms (measured
# through uet demo's relay: an unloaded minimum of 0.7-1.0 ms) where the selector's defaults are
# for simulated fabrics of about 10 us: a reflected signal is forgotten after 20 ms, and the
# reference (the best path now) is the best signal of the last 3 ms
LIVE_CSIG_MAX_AGE = 20e-3
LIVE_CSIG_RECENT = 3e-3
EV_RCVBUF = 4096  # IO-P2: EV sockets are never read; a small queue holds what strays there


class SendFailed(Exception):
    """A message could not be delivered (the core's MessageFailed: retransmission limit, a NACK
    that closes the PDC, a SES error code)."""

    def __init__(self, reason: str, handle: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.handle = handle


class TooBig(SendFailed):
    """A datagram did not fit the route's MTU (EMSGSIZE; IO-M1 of uet.io.engine, facts A.1: DF,
    never fragments): ``reason`` is one line naming the MTU and ``--mtu``. The endpoint sends
    nothing more; every waiter and :meth:`LiveEndpoint.receive` raise it."""


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
    bytearray or a memoryview of its mapping (``bytes(m.data)`` makes a copy). ``message_id``
    is the SES's (D.2), ``job_id``, ``pid_on_fep`` and ``resource_index`` what its header named;
    ``tag`` the match bits of a tagged send (None otherwise); ``op`` "send", "tsend" or
    "datagram". ``pdcid`` is 0: a message is not tied to one PDC (the SES may cut it over any)."""
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


class LiveEndpoint(SocketEngine):
    """A UET host on UDP sockets. Make one with :func:`open_endpoint`."""

    def __init__(self, host: Host, uet_sock: _Sock | None, entropy: list[_Sock], *,
                 peer_port: int, batch: int = 64, max_inbox: int = 1024,
                 recv_bufsize: int = 65535, csig_ethertype: int = CSIG_ETHERTYPE, **ev: Any):
        super().__init__(host, uet_sock, entropy, batch=batch, max_inbox=max_inbox,
                         recv_bufsize=recv_bufsize, csig_ethertype=csig_ethertype, **ev)
        #: the PDS endpoint (RUD/ROD PDCs) and the SES of the host
        self.core = host.pds
        self.ses = host.ses
        self.ses_events: deque = deque(maxlen=1024)
        self.local = host.address
        self.peer_port = peer_port
        self.pdc_events: Counter = Counter()
        self._waiters: dict[int, _Waiter] = {}  # SES handle -> its waiter
        self._sizes: dict[int, int] = {}        # send handle -> bytes (SendResult.nbytes)
        self._closed_waiters: list[trio.Event] = []
        self.skip_close = False  # True: leave open_endpoint without closing the PDCs (C.7)
        self.selectors: list[EntropySelector] = []  # the entropy selectors of our initiator PDCs
        self._peers: dict[str, str] = {}  # a peer's address as given -> canonical (_dest)

    # --- public API -----------------------------------------------------------------------
    @property
    def port(self) -> int | None:
        """The bound UET port (IO-P1: every endpoint has one)."""
        return self.uet_sock.port if self.uet_sock else None

    @property
    def address(self) -> tuple[str, int]:
        """(address, UET port) this endpoint receives on (for a wildcard bind: the wildcard)."""
        s = self.uet_sock
        return (s.local, s.port) if s is not None else (self.local, self.peer_port)

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
        known = self._peers.get(host)
        if known is not None:
            return known
        canon = S.canonical(host)
        if S.family_of(canon) != S.family_of(self.local):
            raise ValueError(f"{canon}: not the address family of the local address {self.local}")
        # a peer's address is resolved once, not per send (issue 28: nothing per-peer on the
        # per-send path); bounded like the core's per-peer tables
        if len(self._peers) >= 4096:
            self._peers.clear()
        self._peers[host] = canon
        return canon

    def send_nowait(self, dest: str | tuple, data: bytes, *, mode: str = "rud", job_id: int = 0,
                    pid_on_fep: int = 0, resource_index: int = 0, tc: int = 0, op: str = "send",
                    **ses: Any) -> int:
        """Queue one message (an SES SEND, D.1 0x05) and start sending it; returns the handle
        :meth:`wait` takes. ``mode``: "rud" or "rod" (C.8); ``job_id``, ``pid_on_fep``,
        ``resource_index``: the ids its header names (D.2); ``tc``: its PDC's traffic class.

        ``op`` and further keyword arguments are reserved; only ``op="send"`` is taken. The
        other SES operations are methods: :meth:`tsend`, :meth:`write`, :meth:`read`,
        :meth:`atomic`, :meth:`cswap`, :meth:`datagram`."""
        if op != "send" or ses:
            raise NotImplementedError(f"SES operation {op!r} {sorted(ses)} is not taken here; "
                                      "only op='send' (the others are methods)")
        if mode not in ("rud", "rod"):
            raise ValueError(f"mode must be 'rud' or 'rod', not {mode!r}")
        host = self._dest(dest)
        handle = self.host.send(host, data, mode=mode, job_id=job_id, pid_on_fep=pid_on_fep,
                                resource_index=resource_index, tc=tc)
        self._waiters[handle] = _Waiter()
        self._sizes[handle] = len(data)
        self._service()
        return handle

    async def wait(self, handle: int) -> SendResult:
        """Until the message is placed at the target (its SES response arrived); raises
        :class:`SendFailed` (:class:`SesFailed` with the return code) when it cannot be."""
        w = self._waiters.get(handle)
        if w is None or handle not in self._sizes:
            raise KeyError(f"unknown or already collected send handle {handle}")
        self._fail_if_faulted(w)
        try:
            await w.event.wait()
        finally:
            if w.event.is_set():
                self._waiters.pop(handle, None)
                self._sizes.pop(handle, None)
        if w.error is not None:
            raise w.error
        assert w.result is not None
        return w.result

    def acked_not_answered(self, handle: int) -> bool:
        """Whether the message ``handle``, still waited for, had every request acknowledged by
        the target's PDS (CACK, C.2) while its SES response (D.7) has not come (SES-I3 of
        uet.ses.initiator): a target that took the bytes but never answered."""
        return self.host.ses.acked_by_transport(handle)

    async def send(self, dest: str | tuple, data: bytes, *, mode: str = "rud", **kw: Any) -> SendResult:
        """Send one message and return once the target placed it (its response arrived, which
        follows CACK of its last PSN, C.2); raises :class:`SendFailed` when the host gives up.
        Use ``trio.fail_after`` for a deadline. ``mode``: "rud" or "rod" (C.8)."""
        return await self.wait(self.send_nowait(dest, data, mode=mode, **kw))

    async def receive(self) -> Message:
        """The next delivered message (from any initiator, for any job, PID and resource index)."""
        while not self._inbox:
            if self.fault is not None:
                raise TooBig(self.fault)
            await self._inbox_event.wait()
        return self._take()

    def receive_nowait(self) -> Message | None:
        return self._take() if self._inbox else None

    # --- SES operations --------------------------------------------------------------------
    def _start_op(self, mode: str, fn: Any, *args: Any, **kw: Any) -> int:
        """Start one SES operation whose packets go over ``mode``; returns its handle."""
        if mode not in OP_MODES:
            raise ValueError(f"mode must be one of {OP_MODES} (UUD: datagram()), not {mode!r}")
        handle = self.host.op(mode, fn, *args, **kw)
        self._waiters[handle] = _Waiter()
        self._service()
        return handle

    async def _wait_op(self, handle: int) -> Any:
        w = self._waiters[handle]
        self._fail_if_faulted(w)
        try:
            await w.event.wait()
        finally:  # the handles are not public: nobody waits again (a cancelled operation
            self._waiters.pop(handle, None)  # runs on; its result is dropped)
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
        cfg = self.ses.config
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
        ses = self.ses
        mv = memoryview(bytes(data))
        pieces = self._pieces(mode, offset, len(mv))
        rs = await self._run_pieces(
            mode, lambda o, n: ses.write(host, key, offset + o, mv[o:o + n]), pieces)
        return sum(r.modified_length for r in rs)

    async def read(self, dest: str | tuple, key: int, offset: int, length: int, *,
                   mode: str = "rud") -> bytes:
        """RMA READ of ``length`` bytes at ``offset`` of the peer's region ``key``."""
        host = self._dest(dest)
        ses = self.ses
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
        ses = self.ses
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
        ses = self.ses
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
        ses = self.ses
        self._no_rudi(mode, "tsend")
        h = self._start_op(mode, ses.tsend, host, data, match_bits, header_data=header_data)
        return (await self._wait_op(h)).modified_length

    async def ses_send(self, dest: str | tuple, data: bytes, *, mode: str = "rud") -> int:
        """SES SEND (untagged) with a response: completes when the target placed it."""
        host = self._dest(dest)
        ses = self.ses
        self._no_rudi(mode, "send")
        return (await self._wait_op(self._start_op(mode, ses.send, host, data))).modified_length

    def datagram(self, dest: str | tuple, data: bytes) -> None:
        """DATAGRAM_SEND over UUD (B.14, C.8): one packet of at most mtu bytes, no response, no
        retransmission; the peer's :meth:`receive` gets it (``op`` "datagram") unless lost."""
        host = self._dest(dest)
        ses = self.ses
        self.host.op("uud", ses.datagram, host, data)
        self._service()

    def register(self, key: int, buffer: bytearray, **perm: Any) -> Any:
        """Expose ``buffer`` (a bytearray, used in place) to the peers' RMA and atomics under
        memory key ``key``; ``perm``: readable, writable, atomic (True), base (0)."""
        return self.ses.register(key, buffer, **perm)

    def deregister(self, key: int) -> None:
        self.ses.deregister(key)

    def post_recv(self, capacity: int | None = None, *, match_bits: int | None = None,
                  ignore_bits: int = 0) -> int:
        """Post a receive (tagged with ``match_bits``); the message that matches it comes out of
        :meth:`receive`. Returns its handle."""
        h = self.ses.post_recv(capacity, match_bits=match_bits, ignore_bits=ignore_bits)
        self._service()  # it may have matched an unexpected message
        return h

    @staticmethod
    def _no_rudi(mode: str, what: str) -> None:
        if mode == "rudi":
            raise ValueError(f"{what} is not idempotent: RUDI carries write and read only (C.8)")

    def _fail_if_faulted(self, w: _Waiter) -> None:
        if self.fault is not None and not w.event.is_set():  # IO-M1: nothing will be sent
            w.error = TooBig(self.fault)
            w.event.set()

    def _on_fault(self, line: str) -> None:
        """IO-M1 of uet.io.engine: every waiter fails with :class:`TooBig`, receive() raises it."""
        for w in self._waiters.values():
            self._fail_if_faulted(w)
        self._inbox_event.set()

    def _on_ses_event(self, e: Any) -> None:
        if isinstance(e, sev.OperationComplete):
            w = self._waiters.get(e.handle)
            if w is not None:
                n = self._sizes.get(e.handle)
                w.result = e if n is None else SendResult(e.handle, n, 0, e.message_id)
                w.event.set()
        elif isinstance(e, sev.OperationFailed):
            self.io["send_failed" if e.handle in self._sizes else "ses_failed"] += 1
            w = self._waiters.get(e.handle)
            if w is not None:
                w.error = SesFailed(e.op, e.return_code, e.reason, e.handle)
                w.event.set()
        elif isinstance(e, sev.MessageReceived):
            self._deliver(Message(e.data, str(e.peer), 0, e.message_id, e.job_id, e.pid_on_fep,
                                  e.resource_index, tag=e.tag,
                                  op="send" if e.tag is None else "tsend"))
        elif isinstance(e, sev.DatagramReceived):
            self._deliver(Message(e.data, str(e.peer), 0, 0, op="datagram"))
        else:
            self.io["ses_" + type(e).__name__] += 1
            self.ses_events.append(e)

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
        """The host's counters (:attr:`uet.host.Host.stats`: the PDS's, with RUDI's and UUD's
        folded in), the NACKs sent and received by code name, the live PDC count,
        ``paths_used`` (entropy ports that carried data requests), the SES's, RUDI's and UUD's
        own counters, and the adapter's as ``io_*``: datagrams sent and read, EAGAIN, send
        errors, truncated datagrams, timer firings, reader pauses (full inbox), deliveries.
        ``csig_bad`` and ``csig_unasked``: CSIG tags too short (IO-T2 of uet.io.engine) and tags
        or reflections this endpoint did not ask for (IO-T1, and the core's own count)."""
        host = self.host
        d: dict[str, Any] = dict(host.stats)
        d.update({f"io_{k}": v for k, v in self.io.items()})
        d["csig_bad"] = self.io["csig_bad"]
        d["csig_unasked"] = host.stats.get("csig_unasked", 0) + self.io["csig_unasked"]
        d["nacks_sent"] = dict(host.nacks_sent)
        d["nacks_rcvd"] = dict(host.nacks_rcvd)
        d["pdcs"] = len(self.core.pdcs())
        d["paths_used"] = sum(1 for v in self.tx_data_by_port.values() if v)
        d["ses"] = dict(self.ses.stats)
        d["rudi"] = dict(host.rudi.stats)
        d["uud"] = dict(host.uud.stats)
        d["ses_host"] = dict(host.counts)
        return d

    @property
    def first_tx_time(self) -> float | None:
        return self._first_tx

    def _dispatch(self) -> None:
        ses = self.ses
        while (se := ses.next_event()) is not None:
            self._on_ses_event(se)
        core = self.core
        while (e := core.next_event()) is not None:
            if isinstance(e, PdcEstablished):
                self.pdc_events[f"established_{e.role}"] += 1
            elif isinstance(e, PdcClosed):
                self.pdc_events[f"closed_{e.role}{'_error' if e.error else ''}"] += 1
                if self._closed_waiters:
                    ws, self._closed_waiters = self._closed_waiters, []
                    for w in ws:
                        w.set()


def _code(v: str | int, names: dict[str, int]) -> int:
    if isinstance(v, str):
        try:
            return names[v.upper()]
        except KeyError:
            raise ValueError(f"unknown name {v!r}; one of {sorted(names)}") from None
    return int(v)


def _family_local(own: str, local: str | None, peer: str | None) -> str:
    """The address the host calls its own: ``local``, else the UET-port socket's, else (a
    wildcard bind) the route source towards ``peer``, or loopback."""
    if local is not None:
        return S.canonical(local)
    if not S.is_wildcard(own):
        return own
    if peer is not None:
        return S.source_for(peer)
    return S.loopback_of(S.family_of(own))


@asynccontextmanager
async def open_endpoint(bind: tuple[str, int] | str | None = ("127.0.0.1", UET_UDP_PORT), *,
                        paths: int = 8, local: str | None = None, peer: str | None = None,
                        peer_port: int | None = None, config: PdsConfig | None = None,
                        seed: int | None = None, spray: str = "rr",
                        entropy_ports: Sequence[int] | None = None, zero_checksum: bool = True,
                        rcvbuf: int = 8 << 20, sndbuf: int = 4 << 20, batch: int = 64,
                        max_inbox: int = 1024, close_timeout: float = 1.0,
                        ses: SesConfig | bool | None = None, ses_mode: str = "rud",
                        auto_recv: int = 16, rudi_config: RudiConfig | None = None,
                        csig_ethertype: int = CSIG_ETHERTYPE, csig_scale: Scale | None = None,
                        csig_max_age: float = LIVE_CSIG_MAX_AGE,
                        csig_recent: float = LIVE_CSIG_RECENT,
                        ev_alias: Callable[[int], int] | None = None,
                        security: Any = None, ses_header: str = "auto",
                        ev_sockets: int = EV_SOCKETS, encap: str = "udp",
                        ip_proto: int = UET_IP_PROTO,
                        **config_fields: Any) -> AsyncIterator[LiveEndpoint]:
    """Open a live endpoint; ``async with open_endpoint(("127.0.0.1", 4793)) as ep:``.

    ``bind``: (address, port) of the UET-port socket everything arrives on (port 0 = ephemeral,
    or ``peer_port`` when given); None (an initiator): (``local``, ``peer_port``), or without
    ``local`` the first free loopback address when ``peer`` is on loopback or not given, else the
    route source towards it (IO-P1; uet.ownaddr.LocalAddressError, an OSError, says in one line
    why no address could be bound). ``paths``: entropy sockets (entropy values), or
    ``entropy_ports`` to bind given source ports. ``local``: the address the entropy sockets bind
    and the host calls its own (default: the UET-port socket's; for a wildcard bind the route
    source towards ``peer``, or loopback). ``peer_port``: the fabric's UET port, the one every
    peer and this endpoint receive on (default: the bound port, else 4793).
    ``ev_sockets``: the EV sockets answers leave by (IO-P2). ``config`` / keyword ``config_fields``: :class:`PdsConfig` (the
    ``port`` and ``entropy_factory`` fields are set here). ``spray``: "rr" or "random" over the
    entropy sockets. ``zero_checksum``: UDP checksum 0 (IPv4 SO_NO_CHECK, IPv6
    UDP_NO_CHECK6_TX); False lets the kernel compute it. ``seed``: the host's random choices
    (start PSNs, first PDCID); default random, so that endpoints sharing an address differ. On a
    normal exit the initiator PDCs are closed (C.7) for at most ``close_timeout`` seconds. On
    any exit the host then shuts down (HOST-H6 of uet/host.py): messages still in reassembly are
    dropped, their storage freed in order.
    ``ses``: the :class:`uet.ses.SesConfig` of the host's SES (True, False or None: the
    defaults; every endpoint has an SES, since messages are SES SENDs); ``auto_recv``: nonzero
    gives every untagged SEND a receive (SES-M7 of uet/ses/target.py), 0 leaves them to
    :meth:`LiveEndpoint.post_recv`; ``ses_mode`` the mode of the packets the SES makes on its
    own; ``rudi_config`` a :class:`uet.pds.rudi.RudiConfig` (its port and entropy are set).
    ``security``: a :class:`uet.tss.SecurityConfig` (its secure-domain table: SDI to key and
    mode): every datagram is protected with TSS and every one received must authenticate (HOST-H5 of
    uet.host); None (the default) keeps the CRC-32C trailer. ``ses_header``: the SES's
    :attr:`uet.ses.SesConfig.ses_header` ("standard" for the reference provider, A.1). The SES
    cuts messages into packets of the PDS's ``mtu`` payload bytes (``config_fields``; every
    socket sets DF, and a datagram too big for the route raises :class:`TooBig`).
    ``encap="ip"``: UET in IP protocol ``ip_proto`` on a raw socket as well (uet.io.native_ip
    IO-N1 to IO-N6: over IP to ``peer`` and to peers heard over IP; the UDP sockets stay open).
    """
    if encap not in ENCAPS:
        raise ValueError(f"unknown encapsulation {encap!r} ({', '.join(ENCAPS)})")
    if isinstance(bind, str):
        bind = S.parse_hostport(bind)
    if bind is not None:
        bind = (S.canonical(bind[0]), int(bind[1]))
        if peer_port is not None and bind[1] not in (0, peer_port):
            raise ValueError(f"bind port {bind[1]} and peer_port {peer_port} differ: every "
                             "endpoint receives on the UET port it sends to (facts A.1)")
        if local is not None and S.family_of(bind[0]) != S.family_of(local):
            raise ValueError(f"bind address {bind[0]} and local address {local} differ in family")
    socks: list[socket.socket] = []
    host: Host | None = None
    ep: LiveEndpoint | None = None

    def make(addr: str, port: int, tos: int = 46 << 2, rcv: int = rcvbuf) -> socket.socket:
        return S.udp_socket(addr, port, tos=tos, rcvbuf=rcv, sndbuf=sndbuf,
                            zero_checksum=zero_checksum)

    try:
        if bind is not None:
            # OWNADDR-O2: an address in use is one line naming it, not "[Errno 98]"
            bport = bind[1] or peer_port or 0
            raw, own = bind_own(lambda a: make(a, bport), port=bport, local=bind[0],
                                option="--bind", who="the receiver")
        else:  # IO-P1: an initiator receives on its own address at the UET port too
            uport = peer_port if peer_port is not None else UET_UDP_PORT
            raw, own = bind_own(lambda a: make(a, uport), port=uport, local=local, peer=peer)
        socks.append(raw)
        uet_sock = _Sock(raw, own, 46 << 2, True)
        local_addr = _family_local(own, local, peer)
        ports = list(entropy_ports) if entropy_ports is not None else [0] * paths
        if not ports:
            raise ValueError("need at least one entropy socket")
        entropy = []
        for p in ports:
            raw = make(local_addr, p, tos=2)
            socks.append(raw)
            entropy.append(_Sock(raw, local_addr, 2, False))
        values = [s.port for s in entropy]
        if peer_port is None:
            peer_port = uet_sock.port
        # the entropy sockets' ports, described for uet.multipath to build each PDC's selector
        selector = SelectorFactory(SelectorSpec(
            kind=spray, values=tuple(values), rehash_on_timeout=False, csig_scale=csig_scale,
            csig_knobs={"max_age": csig_max_age, "recent": csig_recent}, alias=ev_alias))
        base = config if config is not None else PdsConfig(**LIVE_DEFAULTS)
        cfg = dataclasses.replace(base, port=peer_port, entropy_factory=selector,
                                  entropy_values=len(values), **config_fields)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "big")
        # SES-K1 of uet/ses/target.py: endpoints sharing an address (processes of one host) name
        # themselves apart by a seeded-random initiator id, so their message ids cannot collide
        sc = ses if isinstance(ses, SesConfig) else SesConfig(
            mtu=cfg.mtu, seed=seed & 0xFFFFFFFF, ses_header=ses_header,
            initiator=random.Random(f"initiator:{seed}").getrandbits(32))
        if auto_recv:
            sc = dataclasses.replace(sc, auto_receive=True)
        rc = with_port(rudi_config or RudiConfig(**LIVE_RUDI), peer_port, values, seed)
        host = Host(local_addr, pds=cfg, ses=sc, rudi=rc, seed=seed, ses_mode=ses_mode,
                    rudi_entropy=values, security=security)
        ep = LiveEndpoint(host, uet_sock, entropy, peer_port=peer_port, batch=batch,
                          max_inbox=max_inbox, csig_ethertype=csig_ethertype,
                          make_ev=lambda a, p: make(a, p, rcv=EV_RCVBUF), ev_sockets=ev_sockets)
        ep.selectors = selector.made
        if encap == "ip":  # IO-N3 of uet.io.native_ip: bound to our own address
            socks.append(raw_socket(own, ip_proto=ip_proto, rcvbuf=rcvbuf, sndbuf=sndbuf))
            ep.native = NativeIp(socks[-1], own, uet_port=peer_port, peers=[peer] if peer else [])
            ep._lanes_ok = False  # IO-N4 needs every UDP source seen (the lane reads in place)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ep._timers)
            for s in ep.socks + ([ep.native] if ep.native else []):
                nursery.start_soon(ep._reader, s)
            try:
                yield ep
            except BaseException:
                nursery.cancel_scope.cancel()
                raise
            if not ep.skip_close and any(p.role == "initiator" for p in host.pdcs()):
                with trio.move_on_after(close_timeout):
                    await ep.close_pdcs()
            nursery.cancel_scope.cancel()
    finally:
        if host is not None:  # the readers have stopped: HOST-H6 of uet/host.py, in order (issue 25)
            host.shutdown()
        if ep is not None:
            ep.close_ev_sockets()
        for s in socks:
            s.close()
