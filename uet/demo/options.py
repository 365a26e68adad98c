"""``uet demo``'s options: ``uet sim``'s transfer and impairment options, taken from
:func:`uet.sim.command.add_arguments` (so the two commands never drift apart), with the demo's
defaults, plus the options only a live run has.

How the sim's definitions are reused without editing :mod:`uet.sim`: ``add_arguments`` is run
against a recorder that keeps each ``add_argument`` call; the calls are then replayed on the demo's
parser with a few keyword arguments changed (defaults, help text, and types where a live run
differs: ``--rtt 0`` is a fabric without added delay, ``--entropies`` counts sockets). Options the
demo does not support live (``--trace``) are left out; ``--pcap`` becomes ``--capture`` (``--pcap``
still works).

What only a live run adds beyond ``uet sim``'s paths:N options: ``--cc`` (fixed, nscc, rccc:
uet.cms.choice), ``--spray`` with every kind of :data:`uet.multipath.SELECTOR_KINDS`, ``--csig``
(the relay stamps CSIG tags, uet.fabric.relay; the endpoints strip and reflect them) and
``--degrade-path I:F`` (the fabric's per-path rate, uet.fabric.command).

NSCC and RCCC need the network's rate and base RTT (uet.cms.choice): the rate is the sum of the
fabric's paths' rates (``--rate`` x ``--paths``, less what ``--degrade-path`` takes), as ``uet sim
--topology paths:N`` uses ``rate x paths``; the base RTT is ``--rtt``, but at least
``LIVE_BASE_RTT_US`` (see :mod:`uet.demo.run`): what two Python endpoints and the relay add to
every round trip on loopback, which the configured fabric delay does not include. With
``--no-fabric`` there is no fabric rate: ``NO_FABRIC_RATE_GBPS`` and ``LIVE_BASE_RTT_US``, the
loopback defaults (documented in :mod:`uet.demo.run`).
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import cliargs
from ..cms.choice import CC_NAMES
from ..fabric.command import add_csig_arguments, add_degrade_argument
from ..multipath.spray import SELECTOR_KINDS

DEFAULT_BYTES = 16 << 20
# A default run shows every mechanism: mild random loss and trimming, and a per-path rate low
# enough that the window's bursts queue in the fabric above kmin (64 KiB), so some packets are
# CE-marked (measured: 15-70 marks per 16 MiB run; none at 0.5-1 Gb/s). 4 x 0.25 Gb/s (125 MB/s)
# is well above what one process moving sender, fabric and receiver achieves (30-45 MB/s), so the
# rate itself does not limit the goodput.
DEFAULT_LOSS = 0.002
DEFAULT_TRIM = 0.01
DEFAULT_RATE_GBPS = 0.25
DEFAULT_TIMEOUT = 60.0
IMPAIRMENTS = ("loss", "trim", "reorder", "dup", "corrupt")

# what the demo changes in the sim's definitions (by dest); None = leave the option out
_OVERRIDES: dict[str, dict[str, Any] | None] = {
    "bytes": {"default": DEFAULT_BYTES,
              "help": f"bytes to transfer, at most 4GiB (default {DEFAULT_BYTES >> 20}MiB; k/m/g "
                      "suffixes)"},
    "rtt": {"type": cliargs.delay_us,
            "help": "base round-trip time of each fabric path in microseconds, 0 or more "
                    "(default 10)"},
    "rate": {"default": None,
             "help": f"rate of each fabric path in Gb/s (default {DEFAULT_RATE_GBPS:g}: the "
                     "window's bursts queue and get CE marks)"},
    "loss": {"default": None,
             "help": f"random loss per packet per path (default {DEFAULT_LOSS}; 0 with --no-fabric)"},
    "trim": {"default": None,
             "help": f"fraction of data packets trimmed (default {DEFAULT_TRIM}; 0 with --no-fabric)"},
    "reorder": {"help": "fraction of packets delayed by up to max(RTT, 2 ms) (the relay's timers "
                        "resolve to about 1 ms)"},
    "fail_path": {"help": "path I fails T microseconds after the fabric starts (us/ms/s suffix "
                          "allowed, e.g. 1@50ms; repeatable)"},
    "entropies": {"default": None, "type": cliargs.sockets,
                  "help": "entropy values (sender UDP source ports) to spray over (default: one "
                          "per path; with the fabric, entropy k is chosen to hash onto path k mod "
                          "paths)"},
    "window": {"help": "fixed send window in bytes (default: the live endpoint's, 1MiB)"},
    "mtu": {"type": cliargs.payload_mtu, "default": None, "metavar": "N",
            "help": cliargs.MTU_HELP.format(where="the MTU of the interface the route to --host "
                                                  "uses (loopback: 8192)")},
    "spray": {"choices": SELECTOR_KINDS,
              "help": "entropy selection over the sender's entropy ports: rr (round-robin, the "
                      "default), random, single (one port), reps (REPS, E.5) or oblivious (every "
                      "port once per round, E.6)"},
    "json": {"help": "print exactly one JSON object on stdout (tables and progress go to stderr)"},
    "pcap": None,   # replaced by --capture below
    "trace": None,  # a ladder of events is a simulator feature
}


class _Recorder:
    """Stands in for an ArgumentParser: keeps the ``add_argument`` calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def add_argument(self, *names: str, **kw: Any) -> None:
        self.calls.append((names, kw))

    def add_argument_group(self, *args: Any, **kw: Any) -> "_Recorder":
        return self  # the demo lists the options without their groups


def _dest(names: tuple, kw: dict) -> str:
    if "dest" in kw:
        return kw["dest"]
    longs = [n for n in names if n.startswith("--")]
    return (longs[0] if longs else names[0]).lstrip("-").replace("-", "_")


def sim_arguments() -> list[tuple[tuple, dict]]:
    """``uet sim``'s option definitions as (names, keyword arguments) pairs."""
    from ..sim.command import add_arguments

    rec = _Recorder()
    add_arguments(rec)  # type: ignore[arg-type]
    return rec.calls


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``uet demo``'s options to ``p``."""
    for names, kw in sim_arguments():
        dest = _dest(names, kw)
        if dest in _OVERRIDES and _OVERRIDES[dest] is None:
            continue
        kw = dict(kw, **(_OVERRIDES.get(dest) or {}))
        p.add_argument(*names, **kw)
    p.add_argument("--cc", choices=CC_NAMES, default="fixed",
                   help="congestion control: fixed (the --window, the default), nscc (E.1) or "
                        "rccc (E.2, receiver credit); nscc and rccc take the rate of all paths "
                        "(--rate x --paths, less --degrade-path) and --rtt, at least 1000 us (a "
                        "live round trip's own cost); with --no-fabric 10 Gb/s and 1000 us")
    add_degrade_argument(p)
    add_csig_arguments(p, what="the fabric stamps a 4-byte tag ahead of every datagram it "
                               "forwards, the receiver reflects it and the sender's --spray "
                               "policy avoids paths it shows clearly worse")
    p.add_argument("--no-fabric", dest="fabric", action="store_false",
                   help="no relay: the sender sends straight to the receiver over its entropy "
                        "ports (no impairments; the figure to compare with other transports)")
    cliargs.add_encap_arguments(p)  # ip: the relay too (uet.fabric.iprelay)
    p.add_argument("--capture", "--pcap", dest="capture", metavar="FILE.pcap",
                   help="write every datagram the fabric forwards, both directions, as a tap "
                        "between the fabric and the receiver sees them, with wall-clock "
                        "timestamps (Ethernet pcap)")
    p.add_argument("--host", type=cliargs.ip_address, default="127.0.0.1", metavar="ADDR",
                   help="the receiver's address (default 127.0.0.1); the fabric and the sender "
                        "take the next free loopback addresses at its UET port (::1 runs over "
                        "IPv6 and needs ::2 and ::3: ip -6 addr add ::2/128 dev lo)")
    p.add_argument("--timeout", type=cliargs.timeout, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"give up (and report failure) after S seconds (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no per-path table or summary on stderr (errors and the replay line still)")


def resolve(args: argparse.Namespace) -> None:
    """Fill the defaults that depend on ``--no-fabric`` in place; raises ValueError for an
    impairment asked of a run without a fabric."""
    if args.fabric:
        if args.encap == "ip" and args.csig:  # uet.fabric.iprelay V5
            raise ValueError("--csig: the native-IP relay carries no CSIG tags; give --encap udp")
        if args.loss is None:
            args.loss = DEFAULT_LOSS
        if args.trim is None:
            args.trim = DEFAULT_TRIM
        if args.rate is None:
            args.rate = DEFAULT_RATE_GBPS
        return
    asked = [f"--{n}" for n in IMPAIRMENTS if getattr(args, n)]
    if args.fail_path:
        asked.append("--fail-path")
    if args.degrade_path:
        asked.append("--degrade-path")
    if args.csig:
        asked.append("--csig")
    if args.capture:
        asked.append("--capture")
    if asked:
        raise ValueError(f"{', '.join(asked)}: needs the fabric (drop --no-fabric)")
    args.loss = args.trim = 0.0
    if args.rate is None:
        args.rate = DEFAULT_RATE_GBPS
