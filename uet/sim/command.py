"""``uet sim``: one transfer through the simulated fabric in virtual time (docs/design-notes.md "Contracts").

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

from .. import cliargs, cliopts
from ..multipath.reps import REPS_RECYCLE, REPS_RECYCLE_CHOICES
from ..net.ecn import ECN_POINT, ECN_POINTS, TRIM_VICTIM, TRIM_VICTIMS
from ..net.topology import LinkError, TopologyError, parse_topology
from ..words import plain
from .cfabric import ENGINES, EngineError
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
                 "trim_victim": TRIM_VICTIM, "fabric_engine": None}


@cliargs.unparsed_by(lambda v: f"{v[0]}:{','.join(map(str, v[1]))}")
def topology_spec(s: str) -> tuple[str, tuple[int, ...]]:
    try:
        return parse_topology(s.strip())
    except TopologyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _unparse_traffic(v: tuple[str, Any]) -> str:
    kind, arg = v
    if kind == "incast":
        return f"incast:{arg}"
    if kind == "matrix":  # a file named as a pattern is ./NAME (parse_traffic takes patterns first)
        named = arg in ("permutation", "all-to-all") or arg.split(":")[0] == "incast"
        return f"./{arg}" if named else arg
    return kind


@cliargs.unparsed_by(_unparse_traffic)
def traffic_spec(s: str) -> tuple[str, Any]:
    """``--traffic``: :func:`uet.sim.traffic.parse_traffic`."""
    return parse_traffic(s)


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


@cliargs.unparsed_by(lambda v: f"{v[0]}-{v[1]}:{cliargs.number_word(v[2])}")
def degrade_spec(s: str) -> tuple[str, str, float]:
    return _link(s, ":", "expected LINK:FRACTION, a link by its two ends and the fraction of its "
                 "rate left, e.g. a0-c0:0.25", float, lambda f: 0.0 < f <= 1.0)


@cliargs.unparsed_by(lambda v: f"{v[0]}-{v[1]}@{cliargs.number_word(v[2])}")
def fail_link_spec(s: str) -> tuple[str, str, float]:
    return _link(s, "@", "expected LINK@TIME, a link by its two ends and when it fails, e.g. "
                 "e0-a1@100 (µs) or e0-a1@1ms", cliargs.micros,
                 lambda t: 0.0 <= t <= cliargs.MAX_US)


@cliargs.unparsed_by(lambda v: ",".join(map(cliargs.number_word, v)))
def ecn_ramp(s: str) -> tuple[float, float]:
    what = "expected LO,HI, the queue fractions where ECN marking starts and where it marks all, e.g. 0.2,0.8"
    try:
        lo, hi = (float(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s}: {what}") from None
    if not 0.0 <= lo < hi <= 1.0:
        raise argparse.ArgumentTypeError(f"{s}: {what}")
    return lo, hi


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``uet sim``'s options: the transfer, path-model and congestion options it shares with
    ``uet demo`` and the live commands (uet.cliopts), the topology, TSS and the outputs."""
    topo = add_topology_arguments(p)
    cliopts.add_transfer_options(p, data=4 << 20, ops=OPS,
                                 ses_modes=tuple(m for m in MODES if m not in ("rud", "rod")))
    cliopts.add_path_model_options(p, paths=None)
    cliopts.add_cc_options(p, cc=None, cc_says="; default fixed on paths:N, nscc on switches",
                           spray=None, spray_says="rr on paths:N, reps on switches",
                           entropies="values",
                           csig_what="with leafspine/fattree only: switches stamp the tag, the "
                                     "receiver reflects it in ACK_CCX (the project's extension), "
                                     "the sender's paths and NSCC use it")
    add_fabric_arguments(topo)
    add_tss_arguments(p, own_key=True)
    cliopts.add_seed_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--pcap", metavar="FILE", help="write every frame of the run (virtual timestamps)")
    p.add_argument("--trace", action="store_true", help="a ladder of packet events on stderr")
    cliopts.add_progress_argument(p)  # uet.sim.progress: a line a second once a run takes that


def add_topology_arguments(p: argparse.ArgumentParser) -> Any:
    """``--topology`` and ``--traffic``, first (a replay line starts with them); returns their
    group, which :func:`add_fabric_arguments` completes."""
    g = p.add_argument_group("topology (--traffic and what follows: leafspine and fattree only)")
    g.add_argument("--topology", type=topology_spec, default=None, metavar="SPEC",
                   help="paths:N (two hosts, N paths: the default, as --paths), "
                        "leafspine:HOSTS_PER_TOR,TORS,SPINES or fattree:K")
    g.add_argument("--traffic", type=traffic_spec, default=None, metavar="PATTERN",
                   help="with leafspine/fattree: incast:N (hosts 1..N to host 0), permutation "
                        "(default), all-to-all, or an htsim connection-matrix file; --bytes per flow")
    return g


def add_fabric_arguments(g: Any) -> None:
    """The many-host options (uet.sim.fabric), on the topology group."""
    g.add_argument("--ack-every-packet", action="store_true",
                   help="an ACK for every packet (C.9 ENB_ACK_PER_PKT) instead of every 16KiB")
    g.add_argument("--reps-recycle", choices=REPS_RECYCLE_CHOICES, default=REPS_RECYCLE,
                   help="which entropy values an ACK without CE gives back to REPS: acked, those "
                        "of every packet it acknowledges (default, E.6), or echoed, only the one "
                        "it echoes (htsim's: a 16KiB ACK returns about one in four)")
    g.add_argument("--link-delay", type=cliargs.delay_us, default=None,
                   help="one-way delay of every switched link in microseconds (default 1)")
    g.add_argument("--buffer", type=cliargs.positive_size, default=None,
                   help="bytes of data queue per switch port (default one BDP of the longest path)")
    g.add_argument("--ecn-ramp", type=ecn_ramp, default=None, metavar="LO,HI",
                   help="ECN marking from LO to HI of the buffer (default 0.2,0.8, E.6)")
    g.add_argument("--ecn-point", choices=ECN_POINTS, default=ECN_POINT,
                   help="where a switch port reads its queue to mark CE (default dequeue, E.6; "
                        "uet.net.ecn NET-N2)")
    g.add_argument("--trim-victim", choices=TRIM_VICTIMS, default=TRIM_VICTIM,
                   help="which packet a full switch queue trims: either the arriving or the last "
                        "queued one, equal chance (default, E.6), or always the arriving one")
    g.add_argument("--no-trim", action="store_true",
                   help="switches drop instead of trimming when a queue is full")
    g.add_argument("--trim-bytes", type=cliargs.integer(1, 9000, "bytes of UDP payload a trim "
                                                           "keeps, from 1 to 9000, e.g. 256"),
                   default=256, help="UDP payload bytes a trimmed packet keeps (default 256)")
    g.add_argument("--degrade-link", type=degrade_spec, action="append", default=[],
                   metavar="A-B:F", help="the link between A and B runs at fraction F of its rate (repeatable)")
    g.add_argument("--fail-link", type=fail_link_spec, action="append", default=[],
                   metavar="A-B@T", help="the link between A and B fails at T microseconds (repeatable)")
    g.add_argument("--fabric-engine", choices=ENGINES, default=None,
                   help="which engine runs the switches and links: c (the default when the C "
                        "extension is built) or python (the reference model, uet.net); both give "
                        "the same run (uet.sim.cfabric SIM-E1)")


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
    add_arguments(p)
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
                     pds=_pds_overrides(args))


def _pds_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The two-host run's PdsConfig overrides: --ack-every-packet and --reps-recycle."""
    pds: dict[str, Any] = {"ack_per_packet": True} if getattr(args, "ack_every_packet", False) else {}
    recycle = getattr(args, "reps_recycle", REPS_RECYCLE)
    if recycle != REPS_RECYCLE:
        pds["reps_recycle"] = recycle
    return pds


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
        ack_per_packet=args.ack_every_packet, reps_recycle=args.reps_recycle, degrade=list(args.degrade_link), csig=args.csig,
        ecn_point=args.ecn_point, trim_victim=args.trim_victim,
        fail=list(args.fail_link), seed=args.seed, ses_header=args.ses_header,
        fabric_engine=getattr(args, "fabric_engine", None))


#: what a replay line leaves out: the outputs, which do not change the run
REPLAY_LEAVES_OUT = ("json", "pcap", "trace", "progress")


def replay_command(args: argparse.Namespace) -> str:
    """The ``uet sim`` command line that repeats this run: the options that differ from their
    defaults, from the parser itself (uet.cliargs.replay_words)."""
    p = cliargs.Parser(prog="uet sim")
    add_arguments(p)
    return shlex.join(["uet", "sim", *cliargs.replay_words(p, args, leave_out=REPLAY_LEAVES_OUT)])


def check_rtt(args: argparse.Namespace) -> None:
    """CLIOPTS-C1 of uet.cliopts: ``--rtt`` parses as 0 or more (the live fabric takes 0), the simulator
    needs a positive one (its NSCC and RCCC are built for a base RTT, its window is 1.5 BDP)."""
    if not args.rtt > 0:
        raise cliargs.UsageError(f"argument --rtt: {args.rtt:g}: the simulator needs a positive "
                                 "round-trip time in microseconds, e.g. 10")


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    op = getattr(args, "op", "send")
    try:
        check_topology(args)
        check_rtt(args)
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
        sim.progress = progress_hook(args, err)
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
            # in words (yes/no, none, K V): --json keeps the values as they are, every digit
            v = f"{len(v)} (each in --json)" if k == "flows" else plain(v)
            print(f"{k:>26}: {v}", file=err)
    if not summary["ok"]:
        print(f"uet sim: FAILED; replay with: {replay_command(args)}", file=err)
        return 1
    return 0


def progress_hook(args: argparse.Namespace, err: Any) -> Any:
    """The simulators' progress hook (uet.sim.progress) on ``err``: with ``--progress``, or when
    ``err`` is a terminal and not ``--no-progress`` (``--json`` or not: stdout keeps the JSON
    alone); None when off."""
    from .progress import Progress

    wanted = getattr(args, "progress", None)
    if wanted is None:
        wanted = hasattr(err, "isatty") and err.isatty()
    return Progress(err, forced=bool(getattr(args, "progress", None))) if wanted else None


def _fabric_simulator(args: argparse.Namespace) -> Any:
    """The many-host simulator, built here so that a traffic or link that does not fit the
    topology is a bad command line (exit 2), not a failed run."""
    from .fabric import FabricSimulator

    try:
        return FabricSimulator(fabric_config_from_args(args))
    except EngineError as exc:
        raise cliargs.UsageError(f"argument --fabric-engine: {exc}", hint=False) from None
    except (TrafficError, TopologyError) as exc:
        option = ("--traffic" if isinstance(exc, TrafficError) else
                  exc.option if isinstance(exc, LinkError) else "--topology")
        raise cliargs.UsageError(f"argument {option}: {exc}", hint=False) from None


def main(argv: Sequence[str] | None = None) -> int:
    return cliargs.run_alone("uet sim", add_arguments, run_command, argv,
                             description=__doc__, raw=False)
