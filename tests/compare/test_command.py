"""``uet compare`` on the command line (uet/compare/command.py), in this process: one JSON object
with a ``designs`` map, bad input as one line and exit 2, a design that cannot finish as a row
(exit 0) with the replay line, captures that ``uet decode`` reads, the plot."""

from __future__ import annotations

import json
import struct

import pytest

from uet.capture.frame import decode_frame
from uet.capture.pcap import read_frames
from uet.compare.command import main
from uet.sim.traffic import Flow, write_matrix

SMALL = ["--bytes", "64k"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l]
    assert lines and len(lines) <= 2, err            # the message, and perhaps the --help hint
    assert lines[0].startswith("uet compare: ")
    return lines[0]


def test_json_is_one_object_with_a_designs_map(capsys):
    code, out, err = run(["incast", "--json", "--seed", "3"] + SMALL, capsys)
    assert code == 0
    assert out.count("\n") == 1
    obj = json.loads(out)
    assert set(obj["designs"]) == {"roce", "adaptive", "uet"}
    assert obj["seed"] == 3 and obj["scenario"] == "incast" and obj["pfc"] is True
    for r in obj["designs"].values():
        for k in ("throughput_gbps", "last_fct_s", "max_over_avg_fct", "avg_fct_s", "jain_fct",
                  "drops", "trims", "retx_bytes", "pause_frames", "paused_time_s",
                  "max_queue_bytes", "status"):
            assert k in r
    assert "design" in err and "roce" in err     # the table went to stderr


def test_designs_and_no_pfc(capsys):
    code, out, _ = run(["elephants", "--json", "--designs", "uet,roce", "--no-pfc"] + SMALL,
                       capsys)
    obj = json.loads(out)
    assert code == 0 and list(obj["designs"]) == ["uet", "roce"] and obj["pfc"] is False


@pytest.mark.parametrize("argv, words", [
    (["nosuch"], "unknown scenario 'nosuch'"),
    (["elephants", "--topology", "leafspine:4,1,1"], "at least 2 ToRs"),
    (["incast", "--topology", "paths:4"], "leafspine"),
    (["incast", "--plot", "out.jpg"], ".png or .svg"),
    (["incast", "--designs", "roce,ib"], "designs"),
    (["matrix"], "connection-matrix FILE"),
    (["incast", "extra-file"], "takes no FILE"),
    (["incast", "--mtu", "4000"], "--mtu"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert words in one_error_line(err)


def test_a_matrix_with_a_bad_line_is_named_by_line(capsys, tmp_path):
    m = tmp_path / "bad.cm"
    m.write_text("Nodes 4\nConnections 2\n1->0 id 1 start 0 size 65536\n2->0 id 2 start x size 1\n")
    code, out, err = run(["matrix", str(m)], capsys)
    assert code == 2 and out == ""
    assert "line 4" in one_error_line(err)


def test_a_matrix_too_big_for_the_topology_is_refused(capsys, tmp_path):
    m = tmp_path / "big.cm"
    write_matrix(str(m), 64, [Flow(63, 0, 4096, 0.0, 0)])
    code, _, err = run(["matrix", str(m)], capsys)
    assert code == 2 and "Nodes 64" in one_error_line(err)


def test_a_matrix_runs(capsys, tmp_path):
    m = tmp_path / "ok.cm"
    write_matrix(str(m), 16, [Flow(1, 0, 65536, 0.0, 0), Flow(5, 9, 65536, 2e-6, 1),
                              Flow(12, 0, 32768, 1e-6, 2)])
    code, out, _ = run(["matrix", str(m), "--json"], capsys)
    obj = json.loads(out)
    assert code == 0 and len(obj["flows"]) == 3
    assert all(r["status"] == "ok" and r["completed"] == 3 for r in obj["designs"].values())


def test_a_design_that_cannot_finish_is_a_row_and_exit_0(capsys):
    code, out, err = run(["incast", "--json", "--time-limit", "0.02", "--seed", "5"] + SMALL,
                         capsys)
    assert code == 0
    obj = json.loads(out)
    assert all(r["status"] == "time-limit" for r in obj["designs"].values())
    assert "replay with: uet compare incast --seed 5" in err
    assert "--time-limit 0.02" in err


def test_pcap_per_design_decodes(capsys, tmp_path):
    base = tmp_path / "run.pcap"
    code, _, _ = run(["pfc-victim", "--pcap", str(base)] + SMALL, capsys)
    assert code == 0
    for d, layer in (("roce", "roce"), ("adaptive", "roce"), ("uet", "uet")):
        objs = [decode_frame(lt, raw, n).obj
                for n, (lt, raw, _) in enumerate(read_frames(str(tmp_path / f"run.{d}.pcap")), 1)]
        assert all(not o["problems"] and "error" not in o for o in objs), d
        pauses = [o for o in objs if "pfc" in o]  # 802.1Qbb frames of the RoCE designs' switches
        objs = [o for o in objs if "pfc" not in o]
        assert objs and all(layer in o for o in objs), d
        if layer == "roce":
            assert pauses and all(p["pfc"]["class_enable"] == 1 << 3 for p in pauses)
            assert {max(p["pfc"]["pause_quanta"]) for p in pauses} == {0, 0xFFFF}  # XOFF, XON
            assert all(o["roce"]["icrc"]["ok"] for o in objs)
            assert {o["roce"]["bth"]["opcode"] for o in objs} >= {0x06, 0x08, 0x11}


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot(suffix, magic, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"p{suffix}"
    code, _, _ = run(["elephants", "--plot", str(path)] + SMALL, capsys)
    assert code == 0 and path.read_bytes().startswith(magic)
    if suffix == ".png":  # sized for a slide: at least 1600 pixels wide (IHDR width, height)
        width, height = struct.unpack(">II", path.read_bytes()[16:24])
        assert (width, height) == (1920, 600)


def test_plot_without_matplotlib_is_exit_2(capsys, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, out, err = run(["incast", "--plot", str(tmp_path / "p.png")], capsys)
    assert code == 2 and out == "" and one_error_line(err).endswith(
        "needs matplotlib (pip install matplotlib, or pip install -e '.[plot]' in the uet clone)")


def test_registered_in_the_uet_command(capsys):
    from uet.cli import main as uet_main

    assert uet_main(["compare", "nosuch"]) == 2
    assert "unknown scenario" in capsys.readouterr().err
