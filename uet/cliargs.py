"""What the ``uet`` subcommands accept, checked in one place: argument types with their ranges
(sizes, counts, fractions, times, seeds, ports, addresses, ``PATH@TIME``, ``ADDR:PORT``), the
checks that need several options (run after parsing), output files opened before any work, and
the parser whose error is one line plus a hint.

A bad command line exits with status 2 and one readable line (``uet sim: error: argument --rtt:
nan: a positive, finite time in microseconds, e.g. 10``, then ``try 'uet sim --help'``), never a
traceback. Each type raises :class:`argparse.ArgumentTypeError` with an example of what it takes;
checks after parsing raise :class:`UsageError`, which :meth:`UsageError.report` prints.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
import sys
from typing import IO, Any, Callable, NoReturn, Sequence

from . import UET_IP_PROTO, UET_UDP_PORT

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

MAX_BYTES = 1 << 40            # sizes: more than any run of this implementation moves in a day
MAX_HELD_BYTES = 4 << 30       # uet sim/demo hold the data, and its copies, in memory
MAX_MESSAGE_BYTES = 1 << 30    # PdsConfig.max_message_bytes: a receiver answers TOO_LONG beyond
MAX_MTU = (1 << 14) - 1        # SES payload_length is 14 bits (facts D.3)
MAX_PATHS = 256                # live, one socket per path or entropy: well inside the fd limit
MAX_MESSAGES = 1 << 20         # uet sim: a million messages already take about a minute
MAX_ENTROPIES = 65536 - 49152  # entropy values are source ports of the dynamic range (multipath)
MAX_SEED = (1 << 63) - 1       # the simulator and the fabric salt with the seed as a signed int64
MAX_JOB = (1 << 24) - 1        # SES job_id is 24 bits (D.2)
MAX_PDCS = 65535               # PDC identifiers are 16 bits
MAX_COUNT = (1 << 63) - 1
MAX_RATE_GBPS = 1e5
MAX_SECONDS = 1e7              # about 4 months: any time option, so sums and products stay finite
MAX_US = MAX_SECONDS * 1e6


# --- the parser ---------------------------------------------------------------------------------

def usage_message(prog: str, message: str) -> str:
    """The two lines of a bad command line (argparse's messages are one line already; a stray
    newline in one would break the contract, so it is folded)."""
    return f"{prog}: error: {' '.join(message.splitlines())}\ntry '{prog} --help'\n"


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose error is one line and a hint, exit status 2, instead of
    the usage block. Subparsers made by ``add_subparsers`` take the parent's class, so building
    ``uet``'s top-level parser from this one covers every subcommand."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, usage_message(self.prog, message))

    def _get_formatter(self) -> argparse.HelpFormatter:
        # plain text whatever formatter_class a module asked for: its description may be a
        # docstring written in reST (uet.clihelp)
        from .clihelp import PlainFormatter

        return PlainFormatter(prog=self.prog)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:  # argparse blames the top-level parser; name the subcommand (dest "command")
            sub = getattr(ns, "command", None)
            prog = f"{self.prog} {sub}" if sub else self.prog
            self.exit(2, usage_message(prog, f"unrecognized arguments: {' '.join(extras)}"))
        return ns


def parse_and_run(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
                  run: Callable[[argparse.Namespace], int]) -> int:
    """``run(parser.parse_args(argv))``, with a bad command line (or ``--help``) returned as its
    exit status rather than raised as SystemExit, so that callers in-process get a number."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    return int(run(args))


# --- replay lines -------------------------------------------------------------------------------

def unparsed_by(fmt: Callable[[Any], str]
                ) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """Mark an argument type with the inverse of what it parses (``fmt(parse(s))`` parses to the
    same value), for :func:`replay_words`; a type without one is written ``str`` (a float as
    :func:`number_word`, which every number type here reads back exactly)."""

    def mark(parse: Callable[[str], Any]) -> Callable[[str], Any]:
        parse.unparse = fmt  # type: ignore[attr-defined]
        return parse

    return mark


def number_word(v: float) -> str:
    """A float as a command line word that parses back to exactly it: ``50`` for 50.0, else the
    shortest repr (``0.002``)."""
    return str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)


def _word(action: argparse.Action, value: Any) -> str:
    fmt = getattr(action.type, "unparse", None)
    if fmt is not None:
        return fmt(value)
    return number_word(value) if isinstance(value, float) else str(value)


def replay_words(parser: argparse.ArgumentParser, args: argparse.Namespace, *,
                 leave_out: Sequence[str] = (), always: Sequence[str] = ("seed",)) -> list[str]:
    """The options of ``args`` that differ from ``parser``'s defaults, in the parser's order, as
    the words of a command line that parses back to the same values (the "replay with:" line of
    ``uet sim`` and ``uet demo``). ``leave_out`` names the dests that do not change the run (its
    outputs: ``--json``, ``--pcap``); ``always`` the dests written even at their default (the
    seed: a replay line names it, docs/design-notes.md "Contracts"). The namespace is read as the command
    leaves it: a default the command resolved (``--mtu`` from the route, ``--paths`` from
    ``--topology``) is written out, so that the replay does not depend on resolving it again the
    same way."""
    words: list[str] = []
    for a in parser._actions:
        if (not a.option_strings or a.dest in leave_out or a.default == argparse.SUPPRESS
                or not hasattr(args, a.dest)):
            continue  # positionals (none in sim and demo), --help, --version
        value = getattr(args, a.dest)
        if value == a.default and a.dest not in always:
            continue
        flag = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        if isinstance(a, argparse.BooleanOptionalAction):
            words.append(flag if value else "--no-" + flag[2:])
        elif a.nargs == 0:  # store_true, store_false, store_const: a value not the default
            words.append(flag)
        elif isinstance(a, argparse._AppendAction):
            for item in value:
                words += [flag, _word(a, item)]
        elif value is not None:
            words += [flag, _word(a, value)]
    return words


def run_alone(prog: str, add_arguments: Callable[[argparse.ArgumentParser], None],
              run: Callable[[argparse.Namespace], int], argv: Sequence[str] | None, *,
              description: str | None = None, raw: bool = True) -> int:
    """One subcommand without the rest of the CLI (its module's ``main``, for tests and
    ``python -m``): a parser named ``prog`` with ``add_arguments``, then ``run``."""
    p = Parser(prog=prog, description=description,
               formatter_class=argparse.RawDescriptionHelpFormatter if raw
               else argparse.HelpFormatter)
    add_arguments(p)
    return parse_and_run(p, argv, run)


def add_command(subparsers: Any, name: str, *, help: str, description: str | None,
                add_arguments: Callable[[argparse.ArgumentParser], None],
                run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """Add subcommand ``name`` to the ``uet`` command's ``subparsers``: its one-line ``help``, its
    ``description`` shown as written (the module docstring), its options, and ``run``."""
    p = subparsers.add_parser(name, help=help, description=description,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def run_registered(register: Callable[[Any], None], argv: Sequence[str] | None) -> int:
    """The subcommands a module's ``register`` adds, without the rest of the CLI: ``uet recv
    ...``, ``uet send ...`` as the module's ``main`` runs them."""
    parser = Parser(prog="uet")
    register(parser.add_subparsers(dest="command", metavar="COMMAND"))

    def run(args: argparse.Namespace) -> int:
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return 2
        return int(args.func(args))

    return parse_and_run(parser, argv, run)


class UsageError(Exception):
    """A command line that parsed but cannot run (options that contradict each other, an output
    file that cannot be opened): exit status 2 and one line; ``hint`` adds ``try '... --help'``."""

    def __init__(self, message: str, *, hint: bool = True):
        super().__init__(message)
        self.hint = hint

    def report(self, prog: str, out: IO[str] | None = None) -> int:
        out = out or sys.stderr
        out.write(usage_message(prog, str(self)) if self.hint else f"{prog}: {self}\n")
        out.flush()
        return 2


def open_output(path: str, mode: str = "wb", **kw: Any) -> IO[Any]:
    """An output file named on the command line, opened before any work starts so that a wrong
    directory costs nothing: ``UsageError("cannot write PATH: No such file or directory")``."""
    try:
        return open(path, mode, **kw)
    except OSError as exc:
        raise UsageError(f"cannot write {path or repr(path)}: {exc.strerror or exc}",
                         hint=False) from None


# --- numbers ------------------------------------------------------------------------------------

def _bad(s: str, what: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"{s or repr(s)}: {what}")


def _ranged(convert: Callable[[str], int], lo: int, hi: int, what: str,
            name: str) -> Callable[[str], int]:
    """A type: ``convert(s)`` (ValueError: not one) from ``lo`` to ``hi``; argparse says
    ``name`` when it names the type."""

    def parse(s: str) -> int:
        try:
            v = convert(s)
        except ValueError:
            raise _bad(s, what) from None
        if not lo <= v <= hi:
            raise _bad(s, what)
        return v

    parse.__name__ = name
    return parse


def integer(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """A type: an integer from ``lo`` to ``hi``; ``what`` says what it is, with an example."""
    return _ranged(int, lo, hi, what, "integer")


def parse_byte_count(s: str) -> int:
    """``64k``, ``16MiB``, ``1.5g``, ``4096``: a byte count (ValueError if it is none)."""
    t = s.strip().lower().removesuffix("ib").removesuffix("b")
    if t and t[-1] in _UNITS:
        v = float(t[:-1]) * _UNITS[t[-1]]
        if not math.isfinite(v):
            raise ValueError(s)
        return int(v)
    return int(t)


def byte_count(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """A type: a byte count from ``lo`` to ``hi`` with an optional k/m/g/t suffix (``64k``,
    ``16MiB``, ``1.5g``)."""
    return _ranged(parse_byte_count, lo, hi, what, "size")


def real(lo: float, hi: float, what: str, *, open_lo: bool = False,
         parse_fn: Callable[[str], float] = float) -> Callable[[str], float]:
    """A type: a finite number from ``lo`` (excluded with ``open_lo``) to ``hi``."""

    def parse(s: str) -> float:
        try:
            v = parse_fn(s)
        except ValueError:
            raise _bad(s, what) from None
        if not (math.isfinite(v) and (lo < v if open_lo else lo <= v) and v <= hi):
            raise _bad(s, what)
        return v

    parse.__name__ = "number"
    return parse


def micros(s: str) -> float:
    """A time in microseconds; ``us``/``µs``, ``ms`` and ``s`` suffixes are accepted (no range
    check: the types below add it)."""
    t = s.strip().lower()
    for suffix, scale in (("us", 1.0), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)):
        if t.endswith(suffix):
            return float(t[: -len(suffix)]) * scale
    return float(t)


size = byte_count(0, MAX_BYTES, "a byte count from 0 to 1TiB, such as 4096, 64k, 64MiB")
held_size = byte_count(0, MAX_HELD_BYTES, "a byte count from 0 to 4GiB (the run holds the data in "
                                         "memory), such as 4096, 64k, 64MiB")
positive_size = byte_count(1, MAX_BYTES, "a byte count from 1 to 1TiB, such as 4096, 64k, 1MiB")
message_size = byte_count(1, MAX_MESSAGE_BYTES,
                          "bytes per message from 1 to 1GiB (the receiver's limit), e.g. 1m")
window = byte_count(1, MAX_BYTES, "a window in bytes from 1 to 1TiB, such as 64k or 1MiB")
mtu = integer(1, MAX_MTU, f"payload bytes per packet from 1 to {MAX_MTU} (a 14-bit payload "
                          "length), e.g. 4096")
MIN_PAYLOAD = 256              # uet.mtu.MIN_PAYLOAD: the live commands' --mtu floor
payload_mtu = integer(MIN_PAYLOAD, MAX_MTU, f"payload bytes per packet from {MIN_PAYLOAD} to "
                                            f"{MAX_MTU}, e.g. 1024, 2048, 4096 or 8192")
paths = integer(1, MAX_PATHS, f"a number of paths from 1 to {MAX_PATHS}, e.g. 4")
sockets = integer(1, MAX_PATHS, f"a number of entropy sockets from 1 to {MAX_PATHS}, e.g. 8")
messages = integer(1, MAX_MESSAGES, f"a number of messages from 1 to {MAX_MESSAGES}, e.g. 8")
entropies = integer(1, MAX_ENTROPIES, f"a number of entropy values from 1 to {MAX_ENTROPIES}, "
                                      "e.g. 64")
seed = integer(0, MAX_SEED, "a seed from 0 to 2^63-1, e.g. 7")
job = integer(0, MAX_JOB, f"a job id from 0 to {MAX_JOB} (24 bits), e.g. 0")
count = integer(0, MAX_COUNT, "a number of messages, 0 or more (0: no limit), e.g. 10")
max_pdcs = integer(1, MAX_PDCS, f"a number of PDCs from 1 to {MAX_PDCS}, e.g. 1024")
port = integer(1, 65535, "a UDP port from 1 to 65535, e.g. 4793")
rate = real(0.0, MAX_RATE_GBPS, f"a positive, finite rate in Gb/s up to {MAX_RATE_GBPS:g}, "
                                "e.g. 100", open_lo=True)
rtt = real(0.0, MAX_US, "a positive, finite time in microseconds, e.g. 10", open_lo=True,
           parse_fn=micros)
delay_us = real(0.0, MAX_US, "a finite time in microseconds, 0 or more, e.g. 10", parse_fn=micros)
timeout = real(0.0, MAX_SECONDS, "a positive, finite time in seconds, e.g. 30", open_lo=True)
seconds = real(0.0, MAX_SECONDS, "a finite time in seconds, 0 or more, e.g. 1")


def csig_ethertype(s: str) -> int:
    """The EtherType (TPID) of the CSIG tag (``--csig-ethertype 0x88b5``, facts E.4), hex with
    ``0x`` or decimal: an EtherType proper (0x0600 and up; lower values are 802.3 lengths) that the
    decoder does not already read as IP or as a VLAN tag."""
    from .capture.frame import NOT_CSIG_ETHERTYPES
    from .cms.csig import CSIG_ETHERTYPE

    taken = ", ".join(f"0x{t:04x}" for t in NOT_CSIG_ETHERTYPES)
    what = (f"an EtherType from 0x0600 to 0xffff, hex or decimal, other than IPv4, IPv6 and the VLAN "
            f"TPIDs ({taken}), e.g. 0x{CSIG_ETHERTYPE:04x}")
    try:
        v = int(s.strip(), 0)
    except ValueError:
        raise _bad(s, what) from None
    if not 0x0600 <= v <= 0xFFFF or v in NOT_CSIG_ETHERTYPES:
        raise _bad(s, what)
    return v


def fraction(s: str) -> float:
    """A probability from 0 to 1 (``--loss 0.02``)."""
    try:
        v = float(s)
    except ValueError:
        v = -1.0
    if not 0.0 <= v <= 1.0:  # also false for nan
        raise _bad(s, "a fraction from 0 to 1, e.g. 0.02")
    return v


def _path_and(s: str, sep: str, convert: Callable[[str], float], ok: Callable[[float], bool],
              what: str) -> tuple[int, float]:
    """``I<sep>VALUE``: a path number (below MAX_PATHS) and a finite value that ``ok`` takes."""
    try:
        i, v = s.split(sep, 1)
        path, value = int(i), convert(v)
    except ValueError:
        raise _bad(s, what) from None
    if not (0 <= path < MAX_PATHS and math.isfinite(value) and ok(value)):
        raise _bad(s, what)
    return path, value


@unparsed_by(lambda v: f"{v[0]}@{number_word(v[1])}")
def fail_spec(s: str) -> tuple[int, float]:
    """``I@T``: path I fails T microseconds after the start (``1@50``, ``1@250ms``); that I is
    below ``--paths`` is checked after parsing (:func:`check_fail_paths`)."""
    return _path_and(s, "@", micros, lambda at: 0.0 <= at <= MAX_US,
                     "expected PATH@TIME, a path number and a time from the start, e.g. 1@50 (µs) "
                     "or 1@250ms")


@unparsed_by(lambda v: f"{v[0]}:{number_word(v[1])}")
def degrade_path_spec(s: str) -> tuple[int, float]:
    """``I:F``: path I runs at fraction F (above 0, at most 1) of the rate (``--degrade-path
    3:0.25``); that I is below ``--paths`` is checked after parsing
    (:func:`uet.fabric.command.check_degrade`)."""
    return _path_and(s, ":", float, lambda f: 0.0 < f <= 1.0,
                     "expected PATH:FRACTION, a path number and the fraction of its rate left, "
                     "e.g. 3:0.25")


# --- payload per packet and SES headers (facts A.1) ------------------------------------------

MTU_HELP = ("payload bytes per packet, from 256 (the reference provider's are 1024, 2048, 4096 "
            "and 8192); default: the largest of those whose whole datagram fits {where} (1024 "
            "at MTU 1500, 8192 at 9000 and on loopback); no IP fragments: a datagram that does "
            "not fit stops the command (exit 2)")
SES_HEADER_HELP = ("SES request headers: auto (small and medium headers for messages that fit "
                   "one packet, the default) or standard (next_hdr 3 only, and no small response "
                   "with data: what the reference provider parses, A.1)")


def add_mtu_argument(p: Any, *, where: str = "the MTU of the interface the route to the peer "
                                              "uses") -> None:
    """``--mtu N`` of a live command (default None: :func:`resolve_mtu`)."""
    p.add_argument("--mtu", type=payload_mtu, default=None, metavar="N",
                   help=MTU_HELP.format(where=where))


ENCAP_HELP = ("how UET is carried (facts A.1): udp (the default) or ip, directly in IP "
              "protocol --ip-proto behind the 4-byte entropy header, on a raw socket (root or "
              "CAP_NET_RAW); a receiver with ip also accepts UDP and answers each peer in kind; "
              "TSS then uses the native-IP AAD (F)")


def add_encap_arguments(p: Any) -> None:
    """``--encap udp|ip`` and ``--ip-proto N`` of a live command (uet.io.native_ip)."""
    p.add_argument("--encap", choices=("udp", "ip"), default="udp", help=ENCAP_HELP)
    p.add_argument("--ip-proto", type=integer(1, 255, "an IP protocol number, e.g. 253"),
                   default=UET_IP_PROTO, metavar="N",
                   help=f"the IP protocol of --encap ip (default {UET_IP_PROTO}, A.1)")


def add_ses_header_argument(p: Any) -> None:
    p.add_argument("--ses-header", choices=("auto", "standard"), default="auto",
                   help=SES_HEADER_HELP)


def resolve_mtu(given: int | None, *, peer: str | None = None, bind: str | None = None,
                tss: bool = False, csig: bool = False, native_ip: bool = False) -> int:
    """``--mtu`` as given, else the default of uet.mtu (the route towards ``peer``, or the
    interface of ``bind``); UsageError (exit 2, one line) when neither tells."""
    if given is not None:
        return given
    from .mtu import MtuError, default_payload

    try:
        return default_payload(peer=peer, bind=bind, tss=tss, csig=csig, native_ip=native_ip)[0]
    except MtuError as exc:
        raise UsageError(str(exc), hint=False) from None
    except OSError as exc:
        raise UsageError(f"cannot find the route to {peer or bind}: {exc.strerror or exc}; "
                         "give --mtu N", hint=False) from None


# --- addresses and names ------------------------------------------------------------------------

def ip_address(s: str) -> str:
    """An IP address literal (``127.0.0.1``, ``::1``), in the form the endpoints use."""
    try:
        return str(ipaddress.ip_address(s.strip().split("%", 1)[0]))
    except ValueError:
        raise _bad(s, "an IP address such as 127.0.0.1 or ::1") from None


def hostport(s: str, default_port: int = UET_UDP_PORT) -> tuple[str, int]:
    """``ADDR:PORT``, ``[V6ADDR]:PORT``, ``ADDR`` (port 4793) or a bare IPv6 address; port 0
    (any) is allowed, for the addresses a command binds."""
    from .addresses import parse_hostport

    try:
        return parse_hostport(s, default_port)
    except (ValueError, OSError) as exc:
        raise _bad(s, f"expected ADDR:PORT, e.g. 127.0.0.1:4793 ({exc})") from None


def peer(s: str) -> tuple[str, int]:
    """:func:`hostport` for an address sent to: port 1..65535."""
    host, p = hostport(s)
    if p == 0:
        raise _bad(s, "expected ADDR:PORT with a port from 1 to 65535, e.g. 127.0.0.1:4793")
    return host, p


_PROTO = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def proto_name(s: str) -> str:
    """A Wireshark protocol name: lower-case letters, digits and ``_``, starting with a letter."""
    if not _PROTO.match(s):
        raise _bad(s, "a protocol name of lower-case letters, digits and _, e.g. uet")
    return s


# --- checks that need several options -----------------------------------------------------------

def check_fail_paths(args: argparse.Namespace) -> None:
    """Every ``--fail-path I@T`` names one of the ``--paths`` paths (0 to paths-1)."""
    for i, t in getattr(args, "fail_path", None) or ():
        if i >= args.paths:
            raise UsageError(f"argument --fail-path: {i}@{t:g}: there is no path {i} "
                             f"(--paths {args.paths} numbers them 0 to {args.paths - 1})")


def check_messages(args: argparse.Namespace) -> None:
    """At most one message per byte (``--op atomic`` counts operations, not bytes)."""
    if getattr(args, "op", "send") != "atomic" and args.messages > max(1, args.bytes):
        raise UsageError(f"argument --messages: {args.messages}: more messages than --bytes "
                         f"({args.bytes}); each message carries at least one byte")


def check_transfer(args: argparse.Namespace) -> None:
    """``uet sim`` and ``uet demo``: the checks of the transfer options."""
    check_fail_paths(args)
    check_messages(args)


def check_same_family(what: str, addr: str | None, other: str, other_what: str) -> None:
    """``addr`` (an IP literal, or None) is of the address family of ``other``."""
    if addr is not None and ipaddress.ip_address(addr).version != ipaddress.ip_address(other).version:
        raise UsageError(f"argument {what}: {addr}: not of the address family of {other_what} "
                         f"({other})")


def check_marking(kmin: int, kmax: int) -> None:
    """ECN marking starts at ``--kmin`` and marks every packet above ``--kmax``: kmin < kmax (the
    values in force, defaults included)."""
    if kmax <= kmin:
        raise UsageError(f"argument --kmax: {kmax}: must be above --kmin ({kmin})")
