"""``uet recv`` and ``uet send``: the live endpoint (:mod:`uet.io`) on the command line.

``uet recv --bind ADDR:PORT`` serves until stopped (Ctrl-C / SIGTERM exit 0): it accepts new PDCs
from any initiator and messages for any job, PID and resource index (a sink), prints one line per
message on stderr, writes the data with ``--out``, stops after ``--count N`` messages, and with
``--json`` prints one JSON summary object on stdout when it stops.

``uet send --to ADDR:PORT (FILE | --bytes N)`` sends the data (one message per ``--message-size``
bytes, one after the other, so that ``uet recv --out`` writes the bytes in order in both delivery
modes) and exits 0 once every byte is acknowledged; 1 when the transport gives up, 3 on
``--timeout``; with ``--json`` exactly one JSON object on stdout.

The first stderr line of ``uet recv`` names the bound address (useful with port 0):
``uet recv: listening on 127.0.0.1:40001``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import signal
import sys
import time
from typing import Any, Sequence, TextIO

from .. import UET_UDP_PORT
from ..cliargs import hostport, size

# trio and the endpoint are imported inside the commands: ``register`` runs for every ``uet``
# invocation (uet decode too) and should not pay for importing them.


def _fmt_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class _Progress:
    """A one-line progress bar on stderr (no dependency; rich is not installed here)."""

    def __init__(self, total: int, enabled: bool, out: TextIO = sys.stderr):
        self.total = max(total, 1)
        self.enabled = enabled
        self.out = out
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        frac = min(done / self.total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        rate = done / max(now - self.t0, 1e-9) / 1e6
        self.out.write(f"\r[{bar}] {frac * 100:5.1f}% {_mb(done)} / {_mb(self.total)} {rate:7.1f} MB/s")
        self.out.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.out.write("\n")
            self.out.flush()


# ------------------------------------------------------------------------------------------------
# uet recv
# ------------------------------------------------------------------------------------------------

def add_recv_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", type=hostport, default=("0.0.0.0", UET_UDP_PORT), metavar="ADDR:PORT",
                   help=f"address and UDP port to serve (default 0.0.0.0:{UET_UDP_PORT}; port 0 = any)")
    p.add_argument("--out", metavar="FILE", help="write the received data, message after message "
                                                 "(- for stdout, not with --json)")
    p.add_argument("--json", action="store_true", help="one JSON summary object on stdout at exit")
    p.add_argument("--count", type=int, default=0, metavar="N", help="exit after N messages")
    p.add_argument("--paths", type=int, default=1, metavar="N",
                   help="entropy sockets for this endpoint's own sends (default 1)")
    p.add_argument("--max-pdcs", type=int, default=1024, help="PDC limit (default 1024)")
    p.add_argument("--linger", type=float, default=1.0, metavar="S",
                   help="with --count: wait up to S seconds for the initiators to close (default 1)")
    p.add_argument("--quiet", "-q", action="store_true", help="no per-message lines")
    p.add_argument("--seed", type=int, default=None, help="seed of the PDS core (default random)")


async def _recv_main(args: argparse.Namespace) -> int:
    import trio

    from .endpoint import open_endpoint

    err = sys.stderr
    host, port = args.bind
    out_fh: Any = None
    if args.out == "-":
        if args.json:
            print("uet recv: --out - and --json both want stdout", file=err)
            return 2
        out_fh = sys.stdout.buffer
    elif args.out:
        out_fh = open(args.out, "wb")
    total_hash = hashlib.sha256()
    n_msgs = 0
    n_bytes = 0
    first = last = None
    peers: set[str] = set()
    try:
        async with open_endpoint((host, port), paths=max(1, args.paths), seed=args.seed,
                                 max_pdcs=args.max_pdcs) as ep:
            print(f"uet recv: listening on {_fmt_addr(host, ep.port)}", file=err, flush=True)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async with trio.open_nursery() as nursery:
                    async def on_signal() -> None:
                        async for _ in signals:
                            nursery.cancel_scope.cancel()
                            return

                    nursery.start_soon(on_signal)
                    while not args.count or n_msgs < args.count:
                        m = await ep.receive()
                        now = time.monotonic()
                        first = first if first is not None else now
                        last = now
                        n_msgs += 1
                        n_bytes += len(m.data)
                        peers.add(m.peer)
                        digest = await trio.to_thread.run_sync(
                            lambda d=m.data: (total_hash.update(d), hashlib.sha256(d).hexdigest())[1])
                        if out_fh is not None:
                            await trio.to_thread.run_sync(out_fh.write, m.data)
                        if not args.quiet:
                            print(f"uet recv: message {n_msgs} from {m.peer} (pdc {m.pdcid}, "
                                  f"message {m.message_id}, job {m.job_id}, pid {m.pid_on_fep}, "
                                  f"ri {m.resource_index}): {len(m.data)} bytes sha256 {digest}",
                                  file=err, flush=True)
                    # --count reached: let the initiators close their PDCs (C.7) before leaving
                    with trio.move_on_after(args.linger):
                        while any(p.role == "target" for p in ep.core.pdcs()):
                            await trio.sleep(0.01)
                    nursery.cancel_scope.cancel()
            stats = ep.stats
    finally:
        if out_fh is not None and out_fh is not sys.stdout.buffer:
            out_fh.close()
        elif out_fh is not None:
            out_fh.flush()
    span = (last - first) if first is not None and last is not None else 0.0
    if args.json:
        obj = {"ok": True, "messages": n_msgs, "bytes": n_bytes, "sha256": total_hash.hexdigest(),
               "peers": sorted(peers), "span_s": round(span, 6), "stats": _jsonable(stats)}
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    print(f"uet recv: {n_msgs} messages, {n_bytes} bytes; nacks sent {stats.get('nacks_sent')}; "
          f"malformed {stats.get('malformed', 0)}, bad crc {stats.get('bad_crc', 0)}",
          file=err, flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# uet send
# ------------------------------------------------------------------------------------------------

def add_send_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", type=hostport, required=True, metavar="ADDR:PORT",
                   help=f"the receiver (port default {UET_UDP_PORT})")
    p.add_argument("file", nargs="?", help="file to send (- for stdin)")
    p.add_argument("--bytes", type=size, default=None, metavar="N",
                   help="send N seeded pseudo-random bytes instead of a file (k/m/g suffixes)")
    p.add_argument("--paths", type=int, default=8, metavar="N",
                   help="entropy values, i.e. UDP source ports to spray over (default 8)")
    p.add_argument("--mode", choices=("rud", "rod"), default="rud", help="delivery mode (C.8)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="give up after S seconds (exit status 3)")
    p.add_argument("--message-size", type=size, default=64 << 20, metavar="N",
                   help="bytes per message (default 64MiB); messages go one after the other")
    p.add_argument("--local", default=None, metavar="ADDR",
                   help="local address (default: the route's source address towards --to)")
    p.add_argument("--job", type=int, default=0, help="SES job id (default 0)")
    p.add_argument("--window", type=size, default=None, help="send window in bytes")
    p.add_argument("--spray", choices=("rr", "random"), default="rr")
    p.add_argument("--seed", type=int, default=1, help="seed of the --bytes data (default 1)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")


def _jsonable(stats: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool, dict, list)) or v is None else str(v))
            for k, v in stats.items()}


async def _send_main(args: argparse.Namespace, data: bytes, digest: str) -> int:
    import trio

    from .endpoint import SendFailed, open_endpoint

    err = sys.stderr
    host, port = args.to
    result: dict[str, Any] = {"ok": False, "bytes": len(data), "wall_time_s": 0.0,
                              "goodput_MBps": 0.0, "packets_sent": 0, "retransmissions": 0,
                              "paths_used": 0, "sha256": digest, "mode": args.mode,
                              "to": _fmt_addr(host, port), "messages": 0}
    progress = _Progress(len(data), args.progress if args.progress is not None else err.isatty())
    status = 0
    error = None
    extra: dict[str, Any] = {}
    if args.window:
        extra["window_bytes"] = args.window
    t_end = None
    ep_ref = None
    try:
        async with open_endpoint(None, paths=args.paths, peer=host, local=args.local,
                                 peer_port=port, spray=args.spray, **extra) as ep:
            ep_ref = ep
            mtu = ep.core.config.mtu
            acked = 0
            with trio.move_on_after(args.timeout if args.timeout else float("inf")) as cs:
                async with trio.open_nursery() as nursery:
                    async def ticker() -> None:
                        while True:
                            sent = sum(ep.tx_data_by_port.values()) - ep.core.stats["retransmissions"]
                            progress.update(min(acked + max(0, sent * mtu - acked), len(data)))
                            await trio.sleep(0.2)

                    if progress.enabled:
                        nursery.start_soon(ticker)
                    step = max(1, args.message_size)
                    chunks = [data[i:i + step] for i in range(0, len(data), step)] or [b""]
                    try:
                        for c in chunks:
                            await ep.send(host, c, mode=args.mode, job_id=args.job)
                            acked += len(c)
                            result["messages"] += 1
                        t_end = trio.current_time()
                    except SendFailed as exc:
                        error = f"transfer failed: {exc.reason}"
                        if not ep.stats.get("rx_datagrams"):
                            error += (f"; nothing came back from {_fmt_addr(host, port)} (is a "
                                      "UET receiver serving there?)")
                        status = 1
                    nursery.cancel_scope.cancel()
            if cs.cancelled_caught:
                error = (f"timed out after {args.timeout} s: {acked} of {len(data)} bytes "
                         "acknowledged")
                status = 3
            if progress.enabled:
                progress.update(acked, force=True)
            progress.finish()
            first = ep.first_tx_time
            if t_end is not None and first is not None:
                wall = max(t_end - first, 1e-9)
                result["wall_time_s"] = round(wall, 6)
                result["goodput_MBps"] = round(len(data) / wall / 1e6, 3)
            if status:
                ep.skip_close = True  # nothing to close gracefully after a failure
    except OSError as exc:
        error = f"socket error: {exc}"
        status = 1
    if ep_ref is not None:
        st = ep_ref.stats
        result["packets_sent"] = st.get("io_tx_datagrams", 0)
        result["retransmissions"] = st.get("retransmissions", 0)
        result["paths_used"] = st.get("paths_used", 0)
        result["nacks"] = st.get("nacks_rcvd", {})
        result["rto"] = st.get("rto", 0)
        result["stats"] = _jsonable(st)
    result["ok"] = status == 0
    if error:
        result["error"] = error
        print(f"uet send: {error}", file=err, flush=True)
    else:
        print(f"uet send: {len(data)} bytes acknowledged in {result['wall_time_s']:.3f} s "
              f"({result['goodput_MBps']:.1f} MB/s, {result['paths_used']} paths, "
              f"{result['retransmissions']} retransmissions), sha256 {digest}", file=err, flush=True)
    if args.json:
        sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return status


def _read_data(args: argparse.Namespace) -> bytes:
    if args.bytes is not None:
        return random.Random(args.seed).randbytes(args.bytes)
    if args.file == "-":
        return sys.stdin.buffer.read()
    with open(args.file, "rb") as fh:
        return fh.read()


def run_recv(args: argparse.Namespace) -> int:
    import trio

    try:
        return trio.run(_recv_main, args)
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"uet recv: {exc}", file=sys.stderr)
        return 1


def run_send(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.bytes is None):
        print("uet send: give a FILE or --bytes N (not both)", file=sys.stderr)
        return 2
    try:
        data = _read_data(args)
    except OSError as exc:
        print(f"uet send: {exc}", file=sys.stderr)
        return 2
    digest = hashlib.sha256(data).hexdigest()
    import trio

    try:
        return trio.run(_send_main, args, data, digest)
    except KeyboardInterrupt:
        print("uet send: interrupted", file=sys.stderr)
        return 130


def register(subparsers: Any) -> None:
    """Add ``recv`` and ``send`` to the ``uet`` command's subparsers."""
    r = subparsers.add_parser("recv", help="serve UET on a UDP port: a sink for messages",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recv_arguments(r)
    r.set_defaults(func=run_recv)
    s = subparsers.add_parser("send", help="send a file or N bytes over UET and wait for the ACKs",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_send_arguments(s)
    s.set_defaults(func=run_send)


def main(argv: Sequence[str] | None = None) -> int:
    """``uet recv ...`` / ``uet send ...`` without the rest of the CLI (for tests)."""
    parser = argparse.ArgumentParser(prog="uet")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register(sub)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args))
