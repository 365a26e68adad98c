"""Request datagrams of an established initiator PDC, a run of packets per call (issue 15 item 1).

This module owns the bytes of the new requests that :meth:`uet.pds.initiator.Initiator._send_new`
sends once the PDC is established: per
packet the request header (docs/facts.md B.5, no SYN form, RETX 0), the SES header of the item's
packet, its payload and the CRC-32C trailer (A.3). The decisions (which packets, their PSNs, AR,
entropy) stay with the caller; a run is packets ``first .. first + len(ar) - 1`` of one item with
PSNs ``psn, psn + 1, ...`` (mod 2^32).

``build_requests(*, header, item, first, psn, clear_psn, ar, entropy, src, dst, port, udp_seed,
context=None)``
    The datagrams of the run, one ``bytes`` per packet, in order: exactly what
    :func:`build_requests_py` (the reference, one packet at a time: pack, header, join, seed, CRC)
    returns. ``header`` is the PDC's
    :class:`uet.pds.packets.RequestHeader`, ``item`` an ``uet.pds.upper.Outgoing``, ``clear_psn``
    the CLEAR_PSN each packet's offset is taken from (I3), ``ar[i]`` whether packet i asks for an
    ACK, ``entropy[i]`` its entropy (the UDP source port), and ``udp_seed`` is
    :func:`uet.wire.trailer.udp_seed` (uet.native is a leaf: the trailer context comes in).
    ``context``: the addresses the trailer covers, ``address_bytes(src) + address_bytes(dst)``
    of uet.wire.trailer (4 or 16 bytes each), a constant of the caller's PDC: with it the C path
    computes every packet's seed itself (``uet_udp_seed``, the C twin of ``udp_seed``), so the
    whole request, trailer included, is one C call per run; without it, or for a seed C does
    not take (a UDP length or port outside 16 bits), ``udp_seed`` gives them.
    Raises ValueError for a run outside the item or a field that cannot be packed.

``TX_BACKEND`` is ``"c"`` when :func:`build_requests` writes the run in one C call
(``native/txbuild.c``; the C extension is in use, see ``uet.native.BACKEND``), else ``"python"``
and it is :func:`build_requests_py`. The C path cuts an item that gives a request template
(``item.template()``, a ``uet.pds.upper.RequestTemplate``: the SES header of packet k > 0 is its
``mid`` ORed with the payload length, the offset and EOM at the shifts it names) itself, and
takes any other item's ``header(k)`` and ``payload_of(k)``. Field positions come from the objects
(``RequestHeader.SHIFTS`` and ``const``, from the schema), never from numbers written here.
tests/native/test_txbuild.py compares both.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Sequence

from . import BACKEND, crc32c

__all__ = ["TX_BACKEND", "build_requests", "build_requests_py", "REQUEST_SIZE", "TRAILER_LEN",
           "UDP_HEADER_LEN"]

UdpSeed = Callable[[str, str, int, int, int], int]

M32 = 0xFFFFFFFF
REQUEST_SIZE = 12    # B.5: the request header without SYN or CC state
TRAILER_LEN = 4      # A.3: the CRC-32C trailer
UDP_HEADER_LEN = 8   # the UDP length the trailer's context counts includes the UDP header
# tests/native/test_txbuild.py checks these three against uet.pds.packets and uet.wire.trailer


def _check(header: Any, item: Any, first: int, psn: int, clear_psn: int, ar: Sequence[bool],
           entropy: Sequence[int]) -> int:
    """The run's length; ValueError when the run or a field cannot be what the caller says."""
    count = len(ar)
    if len(entropy) != count:
        raise ValueError("build_requests: %d AR flags for %d entropies" % (count, len(entropy)))
    if not 0 <= first <= first + count <= item.count:
        raise ValueError("build_requests: packets %r..%r outside the item's %d"
                         % (first, first + count - 1, item.count))
    if psn >> 32 or clear_psn >> 32:  # also true for a negative number
        raise ValueError("build_requests: PSN %r or CLEAR_PSN %r outside 32 bits"
                         % (psn, clear_psn))
    nh = item.next_hdr
    if nh < 0 or (nh << header.SHIFTS[3]) >> (8 * REQUEST_SIZE):
        raise ValueError("build_requests: next_hdr %r outside the request header" % (nh,))
    if header.const >> (8 * REQUEST_SIZE):
        raise ValueError("build_requests: the header's constant fields exceed %d bytes"
                         % REQUEST_SIZE)
    return count


def build_requests_py(*, header: Any, item: Any, first: int, psn: int, clear_psn: int,
                      ar: Sequence[bool], entropy: Sequence[int], src: str, dst: str, port: int,
                      udp_seed: UdpSeed, context: bytes | None = None) -> list[bytes]:
    """The reference of :func:`build_requests` (see the module docstring): one packet at a time,
    each seed from ``udp_seed`` (``context`` is the C path's)."""
    _check(header, item, first, psn, clear_psn, ar, entropy)
    pack, next_hdr = header.pack, item.next_hdr
    out = []
    for i, ev in enumerate(entropy):
        k = first + i
        p = (psn + i) & M32
        d = (clear_psn - p) & M32
        # I3: the CLEAR_PSN offset as a signed 32-bit difference (pack clamps it to 16 bits)
        head = pack(next_hdr, p, d - 0x100000000 if d & 0x80000000 else d, ar=ar[i],
                    retx=False, psn_offset=None)
        body = b"".join((head, item.header(k), item.payload_of(k)))
        crc = crc32c(body, udp_seed(src, dst, ev, port, UDP_HEADER_LEN + len(body) + TRAILER_LEN))
        out.append(body + crc.to_bytes(TRAILER_LEN, "big"))
    return out


build_requests = build_requests_py
TX_BACKEND = "python"


def _install_c() -> None:
    global build_requests, TX_BACKEND
    if BACKEND != "c":
        return
    from ._uet_native import ffi, lib

    if (lib.UET_TXBUILD_REQUEST_SIZE != REQUEST_SIZE
            or lib.UET_TXBUILD_TRAILER_LEN != TRAILER_LEN):
        return
    message_c, generic_c, seeds_c = lib.uet_txbuild_message, lib.uet_txbuild, lib.uet_txbuild_seeds
    from_buffer, new, buffer = ffi.from_buffer, ffi.new, ffi.buffer
    new_uncleared = ffi.new_allocator(should_clear_after_alloc=False)
    no_room = lib.UET_TXBUILD_NO_ROOM
    shift_slots = (lib.UET_TXBUILD_SHIFT_PSN, lib.UET_TXBUILD_SHIFT_CLEAR,
                   lib.UET_TXBUILD_SHIFT_AR, lib.UET_TXBUILD_SHIFT_NEXT_HDR)
    layouts: dict[type, Any] = {}
    keep = 4 << 20  # a thread keeps its output buffer up to this size, else it is made per run

    class Scratch(threading.local):
        out: tuple = (None, 0, None)  # the thread's output buffer (a char[]), its size, a view
        seeds: Any = None  # the thread's trailer seeds (a uint32_t[]), filled per run

    scratch = Scratch()
    # The recent items and their constants (request template, sizes), looked up again while their
    # runs go out: id(item) -> (weak reference, constants), each entry stored in one step (threads
    # may share it), weak so that an acknowledged message is not kept alive by this cache, and more
    # than one because a simulator interleaves the runs of many hosts' messages.
    recent: dict[int, tuple] = {}

    def layout(cls: type) -> Any:
        """The request header's field positions (B.5) as the C code takes them, per class."""
        s = layouts.get(cls)
        if s is None:
            s = new("int32_t[]", lib.UET_TXBUILD_SHIFTS)
            for slot, shift in zip(shift_slots, cls.SHIFTS):
                s[slot] = shift
            layouts[cls] = s
        return s

    def message_constants(item: Any) -> tuple | None:
        """What the C code needs to cut ``item``'s packets itself (from its request template,
        uet.pds.upper.RequestTemplate, read by name: this package is a leaf), or None when it
        gives none or one that does not describe its ``count`` packets of plain bytes."""
        entry = recent.get(id(item))
        if entry is not None and entry[0]() is item:
            return entry[1]
        template = getattr(item, "template", None)
        t = template() if template is not None else None
        if t is None:
            return None
        data, mtu, count = t.data, t.mtu, item.count
        length = data.nbytes
        consts = None
        if (data.itemsize == 1 and data.c_contiguous and mtu >= 1
                and count == max(1, -(-length // mtu))):
            som, ext, mid_size = t.som, t.ext, t.mid_size
            try:
                ses = som + t.mid.to_bytes(mid_size, "big") + ext
                msg = new("uet_txbuild_message_t *", {
                    "ses_len": len(ses), "som_len": len(som), "mid_len": mid_size,
                    "ext_len": len(ext), "len_shift": t.len_shift, "off_shift": t.off_shift,
                    "eom_shift": t.eom_shift, "data_len": length, "mtu": mtu})
            except OverflowError:  # a constant C does not take: the generic way says what
                msg = None
            tail = mid_size + len(ext) + REQUEST_SIZE + TRAILER_LEN
            if msg is not None:
                consts = (msg, ses, length, count - 1,
                          tail + mtu,                                             # most packets
                          REQUEST_SIZE + len(som) + len(ext) + min(mtu, length) + TRAILER_LEN,
                          tail + length - (count - 1) * mtu)                      # the last
        if len(recent) >= 1 << 12:
            recent.clear()
        recent[id(item)] = (weakref.ref(item), consts)
        return consts

    def output(total: int) -> tuple[Any, int, Any]:
        """A buffer of at least ``total`` bytes, its size and a view of it."""
        if total > keep:
            buf = new_uncleared("char[]", total)
            return buf, total, buffer(buf)
        size = 64 << 10
        while size < total:
            size *= 2
        buf = new("char[]", size)
        scratch.out = buf, size, buffer(buf)
        return scratch.out

    def seeds_of(sizes: list[int], entropy: Sequence[int], src: str, dst: str, port: int,
                 udp_seed: UdpSeed, context: bytes | None) -> Any:
        """The trailer seeds of a run: in C from ``context`` when it is given and C takes the
        values, else from ``udp_seed`` (the same numbers either way)."""
        if context is not None:
            seeds = scratch.seeds
            if seeds is None or len(seeds) < len(sizes):
                seeds = scratch.seeds = new("uint32_t[]", max(64, len(sizes)))
            try:
                if seeds_c(seeds, context, len(context) >> 1, entropy, port, sizes,
                           len(sizes)) == 0:
                    return seeds
            except (OverflowError, TypeError):  # a port outside 16 bits: the reference's way
                pass
        return [udp_seed(src, dst, ev, port, UDP_HEADER_LEN + n) for ev, n in zip(entropy, sizes)]

    def build_c(*, header: Any, item: Any, first: int, psn: int, clear_psn: int,
                ar: Sequence[bool], entropy: Sequence[int], src: str, dst: str, port: int,
                udp_seed: UdpSeed, context: bytes | None = None) -> list[bytes]:
        count = len(ar)
        if len(entropy) != count or first < 0 or first + count > item.count or psn >> 32 \
                or clear_psn >> 32:
            _check(header, item, first, psn, clear_psn, ar, entropy)  # raises what is wrong
        if count == 0:
            return []
        try:
            pds = header.const.to_bytes(REQUEST_SIZE, "big")
        except OverflowError:
            raise ValueError("build_requests: the header's constant fields exceed %d bytes"
                             % REQUEST_SIZE) from None
        shifts = layouts.get(type(header))
        if shifts is None:
            shifts = layout(type(header))
        flags = bytes(ar)
        entry = recent.get(id(item))  # message_constants(item), the common case inline
        consts = entry[1] if entry is not None and entry[0]() is item else message_constants(item)
        if consts is not None:
            msg, ses, length, last_k, full, size0, size_last = consts
            if count == 1:  # common when ACKs clock the sender: no list work for it
                total = size0 if first == 0 else (size_last if first == last_k else full)
                sizes = [total]
            else:
                sizes = [full] * count
                if first == 0:
                    sizes[0] = size0
                if first + count - 1 == last_k:
                    sizes[-1] = size_last
                total = sum(sizes)
            seeds = seeds_of(sizes, entropy, src, dst, port, udp_seed, context)
            data = item.template().data  # not kept in ``recent``: it would keep the bytes alive
            obj = data.obj
            if type(obj) is not bytes or len(obj) != length:
                obj = from_buffer(data)
            buf, size, view = scratch.out
            if size < total:
                buf, size, view = output(total)
            try:
                rc = message_c(buf, size, pds, shifts, item.next_hdr, psn, clear_psn, flags,
                               seeds, count, msg, ses, obj, first)
            except OverflowError:  # next_hdr outside an unsigned 32-bit number
                rc = lib.UET_TXBUILD_BAD_ARG
        else:
            ks = range(first, first + count)
            heads = [bytes(item.header(k)) for k in ks]
            # bytes, so that len() counts bytes whatever view payload_of returns
            payloads = [bytes(item.payload_of(k)) for k in ks]
            sizes = [REQUEST_SIZE + len(h) + len(p) + TRAILER_LEN
                     for h, p in zip(heads, payloads)]
            total = sum(sizes)
            seeds = seeds_of(sizes, entropy, src, dst, port, udp_seed, context)
            ses = heads[0] if count == 1 else b"".join(heads)
            payload = payloads[0] if count == 1 else b"".join(payloads)
            ses_end, payload_end = [], []
            a = b = 0
            for h, p in zip(heads, payloads):
                a += len(h)
                b += len(p)
                ses_end.append(a)
                payload_end.append(b)
            buf, size, view = scratch.out
            if size < total:
                buf, size, view = output(total)
            try:
                rc = generic_c(buf, size, pds, shifts, item.next_hdr, psn, clear_psn, flags,
                               seeds, count, ses, len(ses), ses_end, payload, len(payload),
                               payload_end)
            except OverflowError:  # next_hdr outside an unsigned 32-bit number
                rc = lib.UET_TXBUILD_BAD_ARG
        if rc != total:
            if rc == no_room:
                raise ValueError("build_requests: %d bytes do not fit the output" % total)
            raise ValueError("build_requests: a field does not fit its header (%d)" % rc)
        if count == 1:
            return [view[0:total]]
        out = []
        at = 0
        for n in sizes:
            out.append(view[at:at + n])
            at += n
        return out

    build_requests = build_c
    TX_BACKEND = "c"


try:
    _install_c()
except (ImportError, AttributeError):  # an extension built before native/txbuild.c: the reference
    build_requests, TX_BACKEND = build_requests_py, "python"
