"""``uet compare SCENARIO [FILE]``: RoCEv2, adaptive routing and UET on the same fabric (issue 19).

The same topology, flows and seed run through three designs, real frames on every link:

  roce      RC queue pairs (go-back-N; RDMA WRITE, or SEND with ``--roce-op send``), ECMP by
            5-tuple, DCQCN on ECN, PFC (``--no-pfc``: lossy); ACKs and NAKs in the QP's class
            (``--roce-ack-class high``: in the CNPs' high class, never paused)
  adaptive  a generic adaptive-routing model: the shortest up queue per packet, out-of-order
            placement at the receiver, DCQCN on ECN, PFC as roce
  uet       uet sim's fabric: REPS packet spraying, trimming, selective recovery, NSCC

Scenarios: elephants, incast, degraded-link, pfc-victim, matrix FILE (an htsim connection
matrix). A table of the figures per design goes to stdout (stderr with ``--json``, which prints
exactly one JSON object with a ``designs`` map keyed by design). ``--plot FILE.png|.svg`` draws
the FCT distribution, throughput over time and the busiest queue over time (needs matplotlib:
``pip install matplotlib``). ``--pcap FILE`` writes one capture per design, FILE with the
design's name before its suffix (``run.pcap`` -> ``run.roce.pcap`` ...), which ``uet decode``
reads. A design that does not finish is a row that says so (exit 0); a bad command line is one
line and exit 2. Every run is bounded in simulated time (``--time-limit``) and seeded; a run that
did not finish prints the command that replays it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shlex
import sys
from typing import Any, Sequence

from .. import cliargs
from ..net.topology import TopologyError
from ..sim.traffic import TrafficError
from . import scenarios
from ..roce.qp import OPCODES
from .rocefabric import ACK_CLASSES
from .run import DESIGNS, Options, compare, notes, table

PLOT_FORMATS = (".png", ".svg")
IB_MTUS = (256, 512, 1024, 2048, 4096)  # the InfiniBand path MTUs RoCE uses


def _designs(s: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in s.split(",") if x.strip())
    bad = [n for n in names if n not in DESIGNS]
    if not names or bad or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{s}: a comma-separated list of distinct designs from "
                                         f"{','.join(DESIGNS)}")
    return names


def _topology(s: str) -> str:
    from ..net.topology import parse_topology

    try:
        kind, _ = parse_topology(s.strip())
    except TopologyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if kind == "paths":
        raise argparse.ArgumentTypeError(f"{s}: uet compare runs on leafspine:H,T,S or fattree:K")
    return s.strip()


def _time_ms(s: str) -> float:
    v = cliargs.real(0.0, 1e4, "a positive time in milliseconds up to 10000, e.g. 50",
                     open_lo=True)(s)
    return v


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("compare", help="RoCEv2, adaptive routing and UET on one fabric",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run_command)


def main(argv: Sequence[str] | None = None) -> int:
    """``uet compare`` in-process (the tests): the exit status, never SystemExit."""
    return cliargs.run_alone("uet compare", add_arguments, run_command, argv,
                             description=__doc__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", metavar="SCENARIO", help=", ".join(scenarios.SCENARIOS))
    p.add_argument("file", nargs="?", metavar="FILE", help="matrix: the connection-matrix file")
    p.add_argument("--seed", type=cliargs.seed, default=1, help="0 to 2^63-1 (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--plot", metavar="FILE", help="draw the run to FILE.png or FILE.svg")
    p.add_argument("--pcap", metavar="FILE", help="write each design's frames to FILE.<design>")
    p.add_argument("--designs", type=_designs, default=DESIGNS,
                   help="which designs, e.g. roce,uet (default roce,adaptive,uet)")
    p.add_argument("--pfc", action=argparse.BooleanOptionalAction, default=True,
                   help="PFC under the RoCE designs (default on; --no-pfc: lossy, go-back-N)")
    p.add_argument("--topology", type=_topology, default=None, metavar="SPEC",
                   help="leafspine:H,T,S or fattree:K (default: the scenario's)")
    p.add_argument("--bytes", type=cliargs.byte_count(1, cliargs.MAX_HELD_BYTES,
                                                      "a byte count from 1 to 4GiB, e.g. 4m"),
                   default=None, help="bytes per flow (default: the scenario's)")
    p.add_argument("--rate", type=cliargs.rate, default=100.0, help="link rate in Gb/s (default 100)")
    p.add_argument("--link-delay", type=cliargs.delay_us, default=1.0,
                   help="one-way delay per link in microseconds (default 1)")
    p.add_argument("--mtu", type=int, choices=IB_MTUS, default=4096,
                   help="payload bytes per packet, an IB MTU (default 4096)")
    p.add_argument("--roce-op", choices=OPCODES, default="write",
                   help="the RoCE designs' operation: RDMA WRITE or SEND (default write)")
    p.add_argument("--roce-ack-class", choices=ACK_CLASSES, default="same",
                   help="RoCE ACKs and NAKs in the QP's lossless class, where PFC can pause them "
                        "(same, the default), or in the CNPs' high class (high)")
    p.add_argument("--time-limit", type=_time_ms, default=50.0, metavar="MS",
                   help="simulated-time bound per design in milliseconds (default 50)")


def replay_command(args: argparse.Namespace) -> str:
    words = ["uet", "compare", args.scenario] + ([args.file] if args.file else [])
    words += ["--seed", str(args.seed), "--designs", ",".join(args.designs)]
    if not args.pfc:
        words.append("--no-pfc")
    if args.topology:
        words += ["--topology", args.topology]
    if args.bytes:
        words += ["--bytes", str(args.bytes)]
    if args.rate != 100.0:
        words += ["--rate", repr(args.rate)]
    if args.link_delay != 1.0:
        words += ["--link-delay", repr(args.link_delay)]
    if args.mtu != 4096:
        words += ["--mtu", str(args.mtu)]
    if args.time_limit != 50.0:
        words += ["--time-limit", repr(args.time_limit)]
    if args.roce_op != "write":
        words += ["--roce-op", args.roce_op]
    if args.roce_ack_class != "same":
        words += ["--roce-ack-class", args.roce_ack_class]
    return shlex.join(words)


def _pcap_name(path: str, design: str) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}.{design}{ext or '.pcap'}"


def _check(args: argparse.Namespace) -> scenarios.Scenario:
    if args.scenario not in scenarios.SCENARIOS:
        raise cliargs.UsageError(f"unknown scenario {args.scenario!r}; expected one of "
                                 f"{', '.join(scenarios.SCENARIOS)}")
    if args.plot is not None:
        if os.path.splitext(args.plot)[1].lower() not in PLOT_FORMATS:
            raise cliargs.UsageError(f"argument --plot: {args.plot}: a .png or .svg file")
        if importlib.util.find_spec("matplotlib") is None:
            from ..clihelp import MATPLOTLIB_HINT

            raise cliargs.UsageError(f"argument --plot: needs matplotlib ({MATPLOTLIB_HINT})",
                                     hint=False)
    try:
        sc = scenarios.make(args.scenario, topology=args.topology, flow_bytes=args.bytes,
                            seed=args.seed, matrix=args.file)
    except (scenarios.ScenarioError, TopologyError, TrafficError) as exc:
        raise cliargs.UsageError(f"{args.scenario}: {exc}", hint=False) from None
    held = sum(f.bytes for f in sc.flows)
    if held > cliargs.MAX_HELD_BYTES:
        raise cliargs.UsageError(f"the flows carry {held} bytes; a run holds them in memory, at "
                                 "most 4GiB", hint=False)
    return sc


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    pcaps: dict[str, Any] = {}
    try:
        sc = _check(args)
        if args.pcap is not None:
            for d in args.designs:
                pcaps[d] = cliargs.open_output(_pcap_name(args.pcap, d))
        if args.plot is not None:
            cliargs.open_output(args.plot).close()  # a wrong directory costs nothing yet
    except cliargs.UsageError as exc:
        for fh in pcaps.values():
            fh.close()
        return exc.report("uet compare", err)
    opts = Options(designs=args.designs, seed=args.seed, pfc=args.pfc, rate_gbps=args.rate,
                   link_delay_us=args.link_delay, mtu=args.mtu,
                   time_limit_s=args.time_limit / 1e3, roce_op=args.roce_op,
                   ack_class=args.roce_ack_class)
    try:
        rows, raws = compare(sc, opts, pcap_for=pcaps.get,
                             progress=lambda s: print(f"uet compare: {sc.name}: {s}", file=err))
        for fh in pcaps.values():
            fh.close()
    except OSError as exc:
        print(f"uet compare: cannot write to {args.pcap}: {exc.strerror or exc}", file=err)
        return 1
    finally:
        for fh in pcaps.values():
            with contextlib.suppress(OSError):
                fh.close()
    replay = replay_command(args)
    head = (f"{sc.name}: {sc.topology}, {len(sc.flows)} flows, "
            f"{sum(f.bytes for f in sc.flows)} bytes, seed {args.seed}, "
            f"PFC {'on' if args.pfc else 'off'} under roce/adaptive")
    text = head + "\n" + table(rows)
    extra = notes(sc, rows)
    if extra:
        text += "\n" + extra
    if args.plot is not None:
        from .plot import plot

        plot(args.plot, sc, raws, rows, title=head)
    if args.json:
        obj = {"scenario": sc.name, "topology": sc.topology, "hosts": sc.hosts,
               "flows": [{"src": f.src, "dst": f.dst, "bytes": f.bytes, "start_s": f.start_s}
                         for f in sc.flows],
               "degrade": [list(d) for d in sc.degrade], "victim": sc.victim,
               "seed": args.seed, "pfc": args.pfc, "roce_op": args.roce_op,
               "roce_ack_class": args.roce_ack_class, "designs": rows, "replay": replay}
        print(text, file=err)
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    else:
        print(text)
    if any(r["status"] != "ok" for r in rows.values()):
        print(f"uet compare: a design did not finish; replay with: {replay}", file=err)
    return 0
