"""``uet sim``: one transfer through the simulated fabric in virtual time (design.md "Contracts").

With ``--json`` stdout holds exactly one JSON object on one line; progress, the trace and the
replay line go to stderr. A run that is not ok prints the command line that replays it (with its
seed) on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from typing import Sequence

from .. import cliargs
from ..cliargs import fail_spec, fraction
from .workloads import MODE_OPS, MODES, OPS
from .simulator import SimConfig, Simulator


def add_arguments(p: argparse.ArgumentParser, *, ses: bool = False) -> None:
    """The transfer and impairment options; ``ses`` adds what only the simulator runs (``--op``,
    ``--mode rudi|uud``). Without it the options are the ones ``uet demo`` reuses (uet.demo.options),
    which carries plain RUD/ROD messages only."""
    p.add_argument("--bytes", type=cliargs.held_size, default=4 << 20,
                   help="bytes to transfer, at most 4GiB (default 4MiB; k/m/g suffixes)")
    p.add_argument("--messages", type=cliargs.messages, default=1,
                   help="split the bytes into this many messages (at most one per byte)")
    p.add_argument("--mtu", type=cliargs.mtu, default=4096,
                   help=f"payload bytes per packet, at most {cliargs.MAX_MTU} (default 4096)")
    p.add_argument("--paths", type=cliargs.paths, default=4, help="parallel paths (default 4)")
    p.add_argument("--rate", type=cliargs.rate, default=100.0, help="rate of each path in Gb/s (default 100)")
    p.add_argument("--rtt", type=cliargs.rtt, default=10.0, help="base round-trip time in microseconds (default 10)")
    p.add_argument("--loss", type=fraction, default=0.0, help="random loss per packet per path")
    p.add_argument("--trim", type=fraction, default=0.0, help="fraction of data packets trimmed")
    p.add_argument("--reorder", type=fraction, default=0.0, help="fraction of packets delayed by up to one RTT")
    p.add_argument("--dup", type=fraction, default=0.0, help="fraction of packets duplicated")
    p.add_argument("--corrupt", type=fraction, default=0.0, help="fraction of packets with a flipped bit")
    p.add_argument("--fail-path", type=fail_spec, action="append", default=[], metavar="I@T",
                   help="path I fails at T microseconds (repeatable)")
    if ses:
        p.add_argument("--mode", choices=MODES, default="rud",
                       help="rud, rod (PDCs); rudi (--op write|read), uud (datagrams: --op send)")
        p.add_argument("--op", choices=OPS, default="send",
                       help="send: plain PDS messages; tsend/write/read/atomic: SES operations "
                            "(--messages of them; atomic: that many fetching SUMs), checked by "
                            "hash or model")
    else:
        p.add_argument("--mode", choices=("rud", "rod"), default="rud")
    p.add_argument("--spray", choices=("rr", "random", "single"), default="rr",
                   help="entropy selection: round-robin, random, or one value (ECMP)")
    p.add_argument("--entropies", type=cliargs.entropies, default=64, help="entropy values to spray over (default 64)")
    p.add_argument("--window", type=cliargs.window, default=None, help="fixed congestion window in bytes (default 1.5 BDP)")
    p.add_argument("--seed", type=cliargs.seed, default=1, help="0 to 2^63-1 (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--pcap", metavar="FILE", help="write every frame of the run (virtual timestamps)")
    p.add_argument("--trace", action="store_true", help="a ladder of packet events on stderr")


def register(subparsers) -> None:
    p = subparsers.add_parser("sim", help="run a transfer through the simulated multipath fabric",
                              description=__doc__)
    add_arguments(p, ses=True)
    p.set_defaults(func=run_command)


def config_from_args(args: argparse.Namespace) -> SimConfig:
    return SimConfig(bytes=args.bytes, messages=args.messages, mtu=args.mtu, paths=args.paths,
                     rate_gbps=args.rate, rtt_us=args.rtt, loss=args.loss, trim=args.trim,
                     reorder=args.reorder, dup=args.dup, corrupt=args.corrupt, fail=list(args.fail_path),
                     mode=args.mode, op=getattr(args, "op", "send"), spray=args.spray, entropy_values=args.entropies,
                     window_bytes=args.window, seed=args.seed)


def replay_command(args: argparse.Namespace) -> str:
    words = ["uet", "sim", "--bytes", str(args.bytes), "--messages", str(args.messages), "--mtu",
             str(args.mtu), "--paths", str(args.paths), "--rate", repr(args.rate), "--rtt", repr(args.rtt)]
    for name in ("loss", "trim", "reorder", "dup", "corrupt"):
        v = getattr(args, name)
        if v:
            words += [f"--{name}", repr(v)]
    for i, t in args.fail_path:
        words += ["--fail-path", f"{i}@{t:g}"]
    words += ["--mode", args.mode]
    op = getattr(args, "op", "send")
    if op != "send":
        words += ["--op", op]
    words += ["--spray", args.spray, "--entropies", str(args.entropies)]
    if args.window:
        words += ["--window", str(args.window)]
    words += ["--seed", str(args.seed)]
    return shlex.join(words)


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    op = getattr(args, "op", "send")
    try:
        cliargs.check_transfer(args)
        if op not in MODE_OPS[args.mode]:
            raise cliargs.UsageError(f"argument --op: {op} does not run over --mode {args.mode} "
                                     f"(it takes {', '.join(MODE_OPS[args.mode])})")
        pcap = cliargs.open_output(args.pcap) if args.pcap is not None else None
    except cliargs.UsageError as exc:
        return exc.report("uet sim", err)
    cfg = config_from_args(args)
    try:
        summary = Simulator(cfg, trace=err if args.trace else None, pcap=pcap).run()
        if pcap is not None:
            pcap.close()  # here, not only in finally: a full disk shows up at the last flush
    except OSError as exc:  # only the pcap does I/O: the run itself is in memory
        print(f"uet sim: cannot write to {args.pcap}: {exc.strerror or exc}", file=err)
        return 1
    except MemoryError:
        print(f"uet sim: not enough memory for --bytes {args.bytes}", file=err)
        return 1
    finally:
        if pcap is not None:
            with contextlib.suppress(OSError):
                pcap.close()
    if args.json:
        sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    else:
        for k, v in summary.items():
            print(f"{k:>26}: {v}", file=err)
    if not summary["ok"]:
        print(f"uet sim: FAILED; replay with: {replay_command(args)}", file=err)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = cliargs.Parser(prog="uet sim", description=__doc__)
    add_arguments(p, ses=True)
    return cliargs.parse_and_run(p, argv, run_command)
