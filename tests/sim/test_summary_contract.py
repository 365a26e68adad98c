"""One summary builder (uet.sim.summary): every key of docs/design-notes.md's ``uet sim --json`` contract in
every run, whatever the topology; the figures the many-host run gained mean what they mean in the
two-host run."""

from __future__ import annotations

import json

import pytest

from uet.sim.command import main
from uet.sim.summary import CONTRACT_KEYS, merge_nacks, transfer_summary

RUNS = {
    "paths": ["--topology", "paths:2", "--bytes", "64k", "--loss", "0.05", "--seed", "3"],
    "paths-read": ["--topology", "paths:2", "--bytes", "64k", "--op", "read", "--seed", "3"],
    "leafspine": ["--topology", "leafspine:2,2,2", "--traffic", "incast:3", "--bytes", "256k",
                  "--buffer", "20000", "--seed", "3"],
    "fattree": ["--topology", "fattree:2", "--traffic", "permutation", "--bytes", "64k",
                "--seed", "3"],
}


def sim_json(capsys, argv: list[str]) -> dict:
    rc = main(["--json", *argv])
    out = capsys.readouterr().out
    s = json.loads(out)
    assert rc == 0 and s["ok"] is True, out[:500]
    return s


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_contract_key_in_every_topology(capsys, name):
    s = sim_json(capsys, RUNS[name])
    assert list(s)[:len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert s["sent"] == s["delivered"] >= 1 and s["mode"] == "rud"
    assert s["goodput_gbps"] == pytest.approx(s["bytes"] * 8 / s["sim_time_s"] / 1e9)
    assert s["paths_used"] >= 1 and isinstance(s["nacks"], dict)
    assert s["op"] == ("read" if name == "paths-read" else "send")


def test_switched_run_counts_nacks_and_paths(capsys):
    """An incast that overflows a small buffer: each trim is answered by a NACK TRIMMED (C.6), and
    the 5-tuples that carried data are at least the flows (each is one source, one EV or more)."""
    s = sim_json(capsys, RUNS["leafspine"])
    assert s["trimmed"] > 0 and s["nacks"].get("TRIMMED", 0) == s["trimmed"]
    assert s["paths_used"] >= s["sent"] == 3
    assert s["target_retransmissions"] == 0  # host 0 only receives: ACKs are not retransmitted
    assert s["spurious_retransmissions"] >= 0


def test_builder_wants_every_key():
    kw = {k: 0 for k in CONTRACT_KEYS}
    assert list(transfer_summary(**kw, extra=1)) == [*CONTRACT_KEYS, "extra"]
    del kw["paths_used"]
    with pytest.raises(TypeError):
        transfer_summary(**kw)


def test_merge_nacks_sums_by_name():
    assert merge_nacks([{"TRIMMED": 2}, {"TRIMMED": 1, "OOO": 4}]) == {"OOO": 4, "TRIMMED": 3}
