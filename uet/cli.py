"""The ``uet`` command line: one subcommand per job (``uet decode`` for now)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from . import UET_UDP_PORT, __version__, cliargs


def _json_dumps():
    """Compact JSON of one frame: orjson when installed (5x faster), the standard library for
    integers wider than 64 bits (128-bit SES fields), which orjson refuses."""
    std = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode
    try:
        import orjson
    except ImportError:
        return std
    fast = orjson.dumps

    def dumps(obj: object) -> str:
        try:
            return fast(obj).decode()
        except TypeError:
            return std(obj)

    return dumps


def _cmd_decode(args: argparse.Namespace) -> int:
    from .capture.frame import DecodeConfig, decode_frame
    from .capture.pcap import CaptureError, CaptureStopped, read_frames
    from .capture.tree import frame_tree
    from .wire.schema import Options

    cfg = DecodeConfig(
        ports=tuple(args.port or [UET_UDP_PORT]),
        trailer=args.trailer,
        csig_ethertype=args.csig_ethertype,
        opts=Options(ccx_layout=args.ccx_layout, rsv_pdc_bit=args.rsv_pdc_bit,
                     mswap_cswap_ext=args.mswap_cswap_ext),
    )
    out = sys.stdout
    dumps = _json_dumps()
    chunk: list[str] = []
    n = 0
    try:
        for n, (linktype, raw, _ts) in enumerate(read_frames(args.file), 1):
            res = decode_frame(linktype, raw, n, cfg)
            chunk.append(dumps(res.obj) if args.json else frame_tree(res, len(raw)) + "\n")
            if len(chunk) >= 512:
                out.write("\n".join(chunk) + "\n")
                chunk.clear()
    except CaptureError as exc:
        if chunk:
            out.write("\n".join(chunk) + "\n")
        out.flush()
        print(f"uet decode: {exc}", file=sys.stderr)
        # A damaged record after a readable header is still a file that could be read (design.md).
        return 0 if isinstance(exc, CaptureStopped) else 2
    if chunk:
        out.write("\n".join(chunk) + "\n")
    out.flush()
    return 0


def _cmd_wireshark(args: argparse.Namespace) -> int:
    from .wireshark.lua import generate_lua

    if args.output == "-":
        sys.stdout.write(generate_lua(port=args.port, proto_name=args.name))
        return 0
    try:
        fh = cliargs.open_output(args.output, "w", encoding="utf-8")
    except cliargs.UsageError as exc:
        return exc.report("uet wireshark")
    try:
        with fh:
            fh.write(generate_lua(port=args.port, proto_name=args.name))
    except OSError as exc:
        print(f"uet wireshark: cannot write to {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"uet wireshark: wrote {args.output}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .cms.csig import CSIG_ETHERTYPE

    parser = cliargs.Parser(
        prog="uet", description="Ultra Ethernet Transport (UEC 1.0.x) reference implementation.")
    parser.add_argument("--version", action="version", version=f"uet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    dec = sub.add_parser("decode", help="decode UET and RoCEv2 frames of a pcap/pcapng file",
                         description="Decode every frame of a pcap or pcapng capture (Ethernet, raw IP, "
                                     "Linux cooked v1/v2 or BSD loopback). Exit status 0 whenever the "
                                     "file could be read, however many frames were malformed.")
    dec.add_argument("file", help="capture file, or - for stdin")
    dec.add_argument("--json", action="store_true", help="JSON Lines: one object per frame on stdout")
    dec.add_argument("--port", type=cliargs.port, action="append", metavar="PORT",
                     help=f"UDP port carrying UET (repeatable; default {UET_UDP_PORT})")
    dec.add_argument("--trailer", choices=("auto", "crc", "none"), default="auto",
                     help="CRC-32C trailer: auto (present exactly when the last 4 bytes verify), "
                          "crc (always present, so a wrong one is reported) or none (default auto)")
    dec.add_argument("--ccx-layout", choices=("1.0", "xdp2"), default="1.0",
                     help="ACK_CCX/NACK_CCX length: 1.0 = 40/32 bytes (uet-facts H.1 #2-3), "
                          "xdp2 = 32/24 bytes as XDP2 writes them (default 1.0)")
    dec.add_argument("--rsv-pdc-bit", type=int, choices=(80, 83), default=80,
                     help="bit of use_rsv_pdc in the SYN form: 80 (Wireshark/XDP2) or 83 "
                          "(reference provider); uet-facts H.1 #4 (default 80)")
    dec.add_argument("--mswap-cswap-ext", action="store_true",
                     help="decode AMO MSWAP with the 36-byte compare-swap extension (uet-facts H.2)")
    dec.add_argument("--csig-ethertype", type=cliargs.csig_ethertype, default=CSIG_ETHERTYPE,
                     metavar="ETHERTYPE",
                     help="EtherType of the CSIG congestion-signalling tag, hex (0x...) or decimal; "
                          f"uet-facts E.4 fixes none (default 0x{CSIG_ETHERTYPE:04x})")
    dec.set_defaults(func=_cmd_decode)

    ws = sub.add_parser("wireshark", help="write the Lua dissector generated from the header schema",
                        description="Generate a Wireshark Lua dissector for UET (UDP port and IP "
                                    "protocol 253) and the RoCEv2 additions, from the same header "
                                    "declarations that uet decode uses.")
    ws.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    ws.add_argument("--port", type=cliargs.port, default=UET_UDP_PORT,
                    help="default UDP port preference")
    ws.add_argument("--name", type=cliargs.proto_name, default="uet",
                    help="protocol name to register; falls back to 'uetref' when taken (default uet)")
    ws.set_defaults(func=_cmd_wireshark)

    from .sim.command import register as register_sim

    register_sim(sub)

    from .io.command import register as register_io

    register_io(sub)

    from .fabric.command import register as register_fabric

    register_fabric(sub)

    from .demo.command import register as register_demo

    register_demo(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    return cliargs.parse_and_run(parser, argv, lambda args: _run(parser, args))


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
