"""``uet wireshark``: write the Lua dissector generated from the header schema
(:func:`uet.wireshark.lua.generate_lua`) to a file or stdout."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import UET_UDP_PORT, cliargs


def run(args: argparse.Namespace) -> int:
    from .lua import generate_lua

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


def register(subparsers: Any) -> None:
    """Add ``wireshark`` to the ``uet`` command's subparsers."""
    ws = subparsers.add_parser("wireshark", help="write the Lua dissector generated from the header schema",
                               description="Generate a Wireshark Lua dissector for UET (UDP port and IP "
                                           "protocol 253) and the RoCEv2 additions, from the same header "
                                           "declarations that uet decode uses.")
    ws.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    ws.add_argument("--port", type=cliargs.port, default=UET_UDP_PORT,
                    help="default UDP port preference")
    ws.add_argument("--name", type=cliargs.proto_name, default="uet",
                    help="protocol name to register; falls back to 'uetref' when taken (default uet)")
    ws.set_defaults(func=run)
