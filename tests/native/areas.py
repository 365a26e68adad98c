"""Receive areas made from datagrams in memory, as ``recvmmsg`` would fill them
(uet.native.sockbatch.RxArea): how the tests feed the C receive lane's in-place path
(``Host.receive_area``) the same datagrams they give ``Host.receive_datagrams``."""

from __future__ import annotations

import socket
import struct

from uet.native.sockbatch import RxArea

_REC = struct.Struct("=iI4s4sHBB")  # uet_rx4 (native/uet_native.h)
SLOT = 9216


def area_of(items: list) -> RxArea:
    """An area holding ``items`` ((data, meta), at most 64, all to one port) in order."""
    from uet.native._uet_native import ffi

    assert len(items) <= 64
    buf = bytearray(max(1, len(items)) * SLOT)
    recs = bytearray(max(1, len(items)) * _REC.size)
    for i, (data, meta) in enumerate(items):
        assert len(data) <= SLOT
        buf[i * SLOT:i * SLOT + len(data)] = data
        _REC.pack_into(recs, i * _REC.size, len(data), 0, socket.inet_aton(meta.src),
                       socket.inet_aton(meta.dst), meta.sport, (meta.dscp << 2) | meta.ecn, 1)
    a = RxArea()
    a.buf = ffi.from_buffer("char[]", buf, require_writable=True)
    a.recs = ffi.cast("uet_rx4 *", ffi.from_buffer(recs, require_writable=True))
    a.slot, a.count, a.errors = SLOT, len(items), 0
    a._view, a._records = memoryview(buf), memoryview(recs)
    return a


def receive_as_area(host, items: list, now: float) -> None:
    """``host`` takes ``items`` through :meth:`Host.receive_area`, each datagram's meta the
    object it came with (the engine's cache keeps one per 5-tuple and TOS the same way)."""
    if not items:
        return
    area = area_of(items)
    port = items[0][1].dport
    assert all(m.dport == port for _, m in items)

    def item(i: int, with_data: bool):
        data, meta = items[i]
        return (data if with_data else None), meta

    host.receive_area(area, len(items), socket.inet_aton(items[0][1].dst), port, now, item)
