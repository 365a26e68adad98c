"""``uet sim``'s progress (uet/sim/progress.py): on stderr, never on stdout, throttled by the wall
clock; forced on with ``--progress``, on by default when stderr is a terminal, off with
``--no-progress``. No timing assertions: the throttle is tested with a clock the test moves, the
command with progress forced on (which always writes the run's last state)."""

from __future__ import annotations

import io
import json
import shlex

import pytest

from uet.sim.command import main
from uet.sim.fabric import FabricSimConfig, FabricSimulator
from uet.sim.progress import INTERVAL_S, Progress, line
from uet.sim.simulator import SimConfig, Simulator

SWITCHED = ["--topology", "leafspine:2,2,1", "--bytes", "64k", "--seed", "3"]
TWO_HOSTS = ["--bytes", "256k", "--loss", "0.01", "--seed", "3"]


def progress_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("uet sim: ") and " simulated" in ln]


def without_wall(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "wall_time_s"}


@pytest.mark.parametrize("argv, done", [(SWITCHED, "4 of 4 flows complete"),
                                        (TWO_HOSTS, "1 of 1 delivered")])
def test_forced_progress_goes_to_stderr_and_leaves_the_json_alone(capsys, argv, done):
    assert main(["--json", *argv]) == 0
    plain = capsys.readouterr()
    assert main(["--json", "--progress", *argv]) == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert len(lines) == 1 and not progress_lines(cap.out)  # stdout: the JSON object only
    assert without_wall(json.loads(lines[0])) == without_wall(json.loads(plain.out))
    shown = progress_lines(cap.err)
    assert shown and shown[-1].endswith(" s") and done in shown[-1], cap.err
    assert progress_lines(plain.err) == []  # not a terminal, not asked: none


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("flag, tty, on, forced", [
    ([], True, True, False), ([], False, False, False), (["--no-progress"], True, False, False),
    (["--progress"], False, True, True), (["--json"], True, True, False)])
def test_on_for_a_terminal_or_when_asked(flag, tty, on, forced):
    """Default: when stderr is a terminal, --json or not (stdout keeps the JSON alone)."""
    from uet import cliargs
    from uet.sim.command import add_arguments, progress_hook

    p = cliargs.Parser(prog="uet sim")
    add_arguments(p)
    hook = progress_hook(p.parse_args(flag), Tty() if tty else io.StringIO())
    assert (hook is not None) is on
    assert hook is None or hook.forced is forced


def test_the_replay_line_leaves_progress_out(capsys):
    rc = main(["--json", "--progress", "--bytes", "64k", "--paths", "2", "--fail-path", "0@0",
               "--fail-path", "1@0", "--seed", "7"])
    err = capsys.readouterr().err
    assert rc == 1
    words = shlex.split(err.split("replay with: ", 1)[1].splitlines()[0])
    assert words[:2] == ["uet", "sim"] and "--progress" not in words and "--seed" in words


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


SNAP = {"sim_time_s": 0.0012, "flows_complete": 3, "flows_failed": 0, "flows": 8,
        "ideal_s": 0.0004}


@pytest.mark.parametrize("forced", [False, True])
def test_throttle_one_line_per_interval_none_in_the_first(forced):
    out, clock = io.StringIO(), Clock()
    p = Progress(out, forced=forced, clock=clock)
    p(SNAP)
    clock.t += INTERVAL_S / 2
    p(SNAP)
    assert out.getvalue() == ""  # a run shorter than INTERVAL_S shows nothing while it runs
    clock.t += INTERVAL_S / 2
    p(SNAP)
    p(SNAP)  # the same instant: throttled
    assert out.getvalue() == line({**SNAP, "wall_s": INTERVAL_S}) + "\n"
    clock.t += 3 * INTERVAL_S
    p({**SNAP, "flows_complete": 6, "flows_failed": 2, "final": True})
    last = out.getvalue().splitlines()[-1]
    assert len(out.getvalue().splitlines()) == 2
    assert last == ("uet sim: 1.2 ms simulated (an ideal run ends at 0.4 ms), 6 of 8 flows "
                    "complete, 2 failed, 4 s")


@pytest.mark.parametrize("forced, want", [(False, ""), (True, "1 of 2 delivered")])
def test_a_short_run_writes_its_last_state_only_when_forced(forced, want):
    out = io.StringIO()
    p = Progress(out, forced=forced, clock=Clock())
    p({"sim_time_s": 1e-3, "data_packets": 5, "delivered": 1, "sent": 2, "final": True})
    assert want in out.getvalue() and (out.getvalue() == "") is (not forced)


def test_on_a_terminal_the_line_is_rewritten_in_place():
    out, clock = Tty(), Clock()
    p = Progress(out, forced=False, clock=clock)
    clock.t += INTERVAL_S
    p(SNAP)
    clock.t += INTERVAL_S
    p({**SNAP, "final": True})
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1


def test_the_simulators_call_the_hook_and_run_the_same_with_it(monkeypatch):
    """Every EVERY_EVENTS events (64 here: small runs) and once at the end (final); the hook
    only reads: the summary is the same with it (seeded runs)."""
    import uet.sim.fabric
    import uet.sim.simulator

    monkeypatch.setattr(uet.sim.simulator, "EVERY_EVENTS", 64)
    monkeypatch.setattr(uet.sim.fabric, "EVERY_EVENTS", 64)
    seen: list[dict] = []
    cfg = SimConfig(bytes=1 << 20, loss=0.01, seed=2)
    with_hook = Simulator(cfg, progress=seen.append).run()
    assert without_wall(with_hook) == without_wall(Simulator(cfg).run())
    assert seen[-1]["final"] and seen[-1]["delivered"] == 1 and len(seen) >= 2
    assert [s["sim_time_s"] for s in seen] == sorted(s["sim_time_s"] for s in seen)
    assert seen[-1]["data_packets"] == with_hook["data_packets"]

    fab: list[dict] = []
    fcfg = FabricSimConfig(topology="leafspine:2,2,1", traffic=("permutation", None),
                           flow_bytes=200_000, seed=2)
    r = FabricSimulator(fcfg, progress=fab.append).run()
    assert without_wall(r) == without_wall(FabricSimulator(fcfg).run())
    assert fab[-1]["final"] and fab[-1]["flows_complete"] == fab[-1]["flows"] == 4
    assert fab[-1]["flows_failed"] == 0
    assert fab[-1]["ideal_s"] == pytest.approx(r["ideal_fct_s"])
    assert len(fab) - 1 == sum(1 for s in fab if not s.get("final")) >= 1
