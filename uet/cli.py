"""The ``uet`` command line: one subcommand per job (``uet decode``, ``uet analyze`` ...)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Sequence

from . import UET_UDP_PORT, __version__, cliargs


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


def _cmd_decode(args: argparse.Namespace) -> int:
    from .capture.frame import DecodeConfig, decode_frame
    from .capture.pcap import CaptureError, CaptureStopped, read_frames
    from .wire.schema import Options

    from .capture.keys import capture_key

    try:
        open_tss = capture_key(args)
    except cliargs.UsageError as exc:
        return exc.report("uet decode")
    cfg = DecodeConfig(
        ports=tuple(args.port or [UET_UDP_PORT]),
        trailer=args.trailer,
        csig_ethertype=args.csig_ethertype,
        open_tss=open_tss,
        opts=Options(ccx_layout=args.ccx_layout, rsv_pdc_bit=args.rsv_pdc_bit,
                     mswap_cswap_ext=args.mswap_cswap_ext),
    )
    from .capture.reassembly import Reassembler

    reasm = Reassembler()  # IP fragments (issue 27): the completing frame decodes the datagram
    out = sys.stdout
    binary = getattr(out, "buffer", None)  # JSON Lines go out as bytes where stdout takes them
    chunk: list[Any] = []

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
            from .capture.quick import QuickDecoder

            quick = QuickDecoder(cfg)  # the plain frames; the others go to the reference
            dumps, exact = _json_encoders()
            out.flush()
            for n, (linktype, raw, ts) in enumerate(read_frames(args.file), 1):
                obj = quick(linktype, raw, n)  # None for a fragment: the reference's
                if obj is None:
                    obj = decode_frame(linktype, raw, n, cfg, reasm=reasm, ts=ts).obj
                try:
                    chunk.append(dumps(obj))
                except TypeError:
                    chunk.append(exact(obj))
                if len(chunk) >= 1024:
                    flush()
        else:
            from .capture.tree import frame_tree

            for n, (linktype, raw, ts) in enumerate(read_frames(args.file), 1):
                res = decode_frame(linktype, raw, n, cfg, reasm=reasm, ts=ts)
                chunk.append(frame_tree(res, len(raw)) + "\n")
                if len(chunk) >= 512:
                    flush()
    except CaptureError as exc:
        if chunk:
            flush()
        if binary is not None:
            binary.flush()
        out.flush()
        print(f"uet decode: {exc}", file=sys.stderr)
        _unfinished(reasm, args.file)
        # A damaged record after a readable header is still a file that could be read (design.md).
        return 0 if isinstance(exc, CaptureStopped) else 2
    if chunk:
        flush()
    if binary is not None:
        binary.flush()
    out.flush()
    _unfinished(reasm, args.file)
    return 0


def _unfinished(reasm: Any, name: str) -> None:
    """The datagrams whose fragments never completed, on stderr (stdout holds one object per
    frame): one line each (uet.capture.reassembly LOST_KEEP, then a count)."""
    for line in reasm.finish():
        print(f"uet decode: {name}: {line}", file=sys.stderr)


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


def _cmd_analyze(args: argparse.Namespace) -> int:
    from .analyze.command import run

    return run(args)


#: the subcommands declared here; the others register themselves (``register(subparsers)``)
_OWN = ("decode", "wireshark", "analyze")
_REGISTER_MODULES = ("sim.command", "io.command", "fabric.command", "demo.command",
                     "conformance.command", "compare.command", "sweep.command")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole ``uet`` parser; with ``command`` (one of :data:`_OWN`), one that knows that
    subcommand alone, so that running it imports nothing else: the simulator, the PDS, the
    fabric and trio are imported only by the subcommands that need them."""
    parser = cliargs.Parser(
        prog="uet", description="Ultra Ethernet Transport (UEC 1.0.x) reference implementation.")
    parser.add_argument("--version", action="version", version=f"uet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in (None, "decode"):
        _add_decode(sub)
    if command in (None, "wireshark"):
        _add_wireshark(sub)
    if command in (None, "analyze"):
        _add_analyze(sub)
    if command is None:
        for module in _REGISTER_MODULES:
            importlib.import_module(f"{__package__}.{module}").register(sub)
    return parser


def _add_decode(sub: Any) -> None:
    from .capture.frame import CSIG_ETHERTYPE
    from .capture.keys import add_capture_key

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
    add_capture_key(dec)
    dec.set_defaults(func=_cmd_decode)




def _add_wireshark(sub: Any) -> None:
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


def _add_analyze(sub: Any) -> None:
    from .capture.keys import add_capture_key

    an = sub.add_parser("analyze", help="read a capture as a conversation: PDCs, retransmissions, "
                                        "NACKs, trims, violations; a ladder diagram",
                        description="Find the UET frames of a pcap/pcapng capture (every link type "
                                    "uet decode reads; any UDP port: a payload that decodes as UET "
                                    "with a verifying CRC trailer, or that belongs to a PDC so "
                                    "found), group them into PDCs and report what the capture "
                                    "shows of each. --json prints one object: totals (frames, "
                                    "pdc_count, retransmissions, spurious_retransmissions, "
                                    "trimmed, nacks, violations ...) and pdcs, the list of PDCs "
                                    "(the count is pdc_count). Exit status 0 whenever the file "
                                    "could be read, 2 when it cannot.")
    an.add_argument("file", help="capture file, or - for stdin")
    an.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    an.add_argument("--port", type=cliargs.port, action="append", metavar="PORT",
                    help="only these UDP ports carry UET (repeatable; default: found on any port)")
    an.add_argument("--ladder", metavar="PDC",
                    help="print a ladder diagram of one PDC: its index in the report (1, 2 ...) "
                         "or ADDR:PDCID of either end")
    an.add_argument("--svg", metavar="OUT.svg", help="with --ladder: also write it as SVG")
    an.add_argument("--refprov", action="store_true",
                    help="also judge every frame by the UEC reference provider's receive rules "
                         "(uet-facts A.1, A.3): sent to the UET port (the first --port, default "
                         "4793), DF and no IP fragments, only the SES headers it parses, the CRC "
                         "trailer with UDP checksum 0, each answer from its request's EV; "
                         "docs/interop.md")
    an.add_argument("--max-payload", type=cliargs.byte_count(1, 65535, "a payload size"),
                    metavar="N",
                    help="with --refprov: the fabric's payload per packet (the reference's "
                         "UET_MAX_PAYLOAD: 1024, 2048, 4096 or 8192); a request carrying more "
                         "is reported")
    add_capture_key(an)
    an.set_defaults(func=_cmd_analyze)


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # the subcommand is the first word (options before it are the parser's own: --help, --version)
    parser = build_parser(words[0] if words and words[0] in _OWN else None)
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
