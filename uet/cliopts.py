"""The options the transfer commands share (``uet sim``, ``uet demo``, ``uet fabric``, ``uet send``,
``uet recv``), each declared once, with one type and one help text, in argument groups so that
``--help`` shows them grouped:

  transfer      --bytes --messages --mtu --mode --op --window --ses-header
  path model    --paths --rate --rtt --loss --trim --reorder --dup --corrupt --fail-path
                --degrade-path (what uet.net.link and uet.fabric.paths model)
  congestion    --cc --cc-rate --cc-rtt --spray --entropies --csig
  TSS           uet.tss.options.add_tss_arguments

A command takes the options it has with keyword arguments. What differs between commands is the
default (``uet demo`` moves 16 MiB, and resolves ``--rate``, ``--loss`` and ``--trim`` once it
knows whether there is a fabric: ``later`` gives the help's words for such a default) and, where
the commands mean different things, the range:

  CLIOPTS-C1  ``--rtt`` is a time of 0 or more (:func:`uet.cliargs.delay_us`) everywhere: ``uet fabric``
      and ``uet demo`` always took 0 (a fabric without added delay), ``uet sim`` took only a
      positive time; the simulator still refuses 0 after parsing (its NSCC and RCCC need a base
      RTT: uet.sim.command.check_rtt), with exit status 2 as before.
  CLIOPTS-C2  ``--mtu``: the simulator's is 1 to 16383, default 4096 (it has no interface to ask); the
      live commands' is 256 and up, default from the route (:func:`uet.cliargs.add_mtu_argument`).
  CLIOPTS-C3  ``--entropies``: the simulator's counts entropy values (default 64), ``uet demo``'s the
      sender's entropy sockets (at most 256, default one per path).
  CLIOPTS-C4  ``--bytes``: the simulator and the demo hold the data in memory (at most 4 GiB), ``uet
      send`` streams it (at most 1 TiB, default None: send a FILE).

The replay lines are built from the same declarations (:func:`uet.cliargs.replay_words`).
"""

from __future__ import annotations

import argparse
from typing import Any, Literal, Mapping

from . import cliargs
from .cliargs import fail_spec, fraction
from .cms.choice import CC_NAMES
from .cms.csig import TYPE_BY_NAME
from .multipath.spray import SELECTOR_KINDS

SIM_MTU = 4096  # CLIOPTS-C2: a simulation has no interface to ask


def add_transfer_options(p: Any, *, data: int | None, messages: bool = True,
                         mtu_where: str | None = None, ses_modes: tuple[str, ...] = (),
                         ops: tuple[str, ...] = ()) -> Any:
    """``--bytes`` (CLIOPTS-C4: ``data`` is the default of the held form, None the streamed one of
    ``uet send``), ``--messages``, ``--mtu`` (CLIOPTS-C2: the live form where ``mtu_where`` says which
    interface sets the default), ``--mode`` (``ses_modes``: the simulator's SES modes), ``--op``
    (``ops``), ``--window``, ``--ses-header``. Returns the group."""
    g = p.add_argument_group("transfer")
    if data is None:
        g.add_argument("--bytes", type=cliargs.size, default=None, metavar="N",
                       help="send N seeded pseudo-random bytes instead of a file (k/m/g suffixes)")
    else:
        g.add_argument("--bytes", type=cliargs.held_size, default=data,
                       help=f"bytes to transfer, at most 4GiB (default {data >> 20}MiB; k/m/g "
                            "suffixes)")
    if messages:
        g.add_argument("--messages", type=cliargs.messages, default=1,
                       help="split the bytes into this many messages (at most one per byte)")
    if mtu_where is None:
        g.add_argument("--mtu", type=cliargs.mtu, default=SIM_MTU,
                       help=f"payload bytes per packet, at most {cliargs.MAX_MTU} (default "
                            f"{SIM_MTU}: a simulation has no interface to ask; the reference "
                            "provider's sizes are 1024, 2048, 4096 and 8192)")
    else:
        cliargs.add_mtu_argument(g, where=mtu_where)
    g.add_argument("--mode", choices=("rud", "rod") + ses_modes, default="rud",
                   help="delivery mode (C.8): rud or rod (PDCs)"
                        + ("; rudi (--op write|read), uud (datagrams: --op send)" if ses_modes
                           else ""))
    if ops:
        g.add_argument("--op", choices=ops, default="send",
                       help="send: plain PDS messages; tsend/write/read/atomic: SES operations "
                            "(--messages of them; atomic: that many fetching SUMs), checked by "
                            "hash or model")
    g.add_argument("--window", type=cliargs.window, default=None,
                   help="fixed congestion window in bytes (default: 1.5 BDP in the simulator, "
                        "1MiB on a live endpoint)")
    cliargs.add_ses_header_argument(g)
    return g


def add_path_model_options(p: Any, *, paths: int | None = 4, rate: float | None = 100.0,
                           loss: float | None = 0.0, trim: float | None = 0.0,
                           later: Mapping[str, str] = {}, degrade: bool = False) -> Any:
    """The path model and its impairments, named and measured alike in the simulator and the live
    fabric. A default given as None is resolved by the command; ``later[dest]`` says what it
    becomes, for the help. ``degrade`` adds ``--degrade-path`` (the live fabric's)."""
    def says(dest: str, default: Any) -> str:
        return later.get(dest, f"{default:g}" if isinstance(default, float) else str(default))

    g = p.add_argument_group("path model and impairments")
    g.add_argument("--paths", type=cliargs.paths, default=paths, help="parallel paths (default 4)")
    g.add_argument("--rate", type=cliargs.rate, default=rate,
                   help=f"rate of each path in Gb/s (default {says('rate', rate)})")
    g.add_argument("--rtt", type=cliargs.delay_us, default=10.0,  # CLIOPTS-C1
                   help="base round-trip time of each path in microseconds, 0 or more (the "
                        "simulator: above 0); one-way delay rtt/2 (default 10)")
    g.add_argument("--loss", type=fraction, default=loss,
                   help="probability (0 to 1) that a packet is lost, per packet and path"
                        + (f" (default {later['loss']})" if "loss" in later else ""))
    g.add_argument("--trim", type=fraction, default=trim,
                   help="fraction (0 to 1) of data packets trimmed"
                        + (f" (default {later['trim']})" if "trim" in later else ""))
    g.add_argument("--reorder", type=fraction, default=0.0,
                   help="fraction (0 to 1) of packets delayed by up to one RTT (live: up to uet "
                        "fabric's --reorder-delay, by default max(RTT, 2 ms), as the relay's timers "
                        "resolve to about 1 ms)")
    g.add_argument("--dup", type=fraction, default=0.0,
                   help="fraction (0 to 1) of packets duplicated")
    g.add_argument("--corrupt", type=fraction, default=0.0,
                   help="fraction (0 to 1) of packets with a flipped bit")
    g.add_argument("--fail-path", type=fail_spec, action="append", default=[], metavar="I@T",
                   help="path I fails T microseconds after the start (us/ms/s suffix allowed, "
                        "e.g. 1@50ms; repeatable)")
    if degrade:
        g.add_argument("--degrade-path", type=cliargs.degrade_path_spec, action="append",
                       default=[], metavar="I:F",
                       help="path I runs at fraction F of --rate, e.g. 3:0.25 (repeatable)")
    return g


def add_cc_options(p: Any, *, cc: str | None = "fixed", cc_says: str = "",
                   spray: str | None = "rr", spray_says: str = "rr",
                   network: tuple[float, float] | None = None,
                   entropies: Literal["values", "sockets"] | None = None,
                   csig_what: str | None = None) -> Any:
    """``--cc`` (``cc_says``: what NSCC and RCCC are built for, and the default), ``--cc-rate``
    and ``--cc-rtt`` (``network``: their defaults, rate in Gb/s and RTT in microseconds, for the
    live endpoints, which have no fabric to read them from),
    ``--spray``, ``--entropies`` (CLIOPTS-C3) and ``--csig`` (``csig_what``: what it does here)."""
    g = p.add_argument_group("congestion control and multipath")
    g.add_argument("--cc", choices=CC_NAMES, default=cc,
                   help="congestion control: fixed (the --window), nscc (E.1) or rccc (E.2, "
                        "receiver credit: both ends need it)" + cc_says)
    if network is not None:
        rate, rtt = network
        g.add_argument("--cc-rate", type=cliargs.rate, default=rate,
                       metavar="GBPS",
                       help="nscc/rccc: the network's rate in Gb/s (default "
                            f"{rate:g}, loopback; through uet fabric its --rate x "
                            "--paths)")
        g.add_argument("--cc-rtt", type=cliargs.rtt, default=rtt, metavar="US",
                       help="nscc/rccc: the base round-trip time in microseconds (default "
                            f"{rtt:g}: what a live round trip costs on loopback)")
    g.add_argument("--spray", choices=SELECTOR_KINDS, default=spray,
                   help="entropy selection: rr (round-robin), random, single (one entropy value, "
                        "as ECMP), reps (REPS, E.5) or oblivious (every entropy value once per "
                        f"round, E.6); default {spray_says}")
    if entropies == "values":
        g.add_argument("--entropies", type=cliargs.entropies, default=64,
                       help="entropy values to spray over (default 64)")
    elif entropies == "sockets":
        g.add_argument("--entropies", type=cliargs.sockets, default=None,
                       help="entropy values (sender UDP source ports) to spray over (default: "
                            "one per path; with the fabric, entropy k is chosen to hash onto "
                            "path k mod paths)")
    if csig_what is not None:
        add_csig_argument(g, what=csig_what)
    return g


def add_csig_argument(p: Any, *, what: str) -> None:
    """``--csig TYPE`` (``what`` says what it does for this command)."""
    p.add_argument("--csig", choices=sorted(TYPE_BY_NAME), default=None, metavar="TYPE",
                   help="CSIG-style signalling (facts E.4), a signal type: abw, abw/c, delay "
                        "or nqd (default off); " + what)


def add_seed_argument(p: Any, *, default: int | None = 1, of: str | None = None) -> None:
    """``--seed``: ``of`` says what it seeds when that is not the whole run."""
    p.add_argument("--seed", type=cliargs.seed, default=default,
                   help=(f"seed of {of}, " if of else "") + "0 to 2^63-1 (default "
                        + ("random" if default is None else str(default)) + ")")


def add_progress_argument(p: Any) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
