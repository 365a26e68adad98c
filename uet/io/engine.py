"""The socket engine of the live endpoint: one sans-IO :class:`uet.host.Host` on UDP sockets,
driven by trio without an await per datagram (docs/design-notes.md "Performance"). The public API on top of
it is :class:`uet.io.endpoint.LiveEndpoint`; the module docstring there describes the sockets
(rules IO-P1 to IO-P4: which socket a datagram leaves by and which are read) and the loop.

CSIG tags (facts E.4): the live fabric (uet.fabric.relay) puts a 4-byte CSIG tag (TPID
``csig_ethertype``, default 0x9900, then 16 tag bits, uet.cms.csig CMS-C1) ahead of the UET bytes of
what it forwards, a userspace stand-in for the L2 tag. Every datagram read is checked for it
before the core sees it: a UET datagram never starts with 0x99 (its first byte is the PDS type,
below 19, shifted left by 3), so the test is exact.

  IO-T1  a datagram whose first two bytes are the TPID and that has at least 4 bytes: the tag is
      stripped; with ``csig`` on (the core's ``PdsConfig.csig``) its 16 bits go to
      ``Host.receive_datagram(csig=)`` (the PDS reflects them, counted ``csig_tags``); with it
      off they are counted (``csig_unasked``) and ignored, and the rest is read as usual, so a
      relay tagging for an endpoint that did not ask still works;
  IO-T2  a datagram that starts with the TPID but is shorter than 4 bytes is counted (``csig_bad``)
      and dropped: it holds no tag and no UET packet.

No IP fragments (facts A.1): every socket sets DF (uet.io.sockets).
  IO-M1  a datagram the kernel refuses as longer than the route's MTU (EMSGSIZE) is not a loss to
      retransmit: it is counted (``tx_too_big``), nothing more leaves the engine (no
      retransmission loop), and ``fault`` keeps the one line that says why (uet.mtu.too_big_line:
      the datagram's size, the route's MTU, the ``--mtu`` in force and what fits), which
      :meth:`SocketEngine._on_fault` hands to the API (the live endpoint fails every waiter with
      it; the commands print it and exit 2).
"""

from __future__ import annotations

import errno
import math
import socket
from collections import Counter, OrderedDict, deque
from typing import Any, Callable, Sequence

import trio

from ..cms.csig import CSIG_ETHERTYPE, behind, tpid_bytes
from ..host import Host
from ..pds import DatagramMeta, seal
from ..native.rxlane import ipv4
from ..mtu import EMSGSIZE, too_big_line
from ..native.sockbatch import MMSG_MAX, recv_area, recv_batch, send_batch
from ..pds.datagram import DSCP_CONTROL
from ..wire.enums import REQUEST_TYPES
from . import sockets as S

INF = math.inf
MSG_TRUNC = int(socket.MSG_TRUNC)
_WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
RUN_MIN = 4  # datagrams in a row for one socket that go out in one send_batch
META_CACHE = 4096  # DatagramMetas of arriving datagrams kept for reuse (one per 5-tuple and TOS)
EV_SOCKETS = 256  # IO-P2 of uet.io.endpoint: sockets bound to answered EVs, least recently used closed
TOS_ANSWER = DSCP_CONTROL << 2  # what most answers carry (DSCP 46, Not-ECT)


def _carries_data(data: bytes, dscp: int) -> bool:
    """A PDC's request (B.1), counted per entropy port; under TSS the type is hidden (B.15), so
    a protected datagram counts when it went with a data DSCP, not the answers' 46 (A.2)."""
    t = data[0] >> 3 if data else 0
    return t in REQUEST_TYPES or (t == 1 and dscp != DSCP_CONTROL)


class _Sock:
    __slots__ = ("sock", "family", "port", "local", "local4", "tos", "wildcard", "anc", "is_uet")

    def __init__(self, sock: socket.socket, local: str, tos: int, is_uet: bool):
        self.sock = sock
        self.family = sock.family
        self.port = sock.getsockname()[1]
        self.local = local
        self.local4 = ipv4(local)  # the receive lane reads IPv4 datagrams in place
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


class SocketEngine:
    """The host's datagrams on the sockets, its timers on the trio clock, its events handed to
    :meth:`_dispatch` (the subclass's) after every batch; delivered items wait in an inbox of
    ``max_inbox`` while the readers pause (the kernel queue fills, then drops; the PDS's
    retransmission recovers), so memory stays bounded when nobody takes them."""

    def __init__(self, host: Host, uet_sock: _Sock | None, entropy: list[_Sock], *,
                 batch: int = 64, max_inbox: int = 1024, recv_bufsize: int = 65535,
                 csig_ethertype: int = CSIG_ETHERTYPE,
                 make_ev: Callable[[str, int], socket.socket] | None = None,
                 ev_sockets: int = EV_SOCKETS):
        self.host = host
        self.csig_tpid = tpid_bytes(csig_ethertype)  # IO-T1, IO-T2
        self.csig = host.pds.config.csig is not None        # IO-T1: tags go to the core
        self.uet_sock = uet_sock
        self.entropy = entropy
        self.socks = ([uet_sock] if uet_sock else []) + entropy
        self._by_port: dict[int, _Sock] = {s.port: s for s in self.socks}
        # IO-P2: sockets bound to (our address, an EV we answer), least recently used first; None
        # marks an EV that could not be bound (IO-P3) until it ages out
        self._ev: OrderedDict[tuple[str, int], _Sock | None] = OrderedDict()
        self._ev_max = max(1, ev_sockets)
        self._make_ev = make_ev
        self.batch = batch
        self.max_inbox = max_inbox
        self.recv_bufsize = recv_bufsize
        self.io: Counter = Counter()        # adapter counters (see LiveEndpoint.stats)
        self.tx_data_by_port: Counter = Counter()  # data requests sent per entropy port
        self._inbox: deque = deque()
        self._inbox_event = trio.Event()
        self._space = trio.Event()
        self._wake = trio.Event()
        self._armed = INF
        self._backlog: deque = deque()
        self._first_tx: float | None = None
        self.fault: str | None = None  # IO-M1: why nothing is sent any more
        self.native: Any = None  # uet.io.native_ip.NativeIp with --encap ip (rules IO-N1 to IO-N6 there)
        self._clock = trio.current_time
        self._metas: dict[tuple, DatagramMeta] = {}
        # the receive lane reads datagrams in place (Host.receive_area): a host with lanes and
        # without TSS (HOST-H5), whose CSIG tag cannot pass for a request's first byte (IO-T1)
        self._lanes_ok = (getattr(host.pds, "lanes", None) is not None
                          and getattr(host, "tss", None) is None
                          and self.csig_tpid[0] >> 3 not in REQUEST_TYPES)

    def _dispatch(self) -> None:
        """Take the host's events (the subclass's)."""
        raise NotImplementedError

    def _on_fault(self, line: str) -> None:
        """IO-M1: the engine stopped sending, for the reason ``line`` (the subclass's)."""

    def _too_big(self, data: bytes, meta: DatagramMeta) -> None:
        """IO-M1 for a datagram the kernel refused with EMSGSIZE."""
        self.io["tx_too_big"] += 1
        if self.fault is None:
            host = self.host
            self.fault = too_big_line(len(data), meta.dst, payload=host.ses.config.mtu,
                                      tss=getattr(host, "tss", None) is not None, csig=self.csig)
            self._backlog.clear()
            self._on_fault(self.fault)

    # --- the inbox ---------------------------------------------------------------------------
    def _deliver(self, m: Any) -> None:
        self._inbox.append(m)
        self.io["delivered"] += 1
        if not self._inbox_event.is_set():
            self._inbox_event.set()
        if len(self._inbox) >= self.max_inbox and self._space.is_set():
            self._space = trio.Event()

    def _take(self) -> Any:
        m = self._inbox.popleft()
        if not self._inbox:
            self._inbox_event = trio.Event()
        if len(self._inbox) < self.max_inbox and not self._space.is_set():
            self._space.set()
        return m

    # --- the engine (synchronous parts: no await per datagram) ----------------------------
    def _drain(self, s: _Sock, limit: int) -> int:
        """Read up to ``limit`` datagrams of ``s`` and hand them to the core: read in place by
        the C receive lane where it serves (:meth:`_drain_area`), else as bytes
        (:meth:`_drain_items`). Only the UET-port socket is read into the core (IO-P4)."""
        if s is self.native:  # IO-N2 of uet.io.native_ip
            return s.drain(self, limit)
        if not s.is_uet:
            return self._drain_stray(s, limit)
        if s.local4 is not None and self._lanes_ok:
            return self._drain_area(s, limit)
        return self._drain_items(s, limit)

    def _drain_stray(self, s: _Sock, limit: int) -> int:
        """IO-P4: a datagram that reaches an entropy socket came to a port that is not the UET port
        (a peer answering to the request's source port, the rule A.1 replaced): dropped,
        counted ``rx_not_uet_port``, as the reference provider drops it."""
        got, errors = recv_batch(s.sock, limit, self.recv_bufsize)
        self.io["rx_not_uet_port"] += len(got)
        if errors:
            self.io["rx_errors"] += errors
        return len(got) + errors

    def _drain_items(self, s: _Sock, limit: int) -> int:
        """Read up to ``limit`` datagrams of ``s`` (one ``recvmmsg`` per batch where the C twin
        serves, uet.native.sockbatch) and hand them to the core in one call
        (:meth:`Host.receive_datagrams`, one clock reading for the batch); a tagged one (IO-T1)
        goes alone, in its place in the order."""
        got, errors = recv_batch(s.sock, limit, self.recv_bufsize)
        io = self.io
        if errors:
            io["rx_errors"] += errors
        tpid = self.csig_tpid
        t0 = tpid[0]
        items: list = []
        append = items.append
        for data, src, sport, dst, tos, truncated in got:
            if truncated:
                io["rx_truncated"] += 1
                continue
            meta = self._meta(s, src, sport, dst, tos)
            if data and data[0] == t0 and data[:2] == tpid:  # IO-T1, IO-T2
                if items:
                    self.host.receive_datagrams(items, self._clock())
                    items = []
                    append = items.append
                self._tagged(data, meta)
                continue
            append((data, meta))
        if items:
            self.host.receive_datagrams(items, self._clock())
        n = len(got) + errors
        io["rx_datagrams"] += n
        return n

    def _meta(self, s: _Sock, src: str, sport: int, dst: str | None, tos: int) -> DatagramMeta:
        """The DatagramMeta of a datagram that arrived on ``s``: one per 5-tuple and TOS, reused
        (the core never changes a meta; its own caches, the initiator's per EV and the replies'
        per 4-tuple, rely on that too)."""
        key = (src, sport, dst, tos, s.port)
        meta = self._metas.get(key)
        if meta is None:
            metas = self._metas
            if len(metas) >= META_CACHE:
                metas.clear()
            if self.native is not None:  # IO-N4 of uet.io.native_ip: answer a UDP peer over UDP
                self.native.heard_udp(src)
            meta = metas[key] = DatagramMeta(src, s.local if dst is None else dst, sport, s.port,
                                             tos & 3, tos >> 2)
        return meta

    def _drain_area(self, s: _Sock, limit: int) -> int:
        """:meth:`_drain` where the C receive lane serves (issue 15 item 1): each ``recvmmsg``
        batch stays where the kernel put it, the lane takes the requests it serves in place
        (:meth:`Host.receive_area`), and only the others become bytes and a meta here."""
        io = self.io
        tpid = self.csig_tpid
        n = 0
        while n < limit:
            want = min(limit - n, MMSG_MAX)
            area = recv_area(s.sock, want, self.recv_bufsize)
            if area is None:  # not a socket the batch calls serve after all
                return n + self._drain_items(s, limit - n)
            if area.errors:
                io["rx_errors"] += area.errors
                n += area.errors
                continue
            got = area.count
            n += got
            if got:

                def item(i: int, with_data: bool) -> tuple[Any, DatagramMeta] | None:
                    data, src, sport, dst, tos, truncated = area.item(i, with_data)
                    if truncated:
                        io["rx_truncated"] += 1
                        return None
                    meta = self._meta(s, src, sport, dst, tos)
                    if with_data and data and data[0] == tpid[0] and data[:2] == tpid:
                        self._tagged(data, meta)  # IO-T1, IO-T2
                        return None
                    return data, meta

                self.host.receive_area(area, got, s.local4, s.port, self._clock(), item)
            io["rx_datagrams"] += got
            if got < want:
                break  # the socket is empty
        return n

    def _tagged(self, data: bytes, meta: DatagramMeta) -> None:
        """IO-T1, IO-T2 for a datagram that starts with the TPID."""
        io = self.io
        bits, rest = behind(data, self.csig_tpid)
        if bits is None:
            io["csig_bad"] += 1  # IO-T2
            return
        if self.csig:
            io["csig_tags"] += 1
            self.host.receive_datagram(rest, meta, self._clock(), csig=bits)
        else:
            io["csig_unasked"] += 1  # IO-T1: not asked for, ignored
            self.host.receive_datagram(rest, meta, self._clock())

    def _send_batch(self, out: Sequence[tuple[bytes, DatagramMeta]], start: int = 0) -> None:
        """Send ``out[start:]`` in its order. A run of ``RUN_MIN`` or more datagrams for one socket
        (the ACKs of a receiver) goes out in one ``sendmmsg`` where the C twin serves
        (uet.native.sockbatch.send_batch); a shorter one (a spray that changes socket every
        datagram) with ``sendto`` / ``sendmsg`` each. A socket that would block puts the rest in
        the backlog; another failure loses that datagram (the core retransmits)."""
        if self.native is not None:  # IO-N1, IO-N4 of uet.io.native_ip: the rest goes over UDP
            out, start = self.native.send(self, out, start), 0
        sock_for = self._sock_for
        io = self.io
        tx_data = self.tx_data_by_port
        backlog = self._backlog
        sent = 0
        n = len(out)
        i = start
        while i < n:
            data, meta = out[i]
            s = sock_for(meta)
            j = i + 1
            if s is not None:  # a run of datagrams for this socket
                while j < n and out[j][1].sport == meta.sport and out[j][1].src == meta.src:
                    j += 1
            else:
                data, meta, s = self._renat(data, meta)  # IO-P3
            if j - i >= RUN_MIN:
                k, err = self._send_run(s, out, i, j)
                sent += k
                i += k
                if not err:
                    continue
                if err in _WOULD_BLOCK:
                    io["tx_eagain"] += 1
                    backlog.extend(out[i:])
                    if not self._wake.is_set():
                        self._wake.set()
                    break
                if err == EMSGSIZE:  # IO-M1
                    self._too_big(*out[i])
                    break
                io["tx_errors"] += 1
                i += 1
                continue
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
            except OSError as exc:
                if exc.errno == EMSGSIZE:  # IO-M1
                    self._too_big(data, meta)
                    break
                io["tx_errors"] += 1
            else:
                sent += 1
                if _carries_data(data, meta.dscp):
                    tx_data[s.port] += 1
            i += 1
        if sent:
            io["tx_datagrams"] += sent
            if self._first_tx is None:
                self._first_tx = self._clock()

    def _send_run(self, s: _Sock, out: Sequence[tuple[bytes, DatagramMeta]], i: int,
                  j: int) -> tuple[int, int]:
        """``out[i:j]``, all for socket ``s``, through send_batch: (datagrams sent, the errno of
        the next one or 0)."""
        items = [(d, m.dst, m.dport, (m.dscp << 2) | m.ecn, m.src) for d, m in out[i:j]]
        k, err = send_batch(s.sock, items, s.tos, s.wildcard)
        tx_data = self.tx_data_by_port
        for d, m in out[i:i + k]:
            if _carries_data(d, m.dscp):
                tx_data[s.port] += 1
        return k, err

    def _ev_sock(self, src: str, port: int) -> _Sock | None:
        """IO-P2: the socket bound to (``src``, ``port``) that answers leave by, from the cache
        (opened on first use; beyond ``ev_sockets`` the least recently used is closed); None
        when that port cannot be bound (IO-P3, counted ``ev_unbound``)."""
        key = (src, port)
        cache = self._ev
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        s = None
        if self._make_ev is not None:
            try:
                raw = self._make_ev(src, port)
            except OSError:
                self.io["ev_unbound"] += 1
            else:
                s = _Sock(raw, src, TOS_ANSWER, False)
                self.io["ev_sockets_opened"] += 1
        if len(cache) >= self._ev_max:
            old = cache.popitem(last=False)[1]
            if old is not None:
                old.sock.close()
                self.io["ev_sockets_closed"] += 1
        cache[key] = s
        return s

    def close_ev_sockets(self) -> None:
        for s in self._ev.values():
            if s is not None:
                s.sock.close()
        self._ev.clear()

    def _sock_for(self, meta: DatagramMeta) -> _Sock | None:
        """IO-P1, IO-P2: ours whose port is the datagram's source port (on its source address), else
        the EV socket of (source address, source port); None: IO-P3."""
        s = self._by_port.get(meta.sport)
        if s is None or not (s.wildcard or s.local == meta.src):
            s = self._ev_sock(meta.src, meta.sport)
        return s

    def _route(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, DatagramMeta, _Sock]:
        """IO-P1 to IO-P3 for one datagram: (its bytes, its meta, the socket it leaves by)."""
        s = self._sock_for(meta)
        return (data, meta, s) if s is not None else self._renat(data, meta)

    def _renat(self, data: bytes, meta: DatagramMeta) -> tuple[bytes, DatagramMeta, _Sock]:
        """IO-P3: a datagram whose source port could not be bound leaves by the UET-port socket
        (else an entropy socket), its trailer recomputed for that port, as a NAT would."""
        pool = [self.uet_sock] if self.uet_sock is not None else self.entropy
        s = pool[meta.sport % len(pool)]
        self.io["tx_renat"] += 1
        m2 = DatagramMeta(meta.src, meta.dst, s.port, meta.dport, meta.ecn, meta.dscp)
        if data and data[0] >> 3 == 1:  # TSS (HOST-H5 of uet.host): no port in its AAD, nothing to redo
            return data, m2, s
        return seal((data[:-4],), m2), m2, s

    def _service(self, rearm: bool = True) -> None:
        """Send what the core has, dispatch its events, re-arm the timer if it moved earlier."""
        core = self.host
        if self._backlog:
            self.io["tx_deferred"] += 1
        elif self.fault is None:  # IO-M1: nothing leaves after EMSGSIZE
            out = core.datagrams_to_send(self._clock())
            if out:
                self._send_batch(out)
        self._dispatch()
        if rearm:
            t = core.get_timer()
            if t is not None and t < self._armed and not self._wake.is_set():
                self._wake.set()

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
            native = self.native
            if native is not None and native.over_ip(bl[0][1]):  # IO-N5 of uet.io.native_ip
                sock = native.sock
            else:
                sock = self._route(*bl[0])[2].sock
            with trio.move_on_after(0.05) as cs:
                await trio.lowlevel.wait_writable(sock)
            if cs.cancelled_caught:  # the datagram is lost; the core retransmits
                self.io["tx_dropped"] += 1
                bl.popleft()
                continue
            items = list(bl)
            bl.clear()
            self._send_batch(items)
        self._service(rearm=False)
