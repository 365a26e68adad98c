"""``uet conformance HOST:PORT``: run the conformance suite against a UET-over-UDP target.

The suite is an independent peer (:mod:`uet.conformance`): it crafts packets from the header
declarations, sends them from plain UDP sockets on this host, and judges the target's answers
against docs/facts.md, one check per rule. The readable report goes to stderr as the checks run;
``--json`` prints exactly one JSON object on stdout (``target``, ``ok``, ``target_answered``,
``checks``: name, facts, level, profile, result pass|fail|skip, detail; ``summary``);
``--junit FILE`` writes JUnit XML, one testcase per check. Every answer that reaches a check
counts, up to ``--settle`` seconds after it ended: a check that saw an ACK and a NACK of one PSN
fails (C.5). ``uet conformance --list`` lists the checks and needs no target.

Exit status: 0 when every must passed (failed shoulds do not count), 1 when a must failed or the
target never answered, 2 for a bad command line or a ``--mtu`` that does not fit the route.

``--mtu N``: the payload bytes per packet of the checks' multi-packet messages (default: the
largest of 1024, 2048, 4096 and 8192 that fits the MTU of the route to the target, A.1); the
suite's sockets set DF, and a datagram that does not fit stops the run with one line (exit 2).
``--ses-header standard``: the suite sends standard SES headers only (it always does) and fails
an answer that carries the small response with data (next_hdr 6), which a peer such as the
reference provider drops (A.1); ``auto`` (the default) accepts it.

What the target must offer: UET over UDP (CRC-32C trailer, docs/design-notes.md "Defaults") on HOST:PORT,
where PORT is the UET port, answering each request to its source address at that same UET port,
from the request's EV (facts A.1, H.1 #19; ``answers_to_uet_port`` checks it). The suite
receives every answer on one socket at (its own address, the UET port) and sorts them by PDCID:
``--bind ADDR`` names the address, by default the first free loopback address (127.0.0.2,
127.0.0.3, ...) when the target is on this host, else the route's source address. Profile pds: RUD PDCs opened by SYN
(RUDI and UUD are tested too; a target that does not answer RUDI skips that check). Profile ses:
an SES above the PDS whose responses ride on ACKs; ``--mkey KEY:LEN`` names a memory region the
target exposes (readable, writable, atomics) for the WRITE/READ/atomic/out-of-range checks.

``--encap ip`` (A.1 "Native IP"; root or CAP_NET_RAW, else one line and exit 2): the suite sends
every packet directly in IP protocol ``--ip-proto N`` (253) behind the entropy header, whose EV
stands for the UDP source port, with the native-IP trailer (A.3; a damaged trailer stays damaged
by the same bits, uet.wire.ipencap), and reads the answers from a raw socket at its own address
as well as at the UET port over UDP.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from .. import cliargs
from ..mtu import DatagramTooBig
from ..ownaddr import LocalAddressError
from ..rawip import RawDenied
from .checks import PROFILES, SETTLE, Check, Context, Result, run_checks
from .pds_checks import CHECKS as PDS_CHECKS
from .report import progress_line, text_header, text_summary, write_json, write_junit
from .ses_checks import CHECKS as SES_CHECKS

ALL_CHECKS: list[Check] = PDS_CHECKS + SES_CHECKS
MAX_TIMEOUT = 60.0


def memory_region(s: str) -> tuple[int, int]:
    """``KEY:LEN``: a memory key (hex with 0x, or decimal, 64 bits) and the region's length."""
    what = "expected KEY:LEN, a 64-bit memory key and the region's length, e.g. 0x1234:4096"
    try:
        k, n = s.split(":", 1)
        key, length = int(k.strip(), 0), cliargs.parse_byte_count(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s or repr(s)}: {what}") from None
    if not (0 <= key < 1 << 64 and 1 <= length < 1 << 32):
        raise argparse.ArgumentTypeError(f"{s or repr(s)}: {what}")
    return key, length


timeout = cliargs.real(0.0, MAX_TIMEOUT, f"a positive time in seconds up to {MAX_TIMEOUT:g}, "
                                         "e.g. 1", open_lo=True)
settle = cliargs.real(0.0, MAX_TIMEOUT, f"a time in seconds from 0 to {MAX_TIMEOUT:g}, e.g. 0.05")


def select(profile: str, level: str, names: Sequence[str] | None) -> list[Check]:
    """The checks of ``profile`` (pds, ses, all) and ``level`` (must, should, all), or the ones
    ``names`` lists (in the suite's order)."""
    out = [c for c in ALL_CHECKS if profile in ("all", c.profile) and level in ("all", c.level)]
    if names:
        wanted = set(names)
        out = [c for c in out if c.name in wanted]
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", type=cliargs.peer, metavar="HOST:PORT", nargs="?",
                   help="the implementation under test (UDP; port default 4793); not needed "
                        "with --list")
    p.add_argument("--profile", choices=("pds", "ses", "all"), default="all",
                   help="which checks: pds, ses or all (default all)")
    p.add_argument("--level", choices=("must", "should", "all"), default="all",
                   help="run only the musts, only the shoulds, or all (default all); the exit "
                        "status depends on the musts alone")
    p.add_argument("--check", action="append", metavar="NAME",
                   choices=[c.name for c in ALL_CHECKS],
                   help="run only this check (repeatable); see --list")
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    p.add_argument("--timeout", type=timeout, default=1.0, metavar="S",
                   help="seconds to wait for each answer, and to wait for silence where a rule "
                        "says nothing comes back (default 1)")
    p.add_argument("--settle", type=settle, default=SETTLE, metavar="S",
                   help="seconds to keep reading once a check ended, for answers that contradict "
                        f"the one it took (an ACK and a NACK of one PSN; default {SETTLE:g}, at "
                        "most --timeout)")
    p.add_argument("--bind", type=cliargs.ip_address, default=None, metavar="ADDR",
                   help="the suite's own address, where it receives every answer at the UET port "
                        "(default: the first free of 127.0.0.2, 127.0.0.3, ... when the target is "
                        "on this host, else the route's source address towards it)")
    p.add_argument("--mkey", type=memory_region, default=None, metavar="KEY:LEN",
                   help="a memory region the target exposes (read, write, atomics) for the SES "
                        "checks, only if it has one: uet recv, a sink, has none (default none: "
                        "those checks skip)")
    p.add_argument("--seed", type=cliargs.seed, default=None,
                   help="seed of the start PSNs, keys and payloads (default random)")
    cliargs.add_mtu_argument(p, where="the MTU of the interface the route to the target uses")
    cliargs.add_ses_header_argument(p)
    cliargs.add_encap_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per check")


def run(args: argparse.Namespace) -> int:
    prog = "uet conformance"
    checks = select(args.profile, args.level, args.check)
    if args.list:
        for c in checks:
            print(f"{c.name:<26} {c.facts:<5} {c.level:<6} {c.profile:<4} {c.title}")
        return 0
    try:
        if args.target is None:   # optional for --list alone: every run needs it
            raise cliargs.UsageError("the following arguments are required: HOST:PORT")
        if args.bind is not None:
            cliargs.check_same_family("--bind", args.bind, args.target[0], "the target")
        if not checks:
            raise cliargs.UsageError("no check matches --profile, --level and --check")
        mtu = cliargs.resolve_mtu(args.mtu, peer=args.target[0], native_ip=args.encap == "ip")
        junit = cliargs.open_output(args.junit, "wb") if args.junit else None
    except cliargs.UsageError as exc:
        return exc.report(prog)
    err = sys.stderr
    ctx = Context(args.target, timeout=args.timeout, local=args.bind, mkey=args.mkey,
                  seed=args.seed, settle=args.settle, mtu=mtu, ses_header=args.ses_header,
                  encap=args.encap, ip_proto=args.ip_proto)
    host, port = args.target
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    profiles = [p for p in PROFILES if any(c.profile == p for c in checks)]
    try:
        inbox = ctx.open()  # A.1: every answer comes to the suite's own address, the UET port
    except (LocalAddressError, RawDenied) as exc:  # OWNADDR-O2 of uet.ownaddr, RAWIP-R4 of uet.rawip
        print(f"{prog}: {exc}", file=err, flush=True)
        if junit is not None:
            junit.close()
        return 2
    except OSError as exc:
        print(f"{prog}: {exc.strerror or exc}", file=err, flush=True)
        if junit is not None:
            junit.close()
        return 1
    own = f"[{inbox.local}]:{port}" if ":" in inbox.local else f"{inbox.local}:{port}"
    print(f"{text_header(target, profiles, args.timeout)}, --mtu {mtu}, --ses-header "
          f"{args.ses_header}, answers at {own}", file=err, flush=True)

    def progress(r: Result) -> None:
        print(progress_line(r), file=err, flush=True)

    try:
        result = run_checks(checks, ctx, progress)
    except OSError as exc:   # no socket could be opened at all (a bad --bind)
        print(f"{prog}: {exc.strerror or exc}", file=err, flush=True)
        if junit is not None:
            junit.close()
        return 1
    except DatagramTooBig as exc:   # A.1: --mtu does not fit the route
        print(f"{prog}: {exc}", file=err, flush=True)
        if junit is not None:
            junit.close()
        return 2
    print(text_summary(result), file=err, flush=True)
    if junit is not None:
        with junit:
            write_junit(result, junit)
    if args.json:
        write_json(result, sys.stdout)
    return 0 if result.ok else 1


def register(subparsers: Any) -> None:
    """Add ``conformance`` to the ``uet`` command's subparsers."""
    cliargs.add_command(subparsers, "conformance", help="test another UET implementation with "
                        "crafted packets, one check per facts rule", description=__doc__,
                        add_arguments=add_arguments, run=run)


def main(argv: Sequence[str] | None = None) -> int:
    """``uet conformance ...`` without the rest of the CLI (for tests)."""
    return cliargs.run_registered(register, argv)
