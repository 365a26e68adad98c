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

INF = math.inf
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


@dataclass(frozen=True, slots=True)
class Message:
    """One delivered message: its bytes, the initiator's address and the ids that name it.
    ``data`` is bytes, or (multi-packet messages, no copy) the reassembly buffer, a bytearray."""
    data: bytes | bytearray
    peer: str
    pdcid: int
    message_id: int
    job_id: int = 0
    pid_on_fep: int = 0
    resource_index: int = 0


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
                 recv_bufsize: int = 65535):
        self.core = core
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

        ``op`` and further keyword arguments are the seam for the SES operations of a later issue
        (tagged send: ``op="tsend", match_bits=...``; RMA write/read; atomics); only ``op="send"``
        (SES SEND, D.1 0x05) is implemented."""
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
        return d

    @property
    def first_tx_time(self) -> float | None:
        return self._first_tx

    # --- the engine (synchronous parts: no await per datagram) ----------------------------
    def _drain(self, s: _Sock, limit: int) -> int:
        core_rx = self.core.receive_datagram
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
        core = self.core
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
        core = self.core
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
                        **config_fields: Any) -> AsyncIterator[LiveEndpoint]:
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
    closed (C.7) for at most ``close_timeout`` seconds.
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
        ep = LiveEndpoint(core, uet_sock, entropy, peer_port=peer_port, batch=batch,
                          max_inbox=max_inbox)
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
