"""What ``uet demo`` tells a person on stderr: one line that says what happened, then the per-path
table (units in its headers, a one-line legend), then the summary in plain words.

* :func:`headline`: the bytes, the paths, the addresses (sender -> fabric -> receiver), whether
  the data arrived intact (SHA-256 of the bytes sent, which every delivered message matched,
  :func:`uet.demo.run._verify`), the time and the goodput; a run that is not ok says so first,
  in capitals, with the first failure.
* :func:`table_rows` / :func:`format_table`: the per-path table (or, without a fabric, the data
  packets per entropy port).
* :func:`summary_rows`: the summary as (label, value) rows: ``yes``/``no`` for booleans, ``none``
  for nothing, ``TRIMMED 17`` for a map, no Python reprs; abbreviations spelt out (``rto``,
  ``tlp``).

``--json`` is not made here: stdout's JSON object is the run's summary as it is (tests pin its
keys and values). Pure: no clock, no I/O beyond the ``out`` given to :func:`show`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence, TextIO

from ..words import plain

SHA_HEX = 16  # hex digits of the SHA-256 the headline shows

FABRIC_COLUMNS = ("path", "state", "entropy", "data pkts", "packets", "answers", "trims", "CE",
                  "drops", "dups", "reord", "corrupt", "max q KiB", "mean q KiB")
RATE_COLUMN = "rate Gb/s"
CSIG_COLUMN = "csig s"
LEGEND = ("packets: sender -> receiver, all kinds; answers: ACKs and NACKs back from the "
          "receiver; trims: cut to 256 bytes (NACK TRIMMED); CE: ECN congestion marks; reord: "
          "reordered; q: the path's queue toward the receiver")
CSIG_LEGEND = "; csig s: the mean CSIG bucket the fabric stamped (0-31)"
MODES = {"rud": "reliable, unordered", "rod": "reliable, ordered"}


def data_sha256(data: bytes) -> str:
    """The SHA-256 of the bytes a run sent, in hex (what the headline shows)."""
    return hashlib.sha256(data).hexdigest()


def size(n: int) -> str:
    """``n`` bytes for a person: 16 MiB, 1.5 MiB, 256 KiB, 100 bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.4g} {unit}"
    return f"{n} byte" + ("" if n == 1 else "s")


def _seconds(s: float) -> str:
    return f"{s:.3g} s" if s >= 0.001 else f"{s * 1e6:.3g} µs"


def _route(summary: dict[str, Any]) -> str:
    a = summary.get("addresses") or {}
    host = lambda hp: hp.rsplit(":", 1)[0] if hp else "?"  # noqa: E731  (the port is one: A.1)
    hops = [host(a.get("sender"))]
    if a.get("fabric"):
        hops.append(f"fabric {host(a['fabric'])}")
    hops.append(host(a.get("receiver")))
    port = (summary.get("ports") or {}).get("receiver")
    return " -> ".join(hops) + (f" (UET port {port})" if port is not None else "")


def intact(summary: dict[str, Any]) -> bool:
    """Every message delivered and each equal, by SHA-256, to one sent (in order for ROD): what
    :func:`uet.demo.run._verify` checks, read back from the summary (a run may have its data
    intact and still not be ok: a PDC that did not close, a send never acknowledged)."""
    if summary.get("ok"):
        return True
    failures = summary.get("failures") or []
    if len(failures) >= 5:  # the summary keeps 5: what _verify said may be cut off
        return False
    from .run import WRONG_BYTES

    return (summary.get("delivered") == summary.get("messages")
            and not any(w in f for f in failures for w in WRONG_BYTES))


def headline(summary: dict[str, Any], sha256: str | None) -> str:
    """One line: what was sent, over what, where to, whether it arrived intact, in what time and
    how fast; a run that is not ok starts with NOT (the data) or FAILED (the data intact, the
    run not: its first failure follows)."""
    n, msgs = summary["bytes"], summary.get("messages", 1)
    what = size(n) + (f" in {msgs} messages" if msgs > 1 else "")
    paths = summary.get("paths", 0)
    over = (f"{paths} path{'s' * (paths != 1)}" if summary.get("fabric")
            else f"{paths} entropy port{'s' * (paths != 1)} (no fabric)")
    where = f"{what} sent over {over} on {_route(summary)}"
    why = (summary.get("failures") or ["the run is not ok"])[0]
    if intact(summary):
        wall = summary.get("wall_time_s") or 0.0
        digest = f"SHA-256 {sha256[:SHA_HEX]}..." if sha256 else "checked by SHA-256"
        line = (f"{where}, received intact ({digest}) in {_seconds(wall)}, "
                f"{summary.get('goodput_MBps', 0):.3g} MB/s ({summary.get('goodput_gbps', 0):.3g} "
                f"Gb/s)")
        return line if summary.get("ok") else f"FAILED: {line}, but {why}"
    got = summary.get("delivered")
    count = ("" if got is None or "messages delivered" in why else
             f"{got} of {msgs} message{'s' * (msgs != 1)} delivered; ")
    return f"NOT received intact: {where}; {count}{why}"


def table_rows(summary: dict[str, Any]) -> tuple[tuple[str, ...], list[list[str]]]:
    """The per-path table: a header and rows of text."""
    pp = summary["per_path"]
    if not summary["fabric"]:
        head = ("entropy port", "data pkts")
        rows = [[str(p["entropy_port"]), str(p["data_packets"])] for p in pp]
        rows.append(["all", str(sum(p["data_packets"] for p in pp))])
        return head, rows
    rows = []
    keys = ("data_packets", "packets", "answers", "trimmed", "ce_marked", "dropped", "duplicated",
            "reordered", "corrupted")
    csig = bool(summary.get("csig"))
    head = FABRIC_COLUMNS + ((RATE_COLUMN, CSIG_COLUMN) if csig else (RATE_COLUMN,))
    for p in pp:
        ent = ",".join(map(str, p["entropy_ports"][:3])) + ("..." if len(p["entropy_ports"]) > 3 else "")
        row = [str(p["path"]), "FAILED" if p["failed"] else "up", ent or "-",
               *(str(p[k]) for k in keys), f"{p.get('max_queue_bytes', 0) / 1024:.0f}",
               f"{p.get('mean_queue_bytes', 0) / 1024:.1f}", f"{p.get('rate_gbps', 0):g}"]
        if csig:
            b = p.get("csig_mean_bucket")
            row.append("-" if b is None else f"{b:.1f}")
        rows.append(row)
    total = ["all", "", "", *(str(sum(p[k] for p in pp)) for k in keys),
             f"{max((p.get('max_queue_bytes', 0) for p in pp), default=0) / 1024:.0f}",
             f"{sum(p.get('mean_queue_bytes', 0) for p in pp) / 1024:.1f}",
             f"{sum(p.get('rate_gbps', 0) for p in pp):g}"]
    rows.append(total + ([""] if csig else []))
    return head, rows


def legend(summary: dict[str, Any]) -> str:
    """The table's one-line legend ("" without a fabric: the table says it all)."""
    if not summary["fabric"]:
        return ""
    return LEGEND + (CSIG_LEGEND if summary.get("csig") else "")


def format_table(summary: dict[str, Any]) -> str:
    head, rows = table_rows(summary)
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    line = lambda cells: "  ".join(c.rjust(w[i]) for i, c in enumerate(cells))  # noqa: E731
    return "\n".join([line(head), *(line(r) for r in rows)]) + "\n"


def _window(w: dict[str, Any] | None) -> str:
    if not w:
        return "none"
    return (f"min {size(w['min'])}, mean {size(int(w['mean']))}, last {size(w['final'])} "
            f"({w['samples']} samples)")


#: (key, label) of the summary, in order; a key the run does not have is left out
LABELS: tuple[tuple[str, str], ...] = (
    ("ok", "ok (all intact and acknowledged, in time)"),
    ("addresses", "addresses (ADDRESS:UET port)"),
    ("bytes", "bytes"), ("messages", "messages"), ("mode", "delivery mode"),
    ("mtu", "payload per packet (bytes)"), ("ses_header", "SES header"),
    ("fabric", "through the fabric"), ("cc", "congestion control"), ("spray", "spraying"),
    ("csig", "congestion signal (CSIG)"), ("wall_time_s", "time"), ("goodput_gbps", "goodput"),
    ("packets_sent", "packets sent"), ("retransmissions", "retransmissions"),
    ("spurious_retransmissions", "needless retransmissions (receiver had them)"),
    ("trimmed", "trimmed"), ("dropped", "dropped"), ("ecn_marked", "CE-marked (ECN)"),
    ("corrupted", "corrupted"), ("duplicated", "duplicated"), ("reordered", "reordered"),
    ("bad_crc", "bad CRC, discarded"), ("nacks", "NACKs by code"),
    ("rto", "retransmission timeouts (rto)"), ("tlp", "tail loss probes (tlp)"),
    ("paths_used", "paths used"), ("paths", "paths"), ("entropies", "entropy ports"),
    ("cwnd_bytes", "sender's window"), ("credit_granted", "credit granted (rccc)"),
    ("csig_selector", "CSIG selector"), ("socket_drops", "kernel socket drops"),
    ("failures", "failures"), ("seed", "seed"),
)


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary in plain words, as (label, value) rows."""
    rows = []
    for key, label in LABELS:
        if key not in summary:
            continue
        v = summary[key]
        if key == "bytes":
            text = f"{v} ({size(v)})" if v >= 1024 else str(v)
        elif key == "mode":
            text = f"{v} ({MODES[v]})" if v in MODES else plain(v)
        elif key in ("wall_time_s", "goodput_gbps") and not summary.get("wall_time_s"):
            text = "none (not every message arrived)"
        elif key == "wall_time_s":
            text = _seconds(v) + " (first datagram sent to last message delivered)"
        elif key == "goodput_gbps":
            text = f"{v:.6g} Gb/s ({summary.get('goodput_MBps', 0):g} MB/s)"
        elif key == "cwnd_bytes":
            text = _window(v)
        elif key == "credit_granted" and v is None:
            continue  # only rccc grants credit
        else:
            text = plain(v)
        rows.append((label, text))
    return rows


def show(summary: dict[str, Any], out: TextIO, *, sha256: str | None,
         table: bool = True) -> None:
    """The headline, then (``table``) the per-path table, its legend and the summary, on ``out``:
    drawn with rich when it is installed and ``out`` is a terminal, else plain text (a file or a
    pipe gets the same columns whatever is installed, for a script that reads them)."""
    first = f"uet demo: {headline(summary, sha256)}"
    tty = hasattr(out, "isatty") and out.isatty()
    try:
        if not table or not tty:
            raise ImportError  # plain text
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        out.write(first + "\n")
        if table:
            out.write(format_table(summary))
            if legend(summary):
                out.write(legend(summary) + "\n")
            _plain_rows(summary_rows(summary), out)
        out.flush()
        return
    console = Console(file=out)
    console.print(first, markup=False, highlight=False, soft_wrap=True)  # one line
    head, rows = table_rows(summary)
    t = Table(title="uet demo: per path" if summary["fabric"] else "uet demo: per entropy port",
              caption=escape(legend(summary)) or None)
    for h in head:
        t.add_column(h, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(*map(escape, r))  # an IPv6 address in brackets is not markup
    console.print(t)
    s = Table(show_header=False)
    s.add_column(justify="right")
    s.add_column()
    for label, text in summary_rows(summary):
        s.add_row(escape(label), escape(text))
    console.print(s)


def _plain_rows(rows: Sequence[tuple[str, str]], out: TextIO) -> None:
    width = max((len(label) for label, _ in rows), default=0)
    for label, text in rows:
        out.write(f"{label:>{width}}: {text}\n")
