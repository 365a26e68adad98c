"""A ladder diagram of one PDC (``uet analyze --ladder``, ``--svg``; issue 17 item 2).

Two lanes, the initiator on the left and the target on the right; each frame of the PDC is an arrow
from its sender with its type, PSN and flags (SYN, AR, RETX, M), its frame number and its time
(microseconds since the capture's first frame), and notes: retransmissions with their verdict, trims
and the NACK that answers them, the frame each NACK answers, copies the network changed, and
violations (``! RULE kind``). Arrows: ``-`` requests, ACKs and copies, ``~`` a trimmed frame,
``=`` a NACK, ``.`` control. The SVG draws the same rows with lines and text elements, each kind
of frame in its colour, and a legend of the colours under the rows.
"""

from __future__ import annotations

import ipaddress
import math
from xml.sax.saxutils import escape

from .conversation import Event, Pdc

FILL = {"request": "-", "retx": "-", "copy": "-", "ack": "-", "trim": "~", "nack": "=",
        "control": "."}
#: what each colour of the SVG stands for, in the legend's order
MEANING = {"request": "request", "retx": "retransmission", "ack": "ACK", "nack": "NACK",
           "trim": "trimmed in the network", "copy": "copy seen again (duplicate, CE mark)",
           "control": "control"}
COLOR = {"request": "#1f5fbf", "retx": "#d97a00", "copy": "#777777", "ack": "#2e7d32",
         "trim": "#c62828", "nack": "#8e24aa", "control": "#555555"}


def parse_spec(s: str) -> tuple:
    """``--ladder``: a PDC's index in the report (``2``) or ``ADDR:PDCID`` (``10.0.0.1:17``,
    ``[fd00::1]:0x11``: either end's address with that end's PDCID). ValueError: neither."""
    t = s.strip()
    if t.isdigit():
        if int(t) < 1:
            raise ValueError(s)
        return ("index", int(t))
    addr, sep, pdcid = t.rpartition(":")
    if not sep:
        raise ValueError(s)
    addr = addr[1:-1] if addr.startswith("[") and addr.endswith("]") else addr
    try:
        return ("id", str(ipaddress.ip_address(addr)), int(pdcid, 0))
    except ValueError:
        raise ValueError(s) from None


def find_pdc(pdcs: list[Pdc], spec: tuple) -> Pdc:
    """The PDC ``spec`` (from :func:`parse_spec`) names; ValueError says why there is none."""
    if spec[0] == "index":
        if not 1 <= spec[1] <= len(pdcs):
            raise ValueError(f"there is no PDC {spec[1]}: the capture has {len(pdcs)}")
        return pdcs[spec[1] - 1]
    _, addr, pdcid = spec
    hits = [p for p in pdcs if (p.initiator, p.ipdcid) == (addr, pdcid)
            or (p.target, p.tpdcid) == (addr, pdcid)]
    if not hits:
        raise ValueError(f"no PDC has {addr} with PDCID {pdcid}")
    if len(hits) > 1:
        raise ValueError(f"{addr}:{pdcid} names PDCs {', '.join(str(p.index) for p in hits)}: "
                         "give the index")
    return hits[0]


def time_format(t0: float) -> str:
    """Microseconds since ``t0`` with the decimals a timestamp near ``t0`` holds: a float keeps
    about 16 digits, so an epoch time (1.75e9 s) has no sub-microsecond digits left; a simulator's
    virtual time (from 0) keeps nanoseconds."""
    ulp_us = abs(t0) * 2.0 ** -52 * 1e6
    digits = 3 if ulp_us <= 0 else max(0, min(3, math.floor(-math.log10(ulp_us))))
    return f".{digits}f"


def _title(pdc: Pdc) -> str:
    tp = pdc.tpdcid if pdc.tpdcid is not None else "?"
    return (f"PDC {pdc.index}: initiator {pdc.initiator} (PDCID {pdc.ipdcid}) <-> target "
            f"{pdc.target} (PDCID {tp}), {pdc.mode or 'mode unknown'}")


def _arrow(e: Event, width: int) -> str:
    f = FILL[e.style]
    run = f * (width - len(e.label) - 5)
    return (f"|{f * 2} {e.label} {run}>|" if e.forward else f"|<{run} {e.label} {f * 2}|")


def text_ladder(pdc: Pdc, t0: float) -> str:
    left, right = f"{pdc.initiator} (initiator)", f"{pdc.target} (target)"
    width = max([40, len(left) + len(right) + 2] + [len(e.label) + 9 for e in pdc.events])
    out = [_title(pdc),
           f"{'frame':>6}  {'time (us)':>12}  {left}{' ' * (width + 2 - len(left) - len(right))}"
           f"{right}"]
    fmt = ">12" + time_format(t0)
    for e in pdc.events:
        notes = f"  {'; '.join(e.notes)}" if e.notes else ""
        out.append(f"{e.frame:>6}  {(e.t - t0) * 1e6:{fmt}}  {_arrow(e, width)}{notes}")
    return "\n".join(out) + "\n"


def svg_ladder(pdc: Pdc, t0: float) -> str:
    """The same rows as :func:`text_ladder`, as an SVG document (lines and text elements)."""
    xl, xr, top, dy = 240, 700, 74, 24
    rows = top + dy * (len(pdc.events) + 1)
    height = rows + 34  # the legend's row
    width = 1280
    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="12">',
             "<defs>"]
    for style, color in COLOR.items():
        parts.append(f'<marker id="arrow-{style}" viewBox="0 0 10 10" refX="10" refY="5" '
                     f'markerWidth="8" markerHeight="8" orient="auto-start-reverse">'
                     f'<path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>')
    parts.append("</defs>")
    parts.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>')
    parts.append(f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(_title(pdc))}</text>')
    parts.append(f'<text x="10" y="{top - 24}">frame / time (us)</text>')
    for x, name in ((xl, f"{pdc.initiator} (initiator)"), (xr, f"{pdc.target} (target)")):
        parts.append(f'<text x="{x}" y="{top - 24}" text-anchor="middle" font-weight="bold">'
                     f"{escape(name)}</text>")
        parts.append(f'<line x1="{x}" y1="{top - 14}" x2="{x}" y2="{rows - 6}" stroke="black" '
                     'stroke-width="2"/>')
    fmt = time_format(t0)
    for i, e in enumerate(pdc.events):
        y = top + dy * i + dy // 2
        color = COLOR[e.style]
        x1, x2 = (xl, xr) if e.forward else (xr, xl)
        dash = ' stroke-dasharray="6 3"' if e.style in ("trim", "copy") else ""
        parts.append(f'<text x="10" y="{y + 4}">{e.frame} / {(e.t - t0) * 1e6:{fmt}}</text>')
        parts.append(f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" '
                     f'stroke-width="1.5"{dash} marker-end="url(#arrow-{e.style})"/>')
        parts.append(f'<text x="{(xl + xr) // 2}" y="{y - 4}" text-anchor="middle" '
                     f'fill="{color}">{escape(e.label)}</text>')
        if e.notes:
            parts.append(f'<text x="{xr + 14}" y="{y + 4}" fill="{color}">'
                         f"{escape('; '.join(e.notes))}</text>")
    parts.append(_legend(rows + 18))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _legend(y: int) -> str:
    """One row under the ladder: a sample arrow line in each colour (dashed as drawn) and what
    it stands for."""
    out = ['<g id="legend">', f'<text x="10" y="{y + 4}" font-weight="bold">colours:</text>']
    x = 90
    for style, meaning in MEANING.items():
        dash = ' stroke-dasharray="6 3"' if style in ("trim", "copy") else ""
        out.append(f'<line x1="{x}" y1="{y}" x2="{x + 28}" y2="{y}" stroke="{COLOR[style]}" '
                   f'stroke-width="3"{dash}/>')
        out.append(f'<text x="{x + 34}" y="{y + 4}" fill="{COLOR[style]}">{escape(meaning)}</text>')
        x += 34 + 8 * len(meaning) + 18
    out.append("</g>")
    return "\n".join(out)
