"""IPv4 and IPv6 fragments of a capture put back together (issue 27 item 2), bounded like a host.

Owns the state that reading fragments needs across frames: :func:`uet.capture.frame.decode_frame`
is stateless per frame and hands each fragment it meets to a :class:`Reassembler` (its ``reasm``
argument); ``uet decode``, ``uet analyze`` and its ``--refprov`` model each keep one per capture.
A sender whose datagram exceeds the link MTU (facts A.1 forbids it: DF on every datagram)
is what makes fragments; a capture tool must still read them.

A queue is one datagram being rebuilt: IPv4 (source, destination, identification, protocol), IPv6
(source, destination, identification; RFC 8200 4.5). The rules, as a host stack's (Linux ipfrag):

* bytes per queue: a fragment may not end beyond :data:`DATAGRAM_LIMIT` (65535) counting the header
  in front of the fragmentable part (IPv4: the IP header; IPv6: the unfragmentable extension
  headers, the 40-byte header not counted: RFC 8200 payload length). Such a fragment is dropped
  (problem line) and its queue kept. With overlaps refused, a queue holds at most 65535 + header.
* queue limits: at most :data:`QUEUES_MAX` queues and :data:`BYTES_MAX` bytes held in all
  (data plus :data:`FRAGMENT_COST` per fragment for the bookkeeping; Linux's ipfrag_high_thresh is
  4 MiB too). A fragment that needs room evicts the oldest other queues.
* time limit, in capture time (frame timestamps, never the wall clock): a queue whose first
  fragment is older than :data:`TIMEOUT_V4` (Linux ipfrag_time) or :data:`TIMEOUT_V6` (RFC 8200
  4.5) seconds than the newest frame seen is dropped.
* overlap: a fragment overlapping another of its queue drops the whole queue, for IPv6 (RFC 5722)
  and for IPv4 alike (what Linux does since 2018; no overlap policy to guess: a datagram built from
  overlapping pieces is ambiguous, and ambiguity is how IDS evasion works). Later fragments of the
  same datagram start a new queue that will not complete (reported as never completed).
* duplicate: a fragment with the offset and length of one held is dropped, the first copy kept
  (problem line; a retransmitting link may repeat one).
* inconsistent: a second last fragment (MF clear) with another end, or a fragment beyond the end a
  last fragment set, drops the queue; a fragment other than the last whose length is not a
  multiple of 8 (or is 0) is dropped (RFC 791, RFC 8200 4.5).

What is reported, keeping streaming output (one line per frame, written as the frame is read, no
going back) and bounded memory: a fragment that does not complete its datagram gets a problem
line naming it (identification, offset, length, more or last) and saying that the frame that
completes its datagram carries the decode; the completing frame carries the decoded datagram and
the problems :data:`REASSEMBLED` and the list of frames it was built from. A queue that never
completes (expired, evicted, or still open at the end of the capture) is one line of
:meth:`Reassembler.finish` (``uet decode`` writes them to stderr, ``uet analyze`` as a note): the
first :data:`LOST_KEEP` of them, then a count.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field
from socket import AF_INET, AF_INET6, inet_ntop

from ..wire.build import ipv4_checksum
from ..wire.codec import codec
from ..wire.enums import CE

_IPV4, _IPV6 = codec("ipv4"), codec("ipv6")

DATAGRAM_LIMIT = 65535   # IPv4 total length / IPv6 payload length
QUEUES_MAX = 1024        # datagrams being rebuilt at once
BYTES_MAX = 4 << 20      # held in all queues (data + FRAGMENT_COST per fragment)
FRAGMENT_COST = 160      # bookkeeping counted per fragment held (Python objects: ~this)
TIMEOUT_V4 = 30.0        # seconds of capture time (Linux net.ipv4.ipfrag_time)
TIMEOUT_V6 = 60.0        # seconds of capture time (RFC 8200 4.5)
LOST_KEEP = 100          # never-completed datagrams described in full; the rest are counted
FRAMES_SHOWN = 32        # frame numbers a line lists before "and N more"

REASSEMBLED = "reassembled from {k} fragments: the sender's datagram exceeded the link MTU"


@dataclass(frozen=True)
class Fragment:
    """One fragment as its IP header says: ``header`` is what precedes the fragmentable part in
    the datagram (IPv4: the IP header; IPv6: the 40-byte header), ``proto`` the protocol of the
    fragmentable part (IPv6: the Fragment header's next header)."""

    version: int
    src: bytes
    dst: bytes
    ident: int
    proto: int
    offset: int        # bytes
    more: bool
    data: bytes
    header: bytes
    extra: int = 0     # IPv6: bytes of unfragmentable extension headers (count toward the limit)
    ecn: int = 0


@dataclass
class Outcome:
    """What a fragment did: the problem lines for its frame and, when it completed its datagram,
    the whole datagram as one unfragmented IP packet (``packet``)."""

    problems: list[str]
    packet: bytes | None = None


@dataclass
class _Queue:
    first: Fragment | None   # the fragment at offset 0, once seen
    version: int
    src: bytes
    dst: bytes
    ident: int
    t0: float
    starts: list[int] = field(default_factory=list)             # sorted offsets held
    parts: dict[int, tuple[int, bytes, int]] = field(default_factory=dict)  # offset -> end, data, frame
    end: int | None = None       # set by the last fragment
    data: int = 0
    cost: int = 0
    ce: bool = False


class Reassembler:
    """Fragments in (:meth:`feed`), whole datagrams out; never-completed ones from :meth:`finish`."""

    def __init__(self) -> None:
        self.queues: OrderedDict[tuple, _Queue] = OrderedDict()
        self.held = 0
        self.now = float("-inf")
        self.lost: list[str] = []
        self.lost_count = 0
        self.completed = 0
        self._last: tuple[int, tuple, Outcome] | None = None

    def feed(self, frag: Fragment, *, frame: int, ts: float) -> Outcome:
        """Take one fragment of frame ``frame`` captured at ``ts``. The same frame fed again
        (a caller decoding it twice, e.g. with other ports) gets the first outcome again."""
        key = ((frag.version, frag.src, frag.dst, frag.ident, frag.proto) if frag.version == 4
               else (6, frag.src, frag.dst, frag.ident))
        if self._last is not None and self._last[0] == frame and self._last[1] == key:
            return self._last[2]
        out = self._feed(key, frag, frame, ts)
        self._last = (frame, key, out)
        return out

    def _feed(self, key: tuple, frag: Fragment, frame: int, ts: float) -> Outcome:
        self.now = max(self.now, ts)
        self._expire()
        v = f"ipv{frag.version}"
        start, size = frag.offset, len(frag.data)
        end = start + size
        what = (f"{v}: fragment (id 0x{frag.ident:x}, offset {start}, {size} bytes, "
                f"{'more' if frag.more else 'last'})")
        head = len(frag.header) if frag.version == 4 else frag.extra
        if end + head > DATAGRAM_LIMIT:
            return Outcome([f"{what} ends at byte {end + head}, beyond the {DATAGRAM_LIMIT} an IP "
                            "datagram can hold: dropped"])
        if frag.more and (size == 0 or size % 8):
            return Outcome([f"{what}: a fragment other than the last must carry a multiple of 8 "
                            "bytes: dropped"])
        q = self.queues.get(key)
        if q is None:
            self._room(0, None, new=True)
            q = self.queues[key] = _Queue(None, frag.version, frag.src, frag.dst, frag.ident, ts)
        i = bisect.bisect_left(q.starts, start)
        if i < len(q.starts) and q.starts[i] == start and q.parts[start][0] == end:
            return Outcome([f"{what} repeats the one of frame {q.parts[start][2]}: the first copy "
                            "is kept"])
        bad = None
        if (i > 0 and q.parts[q.starts[i - 1]][0] > start) or (i < len(q.starts) and q.starts[i] < end):
            bad = "overlaps another fragment of its datagram (RFC 5722)"
        elif not frag.more and q.end is not None and q.end != end:
            bad = f"ends its datagram at {end}, another last fragment at {q.end}"
        elif not frag.more and q.starts and q.parts[q.starts[-1]][0] > end:
            bad = f"ends its datagram at {end}, before bytes already held"
        elif frag.more and q.end is not None and end > q.end:
            bad = f"goes beyond the end {q.end} its last fragment set"
        if bad is not None:
            frames = self._frames(q) + [frame]
            self._drop(key)
            return Outcome([f"{what} {bad}: the datagram is dropped, fragments in frames "
                            f"{_list(frames)}"])
        self._room(FRAGMENT_COST + size, key, new=False)
        q.starts.insert(i, start)
        q.parts[start] = (end, frag.data, frame)
        q.data += size
        q.cost += FRAGMENT_COST + size
        self.held += FRAGMENT_COST + size
        q.ce |= frag.ecn == CE
        if start == 0:
            q.first = frag
        if not frag.more:
            q.end = end
        if q.end is None or q.data != q.end:
            return Outcome([f"{what}: the frame that completes its datagram carries the decode"])
        frames = self._frames(q)
        self._drop(key)
        self.completed += 1
        return Outcome([REASSEMBLED.format(k=len(frames)),
                        f"{v}: datagram id 0x{frag.ident:x} of {q.end} bytes after its header "
                        f"rebuilt from frames {_list(frames)}"],
                       _packet(q, b"".join(q.parts[s][1] for s in q.starts)))

    def _frames(self, q: _Queue) -> list[int]:
        return [q.parts[s][2] for s in q.starts]

    def _drop(self, key: tuple) -> None:
        q = self.queues.pop(key)
        self.held -= q.cost

    def _room(self, need: int, keep: tuple | None, *, new: bool) -> None:
        """Evict the oldest queues (never ``keep``) until ``need`` more bytes, and a new queue
        when ``new``, fit the limits."""
        def fits() -> bool:
            return self.held + need <= BYTES_MAX and not (new and len(self.queues) >= QUEUES_MAX)

        if fits():
            return
        for k in list(self.queues):
            if fits():
                return
            if k != keep:
                self._lose(k, f"evicted: more than {QUEUES_MAX} datagrams or {BYTES_MAX} bytes "
                              "waited for their fragments")

    def _expire(self) -> None:
        while self.queues:
            k, q = next(iter(self.queues.items()))
            limit = TIMEOUT_V4 if q.version == 4 else TIMEOUT_V6
            if self.now - q.t0 <= limit:
                return
            self._lose(k, f"expired: not complete {limit:g} s of capture time after its first "
                          "fragment")

    def _lose(self, key: tuple, why: str) -> None:
        q = self.queues[key]
        self.lost_count += 1
        if len(self.lost) < LOST_KEEP:
            fam = AF_INET if q.version == 4 else AF_INET6
            total = "?" if q.end is None else str(q.end)
            self.lost.append(f"ipv{q.version} datagram id 0x{q.ident:x} from {inet_ntop(fam, q.src)} "
                             f"to {inet_ntop(fam, q.dst)} never completed ({why}): {q.data} of "
                             f"{total} bytes, fragments in frames {_list(self._frames(q))}")
        self._drop(key)

    def finish(self) -> list[str]:
        """At the end of the capture: one line per datagram that never completed (the first
        LOST_KEEP, then a count), the queues still open included."""
        for k in list(self.queues):
            self._lose(k, "the capture ended first")
        lines = list(self.lost)
        if self.lost_count > len(lines):
            lines.append(f"and {self.lost_count - len(lines)} more datagram(s) never completed")
        return lines


def _list(frames: list[int]) -> str:
    shown = ", ".join(map(str, frames[:FRAMES_SHOWN]))
    return shown if len(frames) <= FRAMES_SHOWN else f"{shown} and {len(frames) - FRAMES_SHOWN} more"


def _packet(q: _Queue, data: bytes) -> bytes:
    """The datagram as one unfragmented IP packet: IPv4, the first fragment's header with the
    total length set, MF and the offset cleared and the checksum recomputed; IPv6, the 40-byte
    header with the payload length and next header set (the unfragmentable extension headers are
    left out: nothing after them needs them). ECN is CE when any fragment was (RFC 3168 5.3)."""
    first = q.first
    assert first is not None
    header = first.header
    if q.version == 4:
        ip, size = _IPV4.decode(header, 0)
        ip.update(total_length=len(header) + len(data), fragment_offset=0, checksum=0,
                  flags=ip["flags"] & 0b110)  # keep the reserved bit and DF, clear MF
        if q.ce:
            ip["ecn"] = CE
        h = _IPV4.encode(ip) + header[size:]  # the options as they came
        ip["checksum"] = ipv4_checksum(h)
        return _IPV4.encode(ip) + header[size:] + data
    ip, size = _IPV6.decode(header, 0)
    ip.update(payload_length=len(data), next_header=first.proto)
    if q.ce:
        ip["ecn"] = CE
    return _IPV6.encode(ip) + data
