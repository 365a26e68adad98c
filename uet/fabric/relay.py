"""The live loopback fabric (docs/design-notes.md "Test beds" 2): a trio UDP relay that applies the path model
of :mod:`uet.fabric.paths` to real datagrams between a real sender and a real receiver.

Addressing, as a router between two addresses (facts A.1, H.1 #19: every UET datagram goes
to UDP destination port = the UET port, its source port is the entropy value, EV, and an answer
copies its request's EV into its own source port):

* The relay keeps both ports and rewrites only the addresses. It receives at (the *front*
  address, UET port), where senders send, and at (the *back* address, UET port), where the
  receiver's answers come; the UET port is ``to``'s. ``listen`` names the front address (default:
  the first free loopback address, uet.ownaddr), ``FabricConfig.back_host`` the back one
  (default: the front's, one socket for both: what comes from the receiver's address is an
  answer). A request (S, EV) -> (front, P) leaves as (back, EV) -> (R, P); an answer
  (R, EV) -> (back, P) leaves as (front, EV) -> (S, P). ``FabricConfig.preserve_entropy`` (what
  this always does now) is kept and does nothing.
* A *flow* is one sender (address, EV): its path is ``hash(EV) % paths`` (or ``EV % paths``,
  ``FabricConfig.ecmp``) in both directions, since the EV is the source port of a request and
  of its answers alike. Its requests leave from a socket bound to (back, EV), its answers from
  one bound to (front, EV) (never read; the same socket when front and back are one address).
* The back side tells the flows apart by the EV alone: a flow whose EV another flow already has
  there, or whose EV the relay cannot bind, gets another port on the back side
  (``entropy_remapped``; the receiver echoes that port, which the relay maps back, and
  :meth:`Fabric.entropy_of` tells a sender which EV of its own it stands for). An answer-side
  port that cannot be bound sends the flow's answers from the front UET socket
  (``ev_unbound``). A datagram from the receiver on a port no flow has (the receiver initiating,
  such as an RMA read's data) opens a flow towards the sender whose flow opened last
  (``unrouted`` when none has).

A capture (``capture``) shows the link between the relay and the receiver, both directions, as a
tap there would: the requests as the relay sends them on, the answers as the receiver sent them
(from (R, EV) to (back, P), their arriving trailer), each after what its path did to it; so one
conversation's frames share one pair of addresses.

Because the relay rewrites addresses (and a remapped port) it rewrites the CRC-32C trailer of every datagram
it forwards, as a NAT recomputes checksums (docs/design-notes.md "Defaults", facts A.3): the incoming
trailer is verified against the hop it arrived on; when it holds, the trailer is replaced by the
one for the hop it leaves on, else the datagram goes on with its bytes unchanged (the receiver
drops it) and counts as ``crc_bad``. TSS packets (their ICV replaces the CRC) and datagrams that
arrive trimmed (DSCP 11) carry no trailer and pass unchanged (``crc_skipped``); a datagram the
fabric trims loses its trailer. Since the UDP length is the same on both hops, the CRC-32C
difference between the two coverages does not depend on the UET bytes (CRC is affine), so the
new trailer is the old one XOR a per-(flow, length) constant: one CRC pass per datagram, to verify.

DSCP and ECN: the TOS byte of each arriving datagram comes from IP_RECVTOS (IPV6_RECVTCLASS); what
leaves carries the TOS the model decided (trimmed: DSCP 11; CE when marked), set per datagram with
an IP_TOS (IPV6_TCLASS) control message on ``sendmsg`` unless it equals the socket's default (the
one it was opened for: DSCP 0 + ECT(0) for requests, DSCP 46 Not-ECT for answers and the UET
sockets). UDP checksum 0 on send (SO_NO_CHECK; UDP_NO_CHECK6_TX/RX for IPv6).

CSIG (facts E.4; ``FabricConfig.csig``, ``uet fabric --csig TYPE``): each link measures what a
switch port would and tags what it forwards (rules L1-L4 of :mod:`uet.fabric.paths`). On a real
fabric the tag is an L2 tag between the Ethernet header and IP (E.4: "like a VLAN tag", its own
EtherType); a userspace relay on UDP sockets has no L2 to put it in, so - the project's choice -
the relay puts the four tag bytes (TPID ``csig_ethertype`` big-endian, default 0x9900, then the
16 tag bits, uet.cms.csig CMS-C1) AHEAD of the UET bytes of every datagram it sends to an endpoint,
both directions: requests stamped by their link, answers (DSCP 46) neutral, datagrams it trimmed
with d set. The endpoint (:mod:`uet.io`, ``csig`` on) strips them before the PDS reads the
datagram: a UET datagram can never start with 0x99 (its first byte is the PDS type, below 19,
shifted left by 3), so the two cannot be confused. The tag is not part of the UET datagram: the
CRC-32C trailer covers the UET bytes and a UDP length without the tag, as it would on a wire
where the tag is L2; captures (``capture``) show it where it belongs, as an L2 tag after the MAC
addresses with the frame's own EtherType inside. A datagram that arrives at the relay already
tagged (a relay behind another one) has its tag taken off and used as the start of the compare
and replace (CMS-C3), as a second switch would; with CSIG off the relay passes datagrams unchanged.

No IP fragments (facts A.1): the relay's sockets set DF (uet.io.sockets), and with
``FabricConfig.mtu`` a datagram longer than the paths carry is dropped and counted ``too_big``.

Performance (docs/design-notes.md "Performance"): one receive task per socket, never one per datagram; each
waits until its socket is readable, then drains it until it would block (at most ``BATCH`` at a
time, ``RELEASE_EVERY`` per ``recvmmsg`` where uet.native.sockbatch has its C twin, else per-datagram
``recvmsg``), runs every datagram through the model synchronously and sends what is due (every
``RELEASE_EVERY`` datagrams and at the end of the batch, so that a long batch does not hold
everything back), in time order, a run of datagrams for one socket in one ``sendmmsg`` (issue 15). Measured on the project's 2-core machine: about 15-20 us of CPU per
4 KiB datagram, two thirds of it the two system calls (``python tools/bench_fabric.py``). One scheduler task sleeps until the earliest pending release (a heap) and sends in
batches. A send that would block leaves the datagram at the head of the heap and the scheduler
waits until that socket is writable.
"""

from __future__ import annotations

import errno
import heapq
import os
import socket
import struct
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import IO, Any, AsyncIterator, Callable, Union

import trio

from ..native import crc32c_prefix
from ..native.sockbatch import recv_batch, send_batch
from ..io.sockets import canonical as _canon
from ..io.sockets import family_of as _family
from ..io.sockets import is_wildcard as _wildcard
from ..io.sockets import IP_PKTINFO, IPV6_PKTINFO, IPV6_TCLASS
from ..io.sockets import source_for as _source_for
from ..io.sockets import udp_socket
from ..ownaddr import bind_own
from ..wire.build import DSCP_CONTROL, DSCP_TRIMMED, ECT0
from ..wire.trailer import rewrite_mask, udp_seed
from .capture import CaptureFn, FrameBuilder, PcapCapture
from ..net import Ecmp
from ..cms.csig import behind, tpid_bytes
from ..mtu import IPV4_LEN, IPV6_LEN, packet_overhead
from .paths import COUNTERS, DIRECTIONS, FWD, INF, NOT_SUMMED, REV, ETH_LEN, UDP_LEN, \
    FabricConfig, Link, Releases, flow_rng, route_links

BATCH = 512                # datagrams drained per wake-up before yielding
EV_RCVBUF = 4096           # the EV sockets are never read
RELEASE_EVERY = 32         # send what is due after this many datagrams of a batch
RECV_SIZE = 65536
_WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
RUN_MIN = 4                # datagrams in a row for one socket that go out in one sendmmsg
TOS_DATA = ECT0                    # DSCP 0 + ECT(0): what most sender->receiver datagrams carry
TOS_CONTROL = DSCP_CONTROL << 2    # DSCP 46, Not-ECT: ACKs, NACKs, control

Capture = Union[None, CaptureFn, str, os.PathLike, IO[bytes]]


class Hop:
    """One direction of one flow: the socket it leaves by, where it goes, the link (path and
    direction) it takes, its random generator, and its trailer rewriting."""

    __slots__ = ("sock", "dest", "link", "rng", "tos_default", "extra_cmsg", "cmsgs", "family",
                 "in_dst", "in_dport", "crc", "src_addr", "verify", "src", "sport",
                 "dst", "dport")

    def __init__(self, sock: socket.socket, dest: tuple, link: Link, rng: Any, tos_default: int,
                 in_dst: str, in_dport: int, src: str, sport: int, verify: bool,
                 extra_cmsg: list | None = None):
        self.sock = sock
        self.dest = dest
        self.link = link
        self.rng = rng
        self.tos_default = tos_default
        self.extra_cmsg = extra_cmsg or []  # the front's IP_PKTINFO (wildcard front): names src
        self.cmsgs: dict[int, list] = {}
        self.family = _family(dest[0])
        self.in_dport = in_dport
        self.in_dst = _canon(in_dst)
        self.src, self.sport = src, sport
        self.dst, self.dport = _canon(dest[0]), dest[1]
        self.crc: dict[tuple, tuple[int, int]] = {}
        self.src_addr: tuple = ()
        self.verify = verify

    def cmsg(self, tos: int) -> list:
        c = self.cmsgs.get(tos)
        if c is None:
            if self.family == socket.AF_INET6:
                c = [(socket.IPPROTO_IPV6, IPV6_TCLASS, struct.pack("i", tos))]
            else:
                c = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))]
            c = self.cmsgs[tos] = c + self.extra_cmsg
        return c

    def _crc_entry(self, key: tuple) -> tuple[int, int]:
        """(CRC seed of the hop the datagram came on, trailer XOR mask to the hop it leaves
        on), per sender address and UDP payload length (uet.wire.trailer)."""
        (host, port, *_), n = key
        seed_in, seed_out = self._seeds(_canon(host), port, n)
        e = (seed_in, rewrite_mask(seed_in, seed_out, n))
        if len(self.crc) >= 256:
            self.crc.clear()
        self.crc[key] = e
        return e

    def _seeds(self, host: str, port: int, n: int) -> tuple[int, int]:
        """The CRC-32C registers after the context (A.3) of the hop the datagram came on (from
        ``host``:``port``) and of the one it leaves on, for ``n`` bytes of UDP payload."""
        return (udp_seed(host, self.in_dst, port, self.in_dport, UDP_LEN + n),
                udp_seed(self.src, self.dst, self.sport, self.dport, UDP_LEN + n))

    def as_arrived(self, data: bytes, tos: int) -> bytes:
        """``data`` (as sent on) with the trailer it arrived with, for the capture: the rewrite
        is an XOR, so it is undone by the same mask. A trimmed or TSS datagram has no trailer;
        one that arrived with a bad trailer (passed unchanged) shows another bad one."""
        n = len(data)
        e = self.crc.get((self.src_addr, n))
        if e is None or n < 4 or tos >> 2 == DSCP_TRIMMED or data[0] >> 3 == 1:
            return data
        return data[:-4] + (int.from_bytes(data[-4:], "big") ^ e[1]).to_bytes(4, "big")

    def rewrite(self, data: bytes, link: Link) -> bytes:
        """``data`` with its trailer for this hop, or unchanged (``crc_bad``) when the trailer it
        arrived with does not verify for the hop it came on (``src_addr`` -> our socket)."""
        n = len(data)
        if n < 4:
            link.crc_bad += 1
            return data
        key = (self.src_addr, n)
        e = self.crc.get(key)
        if e is None:
            e = self._crc_entry(key)
        t = int.from_bytes(data[-4:], "big")
        if self.verify and crc32c_prefix(data, n - 4, e[0]) != t:
            link.crc_bad += 1
            return data
        link.crc_rewritten += 1
        return data[:-4] + (t ^ e[1]).to_bytes(4, "big")


@dataclass
class Flow:
    sender: tuple            # (host, port) as recvmsg reported it
    entropy: int             # the sender's source port
    path: int
    back_port: int           # its source port on the back side (the EV unless remapped)
    fwd: Hop
    rev: Hop

    def describe(self) -> dict[str, Any]:
        return {"sender": f"{self.sender[0]}:{self.sender[1]}", "entropy": self.entropy,
                "relay_port": self.back_port, "path": self.path}


class Fabric:
    """A live fabric. Usually made by :func:`open_fabric`; otherwise construct it (the sockets
    are bound at once, so :attr:`port` is known), ``await nursery.start(fab.run)``, and call
    :meth:`close` after the nursery is done with it."""

    def __init__(self, listen: tuple[str | None, int] | None, to: tuple[str, int],
                 config: FabricConfig | None = None, capture: CaptureFn | None = None):
        self.cfg = cfg = config or FabricConfig()
        cfg.validate()
        self.to = (_canon(to[0]), int(to[1]))
        self.port: int = self.to[1]  # the UET port, kept for every datagram (A.1)
        lhost, lport = listen if listen is not None else (None, 0)
        if lport not in (0, self.port):
            raise ValueError(f"listen port {lport}: the relay keeps the UET port of every "
                             f"datagram, {self.port} (the port of --to; facts A.1)")
        self.front, self.listen_host = bind_own(
            lambda a: udp_socket(a, self.port, tos=TOS_CONTROL, rcvbuf=cfg.rcvbuf), port=self.port,
            local=lhost, peer=self.to[0], option="--listen", who="the relay")
        self.host: str = self.listen_host
        self._front_wild = _wildcard(self.listen_host)
        self.back_host = (_canon(cfg.back_host) if cfg.back_host else self.listen_host
                          if not self._front_wild else _canon(_source_for(*self.to)))
        self.back: socket.socket | None = None  # the back UET socket, when not the front's
        if self.back_host != self.listen_host:
            try:
                self.back, _ = bind_own(  # OWNADDR-O2: in use, one line naming it
                    lambda a: udp_socket(a, self.port, tos=TOS_CONTROL, rcvbuf=cfg.rcvbuf),
                    port=self.port, local=self.back_host, option="--back",
                    who="the relay's back side")
            except BaseException:
                self.front.close()
                raise
        self._ev: dict[tuple[str, int], tuple[socket.socket, int]] = {}  # (addr, port) -> (sock, tos)
        self._by_back_port: dict[int, Flow] = {}  # the back side's source port -> its flow
        self._last_sender: str | None = None
        self.ecmp = Ecmp(cfg)
        self.releases = Releases(cfg.slack_us * 1e-6, self._wake)
        ov = {socket.AF_INET: ETH_LEN + 20 + UDP_LEN, socket.AF_INET6: ETH_LEN + 40 + UDP_LEN}
        ov_f, ov_r = ov[_family(self.to[0])], ov[_family(self.listen_host)]
        if cfg.topology is not None:  # the routes of a switched topology (uet.net.route)
            self.links = [route_links(cfg, self.releases, FWD, ov_f),
                          route_links(cfg, self.releases, REV, ov_r)]
        else:
            self.links = [[Link(cfg, p, FWD, self.releases, overhead=ov_f) for p in range(cfg.paths)],
                          [Link(cfg, p, REV, self.releases, overhead=ov_r) for p in range(cfg.paths)]]
        self.flows: dict[tuple, Flow] = {}
        self._tpid = tpid_bytes(cfg.csig_ethertype) if cfg.csig_type is not None else None
        self.capture = capture
        self._frames = FrameBuilder() if capture is not None else None
        self.stats = {"flows_opened": 0, "flow_limit_drops": 0, "flow_errors": 0, "truncated": 0,
                      "recv_errors": 0, "entropy_remapped": 0, "csig_tagged_in": 0, "too_big": 0,
                      "ev_unbound": 0, "unrouted": 0}
        # FabricConfig.mtu (A.1): the longest UDP payload the paths carry
        v6 = _family(self.to[0]) == socket.AF_INET6
        self.max_udp = (INF if cfg.mtu is None else cfg.mtu - (IPV6_LEN if v6 else IPV4_LEN)
                        - UDP_LEN + packet_overhead(ipv6=v6, tss=True, csig=True))
        self.t0 = 0.0
        self._nursery: trio.Nursery | None = None
        self._cs: trio.CancelScope | None = None
        self._blocked: socket.socket | None = None
        self._closed = False
        self._clock: Callable[[], float] = trio.current_time

    # --- public -------------------------------------------------------------------------
    def path_of(self, port: int, host: str | None = None) -> int:
        """The path of a sender whose source port (its entropy) is ``port``: ECMP on the
        entropy (uet.net.Ecmp); its answers, which carry the same EV, take the same path back."""
        return self.ecmp.entropy_path(port)

    @property
    def address(self) -> tuple[str, int]:
        """Where senders send (the front address, the UET port)."""
        return (self.host, self.port)

    def now(self) -> float:
        """Seconds since the fabric opened (the clock of ``fail`` times)."""
        return trio.current_time() - self.t0

    def fail_path(self, path: int, at_us: float | None = None) -> None:
        """Fail ``path`` (both directions) now, or ``at_us`` microseconds after the fabric opened."""
        t = trio.current_time() if at_us is None else self.t0 + at_us * 1e-6
        for d in (FWD, REV):
            self.links[d][path].fail_now(t)

    def flow_for(self, sender: tuple[str, int]) -> dict[str, Any] | None:
        f = self.flows.get(tuple(sender))
        if f is None:
            f = next((x for x in self.flows.values() if x.sender[:2] == tuple(sender)[:2]), None)
        return f.describe() if f else None

    def entropy_of(self, port: int) -> int:
        """The entropy (source port) of the sender whose flow leaves the back side by ``port``, or
        ``port`` itself: what a receiver sees as the EV of a request (a remapped one) mapped back
        to the sender's own, so that a sender in this process can read the EVs a CSIG reflection
        names (uet.io ``ev_alias``)."""
        f = self._by_back_port.get(port)
        return f.entropy if f is not None else port

    def flow_list(self) -> list[dict[str, Any]]:
        return [f.describe() for f in self.flows.values()]

    def queued(self) -> int:
        return len(self.releases)

    async def drain(self, poll: float = 0.002) -> None:
        """Wait until nothing is waiting for release (the caller bounds it with a timeout)."""
        while self.releases.heap:
            await trio.sleep(poll)

    def counters(self) -> dict[str, Any]:
        """Live counters: per path (both directions summed, and ``fwd``/``rev``), totals, and the
        relay's own. ``packets``/``bytes`` count what was sent on (duplicates included);
        ``max_queue_bytes`` is the larger direction's peak (totals: the largest path's), the
        other queue and CSIG figures are per direction (uet.fabric.paths)."""
        now = trio.current_time() if self.t0 else 0.0
        paths = []
        tot = {"fwd": _zero(), "rev": _zero()}
        for p in range(self.cfg.paths):
            entry: dict[str, Any] = {"path": p, "failed": now >= self.links[FWD][p].fail_at}
            both = _zero()
            for d in (FWD, REV):
                s = self.links[d][p].snapshot(now)
                s["packets"] = s["forwarded"] + s["dup_forwarded"]
                entry[DIRECTIONS[d]] = s
                _add(both, s)
                _add(tot[DIRECTIONS[d]], s)
            peak = max(entry["fwd"]["max_queue_bytes"], entry["rev"]["max_queue_bytes"])
            paths.append({**entry, **both, "max_queue_bytes": peak, "fwd": entry["fwd"],
                          "rev": entry["rev"]})
        totals = _zero()
        _add(totals, tot["fwd"])
        _add(totals, tot["rev"])
        totals.update(tot)
        totals["max_queue_bytes"] = max((p["max_queue_bytes"] for p in paths), default=0)
        relay = dict(self.stats, flows=len(self.flows), uptime_s=round(now - self.t0, 6) if self.t0 else 0.0,
                     csig=self.cfg.csig)
        return {"paths": paths, "totals": totals, "relay": relay}

    # --- running ------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self.t0 = trio.current_time()
        for d in (FWD, REV):
            for link in self.links[d]:
                link.start(self.t0)
        if type(trio.lowlevel.current_clock()).__name__ == "SystemClock":
            # trio's own clock is perf_counter() + an offset; reading it directly is cheaper
            off = self.t0 - time.perf_counter()
            pc = time.perf_counter
            self._clock = lambda: pc() + off
        for i, t in self.cfg.fail:
            if 0 <= i < self.cfg.paths:
                self.fail_path(i, t)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._scheduler)
                self._start_receivers(nursery)
                task_status.started(self)
        finally:
            self._nursery = None

    def _start_receivers(self, nursery: trio.Nursery) -> None:
        """One receive task per UET socket (the native-IP relay: per raw socket)."""
        nursery.start_soon(self._recv_loop, self.front, self._on_uet)
        if self.back is not None:
            nursery.start_soon(self._recv_loop, self.back, self._on_uet)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock, _ in self._ev.values():
            sock.close()
        self._ev.clear()
        for sock in (self.front, self.back):
            if sock is not None:
                sock.close()

    # --- internals ----------------------------------------------------------------------
    def _wake(self, w: float) -> None:
        cs = self._cs
        if cs is not None and w < cs.deadline:
            cs.deadline = w

    async def _scheduler(self) -> None:
        rel = self.releases
        while True:
            blocked = self._blocked
            if blocked is not None:
                self._blocked = None
                await trio.lowlevel.wait_writable(blocked)
            else:
                w = rel.next_wake()
                if w > trio.current_time():
                    with trio.CancelScope(deadline=w) as cs:
                        self._cs = cs
                        await trio.sleep_forever()
                    self._cs = None
                else:
                    await trio.lowlevel.checkpoint()
            self._release(trio.current_time())

    def _release(self, now: float) -> None:
        """Send every datagram due by ``now`` (within the slack), in time order: a run of
        ``RUN_MIN`` or more for one socket (one flow's requests, or its answers)
        in one ``sendmmsg`` where the C twin serves (uet.native.sockbatch), a shorter one with
        ``sendto`` / ``sendmsg`` each. What a socket that would block did not send goes back on
        the heap, where it was, and the scheduler waits until that socket is writable."""
        heap = self.releases.heap
        if not heap:
            return
        limit = now + self.releases.slack
        pop = heapq.heappop
        due = []
        while heap and heap[0][0] <= limit:
            due.append(pop(heap))
        i, n = 0, len(due)
        while i < n:
            hop = due[i][2]
            sock = hop.sock
            j = i + 1
            while j < n and due[j][2].sock is sock:
                j += 1
            if j - i >= RUN_MIN:
                items = [(e[3], e[2].dest[0], e[2].dest[1], e[4], e[2].src) for e in due[i:j]]
                k, err = send_batch(sock, items, hop.tos_default, bool(hop.extra_cmsg))
                for e in due[i:i + k]:
                    self._sent(e)
                i += k
                if not err:
                    continue
            else:
                e = due[i]
                data, tos = e[3], e[4]
                try:
                    if tos == hop.tos_default and not hop.extra_cmsg:
                        sock.sendto(data, hop.dest)
                    else:
                        sock.sendmsg([data], hop.cmsg(tos), 0, hop.dest)
                except OSError as exc:
                    err = exc.errno or errno.EIO
                else:
                    self._sent(e)
                    i += 1
                    continue
            if err in _WOULD_BLOCK:
                for e in due[i:]:
                    heapq.heappush(heap, e)
                self._blocked = sock
                self._wake(-INF)
                return
            link = due[i][5]
            link.send_errors += 1
            if due[i][6]:
                link.queued -= 1
                link.dropped += 1
            i += 1

    def _sent(self, entry: tuple) -> None:
        """The counters (and the capture) of one datagram sent on."""
        _, _, hop, data, tos, link, orig = entry
        if orig:
            link.queued -= 1
            link.forwarded += 1
        else:
            link.dup_forwarded += 1
        link.bytes += len(data)
        cap = self.capture
        if cap is not None:
            src, dst, sport, dport = hop.src, hop.dst, hop.sport, hop.dport
            if link.direction == REV:  # shown on the receiver's side of the relay, as it left R
                (src, sport), dst, dport = hop.src_addr[:2], hop.in_dst, hop.in_dport
                data = hop.as_arrived(data, tos)
            cap(time.time(), self._frame(src, dst, sport, dport, tos, data, link))

    def _frame(self, src: str, dst: str, sport: int, dport: int, tos: int, data: bytes,
               link: Link) -> bytes:
        """The captured frame of ``data`` sent on ``link`` (the hop's addresses and ports)."""
        if link.csig is not None:  # the tag ahead of the UET bytes is an L2 tag
            return self._frames.tagged_frame(src, dst, sport, dport, tos, data)
        return self._frames.frame(src, dst, sport, dport, tos, data)

    async def _recv_loop(self, sock: socket.socket, handle: Callable[..., None]) -> None:
        wait = trio.lowlevel.wait_readable
        clock = self._clock
        stats = self.stats
        while True:
            try:
                await wait(sock)
            except (OSError, trio.ClosedResourceError):
                return
            n = 0
            while n < BATCH:
                # RELEASE_EVERY at a time: keep the pipeline moving inside a long batch
                got, errors = recv_batch(sock, RELEASE_EVERY, RECV_SIZE)
                if errors:
                    if sock.fileno() == -1:
                        return  # closed
                    stats["recv_errors"] += errors
                for data, src, sport, dst, tos, truncated in got:
                    if truncated:
                        stats["truncated"] += 1
                        continue
                    if len(data) > self.max_udp:  # FabricConfig.mtu: above the paths' MTU
                        stats["too_big"] += 1
                        continue
                    handle(data, tos, dst, (src, sport), clock())
                k = len(got) + errors
                n += k
                if k < RELEASE_EVERY:
                    break
                self._release(clock())
            self._release(clock())

    def _on_uet(self, data: bytes, tos: int, dst: str | None, addr: tuple, now: float) -> None:
        """A datagram at a UET socket: from the receiver's address an answer (or a request of the
        receiver's own), found by its source port on the back side; from anyone else a sender's,
        found by (address, EV)."""
        if addr[0] == self.to[0]:
            flow = self._by_back_port.get(addr[1]) or self._receiver_flow(addr[1])
            if flow is None:
                return
            hop = flow.rev
        else:
            flow = self.flows.get(addr) or self._new_flow(addr, dst)
            if flow is None:
                return
            hop = flow.fwd
        hop.src_addr = addr
        tag = None
        if self._tpid is not None:
            tag, data = behind(data, self._tpid)  # tagged upstream (L4)
            if tag is not None:
                self.stats["csig_tagged_in"] += 1
        skip = (tos >> 2) == DSCP_TRIMMED or (data and data[0] >> 3 == 1)
        hop.link.forward(now, data, tos, hop, hop.rng, None if skip else hop.rewrite, tag)

    def _receiver_flow(self, port: int) -> Flow | None:
        """A datagram from the receiver on a port no flow has: the receiver initiates (an RMA
        read's data); it opens a flow of that EV towards the sender whose flow opened last."""
        if self._last_sender is None:
            self.stats["unrouted"] += 1
            return None
        return self._new_flow((self._last_sender, port), None)

    def _ev_socket(self, addr: str, port: int, tos: int) -> tuple[socket.socket, int] | None:
        """(a socket bound to (``addr``, ``port``), its default TOS) from the relay's pool, bound
        on first use (port 0: a new ephemeral one); None when it cannot be bound."""
        got = self._ev.get((addr, port)) if port else None
        if got is None:
            try:
                sock = udp_socket(addr, port, tos=tos, rcvbuf=EV_RCVBUF)
            except OSError:
                return None
            got = self._ev[(addr, sock.getsockname()[1])] = (sock, tos)
        return got

    def _room_for_flow(self) -> bool:
        """False (counted) when the flow table is full (``max_flows``)."""
        if len(self.flows) >= self.cfg.max_flows:
            self.stats["flow_limit_drops"] += 1
            return False
        return True

    def _register(self, flow: Flow, host: str) -> Flow:
        """Enter a new flow under its sender's address and EV and its back-side EV."""
        self.flows[flow.sender] = flow
        self._by_back_port[flow.back_port] = flow
        self._last_sender = host
        self.stats["flows_opened"] += 1
        return flow

    def _new_flow(self, addr: tuple, dst: str | None) -> Flow | None:
        cfg = self.cfg
        if not self._room_for_flow():
            return None
        host, port = _canon(addr[0]), addr[1]
        front_ip = _canon(dst) if (self._front_wild and dst) else self.listen_host
        if self._front_wild and not dst:
            front_ip = _canon(_source_for(host, port))
        # the back side keeps the EV, unless another flow has it there or it cannot be bound
        fwd_s = None if port in self._by_back_port else self._ev_socket(self.back_host, port,
                                                                        TOS_DATA)
        if fwd_s is None:
            fwd_s = self._ev_socket(self.back_host, 0, TOS_DATA)
            if fwd_s is None:
                self.stats["flow_errors"] += 1
                return None
            self.stats["entropy_remapped"] += 1
        back_port = fwd_s[0].getsockname()[1]
        rev_s = self._ev_socket(front_ip, port, TOS_CONTROL)
        extra = []
        if rev_s is None:  # the answers leave from the front UET socket (its port, not the EV)
            self.stats["ev_unbound"] += 1
            rev_s = (self.front, TOS_CONTROL)
            if self._front_wild:
                if self.front.family == socket.AF_INET6:
                    extra = [(socket.IPPROTO_IPV6, IPV6_PKTINFO, socket.inet_pton(socket.AF_INET6, front_ip) + bytes(4))]
                else:
                    extra = [(socket.IPPROTO_IP, IP_PKTINFO, bytes(4) + socket.inet_pton(socket.AF_INET, front_ip) + bytes(4))]
        path = self.ecmp.entropy_path(port)  # uet.net: ECMP on the EV, both directions
        index = self.stats["flows_opened"]
        fwd = Hop(fwd_s[0], self.to, self.links[FWD][path], flow_rng(cfg.seed, FWD, index),
                  fwd_s[1], in_dst=front_ip, in_dport=self.port, src=self.back_host,
                  sport=back_port, verify=cfg.verify_crc)
        rev = Hop(rev_s[0], (host, self.port), self.links[REV][path],
                  flow_rng(cfg.seed, REV, index), rev_s[1], in_dst=self.back_host,
                  in_dport=self.port, src=front_ip, sport=rev_s[0].getsockname()[1],
                  verify=cfg.verify_crc, extra_cmsg=extra)
        return self._register(Flow(addr, port, path, back_port, fwd, rev), host)


def _zero() -> dict[str, int]:
    d = dict.fromkeys(COUNTERS, 0)
    d.update(queued=0, queue_bytes=0, packets=0)
    return d


def _add(acc: dict[str, Any], s: dict[str, Any]) -> None:
    for k, v in s.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in NOT_SUMMED:
            acc[k] = acc.get(k, 0) + v


@asynccontextmanager
async def open_fabric(listen: tuple[str | None, int] | None = None,
                      to: tuple[str, int] = ("127.0.0.1", 4793),
                      config: FabricConfig | None = None, *, capture: Capture = None,
                      kind: Callable[..., Fabric] | None = None) -> AsyncIterator[Fabric]:
    """Run a live fabric for the body of the ``async with``::

        async with open_fabric(to=("127.0.0.1", 4793),
                               config=FabricConfig(paths=4, loss=0.01)) as fab:
            ...  # senders send to fab.address, at the UET port; fab.counters() at any time

    ``listen``: (front address or None, 0 or the UET port); None or no address: the first free
    loopback address (uet.ownaddr).
    ``capture`` is a callback ``(wall_time, ethernet_frame)`` called for every datagram the fabric
    sends on (both directions), or a path / binary file to write a pcap to (linktype 1).
    ``kind``: what makes the fabric from ``(listen, to, config, capture)``, :class:`Fabric` when
    None (native IP: :func:`uet.fabric.iprelay.fabric_kind`).
    """
    cap: CaptureFn | None
    own = None
    if capture is None or callable(capture):
        cap = capture  # type: ignore[assignment]
    else:
        own = cap = PcapCapture(capture)  # type: ignore[arg-type]
    try:
        fab = (kind or Fabric)(listen, to, config, cap)
    except BaseException:
        if own is not None:
            own.close()
        raise
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(fab.run)
            try:
                yield fab
            finally:
                nursery.cancel_scope.cancel()
    finally:
        fab.close()
        if own is not None:
            own.close()
