"""The flows of a many-host ``uet sim`` run: which host sends how many bytes to which, and when.

A run has ``hosts`` hosts numbered ``0 .. hosts-1``. ``--traffic`` names the flows (parsed by
:func:`parse_traffic`, made by :func:`make_flows`):

* ``incast:N``: hosts 1..N each send ``flow_bytes`` to host 0 (N + 1 hosts needed).
* ``permutation``: every host sends ``flow_bytes`` to one other host and receives from one other
  host: a random derangement drawn from the seed, uniform over all derangements.
* ``all-to-all``: every host sends ``flow_bytes`` to every other host, n(n-1) flows.
* a file: an htsim connection matrix (the format of the UEC's htsim, uet-htsim), so that an
  experiment moves between the tools::

      Nodes 4
      Connections 2
      1->0 id 1 start 0 size 65536
      2->0 id 2 start 1000000 size 65536

  ``start`` is in picoseconds, ``size`` in bytes. Blank lines, whitespace around and between the
  words, ``#`` comment lines and the fields of a flow in any order are accepted; htsim's triggers,
  failures and priorities are not (a flow here starts at a time). :func:`write_matrix` writes the
  strict form htsim reads.

The flows of a pattern all start at 0 and ``flow_id`` is their index. htsim numbers flows from 1
and refuses id 0, so a matrix's ``id I`` is ``flow_id + 1``, both ways.

Every problem is a :class:`TrafficError` of one readable line; a matrix's problem names the file
and the line (``flows.cm line 7: expected 'SRC->DST id I start T size B', got '1->2 id 3'``).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
from dataclasses import dataclass
from typing import IO, Any, Iterable, Sequence

MAX_FLOWS = 1 << 20            # all-to-all on 1024 hosts (1,047,552 flows) fits; more is a typo
MAX_NODES = 1 << 20
MAX_FLOW_ID = (1 << 32) - 1    # htsim's flow ids are 32 bits; flow_id is one less
MAX_FLOW_BYTES = 1 << 40       # as uet.cliargs.MAX_BYTES: more than any run moves in a day
MAX_START_S = 1e7              # as uet.cliargs.MAX_SECONDS: about 4 months
MAX_MATRIX_FILE_BYTES = 256 << 20  # a full 1M-flow matrix is about 50MB
PS_PER_S = 10 ** 12
PATTERNS = ("incast:N", "permutation", "all-to-all")
FLOW_LINE = "SRC->DST id I start T size B"
_EXAMPLES = ("incast:N (e.g. incast:8), permutation, all-to-all, or the path of an htsim "
             "connection matrix file")


@dataclass(frozen=True, slots=True)  # slots: an all-to-all holds a million of them
class Flow:
    """``bytes`` from host ``src`` to host ``dst``, starting ``start_s`` seconds into the run."""

    src: int
    dst: int
    bytes: int
    start_s: float = 0.0
    flow_id: int = 0


@dataclass(frozen=True)
class Matrix:
    """An htsim connection matrix: the node count it was written for and its flows, in file
    order."""

    nodes: int
    flows: list[Flow]


class TrafficError(ValueError):
    """A traffic spec or matrix that cannot run; str() is one readable line."""


# --- --traffic ----------------------------------------------------------------------------------

_INCAST = re.compile(r"incast:([0-9]{1,8})")


def parse_traffic(spec: str) -> tuple[str, Any]:
    """The argparse type of ``--traffic``: ``("incast", N)``, ``("permutation", None)``,
    ``("all-to-all", None)`` or ``("matrix", PATH)``. The patterns are taken first: a matrix file
    named ``permutation`` is ``./permutation``. The file is read by :func:`make_flows`, which
    also knows the host count."""
    if spec in ("permutation", "all-to-all"):
        return spec, None
    if spec == "incast" or spec.startswith("incast:"):
        m = _INCAST.fullmatch(spec)
        if not m or not 1 <= int(m.group(1)) <= MAX_FLOWS:
            raise argparse.ArgumentTypeError(
                f"{spec}: incast:N takes N senders from 1 to {MAX_FLOWS}, e.g. incast:8")
        return "incast", int(m.group(1))
    if spec and os.path.isfile(spec):
        return "matrix", spec
    raise argparse.ArgumentTypeError(f"{spec or repr(spec)}: not a pattern or a file; expected "
                                     f"{_EXAMPLES}")


def make_flows(spec: tuple[str, Any], *, hosts: int, flow_bytes: int, seed: int) -> list[Flow]:
    """The flows of ``spec`` (from :func:`parse_traffic`) on ``hosts`` hosts. Patterns send
    ``flow_bytes`` per flow, all starting at 0; a matrix has its own sizes and start times, and
    must have been written for at most ``hosts`` nodes."""
    kind, arg = spec
    if hosts < 1:
        raise TrafficError(f"a run needs at least 1 host, got {hosts}")
    if kind == "matrix":
        m = read_matrix(arg)
        if m.nodes > hosts:
            raise TrafficError(f"{arg} is for Nodes {m.nodes}; the topology has {hosts} hosts")
        if not m.flows:
            raise TrafficError(f"{arg} has no flows (Connections 0)")
        return m.flows
    if not 1 <= flow_bytes <= MAX_FLOW_BYTES:
        raise TrafficError(f"flow size {flow_bytes}: a byte count from 1 to {MAX_FLOW_BYTES}")
    if kind == "incast":
        n = arg
        if not 1 <= n <= MAX_FLOWS:
            raise TrafficError(f"incast:{n}: from 1 to {MAX_FLOWS} senders, e.g. incast:8")
        if hosts < n + 1:
            raise TrafficError(f"incast:{n} needs {n + 1} hosts; the topology has {hosts}")
        pairs: Iterable[tuple[int, int]] = ((s, 0) for s in range(1, n + 1))
    elif kind in ("permutation", "all-to-all"):
        if hosts < 2:
            raise TrafficError(f"{kind} needs at least 2 hosts; the topology has {hosts}")
        if kind == "permutation":
            pairs = enumerate(_derangement(hosts, random.Random(seed)))
        else:
            if hosts * (hosts - 1) > MAX_FLOWS:
                raise TrafficError(f"all-to-all on {hosts} hosts is {hosts * (hosts - 1)} flows; "
                                   f"at most {MAX_FLOWS}")
            pairs = ((s, d) for s in range(hosts) for d in range(hosts) if s != d)
    else:
        raise TrafficError(f"unknown traffic {kind!r}; expected {_EXAMPLES}")
    return [Flow(s, d, flow_bytes, 0.0, i) for i, (s, d) in enumerate(pairs)]


def _derangement(n: int, rng: random.Random) -> list[int]:
    """A permutation of ``range(n)`` without a fixed point, uniform over all of them (n >= 2).
    Rejection: about 1/e of the shuffles are derangements, so this takes e shuffles on average;
    Sattolo's shuffle would never retry but only makes single cycles."""
    perm = list(range(n))
    while True:
        rng.shuffle(perm)
        if all(d != s for s, d in enumerate(perm)):
            return perm


# --- htsim connection matrices ------------------------------------------------------------------

_INT = re.compile(r"-?[0-9]{1,20}")
_TIME = re.compile(r"-?[0-9]{1,20}(?:\.[0-9]{0,20})?(?:[eE][+-]?[0-9]{1,3})?")
_PAIR = re.compile(r"(-?[0-9]{1,20})->(-?[0-9]{1,20})")
_CANONICAL = re.compile(r"[ \t]*([0-9]{1,7})->([0-9]{1,7})[ \t]+id[ \t]+([0-9]{1,10})[ \t]+"
                        r"start[ \t]+([0-9]{1,20})[ \t]+size[ \t]+([0-9]{1,13})[ \t\r]*")
_FIELDS = ("id", "start", "size")
_UNSUPPORTED = ("Triggers", "Failures", "trigger", "failure", "send_done_trigger",
                "recv_done_trigger", "prio", "addon")


def read_matrix(path: str) -> Matrix:
    """The htsim connection matrix in the file ``path`` (see the module docstring); any problem
    is a :class:`TrafficError` naming the file and the 1-based line."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_MATRIX_FILE_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise TrafficError(f"cannot read {path or repr(path)}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > MAX_MATRIX_FILE_BYTES:
        raise TrafficError(f"{path}: more than {MAX_MATRIX_FILE_BYTES >> 20}MiB; a matrix of "
                           f"{MAX_FLOWS} flows is smaller")
    # A byte that is not UTF-8 becomes U+FFFD, which no rule accepts: the error names its line.
    # Lines end at "\n" only (str.splitlines also breaks at \v, \f, \x1c...: other line numbers
    # than an editor shows).
    return _parse_matrix(raw.decode("utf-8", "replace").split("\n"), path)


def _parse_matrix(lines: Sequence[str], path: str) -> Matrix:
    header: dict[str, tuple[int, int]] = {}  # "Nodes"/"Connections" -> (value, line number)
    flows: list[Flow] = []
    ids: dict[int, int] = {}  # file id -> line number
    nodes = conns = -1  # known once both header lines are read
    max_ps = MAX_START_S * PS_PER_S
    for n, line in enumerate(lines, 1):
        if nodes >= 0 and (m := _CANONICAL.fullmatch(line)):
            # The form write_matrix writes, a million lines in a few seconds; anything out of
            # range takes the general way below, which says what is wrong.
            src, dst, fid, ps, size = map(int, m.groups())
            if (src < nodes and dst < nodes and src != dst and 1 <= fid <= MAX_FLOW_ID
                    and fid - 1 not in ids and ps <= max_ps and 1 <= size <= MAX_FLOW_BYTES
                    and len(flows) < conns):
                ids[fid - 1] = n
                flows.append(Flow(src, dst, size, ps / PS_PER_S, fid - 1))
                continue
        where = f"{path} line {n}"
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in ("Nodes", "Connections"):
            key = words[0]
            if flows:
                raise TrafficError(f"{where}: {key!r} after the first flow; the header comes "
                                   "first")
            if key in header:
                raise TrafficError(f"{where}: a second {key!r} line (the first is line "
                                   f"{header[key][1]})")
            lo, hi = (1, MAX_NODES) if key == "Nodes" else (0, MAX_FLOWS)
            v = _int(words[1], lo, hi) if len(words) == 2 else None
            if v is None:
                raise TrafficError(f"{where}: expected '{key} N' with N from {lo} to {hi}, got "
                                   f"{_shown(line)}")
            header[key] = (v, n)
            if len(header) == 2:
                nodes, conns = header["Nodes"][0], header["Connections"][0]
            continue
        if "->" not in words[0]:
            if words[0] in _UNSUPPORTED:
                raise TrafficError(f"{where}: htsim's {words[0]!r} is not supported here (flows "
                                   f"start at a time): expected '{FLOW_LINE}', got "
                                   f"{_shown(line)}")
            raise TrafficError(f"{where}: expected '{FLOW_LINE}', got {_shown(line)}")
        for key in ("Nodes", "Connections"):
            if key not in header:
                raise TrafficError(f"{where}: a flow before the '{key} N' line")
        if len(flows) == conns:
            raise TrafficError(f"{where}: more flows than Connections {conns} (line "
                               f"{header['Connections'][1]})")
        f = _flow(words, line, where, nodes)
        if f.flow_id in ids:
            raise TrafficError(f"{where}: id {f.flow_id + 1} again (first on line "
                               f"{ids[f.flow_id]})")
        ids[f.flow_id] = n
        flows.append(f)
    last = max(len(lines) - (len(lines) > 1 and not lines[-1]), 1)  # "a\n" is one line
    for key in ("Nodes", "Connections"):
        if key not in header:
            raise TrafficError(f"{path} line {last}: the file ends without a '{key} N' line")
    conns, at = header["Connections"]
    if len(flows) != conns:
        raise TrafficError(f"{path} line {at}: Connections {conns} but {len(flows)} flow "
                           f"line{'s' * (len(flows) != 1)}")
    return Matrix(header["Nodes"][0], flows)


def _flow(words: list[str], line: str, where: str, nodes: int) -> Flow:
    """One ``SRC->DST id I start T size B`` line (the fields in any order, as htsim reads them)."""
    for key in words[1::2]:
        if key in _UNSUPPORTED:
            raise TrafficError(f"{where}: htsim's {key!r} is not supported here (flows start at "
                               f"a time): expected '{FLOW_LINE}', got {_shown(line)}")
    pair = _PAIR.fullmatch(words[0])
    bad = TrafficError(f"{where}: expected '{FLOW_LINE}', got {_shown(line)}")
    if not pair or len(words) != 1 + 2 * len(_FIELDS):
        raise bad
    fields: dict[str, str] = {}
    for key, value in zip(words[1::2], words[2::2]):
        if key not in _FIELDS or key in fields:
            raise bad
        fields[key] = value
    src, dst = (_int(pair.group(i), 0, nodes - 1) for i in (1, 2))
    if src is None or dst is None:
        raise TrafficError(f"{where}: {words[0]}: nodes are numbered 0 to {nodes - 1} (Nodes "
                           f"{nodes})")
    if src == dst:
        raise TrafficError(f"{where}: {words[0]}: a flow from a node to itself")
    fid = _int(fields["id"], 1, MAX_FLOW_ID)
    if fid is None:
        raise TrafficError(f"{where}: id {_tok(fields['id'])}: a flow id from 1 to "
                           f"{MAX_FLOW_ID} (htsim refuses 0)")
    ps = _time_ps(fields["start"])
    if ps is None:
        raise TrafficError(f"{where}: start {_tok(fields['start'])}: a time in picoseconds "
                           f"from 0 to {MAX_START_S * PS_PER_S:.0e} ({MAX_START_S:.0e} s)")
    size = _int(fields["size"], 1, MAX_FLOW_BYTES)
    if size is None:
        raise TrafficError(f"{where}: size {_tok(fields['size'])}: a byte count from 1 to "
                           f"{MAX_FLOW_BYTES}")
    return Flow(src, dst, size, ps / PS_PER_S, fid - 1)


def _int(s: str, lo: int, hi: int) -> int | None:
    """``s`` as a decimal integer from ``lo`` to ``hi``, else None (ASCII digits only: int()
    would also take "1_000", "+5" and other scripts' digits)."""
    if not _INT.fullmatch(s):
        return None
    v = int(s)
    return v if lo <= v <= hi else None


def _time_ps(s: str) -> int | float | None:
    """A start time in picoseconds (htsim reads it as a float) from 0 to MAX_START_S, else
    None; whole numbers stay exact integers."""
    if _INT.fullmatch(s):
        v: int | float = int(s)
    elif _TIME.fullmatch(s):
        v = float(s)
    else:
        return None
    return v if 0 <= v <= MAX_START_S * PS_PER_S else None


def _tok(word: str) -> str:
    """A bad word of a line as the message shows it: cut short, quoted if not printable."""
    w = word if len(word) <= 24 else word[:21] + "..."
    return w if w.isprintable() else repr(w)


def _shown(line: str) -> str:
    """The offending line, quoted on one line and cut short."""
    s = line.strip()
    return repr(s if len(s) <= 80 else s[:77] + "...")


def write_matrix(path_or_file: str | os.PathLike[str] | IO[str], nodes: int,
                 flows: Sequence[Flow]) -> None:
    """Write ``flows`` on ``nodes`` nodes as an htsim connection matrix that htsim and
    :func:`read_matrix` read back: ``id`` is ``flow_id + 1``, ``start`` whole picoseconds (a
    start between two picoseconds is rounded). A file object is written to and left open.
    Flows that could not be read back raise :class:`TrafficError` before anything is written."""
    if not 1 <= nodes <= MAX_NODES:
        raise TrafficError(f"Nodes {nodes}: from 1 to {MAX_NODES}")
    if len(flows) > MAX_FLOWS:
        raise TrafficError(f"{len(flows)} flows; at most {MAX_FLOWS}")
    out = [f"Nodes {nodes}\n", f"Connections {len(flows)}\n"]
    seen: set[int] = set()
    for i, f in enumerate(flows):
        problem = _problem(f, nodes)
        if problem is None and f.flow_id in seen:
            problem = f"flow_id {f.flow_id} twice"
        if problem:
            raise TrafficError(f"flow {i} ({f.src}->{f.dst}): {problem}")
        seen.add(f.flow_id)
        out.append(f"{f.src}->{f.dst} id {f.flow_id + 1} start {round(f.start_s * PS_PER_S)} "
                   f"size {f.bytes}\n")
    if hasattr(path_or_file, "write"):
        path_or_file.writelines(out)
    else:
        with open(path_or_file, "w", encoding="ascii") as fh:
            fh.writelines(out)


def _problem(f: Flow, nodes: int) -> str | None:
    """What keeps ``f`` out of a matrix of ``nodes`` nodes (None: nothing)."""
    if not all(type(v) is int for v in (f.src, f.dst, f.bytes, f.flow_id)):
        return "src, dst, bytes and flow_id must be integers"
    if not (0 <= f.src < nodes and 0 <= f.dst < nodes):
        return f"nodes are numbered 0 to {nodes - 1}"
    if f.src == f.dst:
        return "a flow from a node to itself"
    if not 1 <= f.bytes <= MAX_FLOW_BYTES:
        return f"bytes {f.bytes}: from 1 to {MAX_FLOW_BYTES}"
    if not 0 <= f.flow_id < MAX_FLOW_ID:
        return f"flow_id {f.flow_id}: from 0 to {MAX_FLOW_ID - 1}"
    if not (math.isfinite(f.start_s) and 0.0 <= f.start_s <= MAX_START_S):
        return f"start_s {f.start_s}: from 0 to {MAX_START_S:.0e} s"
    return None
