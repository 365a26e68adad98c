"""``uet recv`` and ``uet send``: the live endpoint (:mod:`uet.io`) on the command line.

``uet recv --bind ADDR:PORT`` serves until stopped (Ctrl-C / SIGTERM exit 0): it accepts new PDCs
from any initiator and messages for any job, PID and resource index (a sink), prints one line per
message on stderr, writes the data with ``--out``, stops after ``--count N`` messages, and with
``--json`` prints one JSON summary object on stdout when it stops. Its ``bytes`` and ``sha256``
cover exactly what reached ``--out``, however it stops; when a write fails (a full disk) it says
so in one line and exits 1, the summary with ``"ok": false`` and ``"error"``.

Ports and addresses (facts A.1, H.1 #19): every UET datagram, requests and answers alike, goes
to UDP destination port = the UET port, so every endpoint receives on (its own address, UET port).
``uet recv`` takes both from ``--bind``. In ``uet send --to ADDR:PORT`` the port is the fabric's
UET port (``--uet-port N`` overrides it): the sender receives the answers on that same port at an
address of its own, ``--local ADDR``, by default - when the receiver is on loopback - the first
free loopback address (127.0.0.2, 127.0.0.3, ...; IPv6 has only ::1 until ``ip -6 addr add
::2/128 dev lo`` adds another), else the route's source address. A receiver bound to the wildcard
address holds the UET port on every address of its host, so a sender there cannot bind: bind the
receiver to one address. These say so in one line, exit status 2.

``uet send --to ADDR:PORT (FILE | --bytes N)`` sends the data (one message per ``--message-size``
bytes, one after the other, so that ``uet recv --out`` writes the bytes in order in both delivery
modes; only one message is in memory at a time) and exits 0 once every byte is acknowledged; 1
when the transport gives up, 3 on ``--timeout``; with ``--json`` exactly one JSON object on stdout,
whose ``sha256`` is of the data (on a failure, of the part read so far), ``messages`` the messages
completed (their SES response came) and ``acked_bytes`` the bytes the target's PDS acknowledged,
answered or not: a target that takes the bytes but never answers at the semantic layer (D.7) is
named as such when ``--timeout`` ends the wait.

The first stderr line of ``uet recv`` names the bound address (useful with port 0):
``uet recv: listening on 127.0.0.1:40001``.

Congestion control, spraying and CSIG (both commands): ``--cc fixed|nscc|rccc`` (default fixed:
the ``--window``; uet.cms.choice), for NSCC and RCCC built for a network of ``--cc-rate`` Gb/s
and a base RTT of ``--cc-rtt`` microseconds (defaults 10 Gb/s and 1000 us, uet.io: what a live
round trip on loopback costs; through ``uet fabric`` give its ``--rate`` x ``--paths`` and its
``--rtt`` plus 1000 us). RCCC needs it on both ends: the receiver grants credit. ``--spray`` takes
every kind of uet.multipath.SELECTOR_KINDS (rr, random, single, reps, oblivious). ``--csig TYPE``
(abw, abw/c, delay, nqd; off by default): the endpoint strips the 4-byte CSIG tags ``uet fabric
--csig`` puts ahead of each datagram (without it they are stripped, counted as ``csig_unasked``
and ignored, so a misconfigured pair still works; a datagram too short to hold a tag counts as
``csig_bad``); the receiver reflects them in its ACKs, the sender's ``--spray`` policy and
congestion control use them. The receiver names the EVs it saw, the sender's own: ``uet fabric``
keeps every datagram's source port (A.1).

Transport security (both commands; facts B.15, F; uet.tss.options TSS-O1 to TSS-O4): ``--sd-key FILE``
turns TSS on, both ends with the same key file (``--sdi``, ``--tss-mode`` alike). Each process
takes a fresh epoch from ``FILE.epoch`` so that no IV repeats; a datagram that is not TSS or does
not authenticate is dropped and counted under its own name (``tss_*`` in ``--json`` stats, and
on the receiver's last line).

Payload per packet (both commands; facts A.1): ``--mtu N`` payload bytes per packet (256 and
up; the reference provider uses 1024, 2048, 4096 or 8192, and every end should use the same). By
default the largest of those whose whole datagram fits: for ``uet send`` the MTU of the interface
the route to ``--to`` uses, for ``uet recv`` the interface of ``--bind`` (1024 at MTU 1500, 8192 at
9000 and on loopback). Every socket sets DF: a datagram too big for the route stops the command
with one line naming the MTU and ``--mtu``, exit status 2, never a retransmission loop.
``uet send --ses-header standard`` sends standard SES request headers only (next_hdr 3), as the
reference provider requires; ``uet recv`` answers every peer in the header family it uses (no small
response with data to a peer that sends standard headers, SES-P3 of uet/ses/target.py).

Native IP (both commands; facts A.1 "Native IP", issue 27): ``--encap ip`` carries UET directly
in IP protocol ``--ip-proto N`` (default 253) behind the 4-byte entropy header, which carries the
EV where UDP's source port did, with the trailer's native-IP coverage (A.3) and under TSS F's
native-IP AAD (``--tss-aad entropy``, set by ``--encap ip``). It needs raw sockets (root or
CAP_NET_RAW; without them one line says so, exit 2). ``uet recv --encap ip`` also accepts UDP and
answers each peer the way it came (uet.io.native_ip IO-N1 to IO-N6); ``--mtu``'s default counts the entropy
header instead of UDP's.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import stat
import sys
import time
from typing import Any, BinaryIO, Iterator, Sequence, TextIO

from .. import UET_UDP_PORT, cliargs, cliopts
from ..cliargs import hostport
from ..cms.csig import TYPE_BY_NAME
from ..payload import seeded_chunks
from ..tss.options import add_tss_arguments, security_from_args, summary as tss_summary
from . import LIVE_CC_RATE_GBPS, LIVE_CC_RTT_US
from .signals import STOP_SIGNALS, cancel_on_signal

# trio and the endpoint are imported inside the commands: ``register`` runs for every ``uet``
# invocation (uet decode too) and should not pay for importing them.


def _fmt_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class _Progress:
    """A one-line progress bar on stderr (no dependency; rich is not installed here)."""

    def __init__(self, total: int | None, enabled: bool, out: TextIO = sys.stderr):
        self.total = None if total is None else max(total, 1)  # None: a pipe, size unknown
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
        rate = done / max(now - self.t0, 1e-9) / 1e6
        if self.total is None:
            self.out.write(f"\r{_mb(done)} {rate:7.1f} MB/s")
        else:
            frac = min(done / self.total, 1.0)
            width = 30
            bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
            self.out.write(f"\r[{bar}] {frac * 100:5.1f}% {_mb(done)} / {_mb(self.total)} "
                           f"{rate:7.1f} MB/s")
        self.out.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.out.write("\n")
            self.out.flush()


# ------------------------------------------------------------------------------------------------
# congestion control, spraying, CSIG (both commands)
# ------------------------------------------------------------------------------------------------

def add_cc_arguments(p: argparse.ArgumentParser) -> None:
    """The congestion options of both commands (uet.cliopts), for a network of ``--cc-rate`` and
    ``--cc-rtt``: the endpoint has no fabric to read them from."""
    cliopts.add_cc_options(p, cc_says="; default fixed",
                           network=(LIVE_CC_RATE_GBPS, LIVE_CC_RTT_US),
                           csig_what="strip the tags uet fabric --csig puts ahead of each "
                                     "datagram, reflect them (receiver), use the reflections "
                                     "(sender); without it the tags are stripped and ignored")


def cc_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The PdsConfig fields of ``--cc``, ``--cc-rate``, ``--cc-rtt``, ``--window``, ``--csig``."""
    from ..cms.choice import pds_overrides

    out: dict[str, Any] = {}
    window = getattr(args, "window", None)
    if window:
        out["window_bytes"] = window
    if args.cc != "fixed":
        out.update(pds_overrides(args.cc, rate_gbps=args.cc_rate, base_rtt=args.cc_rtt * 1e-6,
                                 window_bytes=window or (1 << 20)))
    if args.csig:
        out["csig"] = TYPE_BY_NAME[args.csig]
    return out


def _cc_summary(args: argparse.Namespace, ep: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"cc": args.cc, "spray": args.spray, "csig": args.csig}
    init = next((p for p in ep.core.pdcs() if p.role == "initiator"), None)
    if init is not None:
        d["cwnd_bytes"] = int(init.cc.cwnd_bytes)
    sel = [s.counters for s in ep.selectors if "reasked" in getattr(s, "counters", {})]
    if sel:
        d["csig_selector"] = {k: sum(c[k] for c in sel) for k in sel[0]}
    return d


# ------------------------------------------------------------------------------------------------
# uet recv
# ------------------------------------------------------------------------------------------------

def add_recv_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", type=hostport, default=("0.0.0.0", UET_UDP_PORT), metavar="ADDR:PORT",
                   help=f"address and UDP port to serve (default 0.0.0.0:{UET_UDP_PORT}; port 0 = any)")
    p.add_argument("--out", metavar="FILE", help="write the received data, message after message "
                                                 "(- for stdout, not with --json)")
    p.add_argument("--json", action="store_true", help="one JSON summary object on stdout at exit")
    p.add_argument("--count", type=cliargs.count, default=0, metavar="N",
                   help="exit after N messages (default 0: no limit, serve until stopped)")
    p.add_argument("--paths", type=cliargs.sockets, default=1, metavar="N",
                   help="entropy sockets for this endpoint's own sends (default 1)")
    p.add_argument("--max-pdcs", type=cliargs.max_pdcs, default=1024, help="PDC limit (default 1024)")
    cliargs.add_mtu_argument(p, where="the MTU of the interface of --bind (a wildcard: the "
                                      "largest of the interfaces that are up); give both ends "
                                      "the same")
    p.add_argument("--linger", type=cliargs.seconds, default=1.0, metavar="S",
                   help="with --count: wait up to S seconds for the initiators to close (default 1)")
    p.add_argument("--quiet", "-q", action="store_true", help="no per-message lines")
    add_tss_arguments(p)
    cliargs.add_encap_arguments(p)
    cliopts.add_seed_argument(p, default=None, of="the PDS core")
    add_cc_arguments(p)


def _open_out(args: argparse.Namespace) -> BinaryIO | None:
    """``--out`` unbuffered, so that what :func:`_store` reports written is on the file."""
    if args.out == "-":
        if args.json:
            raise cliargs.UsageError("argument --out: - and --json both want stdout")
        try:
            return open(sys.stdout.fileno(), "wb", buffering=0, closefd=False)
        except (OSError, ValueError) as exc:
            raise cliargs.UsageError(f"cannot write to stdout: {exc}", hint=False) from None
    if args.out is not None:
        return cliargs.open_output(args.out, "wb", buffering=0)
    return None


def _store(out: BinaryIO | None, data: bytes, total: Any,
           digest: bool) -> tuple[int, str, OSError | None]:
    """Write one message to ``out`` and feed ``total`` exactly the bytes that reached it; return
    that count, the message's sha256 (when ``digest``) and the error that stopped the write.

    Runs in a worker thread as one step, so that the running hash and the file never disagree."""
    one = hashlib.sha256(data).hexdigest() if digest else ""
    if out is None:
        total.update(data)
        return len(data), one, None
    view = memoryview(data)
    done = 0
    try:
        while done < len(view):
            n = out.write(view[done:])
            if not n:  # a raw file reports no progress only when it cannot make any
                raise OSError(errno.EIO, "the write made no progress")
            total.update(view[done:done + n])
            done += n
    except OSError as exc:
        return done, one, exc
    return done, one, None


async def _recv_main(args: argparse.Namespace, out: BinaryIO | None, security: Any) -> int:
    import trio

    from .endpoint import TooBig, open_endpoint

    err = sys.stderr
    host, port = args.bind
    total_hash = hashlib.sha256()
    n_msgs = 0
    n_bytes = 0
    first = last = None
    peers: set[str] = set()
    error = None
    status = 1  # when error is set
    async with open_endpoint((host, port), paths=max(1, args.paths), seed=args.seed,
                             max_pdcs=args.max_pdcs, spray=args.spray, security=security,
                             mtu=args.mtu, encap=args.encap, ip_proto=args.ip_proto,
                             **cc_fields(args)) as ep:
        print(f"uet recv: listening on {_fmt_addr(host, ep.port)}", file=err, flush=True)
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_on_signal, signals, nursery.cancel_scope)
                while not args.count or n_msgs < args.count:
                    # receive() returns at once while messages wait, without a checkpoint: stop
                    # taking them once a signal came
                    await trio.lowlevel.checkpoint_if_cancelled()
                    try:
                        m = await ep.receive()
                    except TooBig as exc:  # IO-M1 of uet.io.engine: exit 2
                        error, status = exc.reason, 2
                        print(f"uet recv: {error}", file=err, flush=True)
                        break
                    peers.add(m.peer)
                    # a signal now must not part the counters from the file: the write and the
                    # counting finish together, and only what was written is counted
                    with trio.CancelScope(shield=True):
                        written, digest, failed = await trio.to_thread.run_sync(
                            _store, out, m.data, total_hash, not args.quiet)
                        n_bytes += written
                        if failed is None:
                            n_msgs += 1
                            last = time.monotonic()
                            first = first if first is not None else last
                    if failed is not None:
                        where = "stdout" if args.out == "-" else args.out
                        error = f"cannot write to {where}: {failed.strerror or failed}"
                        print(f"uet recv: {error}", file=err, flush=True)
                        break
                    if not args.quiet:
                        print(f"uet recv: message {n_msgs} from {m.peer} (SES message "
                              f"{m.message_id}, job {m.job_id}, pid {m.pid_on_fep}, "
                              f"ri {m.resource_index}): {len(m.data)} bytes sha256 {digest}",
                              file=err, flush=True)
                else:
                    # --count reached: let the initiators close their PDCs (C.7) before leaving
                    with trio.move_on_after(args.linger):
                        while any(p.role == "target" for p in ep.core.pdcs()):
                            await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
        stats = ep.stats
        cc = _cc_summary(args, ep)
    span = (last - first) if first is not None and last is not None else 0.0
    if args.json:
        obj = {"ok": error is None, "messages": n_msgs, "bytes": n_bytes,
               "sha256": total_hash.hexdigest(), "peers": sorted(peers), "span_s": round(span, 6),
               "mtu": args.mtu,
               **cc, "tss": tss_summary(security), "stats": _jsonable(stats)}
        if error is not None:
            obj["error"] = error
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    print(f"uet recv: {n_msgs} messages, {n_bytes} bytes; nacks sent {stats.get('nacks_sent')}; "
          f"malformed {stats.get('malformed', 0)}, bad crc {stats.get('bad_crc', 0)}"
          + (_tss_drops(stats) if security is not None else ""), file=err, flush=True)
    return 0 if error is None else status


_WHY_DROPPED = {"tss_auth_failed": "failed authentication",
                "tss_fail_limited": "came from a source over its authentication-failure limit",
                "tss_plain": "were not TSS", "tss_unknown_sdi": "named an unknown SDI",
                "tss_stale_epoch": "had a stale epoch", "tss_replay": "were replays",
                "tss_too_old": "were too old for the replay window",
                "tss_truncated": "were truncated", "tss_bad_header": "had a bad TSS header",
                "tss_trimmed_dropped": "were trimmed", "bad_crc": "had a bad CRC",
                "unsupported": "had an unsupported type", "io_rx_truncated": "were truncated"}


def _came_back(stats: dict, addr: str) -> str:
    """What a failed ``uet send`` says of the datagrams that came back: nothing, or how many
    and why they were dropped before the PDS took them (TSS, trailer and socket counters)."""
    got = stats.get("io_rx_datagrams", 0)
    if not got:
        return f"; nothing came back from {addr} (is a UET receiver serving there?)"
    drops = sorted(((n, k) for k in _WHY_DROPPED if (n := stats.get(k, 0))), reverse=True)
    if not drops:
        return "" if stats.get("rx_datagrams") else (
            f"; {got:,} datagrams came back from {addr} but none reached the PDS")
    head = (" but were dropped: " if not stats.get("rx_datagrams")
            else f", {sum(n for n, _ in drops):,} of them dropped: ")
    hint = (" (same --sd-key, --sdi and --tss-mode at both ends?)"
            if stats.get("tss_auth_failed") else "")
    return (f"; {got:,} datagrams came back from {addr}{head}"
            + ", ".join(f"{n:,} {_WHY_DROPPED[k]} ({k})" for n, k in drops) + hint)


def _tss_drops(stats: dict) -> str:
    """The TSS drops of a summary line: each counted under its own name (uet.tss.layer)."""
    drops = {k: v for k, v in stats.items() if k.startswith("tss_") and v
             and k not in ("tss_protected", "tss_accepted")}
    return "; tss " + (", ".join(f"{k[4:]} {v}" for k, v in sorted(drops.items())) or "no drops")


# ------------------------------------------------------------------------------------------------
# uet send
# ------------------------------------------------------------------------------------------------

def add_send_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", type=cliargs.peer, required=True, metavar="ADDR:PORT",
                   help=f"the receiver and the UET port (default {UET_UDP_PORT}), which this "
                        "sender receives on too, at its own address (A.1)")
    p.add_argument("file", nargs="?", help="file to send (- for stdin)")
    p.add_argument("--paths", type=cliargs.sockets, default=8, metavar="N",
                   help="entropy values, i.e. UDP source ports to spray over (default 8)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--timeout", type=cliargs.timeout, default=None, metavar="S",
                   help="give up after S seconds, exit status 3 (default none: wait until "
                        "every byte is acknowledged or the transport gives up)")
    p.add_argument("--message-size", type=cliargs.message_size, default=64 << 20, metavar="N",
                   help="bytes per message, at most 1GiB (default 64MiB); messages go one after "
                        "the other, and only one is in memory at a time")
    p.add_argument("--local", type=cliargs.ip_address, default=None, metavar="ADDR",
                   help="this sender's own address, where it receives at the UET port (default: "
                        "the first free of 127.0.0.2, 127.0.0.3, ... when --to is on loopback, "
                        "else the route's source address towards --to)")
    p.add_argument("--uet-port", type=cliargs.port, default=None, metavar="N",
                   help="the UET port, if not the one --to names")
    p.add_argument("--job", type=cliargs.job, default=0, help="SES job id (default 0)")
    cliopts.add_transfer_options(p, data=None, messages=False,
                                 mtu_where="the MTU of the interface the route to --to uses")
    add_cc_arguments(p)
    add_tss_arguments(p)
    cliargs.add_encap_arguments(p)
    cliopts.add_seed_argument(p, of="the --bytes data")
    cliopts.add_progress_argument(p)


def _jsonable(stats: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool, dict, list)) or v is None else str(v))
            for k, v in stats.items()}


class _ReadError(Exception):
    """The file ``uet send`` sends could not be read (the message says which and why)."""


class _Source:
    """What ``uet send`` sends, one message at a time: ``--message-size`` bytes read from the file
    or generated from ``--seed``, with the sha256 of everything taken so far. ``total`` is the
    size when known up front (a regular file, ``--bytes``), else None (a pipe)."""

    def __init__(self, args: argparse.Namespace):
        step = args.message_size
        self.name = "stdin" if args.file == "-" else args.file
        self.fh: BinaryIO | None = None
        self.total: int | None
        if args.bytes is not None:
            self.total = args.bytes
            self._pieces: Iterator[bytes] = seeded_chunks(args.seed, args.bytes, step)
        else:
            self.fh = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
            st = os.fstat(self.fh.fileno())
            self.total = st.st_size if stat.S_ISREG(st.st_mode) else None
            self._pieces = iter(lambda: self.fh.read(step), b"")
        self.hash = hashlib.sha256()
        self.taken = 0
        self._started = False

    def next(self) -> bytes | None:
        """The next message, None after the last; empty data is one empty message."""
        try:
            piece = next(self._pieces, None)
        except OSError as exc:
            raise _ReadError(f"cannot read {self.name}: {exc.strerror or exc}") from None
        if piece is None:
            if self._started:
                return None
            piece = b""
        self._started = True
        self.hash.update(piece)
        self.taken += len(piece)
        return piece

    def close(self) -> None:
        if self.fh is not None and self.fh is not sys.stdin.buffer:
            self.fh.close()


async def _send_main(args: argparse.Namespace, source: _Source, security: Any) -> int:
    import trio

    from ..ownaddr import LocalAddressError
    from .endpoint import SendFailed, TooBig, open_endpoint
    from .native_ip import RawDenied

    err = sys.stderr
    host, port = args.to
    port = args.uet_port or port  # the UET port (A.1)
    result: dict[str, Any] = {"ok": False, "bytes": source.total or 0, "wall_time_s": 0.0,
                              "goodput_MBps": 0.0, "packets_sent": 0, "retransmissions": 0,
                              "paths_used": 0, "sha256": None, "mode": args.mode,
                              "to": _fmt_addr(host, port), "messages": 0, "acked_bytes": 0,
                              "mtu": args.mtu, "ses_header": args.ses_header}
    progress = _Progress(source.total, args.progress if args.progress is not None else err.isatty())
    status = 0
    error = None
    extra = cc_fields(args)
    t_end = None
    ep_ref = None
    cc_info: dict[str, Any] | None = None
    acked = 0  # the bytes of the messages completed (their SES response came)
    current: tuple[int, int] | None = None  # the message in flight: (handle, size)
    pds_acked = 0  # and those the target's PDS acknowledged, answered or not (D.7)
    try:
        async with open_endpoint(None, paths=args.paths, peer=host, local=args.local,
                                 peer_port=port, spray=args.spray, security=security,
                                 mtu=args.mtu, ses_header=args.ses_header, encap=args.encap,
                                 ip_proto=args.ip_proto, **extra) as ep:
            ep_ref = ep
            result["local"] = _fmt_addr(*ep.address)
            mtu = ep.core.config.mtu
            with trio.move_on_after(args.timeout if args.timeout else float("inf")) as cs:
                async with trio.open_nursery() as nursery:
                    async def ticker() -> None:
                        while True:
                            sent = sum(ep.tx_data_by_port.values()) - ep.core.stats["retransmissions"]
                            progress.update(min(acked + max(0, sent * mtu - acked), source.taken))
                            await trio.sleep(0.2)

                    if progress.enabled:
                        nursery.start_soon(ticker)
                    try:
                        while (msg := await trio.to_thread.run_sync(source.next)) is not None:
                            h = ep.send_nowait(host, msg, mode=args.mode, job_id=args.job)
                            current = (h, len(msg))
                            await ep.wait(h)
                            current = None
                            acked += len(msg)
                            result["messages"] += 1
                            del msg  # one message in memory: drop it before reading the next
                        t_end = trio.current_time()
                    except TooBig as exc:  # IO-M1 of uet.io.engine: a usage error, exit 2
                        error, status = exc.reason, 2
                    except SendFailed as exc:
                        error = f"transfer failed: {exc.reason}"
                        if ep.io["rx_not_uet_port"]:
                            error += (f"; {_fmt_addr(host, port)} answered to our entropy ports, "
                                      f"not to the UET port {port} (facts A.1)")
                        else:
                            error += _came_back(ep.stats, _fmt_addr(host, port))
                        status = 1
                    except _ReadError as exc:
                        error = str(exc)
                        status = 1
                    nursery.cancel_scope.cancel()
            waiting = current is not None and ep.acked_not_answered(current[0])
            pds_acked = acked + (current[1] if waiting and current is not None else 0)
            if cs.cancelled_caught:
                of = f" of {source.total}" if source.total is not None else ""
                error = f"timed out after {args.timeout} s: {acked}{of} bytes acknowledged"
                if waiting:  # the target's PDS took the bytes, its SES never answered (D.7)
                    every = (f"all {pds_acked}" if pds_acked == source.total
                             else f"{pds_acked}{of}")
                    error = (f"timed out after {args.timeout} s: the PDS acknowledged {every} "
                             f"bytes, but no SES response (D.7) came for message "
                             f"{result['messages'] + 1}")
                status = 3
            if progress.enabled:
                progress.update(acked, force=True)
            progress.finish()
            cc_info = _cc_summary(args, ep)  # before the PDCs close
            first = ep.first_tx_time
            if t_end is not None and first is not None:
                wall = max(t_end - first, 1e-9)
                result["wall_time_s"] = round(wall, 6)
                result["goodput_MBps"] = round(acked / wall / 1e6, 3)
            if status:
                ep.skip_close = True  # nothing to close gracefully after a failure
    except (LocalAddressError, RawDenied) as exc:  # OWNADDR-O2 of uet.ownaddr, IO-N6 of .native_ip
        error = str(exc)
        status = 2
    except OSError as exc:
        error = f"socket error: {exc}"
        status = 1
    result["acked_bytes"] = pds_acked
    if ep_ref is not None:
        st = ep_ref.stats
        result["packets_sent"] = st.get("io_tx_datagrams", 0)
        result["retransmissions"] = st.get("retransmissions", 0)
        result["paths_used"] = st.get("paths_used", 0)
        result["nacks"] = st.get("nacks_rcvd", {})
        result["rto"] = st.get("rto", 0)
        result.update(cc_info or _cc_summary(args, ep_ref))
        result["tss"] = tss_summary(security)
        result["stats"] = _jsonable(st)
    result["ok"] = status == 0
    digest = source.hash.hexdigest()
    result["sha256"] = digest
    if status == 0:
        result["bytes"] = source.taken
    if error:
        result["error"] = error
        print(f"uet send: {error}", file=err, flush=True)
    else:
        print(f"uet send: {source.taken} bytes acknowledged in {result['wall_time_s']:.3f} s "
              f"({result['goodput_MBps']:.1f} MB/s, {result['paths_used']} paths, "
              f"{result['retransmissions']} retransmissions), sha256 {digest}", file=err, flush=True)
    if args.json:
        sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return status


def _security(args: argparse.Namespace, role: str) -> Any:
    """The TSS configuration; with ``--encap ip`` its AAD is F's native-IP form (addresses, the
    entropy header, the security header: ``--tss-aad entropy``)."""
    if args.encap == "ip":
        args.tss_aad = "entropy"
    return security_from_args(args, role=role)


def run_recv(args: argparse.Namespace) -> int:
    import trio

    try:
        security = _security(args, "server")
        args.mtu = cliargs.resolve_mtu(args.mtu, bind=args.bind[0], tss=security is not None,
                                       csig=bool(args.csig), native_ip=args.encap == "ip")
        out = _open_out(args)
    except cliargs.UsageError as exc:
        return exc.report("uet recv")
    from ..ownaddr import LocalAddressError
    from .native_ip import RawDenied

    try:
        return trio.run(_recv_main, args, out, security)
    except KeyboardInterrupt:
        return 0
    except (RawDenied, LocalAddressError) as exc:  # IO-N6 of uet.io.native_ip, OWNADDR-O2: exit 2
        print(f"uet recv: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"uet recv: {exc}", file=sys.stderr)
        return 1
    finally:
        if out is not None:
            out.close()


def run_send(args: argparse.Namespace) -> int:
    try:
        if (args.file is None) == (args.bytes is None):
            raise cliargs.UsageError("give a FILE or --bytes N (not both)")
        cliargs.check_same_family("--local", args.local, args.to[0], "--to")
        security = _security(args, "client")
        args.mtu = cliargs.resolve_mtu(args.mtu, peer=args.to[0], tss=security is not None,
                                       csig=bool(args.csig), native_ip=args.encap == "ip")
        try:
            source = _Source(args)
        except OSError as exc:
            raise cliargs.UsageError(f"cannot read {args.file}: {exc.strerror or exc}",
                                     hint=False) from None
    except cliargs.UsageError as exc:
        return exc.report("uet send")
    import trio

    try:
        return trio.run(_send_main, args, source, security)
    except KeyboardInterrupt:
        print("uet send: interrupted", file=sys.stderr)
        return 130
    finally:
        source.close()


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
    return cliargs.run_registered(register, argv)
