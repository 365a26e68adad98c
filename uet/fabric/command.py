"""``uet fabric``: run the live loopback fabric (docs/design-notes.md "Test beds" 2) until interrupted.

Senders address the relay (``--listen ADDR``) as their UET destination; the relay forwards to the
receiver (``--to ADDR:PORT``) through ``--paths`` paths, each with the simulator's model (``uet
sim``'s options, same names and units): rate, one-way delay rtt/2, a FIFO queue with ECN marking,
trimming, loss, reordering, duplication, corruption and path failure. It stands between two
addresses as a router does (facts A.1, H.1 #19): every datagram keeps its UET destination port
(``--to``'s) and its entropy source port, which selects the path in both directions, and only the
addresses are rewritten (the CRC-32C trailer with them). Without ``--listen`` the relay takes the
first free loopback address (127.0.0.2, 127.0.0.3, ...) and prints it; the receiver's answers
come to ``--back ADDR`` (default: the listen address), at the UET port too. ``--preserve-entropy``
does nothing now (the relay always keeps the senders' source ports) and is kept for old command
lines.

``--fail-path I@T``: path I fails T microseconds after the fabric starts, as in ``uet sim``
(suffixes ``us``, ``ms`` and ``s`` are accepted: ``1@250ms``).

``--degrade-path I:F``: path I (both directions) runs at fraction F of ``--rate`` (repeatable).

``--topology leafspine:H,T,S`` or ``fattree:K`` (``uet sim --topology``'s spec; ``paths:N`` is
``--paths N``): the paths are the up-down routes between the topology's first and last host,
chosen by the EV as above; every link of the topology is a queue of its own (ECN, overflow trims),
shared by the routes that cross it, and path i's impairments, failure and degradation are those
of its link into its spine or core (uet.net.route NET-T1 to NET-T4); not with ``--csig``.

``--mtu N`` (facts A.1: DF, no IP fragments): the payload bytes per packet the paths carry; a
datagram longer than the largest one of N payload bytes (TSS and a CSIG tag counted) is dropped and
counted ``too_big``, as a switch drops a frame above its MTU. Default: the largest of 1024, 2048,
4096 and 8192 that fits the MTU of the interface the route to ``--to`` uses (8192 on loopback);
give the endpoints the same ``--mtu``.

``--encap ip`` (root or CAP_NET_RAW): UET directly in IP protocol ``--ip-proto`` behind the
entropy header (facts A.1), on raw sockets: the EV of the entropy header picks the path, the
addresses and the native trailer (A.3) are rewritten, the TOS kept, ``--pcap`` holds protocol-253
frames (uet.fabric.iprelay); not with ``--csig``.

``--csig TYPE`` (abw, abw/c, delay or nqd; off by default): CSIG-style signalling (facts E.4).
Each path and direction measures what a switch port would - utilisation over ``--csig-interval``
(default 1000 us) for ABW and ABW/C, the queueing delay, the queue depth over ``--queue`` - and
every datagram sent to an endpoint starts with a 4-byte tag (TPID 0x9900, then the 16 tag bits of
uet.cms.csig): requests stamped with their path's bucket and the path's index as locator,
answers neutral, datagrams the fabric trimmed with d set. It is the userspace stand-in for an L2
tag (uet.fabric.relay): the endpoints must strip it (``uet recv --csig TYPE``, ``uet send --csig
TYPE``); ``--pcap`` shows it as an L2 tag. The receiver reflects the tags to the sender with the
EVs it saw, the senders' own (the relay keeps them), so the sender's path choice and congestion
control can use them.

A per-path table goes to stderr every ``--interval`` seconds (rich if installed, else plain text).
With ``--json``, stdout holds exactly one JSON object on one line when the fabric stops (Ctrl-C,
SIGTERM or ``--duration``): the counters per path, the totals, the relay's own counts and the
configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from typing import IO, Any, Sequence, TextIO

import trio

from .. import cliargs, cliopts
from ..cliargs import hostport, size
from ..net.topology import TopologyError, parse_topology
from .paths import CSIG_INTERVAL_US, FabricConfig
from ..io.signals import STOP_SIGNALS, cancel_on_signal
from .relay import open_fabric


def topology_arg(s: str) -> str:
    """``--topology``: a spec uet.net.topology parses (as ``uet sim --topology``)."""
    try:
        parse_topology(s.strip())
    except TopologyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return s.strip()


def apply_topology(args: argparse.Namespace) -> None:
    """``--topology``: sets ``args.paths`` to its routes (uet.net.route NET-T1), so that the path
    options (--fail-path, --degrade-path) are checked against them."""
    spec = getattr(args, "topology", None)
    if spec is not None:
        args.paths = FabricConfig(topology=spec, csig=None).paths


def check_degrade(args: argparse.Namespace) -> None:
    """Every ``--degrade-path I:F`` names one of the ``--paths`` paths."""
    for i, f in getattr(args, "degrade_path", None) or ():
        if i >= args.paths:
            raise cliargs.UsageError(f"argument --degrade-path: {i}:{f:g}: there is no path {i} "
                                     f"(--paths {args.paths} numbers them 0 to {args.paths - 1})")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listen", type=lambda t: hostport(t, 0), default=None, metavar="ADDR",
                   help="front address senders send to, at the UET port (default: the first free "
                        "of 127.0.0.2, 127.0.0.3, ... when --to is on loopback); a port, if "
                        "given, must be --to's")
    p.add_argument("--to", type=cliargs.peer, required=True, metavar="ADDR:PORT",
                   help="the receiver's address and the UET port (default 4793)")
    cliopts.add_path_model_options(p, degrade=True)
    cliopts.add_seed_argument(p)
    p.add_argument("--topology", type=topology_arg, default=None, metavar="SPEC",
                   help="paths:N (as --paths N), or leafspine:HOSTS_PER_TOR,TORS,SPINES or "
                        "fattree:K as uet sim --topology: the relay's paths are the routes "
                        "between the first and the last host, every link a queue (uet.net.route; "
                        "default paths:N with --paths)")
    p.add_argument("--reorder-delay", type=cliargs.delay_us, default=None, metavar="US",
                   help="largest extra delay of a reordered or duplicated packet, microseconds "
                        "(default: one RTT, at least 2000 - the timer resolution is about 1 ms)")
    p.add_argument("--skew", type=cliargs.delay_us, default=0.0, metavar="US",
                   help="path i gets i*SKEW microseconds of extra one-way delay")
    p.add_argument("--queue", type=cliargs.positive_size, default=1 << 20, help="queue per path and direction, bytes (default 1MiB)")
    p.add_argument("--kmin", type=size, default=None, help="CE marking starts above this queue depth (default 64KiB)")
    p.add_argument("--kmax", type=size, default=None, help="every ECT packet is marked above this depth (default 512KiB)")
    p.add_argument("--no-overflow-trim", action="store_true",
                   help="drop rather than trim data packets that overflow the queue")
    p.add_argument("--ecmp", choices=("hash", "mod"), default="hash",
                   help="entropy -> path: salted hash (default) or entropy %% paths")
    p.add_argument("--preserve-entropy", action="store_true",
                   help="no effect (kept for old command lines): the relay always keeps the "
                        "senders' entropy source ports")
    p.add_argument("--back", type=cliargs.ip_address, metavar="ADDR", default=None,
                   help="the relay's address towards --to, where the receiver's answers come at "
                        "the UET port (default: the listen address)")
    p.add_argument("--mtu", type=cliargs.payload_mtu, default=None, metavar="N",
                   help="payload bytes per packet the paths carry, from 256 (the reference "
                        "provider's are 1024, 2048, 4096 and 8192); longer datagrams are dropped "
                        "and counted too_big (default: what fits the MTU of the route to --to, "
                        "8192 on loopback)")
    cliargs.add_encap_arguments(p)  # ip: uet.fabric.iprelay
    cliopts.add_csig_argument(p, what="each path measures and every datagram sent to an "
                                      "endpoint starts with the 4-byte tag (the endpoints need "
                                      "--csig too)")
    p.add_argument("--csig-interval", type=cliargs.real(0.0, cliargs.MAX_US, "a positive time "
                   "in microseconds, e.g. 1000", open_lo=True), default=CSIG_INTERVAL_US,
                   metavar="US", help="time constant of the utilisation ABW and ABW/C measure, "
                                      f"microseconds (default {CSIG_INTERVAL_US:g})")
    p.add_argument("--pcap", metavar="FILE", help="write every forwarded datagram, both directions, "
                                                  "as a tap between the relay and --to sees them")
    p.add_argument("--interval", type=cliargs.seconds, default=1.0,
                   help="seconds between per-path tables on stderr (0: none; default 1)")
    p.add_argument("--duration", type=cliargs.seconds, default=0.0, help="stop after this many seconds (0: run until interrupted)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the counters on exit")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("fabric", help="run the live loopback fabric (a multipath UDP relay)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run_command)


def config_from_args(args: argparse.Namespace) -> FabricConfig:
    """A :class:`FabricConfig` from ``uet fabric``'s options; also accepts ``uet sim``/``uet demo``
    namespaces (options they lack keep their defaults)."""
    g = lambda name, default=None: getattr(args, name, default)  # noqa: E731
    kw: dict[str, Any] = dict(paths=args.paths, rate_gbps=args.rate, rtt_us=args.rtt, loss=args.loss,
                              trim=args.trim, reorder=args.reorder, dup=args.dup, corrupt=args.corrupt,
                              fail=list(args.fail_path), seed=args.seed)
    if g("reorder_delay") is not None:
        kw["reorder_delay_us"] = args.reorder_delay
    if g("skew"):
        kw["skew_us"] = args.skew
    if g("queue"):
        kw["queue_bytes"] = args.queue
    if g("kmin") is not None:
        kw["kmin_bytes"] = args.kmin
    if g("kmax") is not None:
        kw["kmax_bytes"] = args.kmax
    if g("no_overflow_trim"):
        kw["trim_on_overflow"] = False
    if g("ecmp"):
        kw["ecmp"] = args.ecmp
    if g("preserve_entropy"):
        kw["preserve_entropy"] = True
    if g("back"):
        kw["back_host"] = args.back
    if g("degrade_path"):
        kw["degrade_paths"] = list(args.degrade_path)
    if g("csig"):
        kw["csig"] = args.csig
    if g("csig_interval"):
        kw["csig_interval_us"] = args.csig_interval
    if g("mtu"):
        kw["mtu"] = args.mtu
    if g("topology"):
        kw["topology"] = args.topology
    return FabricConfig(**kw)


# --- the periodic table ----------------------------------------------------------------------
COLUMNS = (("path", "path"), ("state", None), ("packets", "packets"), ("MB", "bytes"),
           ("pkt/s", None), ("trims", "trimmed"), ("CE", "ce_marked"), ("drops", "dropped"),
           ("dups", "duplicated"), ("reord", "reordered"), ("crc bad", "crc_bad"), ("queue KB", "queue_bytes"),
           ("max q KB", "max_queue_bytes"))


def table_rows(counters: dict[str, Any], prev: dict[str, Any] | None, dt: float) -> list[list[str]]:
    rows = []
    prev_pk = {p["path"]: p["packets"] for p in prev["paths"]} if prev else {}
    entries = list(counters["paths"]) + [dict(counters["totals"], path="all", failed=None)]
    if prev:
        prev_pk["all"] = prev["totals"]["packets"]
    for e in entries:
        row = []
        for title, key in COLUMNS:
            if title == "state":
                row.append("" if e["failed"] is None else ("FAILED" if e["failed"] else "up"))
            elif title == "pkt/s":
                rate = (e["packets"] - prev_pk.get(e["path"], 0)) / dt if dt > 0 else 0.0
                row.append(f"{rate:.0f}")
            elif title == "MB":
                row.append(f"{e['bytes'] / 1e6:.1f}")
            elif title in ("queue KB", "max q KB"):
                row.append(f"{e.get(key, 0) / 1024:.0f}")
            else:
                row.append(str(e[key]))
        rows.append(row)
    return rows


def format_table(counters: dict[str, Any], prev: dict[str, Any] | None = None, dt: float = 0.0) -> str:
    """The per-path table as plain text."""
    head = [t for t, _ in COLUMNS]
    rows = table_rows(counters, prev, dt)
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    line = lambda cells: "  ".join(c.rjust(w[i]) for i, c in enumerate(cells))  # noqa: E731
    r = counters["relay"]
    foot = (f"flows {r['flows']}  uptime {r['uptime_s']:.1f}s  crc rewritten "
            f"{counters['totals']['crc_rewritten']}  send errors {counters['totals']['send_errors']}")
    return "\n".join([line(head), *(line(x) for x in rows), foot]) + "\n"


class _Table:
    def __init__(self, out: TextIO):
        self.out = out
        self.prev: dict[str, Any] | None = None
        self.t = time.monotonic()
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            self.console = None
        else:
            tty = hasattr(out, "isatty") and out.isatty()
            self.console = Console(file=out, width=None if tty else 132)
            self._Table = Table

    def show(self, counters: dict[str, Any]) -> None:
        now = time.monotonic()
        dt, self.t = now - self.t, now
        if self.console is None:
            self.out.write(format_table(counters, self.prev, dt))
            self.out.flush()
        else:
            t = self._Table(title="uet fabric", caption=f"flows {counters['relay']['flows']}")
            for title, _ in COLUMNS:
                t.add_column(title, justify="right", no_wrap=True)
            for row in table_rows(counters, self.prev, dt):
                t.add_row(*row)
            self.console.print(t)
        self.prev = counters


async def _serve(args: argparse.Namespace, cfg: FabricConfig, err: TextIO,
                 pcap: IO[bytes] | None) -> dict[str, Any]:
    wall0 = time.time()
    from .iprelay import fabric_kind

    async with open_fabric(listen=args.listen, to=args.to, config=cfg, capture=pcap,
                           kind=fabric_kind(args.encap, args.ip_proto)) as fab:
        back = f" (answers at {fab.back_host})" if fab.back_host != fab.host else ""
        ip = f", UET in IP protocol {args.ip_proto}" if args.encap == "ip" else ""
        host = f"[{fab.host}]" if ":" in fab.host else fab.host
        to = f"[{args.to[0]}]" if ":" in args.to[0] else args.to[0]
        print(f"uet fabric: listening on {host}:{fab.port}{back}, forwarding to {to}:{args.to[1]} "
              f"over {cfg.paths} paths{ip} (seed {cfg.seed}, --mtu {cfg.mtu})", file=err, flush=True)
        table = _Table(err) if args.interval > 0 else None
        with trio.open_signal_receiver(*STOP_SIGNALS) as sigs:
            with trio.move_on_after(args.duration if args.duration > 0 else float("inf")):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_on_signal, sigs, nursery.cancel_scope)
                    if table is not None:
                        while True:
                            await trio.sleep(args.interval)
                            table.show(fab.counters())
                    else:
                        await trio.sleep_forever()
        counters = fab.counters()
        if table is not None:
            table.show(counters)
        counters["relay"].update(listen=f"{fab.host}:{fab.port}", to=f"{args.to[0]}:{args.to[1]}",
                                 wall_time_s=round(time.time() - wall0, 6))
        counters["flows"] = fab.flow_list()
        counters["config"] = cfg.as_dict()
        counters["seed"] = cfg.seed
        return counters


def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        apply_topology(args)
        cliargs.check_fail_paths(args)
        check_degrade(args)
        cliargs.check_same_family("--back", args.back, args.to[0], "--to")
        if args.listen is not None:
            cliargs.check_same_family("--listen", args.listen[0], args.to[0], "--to")
            if args.listen[1] not in (0, args.to[1]):
                raise cliargs.UsageError(f"argument --listen: port {args.listen[1]}: the relay "
                                         f"keeps the UET port, {args.to[1]} (--to's), of every "
                                         "datagram (facts A.1); give the address alone")
        cliargs.check_marking(FabricConfig.kmin_bytes if args.kmin is None else args.kmin,
                              FabricConfig.kmax_bytes if args.kmax is None else args.kmax)
        if args.encap == "ip" and args.csig:  # uet.fabric.iprelay FABRIC-V5
            raise cliargs.UsageError("--csig: the native-IP relay carries no CSIG tags; "
                                     "give --encap udp")
        args.mtu = cliargs.resolve_mtu(args.mtu, peer=args.to[0], csig=bool(args.csig),
                                       native_ip=args.encap == "ip")
        try:
            cfg = config_from_args(args)
        except ValueError as e:  # FabricConfig's own checks, should they go further
            raise cliargs.UsageError(str(e)) from None
        pcap = cliargs.open_output(args.pcap) if args.pcap is not None else None
    except cliargs.UsageError as exc:
        return exc.report("uet fabric", err)
    from ..ownaddr import LocalAddressError
    from ..rawip import RawDenied

    try:
        summary = trio.run(_serve, args, cfg, err, pcap)
    except (LocalAddressError, RawDenied, ValueError) as e:  # O2, R4, iprelay FABRIC-V5: exit 2
        print(f"uet fabric: {e}", file=err)
        return 2
    except OSError as e:
        print(f"uet fabric: {e}", file=err)
        return 1
    finally:
        if pcap is not None:
            with contextlib.suppress(OSError):  # the capture flushed it: an error was reported
                pcap.close()
    if args.json:
        sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return cliargs.run_alone("uet fabric", add_arguments, run_command, argv, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
