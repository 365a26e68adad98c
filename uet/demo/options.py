"""``uet demo``'s options: the transfer, path-model and congestion options it shares with ``uet
sim`` and the live commands (:mod:`uet.cliopts`: the same names, types and units), with the demo's
defaults, plus the options only a live run has.

The shared options differ from ``uet sim``'s where a live run differs (CLIOPTS-C1 to CLIOPTS-C3 of uet.cliopts):
``--rtt 0`` is a fabric without added delay, ``--mtu`` is at least 256 and its default comes from
the route, ``--entropies`` counts sockets. ``--rate``, ``--loss`` and ``--trim`` default to None
and :func:`resolve` fills them once it knows whether there is a fabric. ``uet sim``'s ``--trace``
has no live counterpart; its ``--pcap`` is ``--capture`` here (``--pcap`` still works).

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

from .. import cliargs, cliopts
from ..tss.options import add_tss_arguments

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


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``uet demo``'s options to ``p``."""
    cliopts.add_transfer_options(p, data=DEFAULT_BYTES,
                                 mtu_where="the MTU of the interface the route to --host uses")
    cliopts.add_path_model_options(
        p, rate=None, loss=None, trim=None, degrade=True,
        later={"rate": f"{DEFAULT_RATE_GBPS:g}: the window's bursts queue and get CE marks",
               "loss": f"{DEFAULT_LOSS}; 0 with --no-fabric",
               "trim": f"{DEFAULT_TRIM}; 0 with --no-fabric"})
    cliopts.add_cc_options(p, cc_says="; nscc and rccc take the rate of all paths (--rate x "
                                      "--paths, less --degrade-path) and --rtt, at least 1000 us "
                                      "(a live round trip's own cost); with --no-fabric 10 Gb/s "
                                      "and 1000 us; default fixed",
                           entropies="sockets",
                           csig_what="the fabric stamps a 4-byte tag ahead of every datagram it "
                                     "forwards, the receiver reflects it and the sender's --spray "
                                     "policy avoids paths it shows clearly worse")
    add_tss_arguments(p, own_key=True)
    cliopts.add_seed_argument(p)
    p.add_argument("--json", action="store_true",
                   help="print exactly one JSON object on stdout (tables and progress go to "
                        "stderr)")
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
    cliopts.add_progress_argument(p)
    p.add_argument("--quiet", "-q", action="store_true",
                   help="only the one line that says what happened: no per-path table or "
                        "summary on stderr (errors and the replay line still)")


def resolve(args: argparse.Namespace) -> None:
    """Fill the defaults that depend on ``--no-fabric`` in place; raises ValueError for an
    impairment asked of a run without a fabric."""
    if args.fabric:
        if args.encap == "ip" and args.csig:  # uet.fabric.iprelay FABRIC-V5
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
