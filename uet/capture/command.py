"""``uet decode FILE``: every frame of a pcap or pcapng capture, decoded (docs/design-notes.md "Contracts").

stdout holds one tree per frame, or with ``--json`` JSON Lines: one object per frame. The plain
frames go through :class:`uet.capture.quick.QuickDecoder`, the others (and every frame without
``--json``) through the reference decoder :func:`uet.capture.frame.decode_frame`; IP fragments are
reassembled (:class:`uet.capture.reassembly.Reassembler`, issue 27) and the datagrams whose
fragments never completed are named on stderr at the end. Exit status 0 whenever the file could
be read, however many frames were malformed (a damaged record after a readable header included:
the frames before it are printed); 2 when it cannot be read at all, or for a bad option.

Imports only what decoding needs: neither the simulator, the PDS, trio nor Scapy.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import UET_UDP_PORT, cliargs

PROG = "uet decode"


def _json_encoders() -> tuple[Any, Any]:
    """(fast, exact): compact JSON of one frame as bytes. ``fast`` is orjson when installed (5x
    faster), ``exact`` the standard library, for what orjson refuses with a TypeError: integers
    wider than 64 bits (128-bit SES fields)."""
    std = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode

    def exact(obj: object) -> bytes:
        return std(obj).encode()

    try:
        import orjson
    except ImportError:
        return exact, exact
    return orjson.dumps, exact


def run(args: argparse.Namespace) -> int:
    from .frame import DecodeConfig, decode_frame
    from .keys import capture_key
    from .pcap import CaptureError, CaptureStopped, read_frames
    from ..wire.schema import Options

    try:
        open_tss = capture_key(args)
    except cliargs.UsageError as exc:
        return exc.report(PROG)
    if args.port_only and not args.port:
        return cliargs.UsageError("--port-only needs --port PORT, the ports to read UET on"
                                  ).report(PROG)
    # --port adds to the UET port (A.1); --port-only replaces it
    ports = tuple(dict.fromkeys(args.port if args.port_only
                                else [UET_UDP_PORT, *(args.port or ())]))
    cfg = DecodeConfig(
        ports=ports,
        trailer=args.trailer,
        csig_ethertype=args.csig_ethertype,
        open_tss=open_tss,
        opts=Options(ccx_layout=args.ccx_layout, rsv_pdc_bit=args.rsv_pdc_bit,
                     mswap_cswap_ext=args.mswap_cswap_ext),
    )
    from .reassembly import Reassembler

    reasm = Reassembler()  # IP fragments (issue 27): the completing frame decodes the datagram
    out = sys.stdout
    binary = getattr(out, "buffer", None)  # JSON Lines go out as bytes where stdout takes them
    chunk: list[Any] = []
    seen = _Seen()

    def flush() -> None:
        if args.json:
            data = b"\n".join(chunk) + b"\n"
            if binary is not None:
                binary.write(data)
            else:
                out.write(data.decode())
        else:
            out.write("\n".join(chunk) + "\n")
        chunk.clear()

    try:
        if args.json:
            from .quick import QuickDecoder

            quick = QuickDecoder(cfg)  # the plain frames; the others go to the reference
            dumps, exact = _json_encoders()
            out.flush()
            for n, (linktype, raw, ts) in enumerate(read_frames(args.file), 1):
                obj = quick(linktype, raw, n)  # None for a fragment: the reference's
                if obj is None:
                    obj = decode_frame(linktype, raw, n, cfg, reasm=reasm, ts=ts).obj
                if not seen.decoded:
                    seen.add(obj)
                try:
                    chunk.append(dumps(obj))
                except TypeError:
                    chunk.append(exact(obj))
                if len(chunk) >= 1024:
                    flush()
        else:
            from .tree import frame_tree

            for n, (linktype, raw, ts) in enumerate(read_frames(args.file), 1):
                res = decode_frame(linktype, raw, n, cfg, reasm=reasm, ts=ts)
                if not seen.decoded:
                    seen.add(res.obj)
                chunk.append(frame_tree(res, len(raw)) + "\n")
                if len(chunk) >= 512:
                    flush()
    except CaptureError as exc:
        if chunk:
            flush()
        if binary is not None:
            binary.flush()
        out.flush()
        print(f"{PROG}: {exc}", file=sys.stderr)
        seen.hint(args.file, ports)
        _unfinished(reasm, args.file)
        # A damaged record after a readable header is still a file that could be read (docs/design-notes.md).
        return 0 if isinstance(exc, CaptureStopped) else 2
    if chunk:
        flush()
    if binary is not None:
        binary.flush()
    out.flush()
    seen.hint(args.file, ports)
    _unfinished(reasm, args.file)
    return 0


class _Seen:
    """Whether any frame decoded as UET or RoCEv2 and, until one does, the UDP destination ports
    of the others: a capture where nothing decodes (a live run's UET port is rarely 4793) gets
    one line on stderr, before the unfinished fragments, naming the ports it saw and the --port
    to try."""

    def __init__(self) -> None:
        self.decoded = False
        self.dports: dict[int, int] = {}

    def add(self, obj: dict[str, Any]) -> None:
        if "uet" in obj or "roce" in obj:
            self.decoded = True
        elif (udp := obj.get("udp")) is not None:
            self.dports[udp["dport"]] = self.dports.get(udp["dport"], 0) + 1

    def hint(self, name: str, ports: tuple[int, ...]) -> None:
        if self.decoded or not self.dports:
            return
        top = sorted(self.dports.items(), key=lambda kv: (-kv[1], kv[0]))
        said = ", ".join(f"{p} ({n} frame{'s' if n != 1 else ''})" for p, n in top[:5])
        said += ", ..." if len(top) > 5 else ""
        print(f"{PROG}: {name}: no frame decoded as UET or RoCEv2; UET is read on UDP port "
              f"{', '.join(map(str, ports))}, the capture's UDP destination ports are {said}: "
              f"try --port {top[0][0]}", file=sys.stderr)


def _unfinished(reasm: Any, name: str) -> None:
    """The datagrams whose fragments never completed, on stderr (stdout holds one object per
    frame): one line each (uet.capture.reassembly LOST_KEEP, then a count)."""
    for line in reasm.finish():
        print(f"{PROG}: {name}: {line}", file=sys.stderr)


def add_arguments(dec: argparse.ArgumentParser) -> None:
    from .frame import CSIG_ETHERTYPE
    from .keys import add_capture_key

    dec.add_argument("file", help="capture file, or - for stdin")
    dec.add_argument("--json", action="store_true", help="JSON Lines: one object per frame on stdout")
    dec.add_argument("--port", type=cliargs.port, action="append", metavar="PORT",
                     help=f"a UDP port carrying UET besides {UET_UDP_PORT}, the UET port "
                          f"(repeatable; default: {UET_UDP_PORT} alone)")
    dec.add_argument("--port-only", action="store_true",
                     help=f"read UET on the --port ports only, not on {UET_UDP_PORT}")
    dec.add_argument("--trailer", choices=("auto", "crc", "none"), default="auto",
                     help="CRC-32C trailer: auto (present exactly when the last 4 bytes verify), "
                          "crc (always present, so a wrong one is reported) or none (default auto)")
    dec.add_argument("--ccx-layout", choices=("1.0", "xdp2"), default="1.0",
                     help="ACK_CCX/NACK_CCX length: 1.0 = 40/32 bytes (facts H.1 #2-3), "
                          "xdp2 = 32/24 bytes as XDP2 writes them (default 1.0)")
    dec.add_argument("--rsv-pdc-bit", type=int, choices=(80, 83), default=80,
                     help="bit of use_rsv_pdc in the SYN form: 80 (Wireshark/XDP2) or 83 "
                          "(reference provider); facts H.1 #4 (default 80)")
    dec.add_argument("--mswap-cswap-ext", action="store_true",
                     help="decode AMO MSWAP with the 36-byte compare-swap extension (facts H.2)")
    dec.add_argument("--csig-ethertype", type=cliargs.csig_ethertype, default=CSIG_ETHERTYPE,
                     metavar="ETHERTYPE",
                     help="EtherType of the CSIG congestion-signalling tag, hex (0x...) or decimal; "
                          f"facts E.4 fixes none (default 0x{CSIG_ETHERTYPE:04x})")
    add_capture_key(dec)


def register(subparsers: Any) -> None:
    """Add ``decode`` to the ``uet`` command's subparsers."""
    dec = subparsers.add_parser("decode", help="decode UET and RoCEv2 frames of a pcap/pcapng file",
                                description="Decode every frame of a pcap or pcapng capture "
                                            "(Ethernet, raw IP, Linux cooked v1/v2 or BSD "
                                            "loopback). Exit status 0 whenever the file could be "
                                            "read, however many frames were malformed.")
    add_arguments(dec)
    dec.set_defaults(func=run)
