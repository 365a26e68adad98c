"""``uet sim`` contract (docs/design-notes.md): one JSON object on stdout with --json, replay line on failure."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from uet.sim.command import main, register

KEYS = {"ok", "bytes", "sim_time_s", "wall_time_s", "goodput_gbps", "packets_sent", "retransmissions",
        "spurious_retransmissions", "trimmed", "dropped", "ecn_marked", "nacks", "paths_used", "seed"}


def test_json_is_one_object(capsys):
    assert main(["--json", "--bytes", "64k", "--loss", "0.05", "--trim", "0.05", "--seed", "4"]) == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert KEYS <= set(obj) and obj["ok"] is True and obj["seed"] == 4 and obj["bytes"] == 65536
    assert isinstance(obj["nacks"], dict)


def test_failing_run_prints_replay_and_exits_nonzero(capsys):
    rc = main(["--json", "--bytes", "64k", "--paths", "2", "--fail-path", "0@0", "--fail-path", "1@0",
               "--seed", "7"])
    cap = capsys.readouterr()
    assert rc == 1
    assert json.loads(cap.out)["ok"] is False
    assert "replay with: uet sim" in cap.err and "--seed 7" in cap.err and "--fail-path 0@0" in cap.err


def test_trace_goes_to_stderr(capsys):
    assert main(["--bytes", "8k", "--trace"]) == 0
    cap = capsys.readouterr()
    assert cap.out == "" and "RUD_REQ" in cap.err and "ACK_CC" in cap.err


def test_pcap_holds_the_frames_and_decodes(tmp_path):
    pcap = tmp_path / "run.pcap"
    assert main(["--json", "--bytes", "32k", "--trim", "0.2", "--seed", "3", "--pcap", str(pcap)]) == 0
    from uet.capture.frame import DecodeConfig, decode_frame
    from uet.capture.pcap import read_frames

    frames = list(read_frames(str(pcap)))
    assert frames and all(lt == 1 for lt, _, _ in frames)
    ts = [t for _, _, t in frames]
    assert ts == sorted(ts)
    objs = [decode_frame(lt, raw, i + 1, DecodeConfig()).obj for i, (lt, raw, _) in enumerate(frames)]
    untrimmed = [o for o in objs if o["ip"]["dscp"] != 11]
    assert all(o["uet"]["crc"]["ok"] for o in untrimmed)
    assert any(o["ip"]["dscp"] == 11 for o in objs)


def test_register_adds_sim_subcommand():
    p = argparse.ArgumentParser(prog="uet")
    sub = p.add_subparsers(dest="cmd")
    register(sub)
    args = p.parse_args(["sim", "--bytes", "4k", "--json"])
    assert callable(args.func) and args.bytes == 4096


def test_bad_arguments():
    assert main(["--paths", "0"]) == 2
