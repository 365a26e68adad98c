"""The sweep's TOML spec and the runs it plans.

A spec names ``command`` (``"sim"`` or ``"compare"``), ``seeds`` (a list) and a ``[grid]`` table
(or several ``[[grid]]`` tables) whose keys are option names as on the command line
(``"--topology"``, ``"--ack-every-packet"``; ``scenario`` and ``file`` for compare's positional
arguments) and whose values are lists: the runs are the cross product of each grid x seeds, the
union over the grids. Optional: ``[options]`` (one value per option, for every run),
``run_timeout`` (seconds of wall clock; ``--run-timeout`` wins), ``run_cpu_limit`` (seconds of
CPU: a limit that a loaded machine does not stretch), ``merit`` (the figure the plots put against
each option) and, inside a ``[[grid]]``, its own ``seeds``, ``run_timeout`` and ``run_cpu_limit``.

A value ``true`` is a bare flag, ``false`` (or ``[]``) leaves the option out, a list inside the
list repeats the option (``--degrade-link``). Every run's command line is checked with the
subcommand's own parser before anything runs: a bad spec is one :class:`SpecError` naming the
key. A run's key hashes its command, its option words (in key order) and its seed, so the same
run has the same key whatever the order of the spec: that is what resuming matches.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable

COMMANDS = ("sim", "compare")
POSITIONAL = {"sim": (), "compare": ("scenario", "file")}
#: options the sweep sets itself (seed, --json) or that would write one file from every run
RESERVED = ("--seed", "--json", "--pcap", "--plot", "--trace", "--help", "-h")
TOP_KEYS = ("command", "seeds", "grid", "options", "run_timeout", "run_cpu_limit", "merit")
DEFAULT_MERIT = {"sim": "last_over_ideal", "compare": "designs.uet.last_fct_s"}
MAX_SEED = (1 << 63) - 1


class SpecError(ValueError):
    """A spec that cannot run: ``str()`` is one line naming the file and the key."""


@dataclass(frozen=True)
class Run:
    """One run: ``uet COMMAND ARGV`` (``argv`` ends with ``--seed N --json``)."""

    key: str
    command: str
    options: tuple[tuple[str, Any], ...]  # (spec key, value) in spec order: the row's columns
    seed: int
    argv: tuple[str, ...]
    timeout_s: float | None = field(default=None, compare=False)  # the spec's; not in the key
    cpu_s: float | None = field(default=None, compare=False)

    @property
    def replay(self) -> str:
        return shlex.join(("uet", self.command) + self.argv)


@dataclass
class Spec:
    path: str
    command: str
    runs: list[Run]
    columns: list[str]  # the option keys, first seen first
    run_timeout: float | None = None
    merit: str = ""
    grids: list[dict[str, list[Any]]] = field(default_factory=list)


def load(path: str) -> Spec:
    """Read and check ``path``; every run planned and its command line parsed."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not TOML: {exc}") from None
    return parse(doc, path=path)


def parse(doc: dict[str, Any], *, path: str = "SPEC") -> Spec:
    def bad(key: str, msg: str) -> SpecError:
        return SpecError(f"{path}: key {key!r}: {msg}")

    for k in doc:
        if k not in TOP_KEYS:
            raise bad(k, f"unknown; a spec has {', '.join(TOP_KEYS)}")
    command = doc.get("command")
    if command not in COMMANDS:
        raise bad("command", f"{command!r}: expected one of {', '.join(map(repr, COMMANDS))}")
    seeds = _seeds(doc.get("seeds"), "seeds", bad)
    timeout = _timeout(doc.get("run_timeout"), "run_timeout", bad)
    cpu = _timeout(doc.get("run_cpu_limit"), "run_cpu_limit", bad)
    merit = doc.get("merit", DEFAULT_MERIT[command])
    if not isinstance(merit, str) or not merit:
        raise bad("merit", f"{merit!r}: the name of a column of the results, e.g. "
                  f"{DEFAULT_MERIT[command]!r}")
    shared = doc.get("options", {})
    if not isinstance(shared, dict):
        raise bad("options", "a table of option = value")
    grids = doc.get("grid")
    if grids is None:
        raise bad("grid", "missing: a table of option = [values]")
    if isinstance(grids, dict):
        grids = [grids]
    elif not isinstance(grids, list) or not grids:
        raise bad("grid", "a table, or [[grid]] tables, of option = [values]")
    check = _Checker(command)
    runs: dict[str, Run] = {}
    columns: list[str] = []
    tables = []
    for i, grid in enumerate(grids):
        where = "grid" if len(grids) == 1 else f"grid[{i}]"
        if not isinstance(grid, dict):
            raise bad(where, "a table of option = [values]")
        grid = dict(grid)
        gseeds = _seeds(grid.pop("seeds"), f"{where}.seeds", bad) if "seeds" in grid else seeds
        gtimeout = _timeout(grid.pop("run_timeout", None), f"{where}.run_timeout", bad)
        gcpu = _timeout(grid.pop("run_cpu_limit", None), f"{where}.run_cpu_limit", bad)
        table: dict[str, list[Any]] = {}
        for k, v in shared.items():
            if k in grid:
                raise bad(f"options.{k}", f"also in {where}: give it in one place")
            table[k] = [v]
        for k, v in grid.items():
            if not isinstance(v, list) or not v:
                raise bad(f"{where}.{k}", f"{v!r}: a list of values, e.g. [{v!r}]")
            table[k] = v
        for k, vs in table.items():
            check.key(k, lambda m, k=k: bad(_origin(k, shared, where), m))
            for v in vs:
                _words(command, k, v, lambda m, k=k: bad(_origin(k, shared, where), m))
            if k not in columns:
                columns.append(k)
        tables.append(table)
        for combo in itertools.product(*table.values()):
            opts = tuple(zip(table, combo))
            for seed in gseeds:
                run = _plan(command, opts, seed, gtimeout or timeout, gcpu or cpu)
                err = check.argv(run.argv)
                if err is not None:
                    key = check.blame(err, [k for k, _ in opts])
                    raise bad(_origin(key, shared, where) if key else where,
                              f"{err} (in: {run.replay})")
                runs.setdefault(run.key, run)
    return Spec(path=path, command=command, runs=list(runs.values()), columns=columns,
                run_timeout=timeout, merit=merit,
                grids=tables)


def _origin(key: str, shared: dict[str, Any], where: str) -> str:
    return f"options.{key}" if key in shared else f"{where}.{key}"


def _timeout(v: Any, key: str, bad: Callable[[str, str], SpecError]) -> float | None:
    if v is not None and (type(v) not in (int, float) or not 0 < v <= 1e7):
        raise bad(key, f"{v!r}: a number of seconds above 0")
    return None if v is None else float(v)


def _seeds(v: Any, key: str, bad: Callable[[str, str], SpecError]) -> list[int]:
    if (not isinstance(v, list) or not v
            or not all(type(s) is int and 0 <= s <= MAX_SEED for s in v)):
        raise bad(key, f"{v!r}: a list of seeds, integers from 0 to 2^63-1, e.g. [1, 2, 3]")
    if len(set(v)) != len(v):
        raise bad(key, f"{v!r}: a seed appears twice")
    return list(v)


def _words(command: str, key: str, value: Any, fail: Callable[[str], SpecError]) -> list[str]:
    """The command-line words of one option value."""
    if key in POSITIONAL[command]:
        if not isinstance(value, str) or not value:
            raise fail(f"{value!r}: a string (the {key} argument)")
        return [value]
    if value is True:
        return [key]
    if value is False:
        return []
    if isinstance(value, list):
        return [w for item in value for w in _words(command, key, item, fail)]
    if type(value) in (int, float, str):
        return [key, repr(value) if type(value) is float else str(value)]
    raise fail(f"{value!r}: a string, number, true/false, or a list of them")


def _plan(command: str, opts: tuple[tuple[str, Any], ...], seed: int,
          timeout_s: float | None, cpu_s: float | None) -> Run:
    def never(m: str) -> SpecError:  # the values were checked before
        return SpecError(m)

    words = {k: _words(command, k, v, never) for k, v in opts}
    positional = [w for k in POSITIONAL[command] for w in words.get(k, [])]
    named = [w for k, _ in opts if k not in POSITIONAL[command] for w in words[k]]
    identity = [command, sorted([k, w] for k, w in words.items() if w), seed]
    key = hashlib.sha256(json.dumps(identity, separators=(",", ":")).encode()).hexdigest()[:16]
    argv = tuple(positional + named + ["--seed", str(seed), "--json"])
    return Run(key=key, command=command, options=opts, seed=seed, argv=argv, timeout_s=timeout_s,
               cpu_s=cpu_s)


class _Bad(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """The subcommand's parser, whose errors are raised (one line) instead of printed."""

    def error(self, message: str):  # type: ignore[override]
        raise _Bad(" ".join(message.splitlines()))


class _Checker:
    """Checks keys and whole command lines with the subcommand's own options."""

    def __init__(self, command: str):
        self.command = command
        p = _Parser(prog=f"uet {command}", add_help=False)
        if command == "sim":
            from ..sim.command import add_arguments

            add_arguments(p)
        else:
            from ..compare.command import add_arguments as add_compare

            add_compare(p)
        self.parser = p
        self.options = {s: a for a in p._actions for s in a.option_strings}

    def key(self, k: str, fail: Callable[[str], SpecError]) -> None:
        if k in POSITIONAL[self.command]:
            return
        if k in RESERVED:
            raise fail("set by uet sweep itself (seeds, --json) or would write one file from "
                       "every run")
        if k not in self.options:
            pos = f"; or {', '.join(POSITIONAL[self.command])}" if POSITIONAL[self.command] else ""
            raise fail(f"not an option of uet {self.command} (option names as on the command "
                       f"line, e.g. --topology{pos})")

    def argv(self, argv: tuple[str, ...]) -> str | None:
        try:
            ns, extra = self.parser.parse_known_args(list(argv))
        except _Bad as exc:
            return str(exc)
        if extra:
            return f"unrecognized arguments: {' '.join(extra)}"
        return None

    def blame(self, message: str, keys: list[str]) -> str | None:
        """The spec key a parser message is about (``argument --cc: ...``)."""
        for k in keys:
            action = self.options.get(k)
            names = action.option_strings if action else [k]
            dest = action.dest if action else k
            if any(f"argument {n}" in message or f"argument {n}/" in message for n in names):
                return k
            if k in POSITIONAL[self.command] and (k.upper() in message or dest in message):
                return k
        return None
