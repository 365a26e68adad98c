"""The receive lane (issue 15 item 1): one C call takes a middle packet of a SEND or TAGGED_SEND
on an open RUD PDC, or on an open ROD PDC when it is the next PSN to deliver and nothing is
buffered (PDS-W4), from an IPv4 or IPv6 peer, into reassembly storage already in use - trailer check
(A.3), header parse (B.5, D.3), PSN window (PDS-W1), placement, the ACK decision (PDS-A1) and, where the
PDC's ACK is a plain ACK_CC of the NSCC state (the target keeps ``ack_quick``), the ACK with its
trailer (PDS-A2 to PDS-A4) - and leaves anything else untouched for the Python reference
(uet.pds.endpoint ``_receive``, uet.pds.target, uet.ses.target), the only Python path: it runs
whatever the C lane does not take, and everything when the C backend does not run
(``UET_NATIVE=0``). ``native/rxlane.c`` is the C; tests/native/test_rxlane.py drives the same
datagram sequences with the lane on and off (``ENABLED``) and requires the same datagrams,
events and state.

What this module owns: :class:`RxLanes` (one endpoint's tables of PDC and message lanes,
allocated and freed in C, from a layout of field positions read from the schema: uet.pds.lanes
and uet.ses.lanes), and the plain-Python :class:`PdcState` / :class:`MsgState` that hold the same
fields when no C lane does (the twin backend, or a lane removed). The PDS target and the SES message read
their per-packet fields through properties over whichever holds them (:func:`lane_field`), so
there is one copy of each field at any time.
"""

from __future__ import annotations

import operator
import socket
from typing import Any, Mapping

from . import BACKEND

AVAILABLE: bool = BACKEND == "c"
#: False: the reference takes what the C lane would (the differential tests compare the two)
ENABLED = True


class PdcState:
    """A target PDC's per-packet fields when no C lane holds them (uet/pds/target.py)."""

    __slots__ = ("bytes_since_ack", "rcvd_bytes", "ooo_count", "sack_base", "late", "late_set",
                 "clear_psn", "last_rx", "open", "pending_ar_set", "pending_ar", "next_deliver",
                 "rod_held")

    def __init__(self) -> None:
        self.bytes_since_ack = self.rcvd_bytes = self.ooo_count = 0
        self.sack_base = self.late = self.clear_psn = self.next_deliver = self.pending_ar = 0
        self.late_set = self.open = self.pending_ar_set = self.rod_held = 0
        self.last_rx = 0.0


class MsgState:
    """A message's per-packet fields when no C lane holds them (uet/ses/common.py RxMessage)."""

    __slots__ = ("got", "last", "live")

    def __init__(self) -> None:
        self.got = 0
        self.last = 0.0
        self.live = 1


def lane_field(name: str) -> property:
    """A property that reads and writes ``self._lane.<name>``: the C lane's field while one is
    registered, the plain state's otherwise."""
    get = operator.attrgetter("_lane." + name)

    def put(self: Any, value: Any) -> None:
        setattr(self._lane, name, value)

    return property(get, put, doc=f"{name} (held by the object's lane, uet.native.rxlane)")


def optional_lane_field(name: str, doc: str) -> property:
    """A property for a PSN the lane may not hold: ``self._lane.<name>`` when its flag
    ``<name>_set`` is on, else None (None stores the flag off and the value 0)."""
    flag = name + "_set"

    def get(self: Any) -> int | None:
        lane = self._lane
        return getattr(lane, name) if getattr(lane, flag) else None

    def put(self: Any, value: int | None) -> None:
        lane = self._lane
        setattr(lane, flag, int(value is not None))
        setattr(lane, name, 0 if value is None else value)

    return property(get, put, doc=doc)


def ipv4(peer: Any) -> bytes | None:
    """The 4 bytes of an IPv4 address literal, else None (a receive area holds IPv4 datagrams)."""
    if not isinstance(peer, str):
        return None
    try:
        return socket.inet_pton(socket.AF_INET, peer)
    except (OSError, ValueError):
        return None


def ip_bytes(peer: Any) -> bytes | None:
    """The 4 or 16 bytes of an IPv4 or IPv6 address literal, else None: the peers that get C
    lanes (their trailer context, A.3, is the address bytes the lane hashes)."""
    b = ipv4(peer)
    if b is None and isinstance(peer, str):
        try:
            b = socket.inet_pton(socket.AF_INET6, peer)
        except (OSError, ValueError):
            return None
    return b


class ChunkCounts:
    """A message buffer's received-byte count when it has no C chunk table (the twin)."""

    __slots__ = ("received",)

    def __init__(self) -> None:
        self.received = 0


if AVAILABLE:
    from ._uet_native import ffi as _ffi, lib as _lib

    def new_chunk_table(length: int, chunk: int) -> Any:
        """The C chunk table of a message buffer (uet/native/reassembly.py): its received
        count from the start; its engine slots only once a lane reads it (:func:`chunk_slots`),
        so that a long claimed length costs nothing until then."""
        t = _ffi.new("uet_rx_chunks *")
        t.length, t.chunk = length, chunk
        return t

    def chunk_slots(table: Any, engines: Mapping[int, Any]) -> Any:
        """Give ``table`` its engine slots, filled from ``engines`` (chunk index -> a C
        ``Reassembly`` of uet.native._cbackend); the caller keeps the returned array alive."""
        n = -(-table.length // table.chunk) if table.length else 0
        slots = _ffi.new("uet_reasm *[]", max(1, n))
        for index, engine in engines.items():
            slots[index] = engine._r
        table.chunks, table.nchunks = slots, n
        return slots

    def set_ack_const(lane: Any, const: bytes) -> None:
        """The constant bytes of a PDC lane's ACKs (B.8: type, PDC ids, MPR)."""
        if len(const) > len(lane.ack_const):
            raise ValueError("uet.native.rxlane: an ACK of %d bytes does not fit" % len(const))
        _ffi.memmove(lane.ack_const, const, len(const))

    def set_chunk(table: Any, index: int, engine: Any) -> None:
        """Chunk ``index``'s engine into a table that has slots."""
        table.chunks[index] = engine._r

    def clear_chunk(table: Any, index: int) -> None:
        """The lane forgets chunk ``index``'s engine, before it is freed: a packet for that
        chunk goes the Python way (uet.native.digest.DigestReassembly)."""
        table.chunks[index] = _ffi.NULL

    def drop_chunks(table: Any) -> None:
        """The lane forgets a table's engines, before they are freed (their message was
        taken or released): a lane that still reads the table takes nothing."""
        table.nchunks = 0
        table.chunks = _ffi.NULL

    def _allocated(lane: Any, what: str) -> Any:
        if lane == _ffi.NULL:
            raise MemoryError("uet.native.rxlane: cannot allocate " + what)
        return lane

    def _detached(lane: Any, state: Any, remove: Any, ep: Any) -> Any:
        for name in state.__slots__:
            setattr(state, name, getattr(lane, name))
        remove(ep, lane)
        return state

    class RxLanes:
        """One endpoint's lanes: PDC lanes by PDCID and message lanes by (peer, initiator,
        message id), shared by the PDS target and the SES above it; :meth:`take` is the C path."""

        def __init__(self, layout: Mapping[str, Any]) -> None:
            """``layout``: every field of ``uet_rx_layout`` (native/rxlane.h) by name - a
            header field as (bit position, width, signed), a constant as an int - from the
            schema (uet.pds.lanes and uet.ses.lanes build it: this package names no header
            field itself)."""
            names = {name for name, _ in _ffi.typeof("uet_rx_layout").fields}
            if set(layout) != names:
                raise ValueError("uet.native.rxlane: the layout must name exactly %s"
                                 % sorted(names))
            lay = _ffi.new("uet_rx_layout *")
            for name, value in layout.items():
                if isinstance(value, tuple):
                    f = getattr(lay, name)
                    f.pos, f.width, f.is_signed = value[0], value[1], int(value[2])
                else:
                    setattr(lay, name, value)
            ep = _lib.uet_rx_ep_new(lay)
            if ep == _ffi.NULL:
                raise MemoryError("uet.native.rxlane: cannot allocate the lane tables")
            self._ep = _ffi.gc(ep, _lib.uet_rx_ep_free)
            self.ack = _ffi.new("uet_rx_ack *")
            self._counts = _ffi.new("int64_t[5]")
            self.taken = 0  # requests the C lane took, in all (what shows it ran)
            # the counters the lane keeps in C reach the endpoints' own when they are read
            # (their ``stats``): ``dirty`` says the lane took something since the last fold
            self.dirty = False
            self.pds_stats: Any = None
            self.ses_stats: Any = None
            self._status = _ffi.new("int32_t *")

        def add_pdc(self, pdcid: int) -> Any:
            """A new PDC lane for ``pdcid`` (closed until its target opens it)."""
            return _allocated(_lib.uet_rx_pdc_add(self._ep, pdcid), "a PDC lane")

        def remove_pdc(self, lane: Any) -> PdcState:
            """Unregister ``lane`` and free it; its fields, copied into a :class:`PdcState`."""
            return _detached(lane, PdcState(), _lib.uet_rx_pdc_remove, self._ep)

        def add_msg(self, peer: bytes, initiator: int, message_id: int) -> Any:
            """A new message lane for the message K1 names (not live until filled in);
            ``peer``: its source's 4 (IPv4) or 16 (IPv6) address bytes."""
            return _allocated(_lib.uet_rx_msg_add(self._ep, peer, len(peer), initiator,
                                                  message_id), "a message lane")

        def remove_msg(self, lane: Any) -> MsgState:
            """Unregister ``lane`` and free it; its fields, copied into a :class:`MsgState`."""
            return _detached(lane, MsgState(), _lib.uet_rx_msg_remove, self._ep)

        def built_ack(self) -> bytes:
            """The ACK datagram the lane built (status 3), trailer included."""
            a = self.ack
            return _ffi.buffer(a.datagram, a.len)[:]

        def take(self, data: bytes, src: bytes, dst: bytes, sport: int, dport: int,
                 dscp: int, ecn: int, now: float, ses_now: float) -> int:
            """``src`` and ``dst``: 4 (IPv4) or 16 (IPv6) address bytes each. Not taken,
            nothing changed: 0 (the trailer not checked), 4 (checked: good), 5 (checked: bad,
            R2); 1: taken; 2: taken, an ACK is due (``ack``); 3: taken, its ACK built
            (:meth:`built_ack`)."""
            return _lib.uet_rx_take(self._ep, data, len(data), src, dst, len(src), sport, dport,
                                    dscp, ecn, now, ses_now, self.ack)

        def take_area(self, area: Any, start: int, n: int, local4: bytes, dport: int,
                      now: float, ses_now: float) -> tuple[int, int]:
            """:meth:`take` over datagrams ``start``..``n - 1`` of a receive area
            (uet.native.sockbatch.RxArea), in order: ``(k, status)``, datagram ``k`` the first
            not simply taken (status as :meth:`take` says: 0, 4 or 5 not taken, 2 or 3 taken
            with its ACK due or built), or ``(n, 0)``."""
            status = self._status
            k = _lib.uet_rx_take_area(self._ep, area.buf, area.slot, area.recs, start, n, local4,
                                      dport, now, ses_now, self.ack, status)
            return k, status[0]

        def counters(self) -> tuple[int, int, int, int, int]:
            """(retx_rx, requests, duplicate_packets, taken, acks_tx) since the last call."""
            c = self._counts
            _lib.uet_rx_ep_counters(self._ep, c)
            self.taken += c[3]
            return c[0], c[1], c[2], c[3], c[4]

        def fold(self) -> None:
            """The lane's counters into the PDS's (R4 ``retx_rx``, ``acks_tx``, R5 ``rx_lane``)
            and the SES's (``requests``, ``duplicate_packets``): what their ``stats`` do before
            they answer."""
            self.dirty = False
            retx_rx, requests, duplicates, taken, acks = self.counters()
            if self.pds_stats is not None:
                if taken:
                    self.pds_stats["rx_lane"] += taken
                if retx_rx:
                    self.pds_stats["retx_rx"] += retx_rx
                if acks:
                    self.pds_stats["acks_tx"] += acks
            if requests and self.ses_stats is not None:
                self.ses_stats["requests"] += requests
                if duplicates:
                    self.ses_stats["duplicate_packets"] += duplicates

else:
    RxLanes = None  # type: ignore[assignment,misc]

    def set_ack_const(lane: Any, const: bytes) -> None:
        return None

    def new_chunk_table(length: int, chunk: int) -> Any:
        return ChunkCounts()

    def drop_chunks(table: Any) -> None:
        return None

    def clear_chunk(table: Any, index: int) -> None:
        return None
