"""``uet demo`` (docs/design-notes.md "Contracts"): sender, live fabric and receiver on loopback in one command.

Every run is small (1-2 MiB) and bounded by ``--timeout``; the assertions are about behaviour
(bytes delivered and checked by hash, counters that must agree), never about timing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import subprocess
import sys

import pytest
import trio

from uet.demo.command import main, register
from uet.demo.options import add_arguments
from uet.sim.summary import CONTRACT_KEYS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20
TIMEOUT = "30"  # per run; a healthy 2 MiB run takes well under a second
# the keys of uet sim's summary (docs/design-notes.md; sim_time_s is None: no virtual time), plus the live ones
KEYS = set(CONTRACT_KEYS) | {"goodput_MBps", "per_path"}


def demo(capsys, *argv: str) -> tuple[int, dict, str]:
    """Run ``uet demo --json ARGV`` in this process: (exit status, summary, stderr)."""
    rc = main(["--json", "--timeout", TIMEOUT, *argv])
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert len(lines) == 1, cap.out[:500]
    return rc, json.loads(lines[0]), cap.err


def assert_delivered(rc: int, s: dict, nbytes: int, err: str) -> None:
    assert rc == 0, err[-2000:]
    assert s["ok"] is True and s["failures"] == []
    assert s["delivered"] == s["sent"] == s["messages"]  # issue 11 item 10: always reported
    assert s["bytes"] == nbytes and s["wall_time_s"] > 0 and s["goodput_gbps"] > 0
    assert s["packets_sent"] >= s["data_packets"] + s["retransmissions"]
    assert s["internal_errors"] == 0


# --- every impairment, with the hash check ------------------------------------------------------

IMPAIRMENTS = {
    "loss": ["--loss", "0.02", "--trim", "0"],
    "trim": ["--loss", "0", "--trim", "0.05"],
    "reorder": ["--loss", "0", "--trim", "0", "--reorder", "0.05"],
    "dup": ["--loss", "0", "--trim", "0", "--dup", "0.05"],
    "corrupt": ["--loss", "0", "--trim", "0", "--corrupt", "0.02"],
    "fail-path": ["--loss", "0", "--trim", "0", "--fail-path", "1@0"],
    "rod": ["--mode", "rod", "--loss", "0.01", "--trim", "0.02", "--reorder", "0.02"],
    "rod-messages": ["--mode", "rod", "--messages", "8", "--loss", "0.01"],
    "rud-messages": ["--messages", "8", "--loss", "0.01", "--trim", "0.02"],
    "no-fabric": ["--no-fabric"],
    "single-path": ["--spray", "single"],
    "default": [],
}


@pytest.mark.parametrize("name", list(IMPAIRMENTS))
def test_transfer_under_impairment(capsys, name):
    rc, s, err = demo(capsys, "--bytes", "2MiB", "--seed", "5", *IMPAIRMENTS[name])
    assert_delivered(rc, s, 2 * MIB, err)
    assert KEYS <= set(s) and s["seed"] == 5
    if name == "loss":
        assert s["dropped"] > 0 and s["retransmissions"] > 0
        assert s["dropped"] == sum(p["fwd"]["loss_drops"] + p["rev"]["loss_drops"] for p in s["per_path"])
    if name == "trim":
        assert s["trimmed"] > 0 and s["dropped"] == 0
        assert s["nacks"].get("TRIMMED") == s["trimmed"]
    if name == "reorder":
        assert s["reordered"] > 0
    if name == "dup":
        assert s["duplicated"] > 0 and s["receiver"]["dup_rx"] >= 1
    if name == "corrupt":
        # a flipped bit anywhere in the UDP payload breaks the CRC-32C trailer: every corrupted
        # datagram (both directions; none trimmed or lost here) is dropped as bad_crc, none delivered
        assert s["corrupted"] > 0 and s["bad_crc"] == s["corrupted"]
    if name == "fail-path":
        failed = [p for p in s["per_path"] if p["failed"]]
        assert [p["path"] for p in failed] == [1]
        assert failed[0]["fwd"]["fail_drops"] > 0 and failed[0]["packets"] == 0
        assert s["dropped"] == sum(p["fwd"]["fail_drops"] + p["rev"]["fail_drops"] for p in s["per_path"])
    if name in ("rod", "rod-messages"):
        assert s["mode"] == "rod"
    if name.endswith("messages"):
        assert s["messages"] == 8
    if name == "no-fabric":
        assert s["fabric"] is False and s["ports"]["fabric"] is None
        assert s["trimmed"] == s["dropped"] == s["ecn_marked"] == 0
        assert s["paths_used"] == s["entropies"] == 4 and len(s["per_path"]) == 4
        assert sum(p["data_packets"] for p in s["per_path"]) == s["data_packets"] + s["retransmissions"]
    if name == "single-path":
        assert s["entropies"] == 1 and s["paths_used"] == 1
    if s["fabric"]:
        # entropy k is picked to hash onto path k mod paths: one entropy port per path
        assert [len(p["entropy_ports"]) for p in s["per_path"]] == (
            [1] * 4 if name != "single-path" else [1, 0, 0, 0])
        assert s["fabric_relay"]["crc_bad"] <= s["corrupted"]
        if name != "fail-path":
            assert s["paths_used"] == s["entropies"]
        sent = sum(p["fwd"]["received"] for p in s["per_path"])
        assert sent == s["packets_sent"]  # the fabric took in every datagram the sender sent


def test_defaults_show_every_mechanism(capsys):
    """A default run: 16 MiB over 4 paths with loss, trimming and CE-marking queues."""
    rc, s, err = demo(capsys)
    assert_delivered(rc, s, 16 * MIB, err)
    assert s["fabric"] is True and s["paths"] == 4 and s["paths_used"] == 4
    assert s["trimmed"] > 0 and s["dropped"] > 0 and s["retransmissions"] > 0
    assert s["nacks"].get("TRIMMED", 0) > 0
    # the stderr table: one row per path and a total
    assert "trims" in err and "CE" in err and "drops" in err
    rows = [ln.split() for ln in err.splitlines() if ln.split()[:1] in (["0"], ["1"], ["2"], ["3"], ["all"])]
    assert [r[0] for r in rows][:5] == ["0", "1", "2", "3", "all"]


def test_clean_run(capsys):
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--loss", "0", "--trim", "0", "--rate", "100")
    assert_delivered(rc, s, MIB, err)
    assert s["trimmed"] == s["dropped"] == s["corrupted"] == s["duplicated"] == 0
    assert "TRIMMED" not in s["nacks"] and s["bad_crc"] == 0


@pytest.mark.parametrize("fabric", [True, False])
def test_summary_prints_each_address_at_the_one_uet_port(capsys, fabric):
    """A.1: sender, relay and receiver each receive on an address of their own (the first free
    loopback ones) at one UET port; the summary names them, on stdout and on stderr."""
    rc, s, err = demo(capsys, "--bytes", "256k", "--loss", "0", "--trim", "0",
                      *(() if fabric else ("--no-fabric",)))
    assert_delivered(rc, s, 256 << 10, err)
    a = s["addresses"]
    port = s["ports"]["receiver"]
    assert a["receiver"] == f"127.0.0.1:{port}"
    assert a["sender"].endswith(f":{port}") and a["sender"] != a["receiver"]
    if fabric:
        assert a["fabric"].endswith(f":{port}") and len({*a.values()}) == 3
        assert s["ports"]["fabric"] == port
    else:
        assert a["fabric"] is None
    assert "addresses" in err and a["sender"] in err


# --- counters of the fabric against what the endpoints saw ----------------------------------------

def test_fabric_trims_equal_receiver_trimmed_nacks(capsys):
    """No loss anywhere (so no NACK is lost on the reverse path): every datagram the fabric trims
    reaches the receiver, which answers each with exactly one NACK TRIMMED."""
    rc, s, err = demo(capsys, "--bytes", "2MiB", "--loss", "0", "--trim", "0.1", "--seed", "3")
    assert_delivered(rc, s, 2 * MIB, err)
    assert s["trimmed"] > 0
    assert s["receiver"]["nacks_sent"].get("TRIMMED", 0) == s["trimmed"]
    assert s["receiver"]["trimmed_rx"] == s["trimmed"]
    assert s["sender"]["nacks_rcvd"].get("TRIMMED", 0) == s["trimmed"]
    # every trimmed packet was resent
    assert s["retransmissions"] >= s["trimmed"]


def test_capture_decodes_cleanly(capsys, tmp_path):
    """The --capture pcap holds every datagram the fabric forwarded, and ``uet decode --json``
    decodes each without a problem: trimmed data frames (DSCP 11, their CRC trailer cut off)
    show ``crc.value`` null; every other frame has a CRC-32C trailer that verifies."""
    pcap = tmp_path / "demo.pcap"
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--loss", "0", "--trim", "0.05", "--rate", "0.25",
                      "--seed", "9", "--capture", str(pcap))
    assert_delivered(rc, s, MIB, err)
    assert "uet decode --port" in err
    out = subprocess.run([sys.executable, "-m", "uet", "decode", "--json", "--port",
                          str(s["ports"]["receiver"]), str(pcap)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    forwarded = sum(p["packets"] + p["answers"] for p in s["per_path"])
    assert len(objs) == forwarded
    for o in objs:
        assert o["problems"] == [] and "error" not in o, o
        assert "uet" in o and "pds" in o["uet"], o
        if o["ip"]["dscp"] == 11:
            assert o["uet"]["crc"]["value"] is None and o["uet"]["crc"]["ok"] is None, o
            assert o["udp"]["length"] == 8 + 256  # trimmed to 256 bytes of UDP payload
        else:
            assert o["uet"]["crc"]["ok"] is True, o
    trimmed = [o for o in objs if o["ip"]["dscp"] == 11]
    assert len(trimmed) == s["trimmed"] > 0
    assert all(o["uet"]["pds"]["type_name"] in ("RUD_REQ", "ROD_REQ") for o in trimmed)
    # the answers: one NACK TRIMMED per trimmed frame, for its PSN
    nacks = [o["uet"]["pds"] for o in objs if o["uet"]["pds"]["type_name"] == "NACK"]
    trimmed_nacks = [n for n in nacks if n.get("nack_code_name") == "TRIMMED"]
    assert sorted(n["nack_psn"] for n in trimmed_nacks) == sorted(o["uet"]["pds"]["psn"] for o in trimmed)
    # CE marks: what the fabric counted is what the capture shows, on sender -> receiver data only
    ce = [o for o in objs if o["ip"]["ecn"] == 3]
    assert len(ce) == s["ecn_marked"]
    assert all(o["ip"]["dscp"] in (0, 11) for o in ce)


async def _ce_run(pcap: str) -> dict:
    from uet.demo import DemoConfig, run_demo

    # kmin 0: any datagram that arrives while the previous one on its path is still being
    # serialised (a window's burst always does) may be CE-marked
    with trio.fail_after(60):
        return await run_demo(DemoConfig(bytes=2 * MIB, loss=0, trim=0.05, rate_gbps=0.25,
                                         kmin_bytes=0, kmax_bytes=64 << 10, seed=4, capture=pcap))


def test_ce_marks_and_ack_m_flags(tmp_path):
    """Each answer with M set echoes a CE-marked request (C.3/A2: M = the acked packet was CE), so
    with no loss, duplication or corruption: answers with M <= CE marks, and CE marks > 0 means
    some answer carried M."""
    from uet.capture.frame import DecodeConfig, decode_frame
    from uet.capture.pcap import read_frames

    pcap = str(tmp_path / "ce.pcap")
    s = trio.run(_ce_run, pcap)
    assert s["ok"] is True and s["ecn_marked"] > 0
    dc = DecodeConfig(ports=(s["ports"]["receiver"], s["ports"]["fabric"]))
    objs = [decode_frame(lt, raw, i + 1, dc).obj for i, (lt, raw, _) in enumerate(read_frames(pcap))]
    ce_frames = [o for o in objs if o["ip"]["ecn"] == 3]
    answers_m = [o["uet"]["pds"] for o in objs if o["ip"]["dscp"] == 46
                 and o["uet"]["pds"]["type_name"] != "CONTROL" and o["uet"]["pds"].get("m")]
    assert len(ce_frames) == s["ecn_marked"]
    assert 0 < len(answers_m) <= len(ce_frames)
    # an answer is CE-flagged only for a PSN that arrived CE-marked
    ce_psns = {o["uet"]["pds"]["psn"] for o in ce_frames}
    for a in answers_m:
        psn = a["ack_psn"] if a["type_name"] != "NACK" else a["nack_psn"]
        assert psn in ce_psns, a


# --- the command line contract -----------------------------------------------------------------

def test_json_stdout_is_exactly_one_object():
    """As a separate process: nothing but the one JSON line reaches stdout."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "uet.demo", "--json", "--bytes", "1MiB",
                          "--timeout", TIMEOUT, "--progress"], capture_output=True, text=True,
                         timeout=90, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith("\n") and out.stdout.count("\n") == 1
    obj = json.loads(out.stdout)
    assert isinstance(obj, dict) and obj["ok"] is True and KEYS <= set(obj)
    assert list(obj)[:len(CONTRACT_KEYS)] == list(CONTRACT_KEYS) and obj["sim_time_s"] is None
    assert obj["op"] == "send" and obj["target_retransmissions"] == 0
    assert "sent" in out.stderr and "trims" in out.stderr  # progress and table went to stderr


def test_failing_run_exits_nonzero_with_replay_line(capsys):
    rc = main(["--json", "--bytes", "256k", "--loss", "1", "--seed", "7", "--timeout", "1"])
    cap = capsys.readouterr()
    assert rc == 1
    s = json.loads(cap.out)
    assert s["ok"] is False and any("timed out" in f for f in s["failures"])
    line = next(ln for ln in cap.err.splitlines() if "replay with: " in ln)
    words = shlex.split(line.split("replay with: ", 1)[1])
    assert words[:2] == ["uet", "demo"] and "--seed" in words and words[words.index("--seed") + 1] == "7"
    p = argparse.ArgumentParser()
    add_arguments(p)
    again = p.parse_args(words[2:])
    assert (again.loss, again.seed, again.bytes, again.timeout) == (1.0, 7, 256 << 10, 1.0)


def test_no_fabric_refuses_impairments(capsys):
    assert main(["--no-fabric", "--loss", "0.1"]) == 2
    assert "needs the fabric" in capsys.readouterr().err
    assert main(["--no-fabric", "--capture", "x.pcap"]) == 2


def test_takes_uet_sims_options():
    """Every transfer, path-model, congestion and TSS option of ``uet sim`` is an option of ``uet
    demo`` (the simulator's SES modes and operations aside), declared once (uet.cliopts)."""
    from uet.sim.command import add_arguments as sim_arguments

    sim, dem = argparse.ArgumentParser(), argparse.ArgumentParser()
    sim_arguments(sim)
    add_arguments(dem)
    shared = {g.title for g in dem._action_groups} - {"positional arguments", "options"}
    assert {"transfer", "path model and impairments", "congestion control and multipath"} <= shared
    sim_opts = {o for g in sim._action_groups if g.title in shared
                for a in g._group_actions for o in a.option_strings} - {"--op"}
    dem_opts = {o for a in dem._actions for o in a.option_strings}
    assert "--rtt" in sim_opts and "--tss" in sim_opts and sim_opts <= dem_opts
    assert {"--seed", "--json", "--pcap"} <= dem_opts
    assert {"--no-fabric", "--capture", "--timeout"} <= dem_opts
    a = dem.parse_args(["--fail-path", "1@50ms", "--pcap", "f.pcap", "--bytes", "2m"])
    assert a.fail_path == [(1, 50000.0)] and a.capture == "f.pcap" and a.bytes == 2 * MIB


def test_register_adds_demo_subcommand():
    p = argparse.ArgumentParser(prog="uet")
    sub = p.add_subparsers(dest="cmd")
    register(sub)
    a = p.parse_args(["demo", "--bytes", "64k", "--no-fabric"])
    assert a.cmd == "demo" and a.bytes == 65536 and a.fabric is False and callable(a.func)


def test_nacks_map_names_codes(capsys):
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--loss", "0", "--trim", "0.1", "--seed", "2")
    assert_delivered(rc, s, MIB, err)
    assert set(s["nacks"]) <= set(collections.Counter(s["receiver"]["nacks_sent"]) +
                                  collections.Counter(s["sender"]["nacks_sent"]))
    assert all(isinstance(k, str) and k.isupper() for k in s["nacks"])


def test_an_error_still_prints_one_json_object(capsys, monkeypatch):
    import uet.demo.run as run

    async def broken(cfg, **kw):
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(run, "run_demo", broken)
    rc = main(["--json", "--bytes", "64k", "--seed", "3"])
    cap = capsys.readouterr()
    assert rc == 1
    s = json.loads(cap.out)
    assert s["ok"] is False and "Address already in use" in s["error"] and s["seed"] == 3
    assert "replay with: uet demo" in cap.err


def test_every_impairment_at_once(capsys):
    rc, s, err = demo(capsys, "--bytes", "4MiB", "--loss", "0.01", "--trim", "0.03", "--reorder",
                      "0.03", "--dup", "0.02", "--corrupt", "0.01", "--messages", "4", "--seed", "11")
    assert_delivered(rc, s, 4 * MIB, err)
    assert min(s["trimmed"], s["dropped"], s["reordered"], s["duplicated"], s["corrupted"]) > 0


def _has_ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback")
@pytest.mark.parametrize("fabric", [True, False])
def test_ipv6(capsys, fabric, ipv6_third):
    """Over IPv6 the relay and the sender need ::2 and ::3 (A.1: an address each; added as root)."""
    args = ["--bytes", "1MiB", "--host", "::1", "--loss", "0.01", "--trim", "0.02"]
    rc, s, err = demo(capsys, *(args if fabric else args[:4] + ["--no-fabric"]))
    assert_delivered(rc, s, MIB, err)
    assert s["fabric"] is fabric
