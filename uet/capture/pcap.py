"""Reading capture files with Scapy's raw readers: pcap and pcapng, from a path or stdin.

Yields ``(linktype, frame bytes, timestamp)``; link-layer decoding is in :mod:`uet.capture.frame`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Iterator

from ..errors import UetError


class CaptureError(UetError):
    """The capture file itself cannot be read (missing, not pcap/pcapng, bad header)."""


def read_frames(path: str) -> Iterator[tuple[int, bytes, float]]:
    """Frames of a pcap or pcapng file (``"-"`` reads stdin). Raises :class:`CaptureError` at once
    when the file cannot be opened; a file cut short mid-record ends the iteration quietly."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapNgReader, RawPcapReader

    if path == "-":
        # Scapy sniffs the format from a named file; spool stdin to one (pipes cannot seek).
        spool = tempfile.NamedTemporaryFile(prefix="uet-stdin-", suffix=".pcap", delete=False)
        with spool:
            shutil.copyfileobj(sys.stdin.buffer, spool)
        try:
            yield from read_frames(spool.name)
        finally:
            os.unlink(spool.name)
        return
    try:
        reader = RawPcapReader(path)
    except FileNotFoundError as exc:
        raise CaptureError(f"{path}: no such file") from exc
    except (Scapy_Exception, OSError, EOFError, ValueError) as exc:
        raise CaptureError(f"{path}: not a readable pcap or pcapng file ({exc})") from exc
    ng = isinstance(reader, RawPcapNgReader)
    try:
        while True:
            try:
                pkt, meta = reader._read_packet(size=1 << 18)
            except EOFError:
                return
            except Exception:  # a damaged record: stop reading, keep what was read
                return
            if ng:
                linktype = meta.linktype
                ts = ((meta.tshigh << 32) + meta.tslow) / (meta.tsresol or 1_000_000)
            else:
                linktype = reader.linktype
                ts = meta.sec + meta.usec / (1_000_000_000 if getattr(reader, "nano", False) else 1_000_000)
            yield linktype, pkt, ts
    finally:
        reader.close()
