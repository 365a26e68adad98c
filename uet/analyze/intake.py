"""Which frames of a capture are UET, as slim records (``uet analyze``, issue 17 item 1).

Every frame is decoded by :func:`uet.capture.frame.decode_frame` (the ``uet decode --json`` object:
every link type it reads); nothing here parses a header. A frame is UET when:

* it is on a UET port (4793, or each ``--port``) or is IP protocol 253: what ``uet decode`` shows
  as UET ("confirmed");
* without ``--port``, on any other UDP port, when its payload decodes as UET and its CRC-32C
  trailer verifies (A.3) ("confirmed"); a payload that decodes as UET without a verifying trailer
  is kept as a candidate and accepted after the whole file was read when it belongs to what the
  confirmed frames showed: it answers a known PDC (an ACK, NACK or CONTROL whose addresses and
  PDC ids match), is a request of a known PDC (a trimmed request has no trailer), or is sent from
  or to a known UET endpoint (address and UDP port of a confirmed target).

Broken frames are counted, the first :data:`BROKEN_KEEP` of them listed (frame number and the
decoder's reason), and skipped: a UET frame the decoder stopped in (``error``), any frame stopped
below UDP for a reason other than not being IP, and a UET frame whose trailer does not verify from a
source that sends verifying trailers (a frame corrupted on the way; a trimmed frame, DSCP 11, has
lost its trailer and is not broken).

Memory (issue 25 item 5): what is kept for a frame the analysis does not use is bounded, so that a
small capture of many broken or stray frames (a gzip file of empty records) cannot make it grow.
UET frames outside any PDC (RUDI, UUD, TSS, RUDI NACKs), which the conversation only counts, are
counted here (:class:`Outside`), not kept. A frame is judged as it is read whenever what the
confirmed frames showed so far decides it (a candidate that belongs to a known PDC or endpoint is
accepted, a broken frame on another port between known endpoints is listed, a frame without a
verifying trailer from a source whose other frames carry one is broken: the sets only grow, so
the verdict is the one the end of the file would give); the rest wait for the end of the file:
at most :data:`PENDING_MAX` candidates, and as a count with the first few frame numbers, the
broken frames on other ports of :data:`LOOSE_PAIRS_MAX` address pairs and the frames outside PDCs
without a trailer of as many (source, kind) pairs. What does not fit is not judged, and a note in
the report says how many frames that was (candidates only when a confirmed frame showed anything
they could have belonged to).
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import UET_UDP_PORT
from ..capture.frame import DecodeConfig, decode_frame
from ..capture.pcap import CaptureStopped, read_frames
from ..capture.reassembly import Reassembler
from ..wire.enums import (ACK_TYPES, CE, CONTROL_TYPE, DSCP_TRIMMED, NACK_TYPES, REQUEST_TYPES,
                          nack_name)

BROKEN_KEEP = 100     # broken frames listed, the first by frame number; the rest are counted
# waiting for the end of the file, at most (worst cases measured: 1.4 KB a candidate, 24 KB a pair)
PENDING_MAX = 1 << 14       # candidates
LOOSE_PAIRS_MAX = 1 << 10   # address pairs of broken frames on other ports, BROKEN_KEEP kept each;
                            # and kinds of frames outside PDCs whose source may turn out to seal


@dataclass(slots=True)
class Pkt:
    """One UET frame: what the analysis reads of its ``uet decode`` object."""

    n: int                   # frame number (1-based, as uet decode counts)
    t: float                 # capture timestamp, seconds
    src: str
    dst: str
    sport: int | None        # None: native IP (protocol 253)
    dport: int | None
    dscp: int
    ecn: int
    pds: dict[str, Any]      # the decoded PDS header ({} for TSS: encrypted)
    ses: dict[str, Any] | None
    crc: int | None          # the trailer value, when one verifies
    crc_ok: bool | None
    name: str                # PDS type name, or "TSS"

    @property
    def ptype(self) -> int | None:
        return self.pds.get("type")

    @property
    def trimmed(self) -> bool:
        return self.dscp == DSCP_TRIMMED

    @property
    def ce(self) -> bool:
        return self.ecn == CE


@dataclass
class Broken:
    frame: int
    reason: str


def code_name(pds: dict[str, Any]) -> str:
    """A NACK's code name (B.11), or its hex value when it has none."""
    return pds.get("nack_code_name") or nack_name(int(pds.get("nack_code") or 0))


def outside_pdcs(p: Pkt) -> bool:
    """A frame no PDC takes (RUDI, UUD, TSS, a RUDI NACK): the conversation only counts it."""
    t = p.ptype
    return not (t in REQUEST_TYPES or t in ACK_TYPES or t == CONTROL_TYPE
                or (t in NACK_TYPES and not p.pds.get("nt")))


def _kind(p: Pkt) -> tuple:
    """What is counted of a frame outside PDCs: (PDS type name, trimmed, CE, NACK code name)."""
    return p.name, p.trimmed, p.ce, code_name(p.pds) if p.ptype in NACK_TYPES else None


@dataclass
class Outside:
    """The UET frames outside any PDC, counted (no record per frame): what the conversation adds
    to its totals (:meth:`uet.analyze.conversation.Conversation.add_outside`)."""

    frames: int = 0
    trimmed: int = 0
    ce: int = 0
    names: Counter = field(default_factory=Counter)
    nacks: Counter = field(default_factory=Counter)

    def add(self, kind: tuple, count: int = 1) -> None:
        name, trimmed, ce, nack = kind
        self.frames += count
        self.trimmed += count if trimmed else 0
        self.ce += count if ce else 0
        self.names[name] += count
        if nack is not None:
            self.nacks[nack] += count


@dataclass
class Intake:
    """What the capture file holds: its UET frames in frame order and the rest, counted."""

    name: str
    frames: int = 0
    t0: float | None = None
    uet: list[Pkt] = field(default_factory=list)         # the frames of PDCs
    outside: Outside = field(default_factory=Outside)    # the frames outside PDCs, counted
    broken: list[Broken] = field(default_factory=list)   # the first BROKEN_KEEP, by frame number
    broken_count: int = 0                                # every broken frame
    stopped: str | None = None   # CaptureStopped: reading ended early at a damaged record
    notes: list[str] = field(default_factory=list)

    def add_broken(self, b: Broken) -> None:
        """Count a broken frame; list it when it is among the first BROKEN_KEEP by frame number
        (frames are judged in more than one order: as read, and at the end of the file)."""
        self.broken_count += 1
        kept = self.broken
        if len(kept) < BROKEN_KEEP or b.frame < kept[-1].frame:
            bisect.insort(kept, b, key=lambda x: x.frame)
            del kept[BROKEN_KEEP:]


def _pkt(obj: dict[str, Any], ts: float) -> Pkt | None:
    ip, u = obj.get("ip"), obj.get("uet")
    if not ip or u is None:
        return None
    udp = obj.get("udp") or {}
    pds = u.get("pds") or {}
    crc = u.get("crc") or {}
    name = pds.get("type_name") or ("TSS" if "tss" in u else "?")
    ok = crc.get("ok")
    if (u.get("tss") or {}).get("authenticated"):
        ok = True  # F: a tag that verified vouches for the frame as a CRC-32C trailer does (A.3)
    return Pkt(obj["frame"], ts, ip["src"], ip["dst"], udp.get("sport"), udp.get("dport"),
               ip["dscp"], ip["ecn"], pds, u.get("ses"), crc.get("value") if crc.get("ok") else None,
               ok, name)


def _keys(p: Pkt) -> tuple[tuple | None, tuple | None]:
    """(the PDC a frame belongs to as sent by an initiator, as sent by a target): each
    (initiator address, target address, initiator PDCID) (C.1)."""
    t, pds = p.ptype, p.pds
    if t in REQUEST_TYPES or t == CONTROL_TYPE:
        fwd = (p.src, p.dst, pds.get("spdcid"))
        back = (p.dst, p.src, pds.get("dpdcid")) if t == CONTROL_TYPE else None
        return fwd, back
    if t in ACK_TYPES or t in NACK_TYPES:
        return None, (p.dst, p.src, pds.get("dpdcid"))
    return None, None


class _Reader:
    """Frames in, one at a time (:meth:`frame`), the intake out (:meth:`settle`)."""

    def __init__(self, name: str, ports: tuple[int, ...] | None, open_tss: Any = None):
        self.intake = Intake(name)
        self.ports = ports
        self.open_tss = open_tss
        self.known = DecodeConfig(ports=ports or (UET_UDP_PORT,), open_tss=open_tss)
        # IP fragments (issue 27): a datagram is read in the frame that completes it
        self.reasm = Reassembler()
        # what the confirmed frames showed so far: the sets only grow, so a frame they decide
        # as it is read is decided as it would be at the end of the file
        self.pdcs: set[tuple] = set()
        self.ends: set[tuple] = set()
        self.crc_sources: set[str] = set()
        self.used: list[Pkt] = []         # confirmed, or candidates that belong; frame order
        self.pending: list[Pkt] = []      # candidates that may belong: judged at the end
        self.loose: dict[tuple, list] = {}  # broken, unknown port: ends -> [count, first kept]
        self.waiting: dict[tuple, list] = {}  # outside PDCs, no trailer: (source, kind) ->
                                              # [count, first frame numbers]
        self.unjudged = 0                 # candidates and broken frames that found no room
        self.uncounted = 0                # frames outside PDCs that found no room to wait

    def frame(self, n: int, linktype: int, raw: bytes, ts: float) -> None:
        obj = decode_frame(linktype, raw, n, self.known, reasm=self.reasm, ts=ts).obj
        if "uet" in obj:
            if "error" in obj:
                self.intake.add_broken(Broken(n, obj["error"]))
                return
            p = _pkt(obj, ts)
            if p is not None:
                self._learn(p)
                self._use(p)
            return
        if "error" in obj:
            if "roce" not in obj and not obj["error"].endswith("is not IP"):
                self.intake.add_broken(Broken(n, obj["error"]))
            return
        udp = obj.get("udp")
        if self.ports is not None or udp is None or "roce" in obj:
            return
        alt = decode_frame(linktype, raw, n, DecodeConfig(ports=(udp["dport"],),
                                                          open_tss=self.open_tss),
                           reasm=self.reasm, ts=ts).obj
        if "uet" not in alt:
            return
        ip = alt["ip"]
        if "error" in alt:
            ends = ((ip["src"], udp["sport"]), (ip["dst"], udp["dport"]))
            self._loose(Broken(n, alt["error"]), ends)
            return
        p = _pkt(alt, ts)
        if p is None:
            return
        if p.crc_ok is True:
            self._learn(p)
            self._use(p)
        elif self._belongs(p):
            self._use(p)
        elif len(self.pending) < PENDING_MAX:
            self.pending.append(p)
        else:
            self.unjudged += 1

    def _learn(self, p: Pkt) -> None:
        """A confirmed frame: the PDC and endpoint it shows, and whether its source seals."""
        fwd, back = _keys(p)
        if p.ptype in REQUEST_TYPES:
            self.pdcs.add(fwd)
            self.ends.add((p.dst, p.dport))
        elif back is not None and p.ptype != CONTROL_TYPE:
            self.pdcs.add(back)
            self.ends.add((p.src, p.sport))
        if p.crc_ok:
            self.crc_sources.add(p.src)

    def _belongs(self, p: Pkt) -> bool:
        """A candidate answers or continues a known PDC, or is from or to a known endpoint."""
        fwd, back = _keys(p)
        return (fwd in self.pdcs or back in self.pdcs or (p.src, p.sport) in self.ends
                or (p.dst, p.dport) in self.ends)

    def _use(self, p: Pkt) -> None:
        """A frame that is UET: broken now when its source is known to seal its frames, else kept
        (a source may show that it seals later: settle looks again); one outside PDCs is counted,
        or waits as a count when its source may yet show that it seals."""
        if self._corrupt(p):
            self.intake.add_broken(_corrupt_broken(p.n))
        elif not outside_pdcs(p):
            self.used.append(p)
        elif p.crc_ok or p.trimmed or p.name == "TSS":   # never broken by _corrupt
            self.intake.outside.add(_kind(p))
        elif not _wait(self.waiting, (p.src, _kind(p)), p.n):
            self.uncounted += 1

    def _corrupt(self, p: Pkt) -> bool:
        return p.src in self.crc_sources and not p.crc_ok and not p.trimmed and p.name != "TSS"

    def _loose(self, b: Broken, ends: tuple) -> None:
        a, z = ends
        if a in self.ends or z in self.ends:
            self.intake.add_broken(b)
        elif not _wait(self.loose, ends, b):
            self.unjudged += 1

    def settle(self) -> Intake:
        """Accept the candidates that belong to what the confirmed frames showed, drop the frames
        whose trailer should verify and does not, and leave the rest in frame order."""
        intake = self.intake
        late = [p for p in self.pending if self._belongs(p)]
        for p in sorted(self.used + late, key=lambda p: p.n) if late else self.used:
            if self._corrupt(p):
                intake.add_broken(_corrupt_broken(p.n))
            elif outside_pdcs(p):
                intake.outside.add(_kind(p))
            else:
                intake.uet.append(p)
        for (src, kind), (count, frames) in self.waiting.items():
            if src in self.crc_sources:
                for n in frames:
                    intake.add_broken(_corrupt_broken(n))
                intake.broken_count += count - len(frames)
            else:
                intake.outside.add(kind, count)
        for (a, z), (count, kept) in self.loose.items():
            if a in self.ends or z in self.ends:
                for b in kept:
                    intake.add_broken(b)
                intake.broken_count += count - len(kept)
        if self.unjudged and (self.pdcs or self.ends):  # else none would have belonged
            intake.notes.append(
                f"{self.unjudged} frame(s) on other UDP ports that decode as UET were not judged: "
                f"more than {PENDING_MAX} frames, or broken frames of more than {LOOSE_PAIRS_MAX} "
                "address pairs, waited for a confirmed frame to show where they belong")
        if self.reasm.completed:
            intake.notes.append(
                f"{self.reasm.completed} IP datagram(s) were reassembled from fragments: their "
                "sender exceeded the link MTU (facts A.1: DF on every datagram)")
        intake.notes.extend(f"IP fragments: {line}" for line in self.reasm.finish())
        if self.uncounted:
            intake.notes.append(
                f"{self.uncounted} UET frame(s) outside PDCs without a trailer were not counted: "
                f"more than {LOOSE_PAIRS_MAX} kinds of them waited for the end of the file to "
                "show whether their source seals its frames")
        return intake


def _wait(table: dict[tuple, list], key: tuple, item: Any) -> bool:
    """One more frame of ``key`` waiting for the end of the file: ``table[key]`` is [how many,
    the first BROKEN_KEEP items]; False when ``key`` is new and LOOSE_PAIRS_MAX keys wait."""
    entry = table.get(key)
    if entry is None:
        if len(table) >= LOOSE_PAIRS_MAX:
            return False
        entry = table[key] = [0, []]
    entry[0] += 1
    if len(entry[1]) < BROKEN_KEEP:
        entry[1].append(item)
    return True


def _corrupt_broken(n: int) -> Broken:
    return Broken(n, "the CRC-32C trailer does not verify (A.3), from a source whose other frames "
                     "carry one")


def collect(frames: Iterable[tuple[int, bytes, float]], name: str,
            ports: tuple[int, ...] | None = None, open_tss: Any = None) -> Intake:
    """The UET frames among ``frames`` ((link type, bytes, timestamp) each, as
    :func:`uet.capture.pcap.read_frames` yields them). A :class:`CaptureStopped` raised by the
    iterator ends reading with ``stopped`` set; any other capture error propagates.
    ``open_tss``: an opener of uet.tss.capture, so that TSS frames are read decrypted (a frame
    whose tag verified counts as one whose trailer did)."""
    r = _Reader(name, ports, open_tss)
    try:
        for n, (linktype, raw, ts) in enumerate(frames, 1):
            r.intake.frames = n
            if r.intake.t0 is None:
                r.intake.t0 = ts
            r.frame(n, linktype, raw, ts)
    except CaptureStopped as exc:
        r.intake.stopped = str(exc)
    return r.settle()


def read_capture(path: str, ports: tuple[int, ...] | None = None, *,
                 open_tss: Any = None) -> Intake:
    """The UET frames of the capture at ``path`` (``-``: stdin). Raises
    :class:`uet.capture.pcap.CaptureError` when the file cannot be read at all; a damaged record
    after readable frames ends reading with ``stopped`` set instead."""
    return collect(read_frames(path), path, ports, open_tss)

