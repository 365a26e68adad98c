"""The sweep's results in ``DIR``: the journal and the table.

``DIR/runs.jsonl`` is the journal: one JSON row per finished run, appended and flushed as each
run ends, so an interrupted sweep loses nothing that finished and a rerun (matching rows by the
run's key, uet.sweep.spec) runs only what is missing. ``DIR/results.csv`` and
``DIR/results.parquet`` are written from it: one row per run of the spec, in the spec's order.

A row: ``run`` (the key), ``command``, one column per spec option (its value as in the spec),
``seed``, ``status`` (ok, failed, timeout), ``error``, ``wall_s``, ``replay`` (the exact command
line), then every figure of the run's ``--json`` summary, nested objects flattened with dots
(``designs.uet.last_fct_s``). A list (sim's ``flows``, compare's ``flow_fct_s``) stays a list in
the journal and is JSON text in the CSV and the Parquet file. A summary figure with the name of a
column above is dropped when it holds the same value (sim's ``seed``) and kept as ``json.NAME``
when not.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterable

from .spec import Run

JOURNAL = "runs.jsonl"
CSV = "results.csv"
PARQUET = "results.parquet"
FIXED = ("run", "command")
AFTER = ("seed", "status", "error", "wall_s", "replay")
STATUSES = ("ok", "failed", "timeout")


def make_row(run: Run, outcome: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run.key, "command": run.command}
    row.update(run.options)
    row.update(seed=run.seed, status=outcome["status"], error=outcome["error"],
               wall_s=outcome["wall_s"], replay=run.replay)
    for k, v in flatten(outcome.get("summary") or {}).items():
        if k in row:
            if row[k] == v:
                continue
            k = f"json.{k}"
        row[k] = v
    return row


def flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


class Journal:
    """``DIR/runs.jsonl``: the rows so far, by run key (the last row of a key wins)."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory)
        self.path = self.dir / JOURNAL
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        row = json.loads(line)
                    except ValueError:  # a line cut short when a sweep was killed mid-write
                        continue
                    if isinstance(row, dict) and isinstance(row.get("run"), str):
                        self.rows[row["run"]] = row

    def append(self, row: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")
            fh.flush()
        self.rows[row["run"]] = row

    def table(self, runs: Iterable[Run]) -> list[dict[str, Any]]:
        return [self.rows[r.key] for r in runs if r.key in self.rows]


def columns(rows: list[dict[str, Any]], options: list[str]) -> list[str]:
    cols = list(FIXED) + [c for c in options if c not in FIXED + AFTER] + list(AFTER)
    seen = set(cols)
    for row in rows:
        for k in row:
            if k not in seen:
                seen.add(k)
                cols.append(k)
    return cols


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def write_csv(path: Path, rows: list[dict[str, Any]], cols: list[str]) -> None:
    tmp = path.with_suffix(".csv.part")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for row in rows:
            w.writerow([_cell(row.get(c)) for c in cols])
    os.replace(tmp, path)


def write_parquet(path: Path, rows: list[dict[str, Any]], cols: list[str]) -> None:
    """One typed column per field: bool, int64, float64 or string; a column whose values mix
    types (an option given as false and as text) or hold lists is JSON text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for c in cols:
        vals = [row.get(c) for row in rows]
        kinds = {type(v) for v in vals if v is not None}
        if kinds == {bool}:
            arrays[c] = pa.array(vals, pa.bool_())
        elif kinds == {int} and all(v is None or -(1 << 63) <= v < (1 << 63) for v in vals):
            arrays[c] = pa.array(vals, pa.int64())
        elif kinds and kinds <= {int, float}:
            arrays[c] = pa.array([None if v is None else float(v) for v in vals], pa.float64())
        elif kinds <= {str}:
            arrays[c] = pa.array(vals, pa.string())
        else:
            arrays[c] = pa.array([None if v is None else _cell(v) for v in vals], pa.string())
    tmp = path.with_suffix(".parquet.part")
    pq.write_table(pa.table(arrays), tmp)
    os.replace(tmp, path)


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The CSV table back, every cell as text (tools/bench_cc.py renders from it)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
