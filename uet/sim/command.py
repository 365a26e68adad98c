"""``uet sim``: one transfer through the simulated fabric in virtual time (design.md "Contracts").

``--topology paths:N`` (the default, ``--paths``) joins two hosts by N parallel paths and runs one
transfer over them (:mod:`uet.sim.simulator`). ``--topology leafspine:H,T,S`` or ``fattree:K``
runs ``--traffic`` (flows of ``--bytes`` each) between many hosts through switches, with NSCC and
REPS by default (:mod:`uet.sim.fabric`); the JSON then carries the flow metrics (``flows``,
``last_fct_s``, ``ideal_fct_s``, ``last_over_ideal``, ``max_over_avg_fct``, ``jain_fct`` ...).
Switches are named ``t``/``s`` (ToR, spine) or ``e``/``a``/``c`` (edge, aggregation, core) with
their number, hosts ``h0`` ...; ``--degrade-link a0-c0:0.25`` and ``--fail-link e0-a1@100`` name
links by their two ends.

With ``--json`` stdout holds exactly one JSON object on one line; progress, the trace and the
replay line go to stderr. A run that is not ok prints the command line that replays it (with its
seed) on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shlex
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .. import cliargs
from ..cliargs import fail_spec, fraction
from ..cms.choice import CC_NAMES
from ..cms.csig import TYPE_BY_NAME
from ..multipath import SELECTOR_KINDS
from ..net.ecn import ECN_POINT, ECN_POINTS, TRIM_VICTIM, TRIM_VICTIMS
from ..net.topology import LinkError, TopologyError, parse_topology
from .traffic import TrafficError, parse_traffic
from .workloads import MODE_OPS, MODES, OPS
from .simulator import SimConfig, Simulator
from ..tss.options import add_tss_arguments, own_security, tss_wanted

if TYPE_CHECKING:
    from .fabric import FabricSimConfig

#: the defaults of each kind of topology (issue 13: a bare command is the standard experiment)
PATHS_DEFAULTS = {"cc": "fixed", "spray": "rr"}
SWITCHED_DEFAULTS = {"cc": "nscc", "spray": "reps"}
#: options that only the two-host paths:N fabric models, with their defaults
PATHS_ONLY = {"paths": None, "rtt": 10.0, "loss": 0.0, "trim": 0.0, "reorder": 0.0, "dup": 0.0,
              "corrupt": 0.0, "fail_path": [], "messages": 1, "op": "send"}
DEFAULT_PATHS = 4
SWITCHED_ONLY = {"traffic": None, "link_delay": None, "buffer": None, "ecn_ramp": None,
                 "degrade_link": [], "fail_link": [], "csig": None, "ecn_point": ECN_POINT,
                 "trim_victim": TRIM_VICTIM}


def topology_spec(s: str) -> tuple[str, tuple[int, ...]]:
    try:
        return parse_topology(s.strip())
    except TopologyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _link(s: str, sep: str, what: str, convert: Callable[[str], float],
          ok: Callable[[float], bool]) -> tuple[str, str, float]:
    """``A-B<sep>VALUE``: a link by its two ends (a letter and a number each) and a value."""
    ends, _, value = s.partition(sep)
    a, _, b = ends.partition("-")
    try:
        v = convert(value)
    except ValueError:
        v = math.nan
    if (not (a and b) or not all(x[0].isalpha() and x[1:].isdigit() for x in (a, b))
            or not ok(v)):
        raise argparse.ArgumentTypeError(f"{s}: {what}")
    return a, b, v


def degrade_spec(s: str) -> tuple[str, str, float]:
    return _link(s, ":", "expected LINK:FRACTION, a link by its two ends and the fraction of its "
                 "rate left, e.g. a0-c0:0.25", float, lambda f: 0.0 < f <= 1.0)


def fail_link_spec(s: str) -> tuple[str, str, float]:
    return _link(s, "@", "expected LINK@TIME, a link by its two ends and when it fails, e.g. "
                 "e0-a1@100 (µs) or e0-a1@1ms", cliargs.micros,
                 lambda t: 0.0 <= t <= cliargs.MAX_US)


def ecn_ramp(s: str) -> tuple[float, float]:
    what = "expected LO,HI, the queue fractions where ECN marking starts and where it marks all, e.g. 0.2,0.8"
    try:
        lo, hi = (float(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s}: {what}") from None
    if not 0.0 <= lo < hi <= 1.0:
        raise argparse.ArgumentTypeError(f"{s}: {what}")
    return lo, hi


def add_arguments(p: argparse.ArgumentParser, *, ses: bool = False) -> None:
    """The transfer and impairment options; ``ses`` adds what only the simulator runs (``--op``,
    ``--mode rudi|uud``). Without it the options are the ones ``uet demo`` reuses (uet.demo.options),
    which carries plain RUD/ROD messages only."""
    p.add_argument("--bytes", type=cliargs.held_size, default=4 << 20,
                   help="bytes to transfer, at most 4GiB (default 4MiB; k/m/g suffixes)")
    p.add_argument("--messages", type=cliargs.messages, default=1,
                   help="split the bytes into this many messages (at most one per byte)")
    p.add_argument("--mtu", type=cliargs.mtu, default=4096,
                   help=f"payload bytes per packet, at most {cliargs.MAX_MTU} (default 4096: a "
                        "simulation has no interface to ask; the reference provider's sizes are "
                        "1024, 2048, 4096 and 8192)")
    p.add_argument("--paths", type=cliargs.paths, default=None if ses else DEFAULT_PATHS,
                   help="parallel paths (default 4)")
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
    kinds = SELECTOR_KINDS if ses else ("rr", "random", "single")
    p.add_argument("--spray", choices=kinds, default=None if ses else "rr",
                   help="entropy selection: round-robin, random, one value (ECMP)"
                        + (", REPS (E.5) or oblivious (every EV once per round); default rr "
                           "on paths:N, reps on switches" if ses else "; default rr"))
    p.add_argument("--entropies", type=cliargs.entropies, default=64, help="entropy values to spray over (default 64)")
    p.add_argument("--window", type=cliargs.window, default=None, help="fixed congestion window in bytes (default 1.5 BDP)")
    if ses:
        add_fabric_arguments(p)
    cliargs.add_ses_header_argument(p)
    add_tss_arguments(p, own_key=True)
    p.add_argument("--seed", type=cliargs.seed, default=1, help="0 to 2^63-1 (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--pcap", metavar="FILE", help="write every frame of the run (virtual timestamps)")
    p.add_argument("--trace", action="store_true", help="a ladder of packet events on stderr")


def add_fabric_arguments(p: argparse.ArgumentParser) -> None:
    """The many-host options (uet.sim.fabric) and the congestion control."""
    p.add_argument("--topology", type=topology_spec, default=None, metavar="SPEC",
                   help="paths:N (two hosts, N paths: the default, as --paths), "
                        "leafspine:HOSTS_PER_TOR,TORS,SPINES or fattree:K")
    p.add_argument("--traffic", type=parse_traffic, default=None, metavar="PATTERN",
                   help="with leafspine/fattree: incast:N (hosts 1..N to host 0), permutation "
                        "(default), all-to-all, or an htsim connection-matrix file; --bytes per flow")
    p.add_argument("--cc", choices=CC_NAMES, default=None,
                   help="congestion control: NSCC (E.1), RCCC (E.2: receiver credit) or the "
                        "fixed --window; default fixed on paths:N, nscc on switches")
    p.add_argument("--csig", choices=sorted(TYPE_BY_NAME), default=None, metavar="TYPE",
                   help="with leafspine/fattree: CSIG-style signalling (E.4: switches stamp a tag "
                        "of this type, abw, abw/c, delay or nqd; the receiver reflects it in "
                        "ACK_CCX, the project's extension); the sender's paths and NSCC use it")
    p.add_argument("--ack-every-packet", action="store_true",
                   help="an ACK for every packet (C.9 ENB_ACK_PER_PKT) instead of every 16KiB")
    p.add_argument("--link-delay", type=cliargs.delay_us, default=None,
                   help="one-way delay of every switched link in microseconds (default 1)")
    p.add_argument("--buffer", type=cliargs.positive_size, default=None,
                   help="bytes of data queue per switch port (default one BDP of the longest path)")
    p.add_argument("--ecn-ramp", type=ecn_ramp, default=None, metavar="LO,HI",
                   help="ECN marking from LO to HI of the buffer (default 0.2,0.8, E.6)")
    p.add_argument("--ecn-point", choices=ECN_POINTS, default=ECN_POINT,
                   help="where a switch port reads its queue to mark CE (default dequeue, E.6; "
                        "uet.net.ecn N2)")
    p.add_argument("--trim-victim", choices=TRIM_VICTIMS, default=TRIM_VICTIM,
                   help="which packet a full switch queue trims: either the arriving or the last "
                        "queued one, equal chance (default, E.6), or always the arriving one")
    p.add_argument("--no-trim", action="store_true",
                   help="switches drop instead of trimming when a queue is full")
    p.add_argument("--trim-bytes", type=cliargs.integer(1, 9000, "bytes of UDP payload a trim "
                                                           "keeps, from 1 to 9000, e.g. 256"),
                   default=256, help="UDP payload bytes a trimmed packet keeps (default 256)")
    p.add_argument("--degrade-link", type=degrade_spec, action="append", default=[],
                   metavar="A-B:F", help="the link between A and B runs at fraction F of its rate (repeatable)")
    p.add_argument("--fail-link", type=fail_link_spec, action="append", default=[],
                   metavar="A-B@T", help="the link between A and B fails at T microseconds (repeatable)")


def switched(args: argparse.Namespace) -> bool:
    topo = getattr(args, "topology", None)
    return topo is not None and topo[0] != "paths"


def check_topology(args: argparse.Namespace) -> None:
    """Options of one kind of topology are refused with the other (no ``--topology`` is
    paths:N); ``--topology paths:N`` and ``--paths`` must agree. Sets ``args.paths``."""
    topo = getattr(args, "topology", None)
    if topo is None or topo[0] == "paths":
        n = topo[1][0] if topo is not None else None
        if n is not None and args.paths is not None and args.paths != n:
            raise cliargs.UsageError(f"argument --paths: {args.paths} contradicts --topology "
                                     f"paths:{n}")
        args.paths = n or args.paths or DEFAULT_PATHS
        given, kind = SWITCHED_ONLY, "leafspine or fattree"
        if getattr(args, "no_trim", False):
            raise cliargs.UsageError("argument --no-trim: applies to --topology leafspine or "
                                     "fattree only (paths:N trims only as --trim says)")
    else:
        given, kind = PATHS_ONLY, "paths:N"
    for name, default in given.items():
        if getattr(args, name, default) not in (default, False):
            flag = "--" + name.replace("_", "-")
            raise cliargs.UsageError(f"argument {flag}: applies to --topology {kind} only")


def register(subparsers) -> None:
    p = subparsers.add_parser("sim", help="run a transfer through the simulated multipath fabric",
                              description=__doc__)
    add_arguments(p, ses=True)
    p.set_defaults(func=run_command)


def config_from_args(args: argparse.Namespace, security: Any = None) -> SimConfig:
    return SimConfig(security=security, bytes=args.bytes, messages=args.messages, mtu=args.mtu, paths=args.paths,
                     rate_gbps=args.rate, rtt_us=args.rtt, loss=args.loss, trim=args.trim,
                     reorder=args.reorder, dup=args.dup, corrupt=args.corrupt, fail=list(args.fail_path),
                     mode=args.mode, op=getattr(args, "op", "send"),
                     spray=args.spray or PATHS_DEFAULTS["spray"], entropy_values=args.entropies,
                     window_bytes=args.window, seed=args.seed,
                     cc=getattr(args, "cc", None) or PATHS_DEFAULTS["cc"],
                     trim_bytes=getattr(args, "trim_bytes", 256), ses_header=args.ses_header,
                     pds={"ack_per_packet": True} if getattr(args, "ack_every_packet", False) else {})


def fabric_config_from_args(args: argparse.Namespace) -> "FabricSimConfig":
    from .fabric import FabricSimConfig

    kind, nums = args.topology
    lo, hi = args.ecn_ramp or (0.2, 0.8)
    return FabricSimConfig(
        topology=f"{kind}:{','.join(map(str, nums))}",
        traffic=args.traffic or ("permutation", None), flow_bytes=args.bytes, mtu=args.mtu,
        mode=args.mode, rate_gbps=args.rate,
        link_delay_us=1.0 if args.link_delay is None else args.link_delay,
        buffer_bytes=args.buffer, ecn_lo=lo, ecn_hi=hi, trimming=not args.no_trim,
        trim_bytes=args.trim_bytes, cc=args.cc or SWITCHED_DEFAULTS["cc"],
        spray=args.spray or SWITCHED_DEFAULTS["spray"], entropy_values=args.entropies,
        window_bytes=args.window,
        ack_per_packet=args.ack_every_packet, degrade=list(args.degrade_link), csig=args.csig,
        ecn_point=args.ecn_point, trim_victim=args.trim_victim,
        fail=list(args.fail_link), seed=args.seed, ses_header=args.ses_header)


def replay_command(args: argparse.Namespace) -> str:
    if switched(args):
        return _replay_switched(args)
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
    words += ["--spray", args.spray or PATHS_DEFAULTS["spray"], "--entropies", str(args.entropies)]
    if args.ses_header != "auto":
        words += ["--ses-header", args.ses_header]
    if getattr(args, "cc", None):
        words += ["--cc", args.cc]
    if getattr(args, "ack_every_packet", False):
        words.append("--ack-every-packet")
    if args.window:
        words += ["--window", str(args.window)]
    if tss_wanted(args):
        words += ["--tss", "--sdi", str(args.sdi), "--tss-mode", args.tss_mode, "--tss-aad",
                  args.tss_aad] + (["--sd-key", args.sd_key] if args.sd_key else [])
    words += ["--seed", str(args.seed)]
    return shlex.join(words)


def _replay_switched(args: argparse.Namespace) -> str:
    cfg = fabric_config_from_args(args)
    kind, arg = cfg.traffic
    words = ["uet", "sim", "--topology", cfg.topology, "--traffic",
             f"incast:{arg}" if kind == "incast" else (arg if kind == "matrix" else kind),
             "--bytes", str(args.bytes), "--mtu", str(args.mtu), "--mode", args.mode, "--rate",
             repr(args.rate), "--link-delay", repr(cfg.link_delay_us), "--cc", cfg.cc, "--spray",
             cfg.spray, "--entropies", str(args.entropies)]
    if args.window:
        words += ["--window", str(args.window)]
    if args.buffer:
        words += ["--buffer", str(args.buffer)]
    if args.ecn_ramp:
        words += ["--ecn-ramp", f"{cfg.ecn_lo!r},{cfg.ecn_hi!r}"]
    if args.ecn_point != ECN_POINT:
        words += ["--ecn-point", args.ecn_point]
    if args.trim_victim != TRIM_VICTIM:
        words += ["--trim-victim", args.trim_victim]
    if args.no_trim:
        words.append("--no-trim")
    if args.ses_header != "auto":
        words += ["--ses-header", args.ses_header]
    if args.trim_bytes != 256:
        words += ["--trim-bytes", str(args.trim_bytes)]
    if args.ack_every_packet:
        words.append("--ack-every-packet")
    if args.csig:
        words += ["--csig", args.csig]
    for a, b, f in args.degrade_link:
        words += ["--degrade-link", f"{a}-{b}:{f!r}"]
    for a, b, t in args.fail_link:
        words += ["--fail-link", f"{a}-{b}@{t:g}"]
    words += ["--seed", str(args.seed)]
    return shlex.join(words)


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    op = getattr(args, "op", "send")
    try:
        check_topology(args)
        cliargs.check_transfer(args)
        if switched(args) and args.mode not in ("rud", "rod"):
            raise cliargs.UsageError(f"argument --mode: {args.mode}: flows between many hosts "
                                     "are SENDs over rud or rod")
        if op not in MODE_OPS[args.mode]:
            raise cliargs.UsageError(f"argument --op: {op} does not run over --mode {args.mode} "
                                     f"(it takes {', '.join(MODE_OPS[args.mode])})")
        if switched(args):
            if tss_wanted(args):
                raise cliargs.UsageError("--tss runs on the two-host fabric (--paths), not on "
                                         "--topology")
            sim: Any = _fabric_simulator(args)
        security = own_security(args, seed=args.seed, capture=args.pcap)
        pcap = cliargs.open_output(args.pcap) if args.pcap is not None else None
    except cliargs.UsageError as exc:
        return exc.report("uet sim", err)
    try:
        if switched(args):
            if args.trace:
                print("uet sim: --trace draws the two-host fabric only; use --pcap", file=err)
            if pcap is not None:
                sim.attach_pcap(pcap)
        else:
            sim = Simulator(config_from_args(args, security), trace=err if args.trace else None,
                            pcap=pcap)
        summary = sim.run()
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
            if k == "flows":  # one line per flow is too many to read: --json has them
                v = f"{len(v)} (each in --json)"
            elif type(v) is float:  # readable; --json keeps every digit
                v = f"{v:.6g}"
            print(f"{k:>26}: {v}", file=err)
    if not summary["ok"]:
        print(f"uet sim: FAILED; replay with: {replay_command(args)}", file=err)
        return 1
    return 0


def _fabric_simulator(args: argparse.Namespace) -> Any:
    """The many-host simulator, built here so that a traffic or link that does not fit the
    topology is a bad command line (exit 2), not a failed run."""
    from .fabric import FabricSimulator

    try:
        return FabricSimulator(fabric_config_from_args(args))
    except (TrafficError, TopologyError) as exc:
        option = ("--traffic" if isinstance(exc, TrafficError) else
                  exc.option if isinstance(exc, LinkError) else "--topology")
        raise cliargs.UsageError(f"argument {option}: {exc}", hint=False) from None


def main(argv: Sequence[str] | None = None) -> int:
    return cliargs.run_alone("uet sim", lambda p: add_arguments(p, ses=True), run_command, argv,
                             description=__doc__, raw=False)
