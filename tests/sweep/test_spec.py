"""The sweep's spec (uet/sweep/spec.py): the cross product of each grid x seeds, the command line
of each run, keys that do not depend on the spec's order, and a bad spec as one SpecError naming
its key."""

from __future__ import annotations

import pytest

from uet.sweep.spec import SpecError, parse

BASE = {"command": "sim", "seeds": [1, 2], "grid": {"--topology": ["leafspine:4,1,1"],
                                                    "--traffic": ["incast:3", "permutation"]}}


def spec(**kw):
    doc = {k: v for k, v in BASE.items()}
    doc.update(kw)
    return parse(doc, path="s.toml")


def test_the_runs_are_the_cross_product_times_the_seeds():
    s = spec()
    assert [r.replay for r in s.runs] == [
        "uet sim --topology leafspine:4,1,1 --traffic incast:3 --seed 1 --json",
        "uet sim --topology leafspine:4,1,1 --traffic incast:3 --seed 2 --json",
        "uet sim --topology leafspine:4,1,1 --traffic permutation --seed 1 --json",
        "uet sim --topology leafspine:4,1,1 --traffic permutation --seed 2 --json"]
    assert s.columns == ["--topology", "--traffic"]
    assert len({r.key for r in s.runs}) == 4
    assert s.runs[0].options == (("--topology", "leafspine:4,1,1"), ("--traffic", "incast:3"))


def test_flags_repeats_shared_options_and_grid_seeds():
    s = spec(options={"--bytes": 64000}, grid=[
        {"--topology": ["fattree:4"], "--ack-every-packet": [False, True],
         "--degrade-link": [[], ["a0-c0:0.5", "a1-c1:0.5"]]},
        {"seeds": [9], "--topology": ["leafspine:4,1,1"], "--rate": [12.5]}])
    words = [r.argv for r in s.runs]
    assert len(words) == 2 * 2 * 2 + 1
    assert words[0] == ("--bytes", "64000", "--topology", "fattree:4", "--seed", "1", "--json")
    assert words[3] == ("--bytes", "64000", "--topology", "fattree:4", "--degrade-link",
                        "a0-c0:0.5", "--degrade-link", "a1-c1:0.5", "--seed", "2", "--json")
    assert words[5] == ("--bytes", "64000", "--topology", "fattree:4", "--ack-every-packet",
                        "--seed", "2", "--json")
    assert words[-1] == ("--bytes", "64000", "--topology", "leafspine:4,1,1", "--rate", "12.5",
                         "--seed", "9", "--json")


def test_a_grid_time_limit_wins_over_the_spec_s_and_is_not_part_of_the_key():
    s = spec(run_timeout=30, grid=[{"--traffic": ["incast:3"], "run_timeout": 5},
                                   {"--traffic": ["permutation"]}])
    assert [r.timeout_s for r in s.runs] == [5.0, 5.0, 30.0, 30.0]
    assert [r.cpu_s for r in s.runs] == [None] * 4
    s = spec(run_cpu_limit=7, grid=[{"--traffic": ["incast:3"], "run_cpu_limit": 2.5},
                                    {"--traffic": ["permutation"]}])
    assert [(r.timeout_s, r.cpu_s) for r in s.runs] == [(None, 2.5)] * 2 + [(None, 7.0)] * 2
    assert spec().runs[0].timeout_s is None
    assert s.runs[0].key == spec(grid={"--traffic": ["incast:3"]}).runs[0].key


def test_a_run_key_does_not_depend_on_the_order_of_the_spec():
    a = spec(grid={"--traffic": ["permutation"], "--topology": ["leafspine:4,1,1"],
                   "--ack-every-packet": [False]})
    b = spec(grid={"--topology": ["leafspine:4,1,1"], "--traffic": ["permutation"]})
    assert [r.key for r in a.runs] == [r.key for r in b.runs]
    assert a.runs[0].key != spec(seeds=[3]).runs[0].key


def test_compare_takes_its_scenario_as_the_positional_argument():
    s = parse({"command": "compare", "seeds": [4],
               "grid": {"--designs": ["uet"], "scenario": ["incast"]}})
    assert s.runs[0].argv == ("incast", "--designs", "uet", "--seed", "4", "--json")
    assert s.merit == "designs.uet.last_fct_s"


@pytest.mark.parametrize("change, key", [
    (dict(command="run"), "'command'"),
    (dict(seeds=[]), "'seeds'"),
    (dict(seeds=[1, 1]), "'seeds'"),
    (dict(seeds=[-1]), "'seeds'"),
    (dict(run_timeout=0), "'run_timeout'"),
    (dict(run_cpu_limit=True), "'run_cpu_limit'"),
    (dict(grid=None), "'grid'"),
    (dict(colour="red"), "'colour'"),
    (dict(grid={"--topolgy": ["fattree:4"]}), "'grid.--topolgy'"),
    (dict(grid={"--cc": ["bogus"]}), "'grid.--cc'"),
    (dict(grid={"--bytes": "4k"}), "'grid.--bytes'"),
    (dict(grid={"--seed": [3]}), "'grid.--seed'"),
    (dict(grid={"--pcap": ["x.pcap"]}), "'grid.--pcap'"),
    (dict(grid=[{"--cc": ["nscc"]}, {"--mtu": [1.5]}]), "'grid[1].--mtu'"),
    (dict(grid=[{"--cc": ["nscc"]}, {"run_timeout": "1"}]), "'grid[1].run_timeout'"),
    (dict(options={"--mtu": 0}), "'options.--mtu'"),
    (dict(options={"--bytes": 1}, grid={"--bytes": [2]}), "'options.--bytes'"),
])
def test_a_bad_spec_is_one_error_naming_the_key(change, key):
    doc = dict(BASE)
    doc.update(change)
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(SpecError) as exc:
        parse(doc, path="s.toml")
    msg = str(exc.value)
    assert msg.startswith(f"s.toml: key {key}: ") and "\n" not in msg


def test_compare_without_a_scenario_names_the_grid():
    with pytest.raises(SpecError, match=r"key 'grid': .*SCENARIO"):
        parse({"command": "compare", "seeds": [1], "grid": {"--designs": ["uet"]}})


def test_bench_cc_toml_plans_bench_cc_s_runs():
    from pathlib import Path

    from uet.sweep.spec import load

    s = load(str(Path(__file__).resolve().parents[2] / "tools" / "bench_cc.toml"))
    assert len(s.runs) == (2 * 3 + 2 * 2 * 2) * 3
    fixed16 = [r for r in s.runs if "incast:16" in r.argv and "fixed" in r.argv]
    assert len(fixed16) == 3 and {(r.timeout_s, r.cpu_s) for r in fixed16} == {(600.0, 12.0)}
    assert {(r.timeout_s, r.cpu_s) for r in s.runs if "fattree:8" in r.argv} == {(600.0, None)}
