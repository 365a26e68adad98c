"""The ``uet`` command line: one subcommand per job (``uet decode``, ``uet analyze`` ...), each
declared and run by its own module (``uet.capture.command`` for ``uet decode``,
``uet.sim.command`` ...); this module only dispatches to them."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from . import __version__, cliargs, clihelp


#: the subcommands that ``uet X`` builds alone, importing their module only (reading a capture
#: needs neither the simulator, the PDS nor trio); every module adds its subcommands with
#: ``register(subparsers)``
_OWN = {"decode": "capture.command", "wireshark": "wireshark.command",
        "analyze": "analyze.command"}
_REGISTER_MODULES = ("sim.command", "io.command", "fabric.command", "demo.command",
                     "conformance.command", "compare.command", "sweep.command")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole ``uet`` parser; with ``command`` (one of :data:`_OWN`), one that knows that
    subcommand alone, so that running it imports nothing else: the simulator, the PDS, the
    fabric and trio are imported only by the subcommands that need them."""
    parser = cliargs.Parser(
        prog="uet", description="Ultra Ethernet Transport (UEC 1.0.x) reference implementation.",
        epilog=clihelp.TOP_EPILOG)
    parser.add_argument("--version", action="version", version=f"uet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [_OWN[command]] if command in _OWN else [*_OWN.values(), *_REGISTER_MODULES]
    for module in modules:
        importlib.import_module(f"{__package__}.{module}").register(sub)
    clihelp.add_examples(sub)
    return parser


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
