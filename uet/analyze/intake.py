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

Broken frames are listed (frame number and the decoder's reason) and skipped: a UET frame the
decoder stopped in (``error``), any frame stopped below UDP for a reason other than not being IP,
and a UET frame whose trailer does not verify from a source that sends verifying trailers (a frame
corrupted on the way; a trimmed frame, DSCP 11, has lost its trailer and is not broken).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import UET_UDP_PORT
from ..capture.frame import DecodeConfig, decode_frame
from ..capture.pcap import CaptureStopped, read_frames
from ..wire.build import DSCP_TRIMMED
from ..wire.enums import ACK_TYPES, CONTROL_TYPE, NACK_TYPES, REQUEST_TYPES

CE = 3  # ECN code point 11 (A.2)


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


@dataclass
class Intake:
    """What the capture file holds: its UET frames in frame order and the rest, counted."""

    name: str
    frames: int = 0
    t0: float | None = None
    uet: list[Pkt] = field(default_factory=list)
    broken: list[Broken] = field(default_factory=list)
    stopped: str | None = None   # CaptureStopped: reading ended early at a damaged record


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
    def __init__(self, name: str, ports: tuple[int, ...] | None, open_tss: Any = None):
        self.intake = Intake(name)
        self.ports = ports
        self.open_tss = open_tss
        self.known = DecodeConfig(ports=ports or (UET_UDP_PORT,), open_tss=open_tss)
        self.seen: list[tuple[Pkt, bool]] = []          # (record, confirmed)
        self.loose_broken: list[tuple[Broken, tuple]] = []  # broken on an unknown port: (it, ends)

    def frame(self, n: int, linktype: int, raw: bytes, ts: float) -> None:
        obj = decode_frame(linktype, raw, n, self.known).obj
        if "uet" in obj:
            if "error" in obj:
                self.intake.broken.append(Broken(n, obj["error"]))
                return
            p = _pkt(obj, ts)
            if p is not None:
                self.seen.append((p, True))
            return
        if "error" in obj:
            if "roce" not in obj and not obj["error"].endswith("is not IP"):
                self.intake.broken.append(Broken(n, obj["error"]))
            return
        udp = obj.get("udp")
        if self.ports is not None or udp is None or "roce" in obj:
            return
        alt = decode_frame(linktype, raw, n, DecodeConfig(ports=(udp["dport"],),
                                                          open_tss=self.open_tss)).obj
        if "uet" not in alt:
            return
        ip = alt["ip"]
        if "error" in alt:
            ends = ((ip["src"], udp["sport"]), (ip["dst"], udp["dport"]))
            self.loose_broken.append((Broken(n, alt["error"]), ends))
            return
        p = _pkt(alt, ts)
        if p is not None:
            self.seen.append((p, p.crc_ok is True))

    def settle(self) -> Intake:
        """Accept the candidates that belong to what the confirmed frames showed, drop the frames
        whose trailer should verify and does not, and leave the rest in frame order."""
        pdcs: set[tuple] = set()
        ends: set[tuple] = set()
        crc_sources: set[str] = set()
        for p, ok in self.seen:
            if not ok:
                continue
            fwd, back = _keys(p)
            if p.ptype in REQUEST_TYPES:
                pdcs.add(fwd)
                ends.add((p.dst, p.dport))
            elif back is not None and p.ptype != CONTROL_TYPE:
                pdcs.add(back)
                ends.add((p.src, p.sport))
            if p.crc_ok:
                crc_sources.add(p.src)
        intake = self.intake
        for p, ok in self.seen:
            if not ok:
                fwd, back = _keys(p)
                ok = (fwd in pdcs or back in pdcs or (p.src, p.sport) in ends
                      or (p.dst, p.dport) in ends)
                if not ok:
                    continue
            if p.src in crc_sources and not p.crc_ok and not p.trimmed and p.name != "TSS":
                intake.broken.append(Broken(p.n, "the CRC-32C trailer does not verify (A.3), from "
                                                 "a source whose other frames carry one"))
                continue
            intake.uet.append(p)
        for b, (a, z) in self.loose_broken:
            if a in ends or z in ends:
                intake.broken.append(b)
        intake.broken.sort(key=lambda b: b.frame)
        return intake


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

