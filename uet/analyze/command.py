"""``uet analyze FILE``: run the analysis and print it (issue 17).

stdout holds the readable report, or with ``--json`` exactly one JSON object (its keys:
:mod:`uet.analyze.report`), or with ``--ladder PDC`` the text ladder of that PDC (with ``--json``
the ladder's lines go into the object as ``"ladder": {"pdc": N, "lines": [...]}``); ``--svg
OUT.svg`` also writes the ladder as SVG; ``--refprov`` adds the verdict of the UEC reference
provider's receive rules (:mod:`uet.capture.refprov`) as a last section, or as ``"refprov"`` in
the JSON object. Exit status 0 whenever the file could be read, however
many violations it shows (a damaged record after readable frames is reported on stderr, and the
frames before it are analysed); 2 with one line on stderr when it cannot be read at all or an
option is wrong (a ``--ladder`` that names no PDC of the file included). A file without UET says
so and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

from .. import UET_UDP_PORT, cliargs
from ..capture.keys import add_capture_key, capture_key

# the analysis is imported by the command that runs it: ``register`` runs for every ``uet`` command

PROG = "uet analyze"
LADDER_WHAT = ("expected a PDC's index in the report (1, 2 ...) or ADDR:PDCID, e.g. 10.0.0.1:17 "
               "or [fd00::1]:0x11")


def run(args: argparse.Namespace) -> int:
    from .ladder import parse_spec

    spec = None
    if args.ladder is not None:
        try:
            spec = parse_spec(args.ladder)
        except ValueError:
            return cliargs.UsageError(f"argument --ladder: {args.ladder}: {LADDER_WHAT}").report(PROG)
    if args.max_payload is not None and not args.refprov:
        return cliargs.UsageError("argument --max-payload: goes with --refprov").report(PROG)
    if args.refprov and args.file == "-":
        return cliargs.UsageError("argument --refprov: reads the capture twice; give a file, "
                                  "not stdin").report(PROG)
    if args.svg is not None and spec is None:
        return cliargs.UsageError("argument --svg: draws the PDC that --ladder names; give "
                                  "--ladder PDC too").report(PROG)
    try:
        open_tss = capture_key(args)
    except cliargs.UsageError as exc:
        return exc.report(PROG)
    svg = None
    if args.svg is not None:
        try:
            svg = cliargs.open_output(args.svg, "w", encoding="utf-8")
        except cliargs.UsageError as exc:
            return exc.report(PROG)
    try:
        return _run(args, spec, svg, open_tss)
    finally:
        if svg is not None:
            svg.close()


def _drop(svg) -> None:
    """An SVG opened for a run that wrote nothing is removed again."""
    if svg is not None:
        svg.close()
        with contextlib.suppress(OSError):
            os.unlink(svg.name)


def _run(args: argparse.Namespace, spec: tuple | None, svg, open_tss: Any = None) -> int:
    from ..capture.pcap import CaptureError
    from .conversation import analyze
    from .intake import read_capture
    from .ladder import find_pdc, svg_ladder, text_ladder
    from .report import to_json, to_text

    try:
        intake = read_capture(args.file, tuple(args.port) if args.port else None,
                              open_tss=open_tss)
    except CaptureError as exc:
        _drop(svg)
        print(f"{PROG}: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    if intake.stopped:
        print(f"{PROG}: {intake.stopped}", file=sys.stderr)
    conv = analyze(intake.uet, intake.outside)
    report = to_json(intake, conv)
    ladder = None
    if spec is not None:
        try:
            pdc = find_pdc(conv.pdcs, spec)
        except ValueError as exc:
            _drop(svg)
            return cliargs.UsageError(f"argument --ladder: {args.ladder}: {exc}",
                                      hint=False).report(PROG)
        t0 = intake.t0 or 0.0
        ladder = text_ladder(pdc, t0)
        if svg is not None:
            try:
                svg.write(svg_ladder(pdc, t0))
                svg.flush()
            except OSError as exc:
                print(f"{PROG}: cannot write to {args.svg}: {exc.strerror or exc}", file=sys.stderr)
                return 1
            print(f"{PROG}: wrote {args.svg}", file=sys.stderr)
        report["ladder"] = {"pdc": pdc.index, "lines": ladder.splitlines()}
    refprov = None
    if args.refprov:
        from ..capture.refprov import check_capture

        refprov = check_capture(args.file, uet_port=(args.port or [UET_UDP_PORT])[0],
                                max_payload=args.max_payload, open_tss=open_tss)
        report["refprov"] = refprov.as_json()
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
    elif ladder is not None:
        sys.stdout.write(ladder)
    else:
        sys.stdout.write(to_text(report))
        if refprov is not None:
            sys.stdout.write("\n" + refprov.text())
    sys.stdout.flush()
    return 0


def register(subparsers: Any) -> None:
    """Add ``analyze`` to the ``uet`` command's subparsers."""
    an = subparsers.add_parser("analyze", help="read a capture as a conversation: PDCs, "
                                               "retransmissions, NACKs, trims, violations; a "
                                               "ladder diagram",
                               description="Find the UET frames of a pcap/pcapng capture (every "
                                           "link type uet decode reads; any UDP port: a payload "
                                           "that decodes as UET with a verifying CRC trailer, or "
                                           "that belongs to a PDC so found), group them into PDCs "
                                           "and report what the capture shows of each. --json "
                                           "prints one object: totals (frames, pdc_count, "
                                           "retransmissions, spurious_retransmissions, trimmed, "
                                           "nacks, violations ...) and pdcs, the list of PDCs (the "
                                           "count is pdc_count). Exit status 0 whenever the file "
                                           "could be read, 2 when it cannot.")
    an.add_argument("file", help="capture file, or - for stdin")
    an.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    an.add_argument("--port", type=cliargs.port, action="append", metavar="PORT",
                    help="only these UDP ports carry UET (repeatable; default: found on any port)")
    an.add_argument("--ladder", metavar="PDC",
                    help="print a ladder diagram of one PDC: its index in the report (1, 2 ...) "
                         "or ADDR:PDCID of either end")
    an.add_argument("--svg", metavar="OUT.svg", help="with --ladder: also write it as SVG")
    an.add_argument("--refprov", action="store_true",
                    help="also judge every frame by the UEC reference provider's receive rules "
                         "(facts A.1, A.3): sent to the UET port (the first --port, default "
                         "4793), DF and no IP fragments, only the SES headers it parses, the CRC "
                         "trailer with UDP checksum 0, each answer from its request's EV; "
                         "docs/interop.md")
    an.add_argument("--max-payload", type=cliargs.byte_count(1, 65535, "a payload size"),
                    metavar="N",
                    help="with --refprov: the fabric's payload per packet (the reference's "
                         "UET_MAX_PAYLOAD: 1024, 2048, 4096 or 8192); a request carrying more "
                         "is reported")
    add_capture_key(an)
    an.set_defaults(func=run)
