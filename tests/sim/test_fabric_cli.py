"""``uet sim`` with many hosts (``--topology leafspine:... | fattree:...``, uet/sim/command.py): bad
command lines are exit 2 and one readable line (two with the ``try`` hint), good ones one JSON
object, a failed run its replay line. Run in this process through :func:`uet.sim.command.main`.

Facts rows: incast/permutation/matrix traffic (E.6's htsim experiments), REPS and oblivious
spraying (E.5, E.6), trimming (C.6)."""

from __future__ import annotations

import json
import shlex

import pytest

import uet.sim.command
import uet.sim.fabric
from uet.sim.command import main
from uet.sim.traffic import Flow, write_matrix

HINT = "try 'uet sim --help'\n"
LINK_HELP = "(hosts are h0..., switches as uet sim --help names them)"


class Ran(Exception):
    """Raised by the stubs: the command got as far as running a simulation."""


@pytest.fixture
def no_runs(monkeypatch):
    """A bad command line must be refused before any simulation runs (building the fabric is
    allowed: that is where a traffic or link that does not fit is found)."""
    def ran(*a: object, **kw: object) -> None:
        raise Ran()

    monkeypatch.setattr(uet.sim.command, "Simulator", ran)
    monkeypatch.setattr(uet.sim.fabric.FabricSimulator, "run", ran)


def run(argv: list[str] | str, capsys) -> tuple[int | str, str, str]:
    if isinstance(argv, str):
        argv = shlex.split(argv)
    try:
        rc: int | str = main(argv)
    except Ran:
        rc = "started running"
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def usage(message: str) -> str:
    return f"uet sim: error: {message}\n{HINT}"


def without_wall(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "wall_time_s"}


# --- bad command lines: exit 2, one line (and the hint), nothing run -----------------------------

BAD = [
    # the topology spec itself (argparse type: the hint follows)
    ("--topology fattree:3", usage(
        "argument --topology: 'fattree:3': K is an even number of switch ports, at least 2, "
        "e.g. fattree:8")),
    ("--topology foo:1", usage(
        "argument --topology: 'foo:1': a topology is paths:N, leafspine:HOSTS_PER_TOR,TORS,SPINES "
        "or fattree:K")),
    # options of the other kind of topology
    ("--topology leafspine:17,1,1 --loss 0.1", usage(
        "argument --loss: applies to --topology paths:N only")),
    ("--topology fattree:4 --fail-path 1@5", usage(
        "argument --fail-path: applies to --topology paths:N only")),
    ("--topology leafspine:17,1,1 --messages 2", usage(
        "argument --messages: applies to --topology paths:N only")),
    ("--topology paths:4 --traffic incast:2", usage(
        "argument --traffic: applies to --topology leafspine or fattree only")),
    ("--topology paths:4 --fail-link h0-t0@5", usage(
        "argument --fail-link: applies to --topology leafspine or fattree only")),
    ("--topology paths:2 --ecn-ramp 0.1,0.9", usage(
        "argument --ecn-ramp: applies to --topology leafspine or fattree only")),
    ("--topology paths:2 --no-trim", usage(
        "argument --no-trim: applies to --topology leafspine or fattree only (paths:N trims only "
        "as --trim says)")),
    ("--topology paths:4 --paths 8", usage("argument --paths: 8 contradicts --topology paths:4")),
    # link, ramp and fraction syntax (refused whatever the topology)
    ("--topology fattree:4 --degrade-link a0-c0:0", usage(
        "argument --degrade-link: a0-c0:0: expected LINK:FRACTION, a link by its two ends and the "
        "fraction of its rate left, e.g. a0-c0:0.25")),
    ("--topology fattree:4 --degrade-link a0-c0:1.5", usage(
        "argument --degrade-link: a0-c0:1.5: expected LINK:FRACTION, a link by its two ends and "
        "the fraction of its rate left, e.g. a0-c0:0.25")),
    ("--topology fattree:4 --degrade-link foo", usage(
        "argument --degrade-link: foo: expected LINK:FRACTION, a link by its two ends and the "
        "fraction of its rate left, e.g. a0-c0:0.25")),
    ("--topology fattree:4 --fail-link x", usage(
        "argument --fail-link: x: expected LINK@TIME, a link by its two ends and when it fails, "
        "e.g. e0-a1@100 (µs) or e0-a1@1ms")),
    ("--topology fattree:4 --fail-link e0-a1@-1", usage(
        "argument --fail-link: e0-a1@-1: expected LINK@TIME, a link by its two ends and when it "
        "fails, e.g. e0-a1@100 (µs) or e0-a1@1ms")),
    ("--topology fattree:4 --ecn-ramp 0.8,0.2", usage(
        "argument --ecn-ramp: 0.8,0.2: expected LO,HI, the queue fractions where ECN marking "
        "starts and where it marks all, e.g. 0.2,0.8")),
    ("--topology fattree:4 --ecn-ramp 0.5", usage(
        "argument --ecn-ramp: 0.5: expected LO,HI, the queue fractions where ECN marking starts "
        "and where it marks all, e.g. 0.2,0.8")),
    # modes: flows between many hosts are SENDs over rud or rod
    ("--topology leafspine:4,2,1 --mode uud", usage(
        "argument --mode: uud: flows between many hosts are SENDs over rud or rod")),
    ("--topology leafspine:4,2,1 --mode rudi --op write", usage(
        "argument --op: applies to --topology paths:N only")),
    # traffic that does not fit the topology: found when the fabric is built, no hint
    ("--topology leafspine:4,1,1 --traffic incast:8",
     "uet sim: argument --traffic: incast:8 needs 9 hosts; the topology has 4\n"),
    ("--topology leafspine:1,1,1 --traffic permutation",
     "uet sim: argument --traffic: permutation needs at least 2 hosts; the topology has 1\n"),
]


@pytest.mark.parametrize("line,expected", BAD, ids=[line for line, _ in BAD])
def test_bad_command_line_is_exit_2_and_one_line(line, expected, capsys, no_runs):
    rc, out, err = run(line, capsys)
    assert (rc, out, err) == (2, "", expected)
    assert "Traceback" not in err


def _matrix(tmp_path, text: str) -> str:
    path = tmp_path / "flows.cm"
    path.write_text(text)
    return str(path)


def test_matrix_with_a_node_outside_the_topology(tmp_path, capsys, no_runs):
    path = _matrix(tmp_path, "Nodes 40\nConnections 1\n1->30 id 1 start 0 size 100\n")
    rc, out, err = run(["--topology", "leafspine:4,1,1", "--traffic", path], capsys)
    assert (rc, out) == (2, "")
    assert err == f"uet sim: argument --traffic: {path} is for Nodes 40; the topology has 4 hosts\n"


def test_matrix_flow_naming_a_node_beyond_its_nodes_line(tmp_path, capsys, no_runs):
    path = _matrix(tmp_path, "Nodes 4\nConnections 1\n1->7 id 1 start 0 size 100\n")
    rc, out, err = run(["--topology", "leafspine:4,1,1", "--traffic", path], capsys)
    assert (rc, out) == (2, "")
    assert err == (f"uet sim: argument --traffic: {path} line 3: 1->7: nodes are numbered 0 to 3 "
                   "(Nodes 4)\n")


def test_matrix_with_a_bad_line_names_the_file_and_the_line(tmp_path, capsys, no_runs):
    path = _matrix(tmp_path, "Nodes 4\nConnections 1\n\n# a comment\n1->2 id 1 start 0\n")
    rc, out, err = run(["--topology", "leafspine:4,1,1", "--traffic", path], capsys)
    assert (rc, out) == (2, "")
    assert err == (f"uet sim: argument --traffic: {path} line 5: expected 'SRC->DST id I start T "
                   "size B', got '1->2 id 1 start 0'\n")


def test_missing_matrix_file_is_a_bad_traffic_argument(tmp_path, capsys, no_runs):
    rc, out, err = run(["--topology", "leafspine:4,1,1", "--traffic", str(tmp_path / "nope.cm")],
                       capsys)
    assert (rc, out) == (2, "")
    assert err == usage(f"argument --traffic: {tmp_path / 'nope.cm'}: not a pattern or a file; "
                        "expected incast:N (e.g. incast:8), permutation, all-to-all, or the path "
                        "of an htsim connection matrix file")


@pytest.mark.parametrize("option", ["--degrade-link t0-s9:0.5", "--fail-link t0-s9@5"])
def test_a_link_the_topology_lacks_is_refused(option, capsys, no_runs):
    rc, out, err = run(f"--topology leafspine:4,2,1 {option}", capsys)
    assert (rc, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("uet sim: argument --")
    assert err.endswith(f": no link t0-s9 in leafspine:4,2,1 {LINK_HELP}\n")


@pytest.mark.parametrize("option", ["--degrade-link t0-s9:0.5", "--fail-link t0-s9@5"])
def test_a_missing_link_error_names_its_own_option(option, capsys, no_runs):
    rc, out, err = run(f"--topology leafspine:4,2,1 {option}", capsys)
    flag = option.split()[0]
    assert (rc, out) == (2, "")
    assert err == f"uet sim: argument {flag}: no link t0-s9 in leafspine:4,2,1 {LINK_HELP}\n"


@pytest.mark.parametrize("option,flag", [
    ("--traffic incast:2", "--traffic"),
    ("--fail-link h0-t0@0", "--fail-link"),
    ("--no-trim", "--no-trim"),
])
def test_switched_only_option_without_topology_is_refused(option, flag, capsys, no_runs):
    rc, out, err = run(f"--bytes 1k {option}", capsys)
    assert (rc, out) == (2, "")  # observed: "started running" (the paths:N simulator)
    assert err.startswith(f"uet sim: error: argument {flag}: applies to --topology leafspine or "
                          "fattree only")


def test_paths_equal_to_the_default_still_contradicts_the_topology(capsys, no_runs):
    rc, out, err = run("--topology paths:2 --paths 4", capsys)
    assert (rc, out, err) == (2, "", usage("argument --paths: 4 contradicts --topology paths:2"))


def test_rudi_on_a_switched_topology_names_the_mode(capsys, no_runs):
    rc, out, err = run("--topology leafspine:4,2,1 --mode rudi", capsys)
    assert (rc, out, err) == (2, "", usage(
        "argument --mode: rudi: flows between many hosts are SENDs over rud or rod"))


@pytest.mark.parametrize("line", [
    "--topology paths:4 --paths 4",
    "--topology paths:8",
    "--topology leafspine:17,1,1 --traffic incast:16 --cc fixed --spray oblivious",
    "--topology leafspine:17,1,1 --cc fixed --window 64k",
    "--topology fattree:4 --degrade-link a0-c0:0.25 --fail-link e0-a1@1ms --ecn-ramp 0,1",
    "--topology leafspine:4,2,1 --degrade-link s0-t1:1 --fail-link h0-t0@0 --mode rod",
])
def test_good_command_lines_get_to_run(line, capsys, no_runs):
    rc, out, err = run(line, capsys)
    assert (rc, out, err) == ("started running", "", "")


# --- good runs -----------------------------------------------------------------------------------


def test_small_incast_json(capsys):
    rc, out, err = run("--topology leafspine:5,1,1 --traffic incast:4 --bytes 256k --json", capsys)
    assert (rc, err) == (0, "")
    assert out.count("\n") == 1 and out.endswith("}\n")
    s = json.loads(out)
    assert s["ok"] is True
    assert (s["topology"], s["hosts"], s["traffic"], s["cc"], s["spray"]) == (
        "leafspine:5,1,1", 5, "incast:4", "nscc", "reps")
    assert (s["completed"], s["unfinished"], s["dropped"], s["failures"]) == (4, 0, 0, [])
    assert len(s["flows"]) == 4
    assert [(f["src"], f["dst"], f["bytes"]) for f in s["flows"]] == [
        (1, 0, 262144), (2, 0, 262144), (3, 0, 262144), (4, 0, 262144)]
    assert all(isinstance(f["fct_s"], float) and f["fct_s"] > 0 for f in s["flows"])
    assert s["bytes"] == 4 * 262144
    assert isinstance(s["last_over_ideal"], float)
    assert s["last_over_ideal"] >= 1.0  # the ideal is a lower bound
    assert s["last_fct_s"] == max(f["fct_s"] for f in s["flows"])
    assert s["busiest_port"] == "t0->h0"
    assert (s["seed"], s["internal_errors"]) == (1, 0)


def test_same_seed_same_json(capsys):
    line = "--topology leafspine:5,1,1 --traffic incast:4 --bytes 64k --json --seed 9"
    rc1, out1, _ = run(line, capsys)
    rc2, out2, _ = run(line, capsys)
    assert rc1 == rc2 == 0
    first, second = json.loads(out1), json.loads(out2)
    assert first["seed"] == 9
    assert without_wall(first) == without_wall(second)


def test_permutation_on_a_fat_tree(capsys):
    rc, out, err = run("--topology fattree:4 --bytes 128k --json", capsys)
    assert (rc, err) == (0, "")
    s = json.loads(out)
    assert s["ok"] is True and s["traffic"] == "permutation" and s["hosts"] == 16
    flows = s["flows"]
    assert len(flows) == 16 and s["completed"] == 16
    assert [f["src"] for f in flows] == list(range(16))
    assert sorted(f["dst"] for f in flows) == list(range(16))
    assert all(f["src"] != f["dst"] and f["bytes"] == 131072 for f in flows)


def test_htsim_matrix_flows_with_their_own_sizes_and_starts(tmp_path, capsys):
    path = tmp_path / "flows.cm"
    flows = [Flow(1, 0, 65536, 0.0, 0), Flow(5, 2, 100_000, 3e-6, 1), Flow(3, 6, 7777, 10e-6, 2),
             Flow(7, 4, 1, 0.0, 3)]
    write_matrix(str(path), 8, flows)
    rc, out, err = run(["--topology", "leafspine:4,2,1", "--traffic", str(path), "--json"], capsys)
    assert (rc, err) == (0, "")
    s = json.loads(out)
    assert s["ok"] is True and s["traffic"] == str(path) and s["hosts"] == 8
    assert [(f["src"], f["dst"], f["bytes"]) for f in s["flows"]] == [
        (1, 0, 65536), (5, 2, 100_000), (3, 6, 7777), (7, 4, 1)]
    assert (s["completed"], s["bytes"]) == (4, 65536 + 100_000 + 7777 + 1)
    # the last flow finishes no earlier than its start: the run lasts past 10 us
    assert s["sim_time_s"] > 10e-6


def test_fixed_window_and_oblivious_spraying_are_accepted(capsys):
    rc, out, err = run("--topology leafspine:5,1,1 --traffic incast:4 --bytes 64k --cc fixed "
                       "--spray oblivious --json", capsys)
    assert (rc, err) == (0, "")
    s = json.loads(out)
    assert (s["ok"], s["cc"], s["spray"], s["completed"]) == (True, "fixed", "oblivious", 4)


def test_human_output_counts_the_flows_and_points_to_json(capsys):
    rc, out, err = run("--topology leafspine:5,1,1 --traffic incast:4 --bytes 64k", capsys)
    assert (rc, out) == (0, "")
    lines = err.splitlines()
    assert f"{'flows':>26}: 4 (each in --json)" in lines
    assert f"{'ok':>26}: yes" in lines
    assert f"{'completed':>26}: 4" in lines
    assert all(line[26:28] == ": " for line in lines)
    assert "replay with" not in err


@pytest.mark.parametrize("line", ["--bytes 64k --loss 0.05 --seed 4",
                                  "--topology leafspine:5,1,1 --traffic incast:4 --bytes 64k"])
def test_human_output_is_in_words_not_python_reprs(line, capsys):
    """Without --json, values read as words (yes/no, none, "TRIMMED 3"), never True, None,
    {} or {'TRIMMED': 3}; --json keeps them as they are."""
    rc, out, err = run(line, capsys)
    assert (rc, out) == (0, "")
    values = [ln[28:] for ln in err.splitlines()]
    assert not [v for v in values if v in ("True", "False", "None", "{}", "[]")
                or v.startswith(("{'", "['"))]


# --- a failed run and its replay -----------------------------------------------------------------

FAILING = ("--topology leafspine:3,1,1 --traffic incast:2 --bytes 8k --fail-link h0-t0@0 "
           "--seed 1")
# the options that differ from their defaults, in the parser's order, and the seed
FAILING_REPLAY = ("uet sim --topology leafspine:3,1,1 --traffic incast:2 --bytes 8192 "
                  "--fail-link h0-t0@0 --seed 1")


def test_failed_run_prints_the_replay_line(capsys):
    """Host 0's only link fails at 0: no packet reaches it, the senders give up (RTO limit)."""
    rc, out, err = run(FAILING + " --json", capsys)
    assert rc == 1
    s = json.loads(out)
    assert s["ok"] is False
    assert (s["completed"], s["unfinished"], s["last_fct_s"], s["last_over_ideal"]) == (
        0, 2, None, None)
    assert [(f["src"], f["dst"], f["fct_s"]) for f in s["flows"]] == [(1, 0, None), (2, 0, None)]
    assert s["failures"] and all("retransmission limit (RTO)" in f for f in s["failures"])
    assert err == f"uet sim: FAILED; replay with: {FAILING_REPLAY}\n"


def test_failed_run_human_output_ends_with_the_replay_line(capsys):
    rc, out, err = run(FAILING, capsys)
    assert (rc, out) == (1, "")
    lines = err.splitlines()
    assert f"{'ok':>26}: no" in lines
    assert lines[-1] == f"uet sim: FAILED; replay with: {FAILING_REPLAY}"


def test_replay_reproduces_the_same_json(capsys):
    rc, out, err = run(FAILING + " --json", capsys)
    assert rc == 1
    replay = shlex.split(err.split("replay with: ", 1)[1])
    assert replay[:2] == ["uet", "sim"]
    rc2, out2, err2 = run(replay[2:] + ["--json"], capsys)
    assert (rc2, err2) == (1, err)
    assert without_wall(json.loads(out2)) == without_wall(json.loads(out))


def test_replay_carries_every_fabric_option(capsys):
    line = ("--topology leafspine:2,2,1 --traffic incast:3 --bytes 6000 --mtu 1024 --mode rod "
            "--rate 50 --link-delay 2 --cc fixed --spray oblivious --entropies 16 "
            "--buffer 30000 --ecn-ramp 0.1,0.9 --no-trim --trim-bytes 128 --ack-every-packet "
            "--degrade-link t1-s0:0.5 --fail-link h0-t0@0 --seed 7 --json")
    rc, out, err = run(line, capsys)
    assert rc == 1
    assert err == ("uet sim: FAILED; replay with: uet sim --topology leafspine:2,2,1 --traffic "
                   "incast:3 --bytes 6000 --mtu 1024 --mode rod --rate 50 --cc fixed --spray "
                   "oblivious --entropies 16 --ack-every-packet --link-delay 2 --buffer 30000 "
                   "--ecn-ramp 0.1,0.9 --no-trim --trim-bytes 128 "
                   "--degrade-link t1-s0:0.5 --fail-link h0-t0@0 --seed 7\n")
    rc2, out2, err2 = run(shlex.split(err.split("replay with: ", 1)[1])[2:] + ["--json"], capsys)
    assert (rc2, err2) == (1, err)
    assert without_wall(json.loads(out2)) == without_wall(json.loads(out))
