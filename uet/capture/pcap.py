"""Reading capture files: pcap and pcapng, from a path or stdin, frame by frame.

Scapy opens the file (format sniffing, gzip, the pcap file header, the first pcapng section header)
and parses interface description blocks. The records and blocks themselves are walked here, for two
reasons: a damaged one must stop reading with a stated reason (:class:`CaptureStopped`, raised after
every good frame was yielded) rather than quietly, and no block may be read whole before its length
is checked. A block or record that is parsed may claim at most :data:`MAX_BLOCK_LEN` bytes; any other
pcapng block (statistics, name resolution, custom, unknown types) is skipped however long it is,
by seeking or by discarding it in bounded pieces, as long as the file really holds it.

Yields ``(linktype, frame bytes, timestamp)``; link-layer decoding is in :mod:`uet.capture.frame`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import shutil
import stat
import struct
import sys
import tempfile
import zlib
from typing import IO, Any, Iterator

from ..errors import UetError

MAX_BLOCK_LEN = 256 << 20
"""Largest pcapng block (section header, interface description, packet) or pcap record that is read
into memory. No link type ``uet decode`` reads has frames near this; Wireshark's largest per-link
limit is 128 MiB."""

FRAME_CAP = 1 << 18
"""Bytes of one frame handed to the decoder (the largest standard snapshot length); the rest of a
longer frame is read past, so one frame costs at most this much however much it claims."""

_PIECE = 1 << 20  # reads and skips go in pieces this big, so a claim costs only what the file holds

_SHB, _IDB, _PB, _SPB, _EPB = 0x0A0D0D0A, 1, 2, 3, 6
_BLOCK_NAMES = {_SHB: "section header block", _IDB: "interface description block", _PB: "packet block",
                _SPB: "simple packet block", 4: "name resolution block", 5: "interface statistics block",
                _EPB: "enhanced packet block", 9: "systemd journal export block",
                10: "decryption secrets block", 0xBAD: "custom block", 0x40000BAD: "custom block"}
_MIN_LEN = {_SHB: 28, _IDB: 20, _PB: 32, _SPB: 16, _EPB: 32}  # total lengths of the fixed fields
_BOMS = {b"\x1a\x2b\x3c\x4d": ">", b"\x4d\x3c\x2b\x1a": "<"}


class CaptureError(UetError):
    """The capture file itself cannot be read (missing, not pcap/pcapng, bad header)."""


class CaptureStopped(CaptureError):
    """Reading stopped at a damaged record or block, after every frame before it was yielded."""

    def __init__(self, name: str, offset: int, frame: int, frames_read: int, reason: str):
        self.name = name
        self.offset = offset
        self.frame = frame
        self.frames_read = frames_read
        self.reason = reason
        plural = "" if frames_read == 1 else "s"
        super().__init__(f"{name}: stopped reading at byte {offset} (frame {frame}): {reason}; "
                         f"{frames_read} frame{plural} read")


class _Damaged(Exception):
    """A record or block that cannot be read; ``decoded`` when its frame was yielded as far as it
    goes before the stop (a pcap record cut short)."""

    def __init__(self, offset: int, reason: str, decoded: bool = False):
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.decoded = decoded


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


class _Source:
    """The stream under a Scapy reader, with the byte position kept here (so that messages can name
    it whatever the stream is) and the file's size when it is a plain file (so that a claim past the
    end is found without reading)."""

    def __init__(self, f: IO[bytes]):
        self.f = f
        try:
            self.pos = f.tell()
        except OSError:  # a device that cannot tell: offsets then count from where Scapy left off
            self.pos = 0
        self.mark = self.pos  # start of the record being read: where a broken stream is reported
        self.gzip = isinstance(f, gzip.GzipFile)
        self.size: int | None = None
        if not self.gzip:
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                st = os.fstat(f.fileno())
                self.size = st.st_size if stat.S_ISREG(st.st_mode) else None

    def left(self) -> int | None:
        return None if self.size is None else max(0, self.size - self.pos)

    def _piece(self, n: int) -> bytes:
        try:
            data = self.f.read(n)
        except (OSError, EOFError, zlib.error) as exc:  # gzip's way to say a stream is cut or corrupt
            what = "the compressed stream is damaged" if self.gzip else "the file cannot be read"
            raise _Damaged(self.mark, f"{what} ({exc})") from exc
        self.pos += len(data)
        return data

    def read(self, n: int) -> bytes | bytearray:
        """``n`` bytes, fewer only where the file ends."""
        if n <= _PIECE:
            return self._piece(n)
        buf = bytearray()
        while len(buf) < n:
            piece = self._piece(min(_PIECE, n - len(buf)))
            if not piece:
                break
            buf += piece
        return buf

    def skip(self, n: int) -> int:
        """Move ``n`` bytes on (fewer only where the file ends); returns how many."""
        if self.size is not None:
            n = min(n, self.left() or 0)
            self.f.seek(n, os.SEEK_CUR)
            self.pos += n
            return n
        done = 0
        while done < n:
            got = len(self._piece(min(_PIECE, n - done)))
            if not got:
                break
            done += got
        return done


@contextlib.contextmanager
def _scapy_quiet() -> Iterator[None]:
    """Scapy logs each oddity it tolerates to stderr; ``uet decode`` owns stderr (one line per stop)."""
    from scapy.error import log_runtime

    level = log_runtime.level
    log_runtime.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log_runtime.setLevel(level)


def _past_end(offset: int, what: str, length: int, have: int) -> _Damaged:
    return _Damaged(offset, f"{what} (total length {length}) runs past the end of the file: "
                            f"{have} of its {length} bytes are there")


def _pcap_frames(reader: Any, src: _Source) -> Iterator[tuple[int, bytes, float]]:
    unpack = struct.Struct(reader.endian + "IIII").unpack
    per_second = 1_000_000_000 if getattr(reader, "nano", False) else 1_000_000
    while True:
        start = src.mark = src.pos
        hdr = src.read(16)
        if not hdr:
            return
        if len(hdr) < 16:
            raise _Damaged(start, f"the file ends {len(hdr)} bytes into a 16-byte pcap record header")
        sec, frac, caplen, _wirelen = unpack(hdr)
        if caplen > MAX_BLOCK_LEN:
            raise _Damaged(start, f"pcap record claims {caplen} captured bytes, more than the "
                                  f"{_mib(MAX_BLOCK_LEN)} limit")
        data = bytes(src.read(min(caplen, FRAME_CAP)))
        have = len(data)
        if have == min(caplen, FRAME_CAP) and caplen > have:
            have += src.skip(caplen - have)
        item = (reader.linktype, data, sec + frac / per_second)
        if have < caplen:
            if not data:
                raise _Damaged(start, f"pcap record cut short: the file ends before its {caplen} "
                                      "captured bytes")
            yield item
            raise _Damaged(start, f"pcap record cut short: the file ends {have} bytes into its "
                                  f"{caplen} captured bytes (that frame is decoded as far as it goes)",
                           decoded=True)
        yield item


def _pcapng_frames(reader: Any, src: _Source) -> Iterator[tuple[int, bytes, float]]:
    endian = reader.endian
    while True:
        start = src.mark = src.pos
        head = src.read(8)
        if not head:
            return
        if len(head) < 8:
            raise _Damaged(start, f"the file ends {len(head)} bytes into an 8-byte pcapng block header")
        (btype,) = struct.unpack(endian + "I", head[:4])
        what = _BLOCK_NAMES.get(btype, f"block of type 0x{btype:08X}")
        if btype == _SHB:
            # A new section may change the byte order, which only its byte-order magic tells.
            bom = src.read(4)
            if len(bom) < 4:
                raise _Damaged(start, "the file ends inside a section header block")
            if bom not in _BOMS:
                raise _Damaged(start, f"section header block has no byte-order magic ({bom.hex()})")
            endian = _BOMS[bom]
        (length,) = struct.unpack(endian + "I", head[4:])
        if length < _MIN_LEN.get(btype, 12):
            raise _Damaged(start, f"{what} total length {length} is less than its "
                                  f"{_MIN_LEN.get(btype, 12)}-byte minimum")
        if length % 4:
            raise _Damaged(start, f"{what} total length {length} is not a multiple of 4")
        if btype in _MIN_LEN and length > MAX_BLOCK_LEN:
            raise _Damaged(start, f"{what} claims {length} bytes, more than the "
                                  f"{_mib(MAX_BLOCK_LEN)} limit")
        done = src.pos - start
        left = src.left()
        if left is not None and length - done > left:
            raise _past_end(start, what, length, done + left)
        body: bytes | bytearray = b""
        if btype in _MIN_LEN:
            body = src.read(length - done - 4)
            if len(body) < length - done - 4:
                raise _past_end(start, what, length, done + len(body))
        else:
            skipped = src.skip(length - done - 4)
            if skipped < length - done - 4:
                raise _past_end(start, what, length, done + skipped)
        tail = src.read(4)
        if len(tail) < 4:
            raise _past_end(start, what, length, length - 4 + len(tail))
        (trailing,) = struct.unpack(endian + "I", tail)
        if trailing != length:
            raise _Damaged(start, f"pcapng {what} total length {length} does not match its trailing "
                                  f"copy {trailing}")
        if btype == _SHB:
            (major,) = struct.unpack(endian + "H", body[:2])
            if major != 1:
                raise _Damaged(start, f"section header block has version {major}; only 1 is read")
            # Interface numbers are per section: a new one starts with none described.
            reader.endian = endian
            reader.interfaces = []
        elif btype == _IDB:
            try:
                with _scapy_quiet():
                    reader._read_block_idb(bytes(body), FRAME_CAP)
            except (EOFError, struct.error, ValueError) as exc:
                raise _Damaged(start, f"malformed interface description block ({exc})") from exc
        elif btype in (_EPB, _PB, _SPB):
            yield _packet(reader, endian, btype, body, start, what)


def _packet(reader: Any, endian: str, btype: int, body: bytes | bytearray, start: int,
            what: str) -> tuple[int, bytes, float]:
    """One packet block's frame. Scapy's parsers slice a captured length past the block without a
    word and, for a simple packet block, read a snap length of 0 as 0 bytes instead of unlimited
    (and give no timestamp), so the fixed fields are read here."""
    if btype == _SPB:
        intid, tshigh, tslow = 0, 0, 0
        (wirelen,) = struct.unpack_from(endian + "I", body)
        caplen = min(wirelen, len(body) - 4)
        data_at = 4
    else:
        if btype == _EPB:
            intid, tshigh, tslow, caplen, _ = struct.unpack_from(endian + "5I", body)
        else:
            intid, _drops, tshigh, tslow, caplen, _ = struct.unpack_from(endian + "HH4I", body)
        data_at = 20
        if caplen > len(body) - data_at:
            raise _Damaged(start, f"{what} captured length {caplen} runs past its block "
                                  f"({len(body) - data_at} bytes of room)")
    if intid >= len(reader.interfaces):
        raise _Damaged(start, f"{what} names interface {intid}, but the section describes "
                              f"{len(reader.interfaces)}")
    linktype, snaplen, options = reader.interfaces[intid]
    if btype == _SPB and snaplen:
        caplen = min(caplen, snaplen)
    ts = ((tshigh << 32) + tslow) / (options.get("tsresol") or 1_000_000)
    return linktype, bytes(body[data_at:data_at + min(caplen, FRAME_CAP)]), ts


def _is_pipe(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _check_first_block(path: str, name: str) -> None:
    """Scapy reads the first section header block whole: refuse one that claims too much first."""
    if not os.path.isfile(path):
        return  # a device, or missing: Scapy says what is wrong
    with open(path, "rb") as raw:
        f: IO[bytes] = raw
        if raw.read(2) == b"\x1f\x8b":
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw)
        else:
            raw.seek(0)
        try:
            head = f.read(12)
        except (OSError, EOFError, zlib.error):
            return  # Scapy says what is wrong with the stream
    if len(head) < 12 or head[:4] != b"\x0a\x0d\x0d\x0a" or head[8:] not in _BOMS:
        return
    (length,) = struct.unpack(_BOMS[head[8:]] + "I", head[4:8])
    if length > MAX_BLOCK_LEN:
        raise CaptureError(f"{name}: not a readable pcapng file (its section header block claims "
                           f"{length} bytes, more than the {_mib(MAX_BLOCK_LEN)} limit)")


def read_frames(path: str, name: str | None = None) -> Iterator[tuple[int, bytes, float]]:
    """Frames of a pcap or pcapng file (``"-"`` reads stdin; ``name`` is what messages call the
    file). Raises :class:`CaptureError` at once when the file cannot be opened, and
    :class:`CaptureStopped` after the last good frame when a damaged record or block stops it."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapNgReader, RawPcapReader

    if path == "-" or _is_pipe(path):
        # Scapy sniffs gzip by seeking back, and positions are read with tell(): pipes can do
        # neither, so stdin and named pipes (``<(...)``) are spooled to a file first.
        spool = tempfile.NamedTemporaryFile(prefix="uet-stdin-", suffix=".pcap", delete=False)
        try:
            with spool:
                if path == "-":
                    shutil.copyfileobj(sys.stdin.buffer, spool)
                else:
                    try:
                        with open(path, "rb") as pipe:
                            shutil.copyfileobj(pipe, spool)
                    except OSError as exc:
                        raise CaptureError(f"{name or path}: cannot be read ({exc})") from exc
            yield from read_frames(spool.name, name or ("stdin" if path == "-" else path))
        finally:
            os.unlink(spool.name)
        return
    name = name or path
    try:
        _check_first_block(path, name)
        with _scapy_quiet():
            reader = RawPcapReader(path)
    except FileNotFoundError as exc:
        raise CaptureError(f"{name}: no such file") from exc
    except (Scapy_Exception, OSError, EOFError, ValueError, zlib.error, struct.error) as exc:
        raise CaptureError(f"{name}: not a readable pcap or pcapng file ({exc})") from exc
    n = 0
    try:
        src = _Source(reader.f)
        walk = _pcapng_frames if isinstance(reader, RawPcapNgReader) else _pcap_frames
        try:
            for item in walk(reader, src):
                n += 1
                yield item
        except _Damaged as stop:
            frame = n if stop.decoded else n + 1
            raise CaptureStopped(name, stop.offset, frame, n, stop.reason) from None
    finally:
        reader.close()
