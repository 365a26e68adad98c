"""``uet sim --ecn-point`` and ``--trim-victim`` (uet.net.ecn NET-N2, N4): the switched topologies take
E.6's choices by default and the others on request; paths:N refuses them (its links decide a
datagram's fate on arrival); a failed run's replay line keeps them."""

from __future__ import annotations

import argparse
import json

from uet.sim.command import add_arguments, check_topology, main, replay_command

INCAST = ["--topology", "leafspine:2,2,2", "--traffic", "incast:3", "--bytes", "256k",
          "--buffer", "20000", "--seed", "3", "--json"]


def run(capsys, *extra: str) -> dict:
    assert main([*INCAST, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_default_is_dequeue_and_either(capsys):
    a = run(capsys)
    b = run(capsys, "--ecn-point", "dequeue", "--trim-victim", "either")
    a.pop("wall_time_s"), b.pop("wall_time_s")
    assert a == b


def test_other_choices_change_the_run(capsys):
    base = run(capsys)
    enq = run(capsys, "--ecn-point", "enqueue")
    arr = run(capsys, "--trim-victim", "arriving")
    assert enq["ok"] and arr["ok"]
    assert enq["ecn_marked"] != base["ecn_marked"]
    assert (arr["trimmed"], arr["flows"]) != (base["trimmed"], base["flows"])


def test_paths_topology_refuses_them(capsys):
    assert main(["--topology", "paths:2", "--ecn-point", "enqueue"]) == 2
    assert "--ecn-point: applies to --topology leafspine or fattree" in capsys.readouterr().err


def test_replay_keeps_the_choices():
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--topology", "leafspine:2,2,2", "--ecn-point", "enqueue",
                         "--trim-victim", "arriving"])
    check_topology(args)
    line = replay_command(args)
    assert "--ecn-point enqueue" in line and "--trim-victim arriving" in line
    args = p.parse_args(["--topology", "leafspine:2,2,2"])
    check_topology(args)
    assert "--ecn-point" not in replay_command(args) and "--trim-victim" not in replay_command(args)
