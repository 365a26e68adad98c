"""Native IP for the live endpoint (facts A.1 "Native IP", A.3, F; issue 27 item 1): UET
directly in IP protocol 253 (``ip_proto``) behind the 4-byte entropy header, on one raw socket.

The sans-IO core is unchanged: it speaks its UDP form (a datagram whose meta names the EV as the
source port and the UET port as the destination port, sealed with the UDP-mode trailer), and this
adapter translates at the edge.

  IO-N1  out: the IP payload is the entropy header (the EV, ``meta.sport``; reserved 0), the core's
      UET bytes, and a CRC-32C trailer recomputed over the IP source and destination addresses
      and the IP payload before it (A.3, native-IP coverage: what
      :func:`uet.wire.build.native_ip_frame` builds). A TSS datagram has no trailer: its ICV
      covers F's native-IP AAD (addresses, the entropy header, the security header), the core's
      ``aad="entropy"`` with ``sport`` = EV, which the commands select with ``--encap ip``.
      The kernel builds the IP header: TOS per datagram (``IP_TOS`` / ``IPV6_TCLASS`` control
      message), DF (uet.mtu.set_dont_fragment), the source the socket is bound to.
  IO-N2  in: the EV of the entropy header becomes ``meta.sport`` and the UET port ``meta.dport``
      (an answer then copies the request's EV into its entropy header, the port rule's
      counterpart, A.1); a payload that verifies gets the core's UDP-form trailer, one that
      does not a trailer that does not verify either (the core counts it ``bad_crc``, as for
      UDP); one shorter than the entropy header is dropped, counted ``io_rx_ip_short``.
  IO-N3  a raw socket receives every protocol-``ip_proto`` datagram to the host: it is bound to the
      endpoint's own address, so the kernel hands it only those to that address (several
      processes on one host: distinct addresses, uet.ownaddr); a wildcard-bound one takes all.
  IO-N4  the encapsulation per peer: over IP to the peer named when the endpoint opened and to
      every peer heard over IP; over UDP to a peer heard over UDP only (with ``--encap ip`` a
      receiver also accepts UDP, as the reference provider does, and answers in kind).
  IO-N5  a full send buffer puts the rest in the engine's backlog (sent when the raw socket is
      writable); EMSGSIZE is IO-M1 of uet.io.engine (one line, the command exits 2).
  IO-N6  without root or CAP_NET_RAW, :func:`raw_socket` raises :class:`RawDenied` whose message is
      the one line the commands print (exit 2).

The framing is :mod:`uet.wire.ipencap` (I1, I2), the socket :mod:`uet.rawip` (R1-R4).
"""

from __future__ import annotations

import errno
import socket
from typing import Any, Sequence

from ..pds import DatagramMeta
from ..rawip import RawBatch, RawDenied, raw_socket, tos_cmsg  # noqa: F401 (re-exported)
from ..wire.ipencap import ENTROPY_LEN, from_ip_payload, to_ip_payload
from . import sockets as S
from .engine import _carries_data

ENCAPS = ("udp", "ip")


class NativeIp:
    """The raw socket of one live endpoint and rules IO-N1 to IO-N5 for the engine that owns it."""

    is_uet = True  # read into the core (IO-P4 of uet.io.endpoint)

    def __init__(self, sock: socket.socket, local: str, *, uet_port: int,
                 peers: Sequence[str] = ()):
        self.sock = sock
        self.family = sock.family
        self.local = local
        self.wildcard = S.is_wildcard(local)
        self.uet_port = uet_port
        self.ip_peers: set[str] = {S.canonical(p) for p in peers}  # IO-N4
        self.udp_peers: set[str] = set()
        self._cmsgs: dict[tuple[int, str], list] = {}
        self._metas: dict[tuple, DatagramMeta] = {}
        self._bufsize = 65535 + 60

    def over_ip(self, meta: DatagramMeta) -> bool:
        """IO-N4: whether a datagram to ``meta.dst`` leaves over IP."""
        return meta.dst in self.ip_peers or meta.dst not in self.udp_peers

    def heard_udp(self, src: str) -> None:
        self.udp_peers.add(src)

    def _meta(self, src: str, ev: int, dst: str, tos: int) -> DatagramMeta:
        key = (src, ev, dst, tos)
        m = self._metas.get(key)
        if m is None:
            if len(self._metas) >= 4096:
                self._metas.clear()
            m = self._metas[key] = DatagramMeta(src, dst, ev, self.uet_port, tos & 3, tos >> 2)
        return m

    def drain(self, eng: Any, limit: int) -> int:
        """Read up to ``limit`` datagrams and hand them to ``eng``'s core in one call (IO-N2, IO-N3)."""
        io = eng.io
        items: list = []
        own = None if self.wildcard else self.local
        batch = RawBatch(self.sock, local=self.local, bufsize=self._bufsize, limit=limit)
        for src, dst, tos, payload in batch:
            if own is not None and dst != own:  # IO-N3 (the kernel filters too: bound address)
                io["rx_ip_not_ours"] += 1
                continue
            dg = from_ip_payload(payload, src, dst, self.uet_port)
            if dg is None:
                io["rx_ip_short"] += 1
                continue
            self.ip_peers.add(src)
            items.append((dg[0], self._meta(src, dg[1], dst, tos)))
        if items:
            io["rx_ip"] += len(items)
            eng.host.receive_datagrams(items, eng._clock())
        io["rx_errors"] += batch.errors
        io["rx_datagrams"] += batch.reads
        return batch.reads

    def _cmsg(self, tos: int, src: str) -> list:
        key = (tos, src)
        c = self._cmsgs.get(key)
        if c is None:
            c = [tos_cmsg(self.family, tos)]
            if self.wildcard:
                c.append(S.src_cmsg(self.family, src))
            if len(self._cmsgs) >= 1024:
                self._cmsgs.clear()
            self._cmsgs[key] = c
        return c

    def send(self, eng: Any, out: Sequence[tuple[bytes, DatagramMeta]], start: int) -> list:
        """Send the datagrams of ``out[start:]`` that go over IP (IO-N1, IO-N4, IO-N5); the others, in
        their order, are returned for the engine's UDP path."""
        udp: list = []
        sock = self.sock
        io = eng.io
        sent = 0
        for i in range(start, len(out)):
            data, meta = out[i]
            if not self.over_ip(meta):
                udp.append(out[i])
                continue
            tos = (meta.dscp << 2) | meta.ecn
            try:
                sock.sendmsg([to_ip_payload(data, src=meta.src, dst=meta.dst, ev=meta.sport)],
                             self._cmsg(tos, meta.src), 0, (meta.dst, 0))
            except (BlockingIOError, InterruptedError):  # IO-N5
                io["tx_eagain"] += 1
                eng._backlog.extend(out[i:])
                if not eng._wake.is_set():
                    eng._wake.set()
                break
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:  # IO-M1; the line counts UDP's 8 bytes: 4 fewer
                    eng._too_big(data[:-ENTROPY_LEN], meta)
                    return []
                io["tx_errors"] += 1
            else:
                sent += 1
                if _carries_data(data, meta.dscp):
                    eng.tx_data_by_port[meta.sport] += 1
        if sent:
            io["tx_datagrams"] += sent
            io["tx_ip"] += sent
            if eng._first_tx is None:
                eng._first_tx = eng._clock()
        return udp
