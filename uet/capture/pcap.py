"""Reading capture files: pcap and pcapng, from a path or stdin, frame by frame, with ``struct``.

pcap (both byte orders, micro- and nanosecond timestamps) and pcapng (section headers in either byte
order, interface descriptions with their link type, snap length and timestamp resolution; enhanced,
simple and obsolete packet blocks; every other block skipped by its length), plain or gzip
compressed, from a file, a pipe or stdin (``-``). No Scapy: the records are read from the stream
through a window that is refilled a piece at a time, and a record that lies wholly inside the window
is sliced out of it without any other work.

A damaged record or block stops reading with a stated reason (:class:`CaptureStopped`, raised after
every good frame was yielded) rather than quietly, and no block is read whole before its length is
checked. A block or record that is parsed may claim at most :data:`MAX_BLOCK_LEN` bytes; any other
pcapng block (statistics, name resolution, custom, unknown types) is skipped however long it is, by
seeking or by discarding it in bounded pieces, as long as the file really holds it.

Yields ``(linktype, frame bytes, timestamp)``; link-layer decoding is in :mod:`uet.capture.frame`.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
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
_PCAP_MAGICS = {b"\xa1\xb2\xc3\xd4": (">", False), b"\xd4\xc3\xb2\xa1": ("<", False),
                b"\xa1\xb2\x3c\x4d": (">", True), b"\x4d\x3c\xb2\xa1": ("<", True)}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_GZIP_MAGIC = b"\x1f\x8b"
_DEFAULT_TSRESOL = 1_000_000


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


class _Window:
    """The stream read ahead a piece at a time: ``buf[p:]`` is what has not been consumed yet and
    ``base`` the stream offset of ``buf[0]`` (offsets count from the start of the stream, whatever
    it is). ``size`` is the file's size when it is a plain uncompressed file, so that a claim past
    the end is found without reading and a skip is a seek.

    A read that fails (a damaged compressed stream, an I/O error) ends the stream where it failed;
    the failure is raised (:meth:`check`) by the record that needs the bytes it did not get, with
    that record's offset, after every record before it was read. Streams are read with ``read1``
    (one read of what is there), so that the bytes before a failure are never lost with it and a
    pipe's frames are decoded as they arrive."""

    __slots__ = ("f", "buf", "p", "base", "size", "gzip", "error", "eof", "_read")

    def __init__(self, f: Any, *, compressed: bool, size: int | None, head: bytes = b""):
        self.f = f
        self.buf = head
        self.p = 0
        self.base = 0
        self.size = size
        self.gzip = compressed
        self.error: BaseException | None = None
        self.eof = False
        self._read = getattr(f, "read1", f.read)  # what is there: a pipe is read as it fills

    @property
    def pos(self) -> int:
        return self.base + self.p

    def left(self) -> int | None:
        return None if self.size is None else max(0, self.size - self.pos)

    def _piece(self, n: int) -> bytes:
        if self.eof:
            return b""
        try:
            data = self._read(n)
        except (OSError, EOFError, zlib.error) as exc:  # gzip's way to say a stream is cut or corrupt
            self.error = exc
            data = b""
        if not data:
            self.eof = True
        return data

    def fill(self, n: int) -> int:
        """Make ``n`` bytes available from ``p`` (fewer only where the stream ends); returns how
        many are available."""
        have = len(self.buf) - self.p
        if have >= n or self.eof:
            return have
        parts = [self.buf[self.p:]]
        while have < n:
            piece = self._piece(_PIECE)
            if not piece:
                break
            parts.append(piece)
            have += len(piece)
        self.base += self.p
        self.p = 0
        self.buf = b"".join(parts)
        return have

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes, fewer only where the stream ends."""
        self.fill(n)
        data = self.buf[self.p:self.p + n]
        self.p += len(data)
        return data

    def skip(self, n: int) -> int:
        """Move ``n`` bytes on (fewer only where the stream ends); returns how many."""
        have = len(self.buf) - self.p
        if n <= have:
            self.p += n
            return n
        done = have
        self.base += len(self.buf)
        self.buf, self.p = b"", 0
        if self.size is not None:  # a plain file: seek, as far as the file goes
            k = min(n - done, self.left() or 0)
            self.f.seek(k, os.SEEK_CUR)
            self.base += k
            return done + k
        while done < n:
            got = len(self._piece(min(_PIECE, n - done)))
            if not got:
                break
            done += got
            self.base += got
        return done

    def header(self, n: int, what: str) -> bool:
        """``n`` bytes of a record header at a record boundary: False at a clean end of the file;
        a file that ends inside the header is damage."""
        start = self.pos
        got = self.fill(n)
        if got < n:
            self.check(start)
            if not got:
                return False
            raise _Damaged(start, f"the file ends {got} bytes into {what}")
        return True

    def check(self, mark: int) -> None:
        """Raise the read failure that ended the stream, if one did, for the record at ``mark``."""
        if self.error is not None:
            what = "the compressed stream is damaged" if self.gzip else "the file cannot be read"
            raise _Damaged(mark, f"{what} ({self.error})")


def _past_end(offset: int, what: str, length: int, have: int) -> _Damaged:
    return _Damaged(offset, f"{what} (total length {length}) runs past the end of the file: "
                            f"{have} of its {length} bytes are there")


def _pcap_frames(w: _Window, endian: str, nano: bool, linktype: int) -> Iterator[tuple[int, bytes, float]]:
    unpack = struct.Struct(endian + "IIII").unpack_from
    per_second = 1_000_000_000 if nano else 1_000_000
    while True:
        buf, p = w.buf, w.p
        if p + 16 <= len(buf):  # the usual case: the whole record is in the window
            sec, frac, caplen, _wirelen = unpack(buf, p)
            end = p + 16 + caplen
            if caplen <= FRAME_CAP and end <= len(buf):
                w.p = end
                yield linktype, buf[p + 16:end], sec + frac / per_second
                continue
        start = w.pos
        if not w.header(16, "a 16-byte pcap record header"):
            return
        sec, frac, caplen, _wirelen = unpack(w.buf, w.p)
        w.p += 16
        if caplen > MAX_BLOCK_LEN:
            raise _Damaged(start, f"pcap record claims {caplen} captured bytes, more than the "
                                  f"{_mib(MAX_BLOCK_LEN)} limit")
        want = min(caplen, FRAME_CAP)
        data = w.take(want)
        have = len(data)
        if have == want and caplen > have:
            have += w.skip(caplen - have)
        if have < caplen:
            w.check(start)
            if not data:
                raise _Damaged(start, f"pcap record cut short: the file ends before its {caplen} "
                                      "captured bytes")
            yield linktype, data, sec + frac / per_second
            raise _Damaged(start, f"pcap record cut short: the file ends {have} bytes into its "
                                  f"{caplen} captured bytes (that frame is decoded as far as it goes)",
                           decoded=True)
        yield linktype, data, sec + frac / per_second


_II = {e: struct.Struct(e + "II").unpack_from for e in "<>"}
_I = {e: struct.Struct(e + "I").unpack_from for e in "<>"}
_EPB_FIXED = {e: struct.Struct(e + "5I").unpack_from for e in "<>"}


def _pcapng_frames(w: _Window) -> Iterator[tuple[int, bytes, float]]:
    """Blocks from the first section header block on (which :func:`read_frames` has checked)."""
    endian = "<"  # the first section header block sets it
    interfaces: list[tuple[int, int, int]] = []  # (link type, snap length, timestamp units per second)
    while True:
        buf, p = w.buf, w.p
        if p + 32 <= len(buf):  # the usual case: an enhanced packet block wholly in the window
            btype, length = _II[endian](buf, p)
            end = p + length
            if (btype == _EPB and 32 <= length <= MAX_BLOCK_LEN and not length % 4 and end <= len(buf)
                    and _I[endian](buf, end - 4)[0] == length):
                intid, tshigh, tslow, caplen, _wirelen = _EPB_FIXED[endian](buf, p + 8)
                if caplen <= length - 32 and intid < len(interfaces):
                    w.p = end
                    linktype, _snaplen, tsresol = interfaces[intid]
                    yield (linktype, buf[p + 28:p + 28 + min(caplen, FRAME_CAP)],
                           ((tshigh << 32) + tslow) / tsresol)
                    continue
        start = w.pos
        if not w.header(8, "an 8-byte pcapng block header"):
            return
        head = w.take(8)
        (btype,) = struct.unpack(endian + "I", head[:4])
        what = _BLOCK_NAMES.get(btype, f"block of type 0x{btype:08X}")
        if btype == _SHB:
            # A new section may change the byte order, which only its byte-order magic tells.
            bom = w.take(4)
            if len(bom) < 4:
                w.check(start)
                raise _Damaged(start, "the file ends inside a section header block")
            if bom not in _BOMS:
                raise _Damaged(start, f"section header block has no byte-order magic ({bom.hex()})")
            endian = _BOMS[bom]
        (length,) = struct.unpack(endian + "I", head[4:])
        least = _MIN_LEN.get(btype, 12)
        if length < least:
            raise _Damaged(start, f"{what} total length {length} is less than its {least}-byte minimum")
        if length % 4:
            raise _Damaged(start, f"{what} total length {length} is not a multiple of 4")
        if btype in _MIN_LEN and length > MAX_BLOCK_LEN:
            raise _Damaged(start, f"{what} claims {length} bytes, more than the "
                                  f"{_mib(MAX_BLOCK_LEN)} limit")
        done = w.pos - start
        left = w.left()
        if left is not None and length - done > left:
            raise _past_end(start, what, length, done + left)
        rest = length - done - 4
        body = b""
        if btype in _MIN_LEN:
            body = w.take(rest)
            if len(body) < rest:
                w.check(start)
                raise _past_end(start, what, length, done + len(body))
        else:
            skipped = w.skip(rest)
            if skipped < rest:
                w.check(start)
                raise _past_end(start, what, length, done + skipped)
        tail = w.take(4)
        if len(tail) < 4:
            w.check(start)
            raise _past_end(start, what, length, length - 4 + len(tail))
        (trailing,) = struct.unpack(endian + "I", tail)
        if trailing != length:
            raise _Damaged(start, f"pcapng {what} total length {length} does not match its trailing "
                                  f"copy {trailing}")
        if btype == _SHB:
            (major,) = struct.unpack_from(endian + "H", body)
            if major != 1:
                raise _Damaged(start, f"section header block has version {major}; only 1 is read")
            interfaces = []  # interface numbers are per section: a new one starts with none described
        elif btype == _IDB:
            interfaces.append(_interface(body, endian))
        elif btype in (_EPB, _PB, _SPB):
            yield _packet(interfaces, endian, btype, body, start, what)


def _interface(body: bytes, endian: str) -> tuple[int, int, int]:
    """(link type, snap length, timestamp units per second) of an interface description block's
    body; the options are walked as Scapy and Wireshark walk them (the last ``if_tsresol`` counts,
    one that is not one byte long is ignored, an end-of-options ends them)."""
    linktype, snaplen = struct.unpack_from(endian + "HxxI", body)
    tsresol = None
    off, n = 8, len(body)
    while n - off >= 4:
        code, length = struct.unpack_from(endian + "HH", body, off)
        if code == 0:
            break
        value = off + 4
        if code == 9 and value + length <= n:
            tsresol = body[value:value + length]
        off = value + length + (-length % 4)
    units = _DEFAULT_TSRESOL
    if tsresol is not None and len(tsresol) == 1:
        units = (2 if tsresol[0] & 128 else 10) ** (tsresol[0] & 127)
    return linktype, snaplen, units


def _packet(interfaces: list[tuple[int, int, int]], endian: str, btype: int, body: bytes, start: int,
            what: str) -> tuple[int, bytes, float]:
    """One packet block's frame. A simple packet block has no timestamp, and a snap length of 0
    means unlimited."""
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
    if intid >= len(interfaces):
        raise _Damaged(start, f"{what} names interface {intid}, but the section describes "
                              f"{len(interfaces)}")
    linktype, snaplen, tsresol = interfaces[intid]
    if btype == _SPB and snaplen:
        caplen = min(caplen, snaplen)
    return linktype, body[data_at:data_at + min(caplen, FRAME_CAP)], ((tshigh << 32) + tslow) / tsresol


class _Prefixed:
    """A stream with the bytes already read from it put back in front (for the gzip reader)."""

    def __init__(self, head: bytes, f: IO[bytes]):
        self.head = head
        self.f = f

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.f.read(n)
        if n < 0:
            data, self.head = self.head + self.f.read(), b""
            return data
        data, self.head = self.head[:n], self.head[n:]
        return data


def _is_pipe(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _not_readable(name: str, why: str) -> CaptureError:
    return CaptureError(f"{name}: not a readable pcap or pcapng file ({why})")


def _open(path: str, name: str) -> tuple[_Window, list[Any]]:
    """The window over the file's (decompressed) bytes and what to close afterwards."""
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        opened: list[Any] = []
    else:
        try:
            raw = open(path, "rb")
        except FileNotFoundError as exc:
            raise CaptureError(f"{name}: no such file") from exc
        except OSError as exc:
            if _is_pipe(path):
                raise CaptureError(f"{name}: cannot be read ({exc})") from exc
            raise _not_readable(name, str(exc)) from exc
        opened = [raw]
    try:
        head = raw.read(2)  # a buffered read: fewer bytes only where the stream ends
        if head == _GZIP_MAGIC:
            import gzip  # only for compressed files: the import costs as much as the rest here

            gz = gzip.GzipFile(fileobj=_Prefixed(head, raw), mode="rb")  # type: ignore[arg-type]
            opened.insert(0, gz)
            return _Window(gz, compressed=True, size=None), opened
        size = None
        try:
            st = os.fstat(raw.fileno())
            if stat.S_ISREG(st.st_mode) and raw.seekable():
                size = st.st_size - (raw.tell() - len(head))  # stdin may start inside its file
        except (OSError, ValueError, AttributeError):
            pass
        return _Window(raw, compressed=False, size=size, head=head), opened
    except (OSError, ValueError) as exc:
        for f in opened:
            f.close()
        raise _not_readable(name, str(exc)) from exc


def _walk(w: _Window, name: str) -> Iterator[tuple[int, bytes, float]]:
    """Check the file header (a :class:`CaptureError` when it is not a capture) and walk on."""
    got = w.fill(24)
    if got < 4:
        if w.error is not None:
            kind = "invalid gzip file" if w.gzip else "read error"
            raise _not_readable(name, f"{kind}: {w.error}")
        raise _not_readable(name, f"{got} bytes: too short for a file header" if got else
                            "no data could be read")
    magic = w.buf[w.p:w.p + 4]
    if magic in _PCAP_MAGICS:
        endian, nano = _PCAP_MAGICS[magic]
        if got < 24:
            raise _not_readable(name, f"the pcap file header is cut short at {got} of 24 bytes")
        linktype = struct.unpack_from(endian + "I", w.buf, w.p + 20)[0]
        w.p += 24
        return _pcap_frames(w, endian, nano, linktype)
    if magic == _PCAPNG_MAGIC:
        head = w.buf[w.p:w.p + 12]
        if len(head) == 12 and head[8:] in _BOMS:
            (length,) = struct.unpack_from(_BOMS[head[8:]] + "I", head, 4)
            if length > MAX_BLOCK_LEN:
                raise CaptureError(f"{name}: not a readable pcapng file (its section header block "
                                   f"claims {length} bytes, more than the {_mib(MAX_BLOCK_LEN)} limit)")
        return _pcapng_frames(w)
    raise _not_readable(name, f"not a pcap or pcapng file: magic {magic.hex()}")


def read_frames(path: str, name: str | None = None) -> Iterator[tuple[int, bytes, float]]:
    """Frames of a pcap or pcapng file (``"-"`` reads stdin; ``name`` is what messages call the
    file). Raises :class:`CaptureError` at once when the file cannot be opened or is no capture
    (a pcapng file whose first section header block is damaged is none), and
    :class:`CaptureStopped` after the last good frame when a damaged record or block stops it."""
    name = name or ("stdin" if path == "-" else path)
    w, opened = _open(path, name)
    n = 0
    try:
        try:
            for item in _walk(w, name):
                n += 1
                yield item
        except _Damaged as stop:
            if stop.offset == 0:
                raise _not_readable(name, f"its first block: {stop.reason}") from None
            frame = n if stop.decoded else n + 1
            raise CaptureStopped(name, stop.offset, frame, n, stop.reason) from None
    finally:
        for f in opened:
            f.close()
