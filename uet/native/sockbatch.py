"""Batched UDP receive and send (issue 15 item 2): fewer kernel crossings, same results.

Two functions, each with a reference (the per-datagram loop the live endpoint and the live relay
always ran: ``recvmsg`` / ``sendto`` / ``sendmsg``) and a C twin (``recvmmsg`` / ``sendmmsg``
through cffi, ``native/mmsg.c``, one system call per batch of up to ``MMSG_MAX`` datagrams):

``recv_batch(sock, limit, bufsize) -> (datagrams, errors)``
    Reads until the socket would block (or an EINTR), at most ``limit`` reads. ``datagrams`` is a
    list of ``(data, src_host, src_port, dst_host_or_None, tos, truncated)``: the bytes (at most
    ``bufsize``), the source, the destination address from IP_PKTINFO (IPV6_PKTINFO) when the
    socket asked for it (wildcard-bound) else None, the TOS / traffic class byte from IP_RECVTOS
    (IPV6_RECVTCLASS; 0 when absent) and whether the datagram was longer than ``bufsize``
    (MSG_TRUNC: the bytes are its first ``bufsize``). ``errors`` counts reads that failed with
    another error; each failed read counts against ``limit`` like a datagram.
``send_batch(sock, items, tos_default, wildcard) -> (sent, errno)``
    Sends ``items``, each ``(data, dst_host, dst_port, tos, src_host)``, in order on ``sock``:
    a datagram whose ``tos`` differs from the socket's default ``tos_default`` carries an IP_TOS
    (IPV6_TCLASS) control message; on a ``wildcard``-bound socket every datagram carries its TOS
    and names its source address ``src_host`` (IP_PKTINFO / IPV6_PKTINFO). Stops at the first
    failure: ``sent`` datagrams went out, and ``errno`` is the failure of ``items[sent]`` (EAGAIN
    when the socket is full), 0 when all went out.

``BATCH_BACKEND`` is ``"c"`` when the C twins are in use (the C extension is in use, see
``uet.native.BACKEND``, and the system has ``recvmmsg``). They serve IPv4 sockets; IPv6 sockets
always take the reference loop (a documented choice: link-local scope ids make the address text
of IPv6 differ from a plain ``inet_ntop``), and so does anything that is not a ``socket.socket``
(the tests' stand-ins that fail on purpose). tests/native/test_sockbatch.py drives both on real
loopback sockets and requires the same results.
"""

from __future__ import annotations

import errno as _errno
import socket
import struct
import threading
from typing import Any, Sequence

__all__ = ["BATCH_BACKEND", "MMSG_MAX", "RxArea", "parse_anc", "recv_area", "recv_batch",
           "recv_batch_py", "send_batch", "send_batch_py"]

IPPROTO_IP = socket.IPPROTO_IP
IPPROTO_IPV6 = socket.IPPROTO_IPV6
IP_TOS = socket.IP_TOS
IP_PKTINFO = 8
IPV6_PKTINFO = 50
IPV6_TCLASS = 67
ANC_SIZE = 128  # room for a TOS/TCLASS and a PKTINFO control message
MSG_TRUNC = int(socket.MSG_TRUNC)
AF_INET = socket.AF_INET
AF_INET6 = socket.AF_INET6
Socket = socket.socket
MMSG_MAX = 64
_RETRY = (_errno.EAGAIN, _errno.EWOULDBLOCK, _errno.EINTR)


def parse_anc(anc: list, family: int = 0) -> tuple[int, str | None]:
    """(TOS byte, destination address or None) from ``recvmsg`` ancillary data."""
    tos = 0
    dst = None
    for level, kind, data in anc:
        if level == IPPROTO_IP:
            if kind == IP_TOS and data:
                tos = data[0]
            elif kind == IP_PKTINFO and len(data) >= 12:
                dst = socket.inet_ntop(AF_INET, data[8:12])
        elif level == IPPROTO_IPV6:
            if kind == IPV6_TCLASS and len(data) >= 4:
                tos = struct.unpack("i", data[:4])[0] & 0xFF
            elif kind == IPV6_PKTINFO and len(data) >= 16:
                dst = socket.inet_ntop(AF_INET6, data[:16])
    return tos, dst


_CMSGS: dict[tuple, list] = {}


def _cmsgs(family: int, tos: int, src: str | None) -> list:
    """The control messages of one datagram (cached: a socket uses few of them)."""
    key = (family, tos, src)
    c = _CMSGS.get(key)
    if c is None:
        if len(_CMSGS) >= 1024:
            _CMSGS.clear()
        c = _CMSGS[key] = _make_cmsgs(family, tos, src)
    return c


def _make_cmsgs(family: int, tos: int, src: str | None) -> list:
    if family == AF_INET6:
        c = [(IPPROTO_IPV6, IPV6_TCLASS, struct.pack("i", tos))]
        if src is not None:
            c.append((IPPROTO_IPV6, IPV6_PKTINFO, socket.inet_pton(AF_INET6, src) + bytes(4)))
    else:
        c = [(IPPROTO_IP, IP_TOS, struct.pack("i", tos))]
        if src is not None:
            c.append((IPPROTO_IP, IP_PKTINFO, bytes(4) + socket.inet_pton(AF_INET, src) + bytes(4)))
    return c


# --------------------------------------------------------------------------------------------
# the reference: one system call per datagram
# --------------------------------------------------------------------------------------------

def recv_batch_py(sock: socket.socket, limit: int, bufsize: int) -> tuple[list, int]:
    """The reference of :func:`recv_batch` (see the module docstring)."""
    recv = sock.recvmsg
    out: list = []
    append = out.append
    errors = n = 0
    while n < limit:
        try:
            data, anc, flags, addr = recv(bufsize, ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            break
        except OSError:
            errors += 1
            n += 1
            continue
        n += 1
        if len(anc) == 1 and anc[0][1] == IP_TOS and anc[0][0] == IPPROTO_IP:
            tos, dst = (anc[0][2][0] if anc[0][2] else 0), None  # the common IPv4 case
        else:
            tos, dst = parse_anc(anc)
        append((data, addr[0], addr[1], dst, tos, bool(flags & MSG_TRUNC)))
    return out, errors


def send_batch_py(sock: socket.socket, items: Sequence[tuple], tos_default: int,
                  wildcard: bool) -> tuple[int, int]:
    """The reference of :func:`send_batch` (see the module docstring)."""
    fam = sock.family
    i = 0
    for data, dst, dport, tos, src in items:
        try:
            if wildcard:
                sock.sendmsg([data], _cmsgs(fam, tos, src), 0, (dst, dport))
            elif tos == tos_default:
                sock.sendto(data, (dst, dport))
            else:
                sock.sendmsg([data], _cmsgs(fam, tos, None), 0, (dst, dport))
        except OSError as e:
            return i, e.errno or _errno.EIO
        i += 1
    return i, 0


# --------------------------------------------------------------------------------------------
# the C twin: recvmmsg / sendmmsg
# --------------------------------------------------------------------------------------------

recv_batch = recv_batch_py
send_batch = send_batch_py
BATCH_BACKEND = "python"


class RxArea:
    """The datagrams of one ``recvmmsg``, left where the kernel put them (:func:`recv_area`):
    the C receive lane (uet.native.rxlane) reads them in place, and :meth:`item` makes one into
    the tuple :func:`recv_batch` gives, for the datagrams the lane leaves. Valid until the next
    :func:`recv_area` of the same thread."""

    __slots__ = ("buf", "recs", "slot", "count", "errors", "_view", "_records")

    def item(self, i: int, with_data: bool = True) -> tuple:
        """Datagram ``i`` as ``(data, src_host, src_port, dst_host_or_None, tos, truncated)``
        (``data`` None unless ``with_data``)."""
        raise NotImplementedError  # the C install sets it


def recv_area(sock: socket.socket, limit: int, bufsize: int) -> RxArea | None:
    """One ``recvmmsg`` of at most ``limit`` (<= ``MMSG_MAX``) datagrams into the thread's
    receive area, or None where the C batch calls do not serve this socket (then
    :func:`recv_batch` is the way)."""
    return None


def _install_c() -> None:
    global recv_batch, send_batch, recv_area, BATCH_BACKEND
    from . import BACKEND

    if BACKEND != "c":
        return
    from ._uet_native import ffi, lib

    if not lib.uet_mmsg_available():
        return
    max_n = min(MMSG_MAX, lib.UET_MMSG_MAX)
    rec = struct.Struct("=iI4s4sHBB")
    if rec.size != ffi.sizeof("uet_rx4"):
        return
    rec_size = rec.size
    iter_unpack = rec.iter_unpack
    recvmmsg, sendmmsg = lib.uet_recvmmsg4, lib.uet_sendmmsg4
    from_buffer = ffi.from_buffer
    ntoa = socket.inet_ntoa
    pton = socket.inet_pton
    names: dict[bytes, str] = {}    # 4 address bytes -> text (a few peers: bounded below)
    addrs: dict[str, bytes] = {}    # text -> 4 address bytes
    local = threading.local()       # receive areas per thread, per slot size

    def area(slot: int) -> tuple[Any, Any, memoryview, memoryview]:
        areas = getattr(local, "areas", None)
        if areas is None:
            areas = local.areas = {}
        a = areas.get(slot)
        if a is None:
            buf = bytearray(max_n * slot)           # zero-filled: touched once, reused
            recs = bytearray(max_n * rec_size)
            a = areas[slot] = (from_buffer("char[]", buf, require_writable=True),
                               ffi.cast("uet_rx4 *", from_buffer(recs, require_writable=True)),
                               memoryview(buf), memoryview(recs), buf, recs)
        return a

    def name(a: bytes) -> str:
        s = names.get(a)
        if s is None:
            if len(names) >= 4096:
                names.clear()
            s = names[a] = ntoa(a)
        return s

    def recv_batch_c(sock: socket.socket, limit: int, bufsize: int) -> tuple[list, int]:
        """:func:`recv_batch` through ``recvmmsg`` (IPv4); the reference for other families."""
        if sock.family != AF_INET or bufsize <= 0 or not isinstance(sock, Socket):
            return recv_batch_py(sock, limit, bufsize)
        if bufsize > 65536:
            bufsize = 65536  # an IPv4 datagram holds at most 65507 bytes: nothing is truncated
        fd = sock.fileno()
        cbuf, crecs, view, recview = area(bufsize)[:4]
        out: list = []
        append = out.append
        errors = n = 0
        while n < limit:
            k = limit - n
            if k > max_n:
                k = max_n
            got = recvmmsg(fd, cbuf, bufsize, k, crecs)
            if got < 0:
                if -got in _RETRY:
                    break
                errors += 1
                n += 1
                continue
            n += got
            pos = 0
            for ln, fl, src, dst, sport, tos, has_dst in iter_unpack(recview[:got * rec_size]):
                s = names.get(src) or name(src)
                append((view[pos:pos + ln].tobytes(), s, sport,
                        (names.get(dst) or name(dst)) if has_dst else None, tos,
                        bool(fl & MSG_TRUNC)))
                pos += bufsize
            if got < k:
                break  # the socket is empty: no second call to learn it
        return out, errors

    def addr4(host: str) -> bytes:
        a = addrs.get(host)
        if a is None:
            a = pton(AF_INET, host)  # dotted quads only, as the engine's addresses are
            if len(addrs) >= 4096:
                addrs.clear()
            addrs[host] = a
        return a

    def send_batch_c(sock: socket.socket, items: Sequence[tuple], tos_default: int,
                     wildcard: bool) -> tuple[int, int]:
        """:func:`send_batch` through ``sendmmsg`` (IPv4); the reference for other families."""
        if sock.family != AF_INET or not isinstance(sock, Socket):
            return send_batch_py(sock, items, tos_default, wildcard)
        fd = sock.fileno()
        total = len(items)
        done = 0
        while done < total:
            chunk = items[done:done + max_n]
            k = len(chunk)
            try:
                datas = [bytes(it[0]) if type(it[0]) is not bytes else it[0] for it in chunk]
                lens = [len(d) for d in datas]
                offs = [0] * k
                o = 0
                for j in range(k):
                    offs[j] = o
                    o += lens[j]
                dst = b"".join([addrs.get(it[1]) or addr4(it[1]) for it in chunk])
                ports = struct.pack("=%dH" % k, *[it[2] for it in chunk])
                tos = bytes([it[3] for it in chunk])
                src = b"".join([addrs.get(it[4]) or addr4(it[4]) for it in chunk]) \
                    if wildcard else ffi.NULL
                blob = b"".join(datas)
                coffs = struct.pack("=%dI" % k, *offs)
                clens = struct.pack("=%dI" % k, *lens)
            except (OSError, ValueError, TypeError, struct.error, OverflowError):
                # something the C call cannot take (an address, a port, ...): the reference says
                # what it makes of the rest
                sent, err = send_batch_py(sock, items[done:], tos_default, wildcard)
                return done + sent, err
            r = sendmmsg(fd, blob, ffi.cast("uint32_t *", from_buffer(coffs)),
                         ffi.cast("uint32_t *", from_buffer(clens)), dst,
                         ffi.cast("uint16_t *", from_buffer(ports)), tos, tos_default, src, k)
            if r < 0:
                return done, -r
            done += r  # fewer than k: the next call sends more or reports the failure
        return done, 0

    unpack_rec = rec.unpack_from

    def item(self: RxArea, i: int, with_data: bool = True) -> tuple:
        ln, fl, src, dst, sport, tos, has_dst = unpack_rec(self._records, i * rec_size)
        pos = i * self.slot
        return ((self._view[pos:pos + ln].tobytes() if with_data else None),
                names.get(src) or name(src), sport,
                (names.get(dst) or name(dst)) if has_dst else None, tos, bool(fl & MSG_TRUNC))

    RxArea.item = item  # type: ignore[method-assign]

    def recv_area_c(sock: socket.socket, limit: int, bufsize: int) -> RxArea | None:
        if sock.family != AF_INET or bufsize <= 0 or not isinstance(sock, Socket):
            return None
        if bufsize > 65536:
            bufsize = 65536
        cbuf, crecs, view, recview = area(bufsize)[:4]
        got = recvmmsg(sock.fileno(), cbuf, bufsize, min(limit, max_n), crecs)
        a = getattr(local, "rx_area", None)
        if a is None:
            a = local.rx_area = RxArea()
        a.buf, a.recs, a.slot, a._view, a._records = cbuf, crecs, bufsize, view, recview
        if got < 0:
            a.count, a.errors = 0, (0 if -got in _RETRY else 1)
        else:
            a.count, a.errors = got, 0
        return a

    recv_batch, send_batch, recv_area = recv_batch_c, send_batch_c, recv_area_c
    BATCH_BACKEND = "c"


try:
    _install_c()
except Exception:  # an extension without the mmsg functions (a stale build): the reference
    recv_batch, send_batch, BATCH_BACKEND = recv_batch_py, send_batch_py, "python"
