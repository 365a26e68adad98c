"""``uet demo``: sender, live fabric and receiver on loopback in one command (docs/design-notes.md "Contracts").

One process, one trio run: a receiver endpoint bound on 127.0.0.1:<free port> (``--host``), the
live fabric (:mod:`uet.fabric`) in front of it, and a sender endpoint (:mod:`uet.io`) that sends to
the fabric; ``--no-fabric`` sends straight to the receiver over the sender's entropy ports. Every
datagram goes to that one UET port and each endpoint receives on its own address (facts A.1):
the fabric and the sender take the first free loopback addresses (127.0.0.2, 127.0.0.3, ...;
over IPv6 ::2 and ::3, which must be added: ``ip -6 addr add ::2/128 dev lo``), and the summary
prints them (``addresses``). It takes
``uet sim``'s transfer and impairment options (same names and units) and prints the same summary,
with wall-clock figures (:mod:`uet.demo.run` says how each is counted).

The default run moves 16 MiB over 4 paths with mild loss (0.002) and trimming (0.01) and a
per-path rate (0.25 Gb/s) at which the window's bursts queue and get CE marks; ``--loss 0 --trim 0``
is a clean run. ``--capture FILE.pcap`` writes every datagram the fabric forwards, both
directions, with wall-clock timestamps.

``--cc nscc|rccc`` (default fixed: the window, as without the option), ``--spray
reps|oblivious|rr|random|single``, ``--csig TYPE`` (the fabric stamps CSIG tags, the receiver
reflects them and the sender's spraying avoids paths they show clearly worse) and ``--degrade-path
I:F`` (path I at fraction F of ``--rate``): :mod:`uet.demo.run` says which rate and base RTT NSCC
and RCCC are built for, and what the summary adds (per path queue figures and CSIG buckets, the
sender's window over the run, ``cc``, ``spray``, ``csig``). ``tools/bench_csig_live.py`` runs the
slow-path experiment.

``--mtu N`` is the payload per packet of both endpoints and the fabric's paths (facts A.1;
default the largest of 1024, 2048, 4096 and 8192 that fits the route to ``--host``: 8192 on
loopback); a datagram that does not fit exits 2 with one line. ``--ses-header standard`` makes
both endpoints use standard SES headers only, as the reference provider requires.

``--tss`` through the fabric: the relay rewrites the addresses, so both ends send an SSI and the
AAD leaves the addresses out (``--tss-aad header``; :func:`through_relay`); ``--no-fabric`` keeps
``--tss-aad`` as given.

stderr: a progress bar (when stderr is a terminal, or ``--progress``) and, at the end, one line
that says what happened (how many bytes over how many paths, between which addresses, received
intact or NOT, with the SHA-256 of the data, the time and the goodput), then a per-path table
(packets, trims, CE marks, drops, queues in KiB, rates in Gb/s) with a legend, and the summary in
words (:mod:`uet.demo.report`; rich if installed, else plain text). ``--quiet`` keeps the one line.
With ``--json`` stdout holds exactly one JSON object on one line and nothing else. A run that is
not ok (a byte missing or wrong, a send that failed, ``--timeout``) exits 1 and prints the command
line that replays it, with its seed, on stderr; 2 means bad options.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from typing import Any, Sequence, TextIO

from .. import cliargs
from ..fabric.command import check_degrade
from .options import add_arguments, resolve
from .report import data_sha256, intact, show


def config_from_args(args: argparse.Namespace) -> Any:
    """A :class:`uet.demo.run.DemoConfig` from the parsed options (through ``uet sim``'s own
    mapping of its options, :func:`uet.sim.command.config_from_args`). With ``--tss`` the key
    is ``--sd-key``'s or made from the seed and written beside the capture (TSS-O3 of
    uet.tss.options)."""
    from ..sim.command import config_from_args as sim_config
    from ..tss.options import own_security_pair
    from .run import DemoConfig

    if args.encap == "ip":
        args.tss_aad = "entropy"  # F: the native-IP AAD (uet.io.native_ip IO-N1)
    client, server = own_security_pair(args, seed=args.seed, capture=args.capture)
    if client is not None and args.fabric:
        client, server = through_relay(client), through_relay(server)
        args.tss_aad = "header"  # for the replay line and the decode command
    sim = sim_config(args, client)
    return DemoConfig.from_sim(sim, entropy_values=args.entropies, fabric=args.fabric,
                               capture=args.capture, timeout=args.timeout, host=args.host,
                               cc=args.cc, csig=args.csig, rx_security=server,
                               degrade_paths=list(args.degrade_path), encap=args.encap,
                               ip_proto=args.ip_proto)


RELAY_SSI = 1  # the SSI both ends of a protected demo through the relay send (F: SSI / SDI)


def through_relay(security: Any) -> Any:
    """TSS through the relay: it rewrites the addresses (each endpoint receives on its own at the
    UET port, facts A.1, so the relay stands between two), which F puts into the IV and the
    KDF unless an SSI is sent, and which the default AAD covers. So both ends send an SSI
    (``RELAY_SSI``, unless the domain names one) and leave the addresses out of the AAD
    (``--tss-aad header``; their epochs differ, so their IVs still do)."""
    import dataclasses

    doms = tuple(dataclasses.replace(d, ssi=RELAY_SSI if d.ssi is None else d.ssi)
                 for d in security.domains)
    return dataclasses.replace(security, aad="header", domains=doms)


#: what a replay line leaves out: the outputs, which do not change the run
REPLAY_LEAVES_OUT = ("json", "capture", "progress", "quiet")


def replay_command(args: argparse.Namespace) -> str:
    """The ``uet demo`` command line that repeats this run (same seed, same impairment draws): the
    options that differ from their defaults as the run resolved them (``--mtu`` from the route,
    ``--loss``, ``--trim`` and ``--rate`` from the fabric's presence), from the parser itself
    (uet.cliargs.replay_words)."""
    p = cliargs.Parser(prog="uet demo")
    add_arguments(p)
    return shlex.join(["uet", "demo", *cliargs.replay_words(p, args, leave_out=REPLAY_LEAVES_OUT)])


# --- stderr: progress bar (the table and the summary: uet.demo.report) -------------------------

def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class Progress:
    """A one-line progress bar on stderr (``\\r`` updates on a terminal, a line a second
    otherwise)."""

    def __init__(self, out: TextIO, enabled: bool):
        self.out = out
        self.enabled = enabled
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, snap: dict[str, Any]) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = snap.get("final", False)
        if not final and not self.tty and now - self.last < 1.0:
            return
        self.last = now
        total = max(snap["bytes"], 1)
        done = max(snap["sent_bytes"], snap["delivered_bytes"])
        frac = min(done / total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        extra = ""
        fab = snap.get("fabric")
        if fab is not None:
            t = fab["totals"]
            extra = f"  trims {t['trimmed']}  CE {t['ce_marked']}  drops {t['dropped']}"
        line = (f"[{bar}] {frac * 100:5.1f}% {_mib(done)} / {_mib(total)} sent, "
                f"{snap['messages_delivered']} msg delivered{extra}")
        if self.tty:
            self.out.write("\r" + line + "\x1b[K")
        else:
            self.out.write(line + "\n")
        self.out.flush()
        self.shown = True
        if final:
            self.finish()

    def finish(self) -> None:
        if self.shown and self.tty:
            self.out.write("\n")
            self.out.flush()
        self.shown = False


# --- the command ------------------------------------------------------------------------------

def run_command(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        cliargs.check_transfer(args)
        check_degrade(args)
        resolve(args)
        args.mtu = cliargs.resolve_mtu(args.mtu, peer=args.host, tss=bool(args.tss or args.sd_key),
                                       csig=bool(args.csig), native_ip=args.encap == "ip")
        cfg = config_from_args(args)
        cfg.validate()
        if args.capture is not None:  # the fabric opens it again once the endpoints are up
            cliargs.open_output(args.capture).close()
    except ValueError as exc:  # resolve() and DemoConfig.validate(): options that conflict
        return cliargs.UsageError(str(exc)).report("uet demo", err)
    except cliargs.UsageError as exc:
        return exc.report("uet demo", err)
    return _run(args, cfg, err)


def _run(args: argparse.Namespace, cfg: Any, err: TextIO) -> int:
    import trio

    from .run import run_demo

    tty = hasattr(err, "isatty") and err.isatty()
    progress = Progress(err, args.progress if args.progress is not None else tty)
    from ..ownaddr import LocalAddressError
    from ..rawip import RawDenied

    try:
        summary = trio.run(lambda: run_demo(cfg, progress=progress if progress.enabled else None))
    except (LocalAddressError, RawDenied) as exc:  # OWNADDR-O2 of uet.ownaddr, RAWIP-R4 of uet.rawip: exit 2
        progress.finish()
        print(f"uet demo: {exc}", file=err, flush=True)
        return 2
    except KeyboardInterrupt:
        progress.finish()
        print("uet demo: interrupted", file=err)
        return 130
    except Exception as exc:  # a socket error, or a bug: still one JSON object, exit 1
        import traceback

        progress.finish()
        if not isinstance(exc, (OSError, MemoryError)):
            traceback.print_exc(file=err)
        summary = {"ok": False, "bytes": cfg.bytes, "failures": [f"{type(exc).__name__}: {exc}"],
                   "error": f"{type(exc).__name__}: {exc}", "seed": cfg.seed}
        if args.json:
            sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        print(f"uet demo: {summary['error']}", file=err)
        print(f"uet demo: FAILED; replay with: {replay_command(args)}", file=err, flush=True)
        return 1
    progress.finish()
    if summary.get("too_big"):  # IO-M1 of uet.io.engine: --mtu does not fit the route, one line
        if args.json:
            sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")
        print(f"uet demo: {summary['too_big']}", file=err, flush=True)
        return 2
    sha = None
    if intact(summary):  # the bytes sent, which every delivered message matched (uet.demo.run)
        from .run import payload

        sha = data_sha256(payload(cfg))
    show(summary, err, sha256=sha, table=not args.quiet)  # --quiet: the one line only
    if args.json:
        sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    if args.capture and not args.quiet:
        pt = summary["ports"]
        cmd = ["uet", "decode", "--port", str(pt["receiver"]), args.capture]  # one UET port (A.1)
        if args.tss or args.sd_key:  # TSS-O3 of uet.tss.options: the key the run used
            extra = [("--sdi", str(args.sdi), "1"), ("--tss-mode", args.tss_mode, "direct"),
                     ("--tss-aad", args.tss_aad, "addresses")]
            cmd[2:2] = ["--sd-key", args.sd_key or args.capture + ".key"] + [
                w for name, value, default in extra if value != default for w in (name, value)]
        print(f"uet demo: capture in {args.capture}; decode it with: {shlex.join(cmd)}",
              file=err, flush=True)
    if not summary["ok"]:
        for f in summary["failures"]:
            print(f"uet demo: {f}", file=err)
        print(f"uet demo: FAILED; replay with: {replay_command(args)}", file=err, flush=True)
        return 1
    return 0


def register(subparsers: Any) -> None:
    """Add ``demo`` to the ``uet`` command's subparsers."""
    p = subparsers.add_parser("demo", help="a live transfer: sender, fabric and receiver on loopback",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run_command)


def main(argv: Sequence[str] | None = None) -> int:
    """``uet demo ...`` without the rest of the CLI."""
    return cliargs.run_alone("uet demo", add_arguments, run_command, argv, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
