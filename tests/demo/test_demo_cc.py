"""``uet demo`` with congestion control, REPS/oblivious spraying, CSIG-style signalling and a
degraded path: every byte delivered (checked by hash, as every demo run), the summary's new keys,
and bad options. Small runs (1-2 MiB), bounded by ``--timeout``; no timing assertions."""

from __future__ import annotations

import argparse
import shlex

import pytest

from uet.demo.command import replay_command
from uet.demo.report import format_table
from uet.demo.options import add_arguments

from .test_demo import MIB, assert_delivered, demo

NEW_TOP = {"cc", "spray", "csig", "cwnd_bytes", "credit_granted", "cc_counters"}
NEW_PER_PATH = {"max_queue_bytes", "mean_queue_bytes", "rate_gbps", "trimmed", "ce_marked"}


def check_common(s: dict, cc: str, spray: str, csig: str | None) -> None:
    assert NEW_TOP <= set(s) and (s["cc"], s["spray"], s["csig"]) == (cc, spray, csig)
    for p in s["per_path"]:
        assert NEW_PER_PATH <= set(p)
        assert 0 <= p["mean_queue_bytes"] <= p["max_queue_bytes"]
        assert {"max_queue_bytes", "mean_queue_bytes"} <= set(p["fwd"]) & set(p["rev"])
    w = s["cwnd_bytes"]
    assert w["samples"] >= 1 and w["min"] <= w["mean"] <= max(w["min"], w["final"], w["mean"])


def test_nscc_reps_csig(capsys):
    rc, s, err = demo(capsys, "--bytes", "2MiB", "--seed", "3", "--cc", "nscc", "--spray", "reps",
                      "--csig", "abw")
    assert_delivered(rc, s, 2 * MIB, err)
    check_common(s, "nscc", "reps", "abw")
    assert s["base_rtt_s"] == pytest.approx(1e-3) and s["cc_rate_gbps"] == pytest.approx(1.0)
    assert s["credit_granted"] is None and "fair_increase" in s["cc_counters"]
    assert s["cwnd_bytes"]["min"] >= 4096
    sel = s["csig_selector"]
    assert sel["signals"] > 0  # the receiver reflected, the sender's selector heard
    for p in s["per_path"]:
        assert p["csig_mean_bucket"] is None or 0 <= p["csig_mean_bucket"] <= 31
        # every request the link admitted was stamped, or got d set when it was trimmed; the
        # sender's control packets (CLOSE, DSCP 46) go neutral
        f = p["fwd"]
        assert f["csig_stamped"] + f["csig_d_set"] + f["csig_neutral"] == f["forwarded"]
        assert p["fwd"]["csig_d_set"] == p["fwd"]["trimmed"]
        assert p["rev"]["csig_neutral"] == p["rev"]["forwarded"]  # answers: neutral
    assert s["receiver"]["io_csig_tags"] > 0 and s["receiver"]["csig_bad"] == 0
    assert s["sender"]["csig_unasked"] == 0
    assert "csig s" in format_table(s) and "max q KiB" in format_table(s)


def test_rccc_with_csig(capsys):
    rc, s, err = demo(capsys, "--bytes", "2MiB", "--seed", "4", "--cc", "rccc", "--csig", "nqd")
    assert_delivered(rc, s, 2 * MIB, err)
    check_common(s, "rccc", "rr", "nqd")
    c = s["cc_counters"]
    assert s["credit_granted"] == c["granted"] and c["granted"] + c["initial"] >= 2 * MIB
    assert s["receiver"]["io_csig_tags"] > 0


@pytest.mark.parametrize("spray", ["oblivious", "reps"])
def test_spray_kinds(capsys, spray):
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--seed", "5", "--spray", spray)
    assert_delivered(rc, s, MIB, err)
    check_common(s, "fixed", spray, None)
    assert s["paths_used"] >= 2 and "csig_selector" not in s
    assert all("csig_mean_bucket" not in p for p in s["per_path"])


def test_degraded_path_runs_slow_and_signals_less_bandwidth(capsys):
    rc, s, err = demo(capsys, "--bytes", "2MiB", "--seed", "6", "--paths", "8", "--loss", "0",
                      "--trim", "0", "--degrade-path", "3:0.25", "--cc", "nscc", "--spray", "reps",
                      "--csig", "abw")
    assert_delivered(rc, s, 2 * MIB, err)
    rates = [p["rate_gbps"] for p in s["per_path"]]
    assert rates[3] == pytest.approx(0.0625) and set(rates[:3] + rates[4:]) == {0.25}
    assert s["cc_rate_gbps"] == pytest.approx(7 * 0.25 + 0.0625)
    slow = s["per_path"][3]["csig_mean_bucket"]
    # ABW's full scale is --rate: a quarter-rate path can never sign above floor(31 / 4) = 7
    assert slow is None or slow <= 7


def test_no_fabric_cc_uses_the_loopback_defaults(capsys):
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--no-fabric", "--cc", "nscc")
    assert_delivered(rc, s, MIB, err)
    assert s["cc_rate_gbps"] == 10.0 and s["base_rtt_s"] == pytest.approx(1e-3)


def test_fixed_is_the_default_and_unchanged(capsys):
    rc, s, err = demo(capsys, "--bytes", "1MiB", "--seed", "2")
    assert_delivered(rc, s, MIB, err)
    assert s["cc"] == "fixed" and s["cwnd_bytes"]["min"] == s["cwnd_bytes"]["final"] == 1 << 20
    assert "base_rtt_s" not in s and s["window_bytes"] == 1 << 20


@pytest.mark.parametrize("argv, needle", [
    (["--cc", "cubic"], "argument --cc"),
    (["--spray", "ecmp"], "argument --spray"),
    (["--csig", "ecn"], "argument --csig"),
    (["--degrade-path", "4:0.5"], "there is no path 4"),
    (["--degrade-path", "1:0"], "argument --degrade-path"),
    (["--no-fabric", "--csig", "abw"], "--csig: needs the fabric"),
    (["--no-fabric", "--degrade-path", "1:0.5"], "--degrade-path: needs the fabric"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    from uet.demo.command import main

    assert main(["--json", *argv]) == 2
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert cap.out == "" and len(lines) == 2
    assert lines[0].startswith("uet demo: error:") and needle in lines[0]


def test_replay_line_repeats_cc_spray_csig_and_degrade():
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--cc", "rccc", "--spray", "oblivious", "--csig", "delay",
                         "--degrade-path", "2:0.5", "--seed", "9"])
    from uet.demo.options import resolve

    resolve(args)
    words = shlex.split(replay_command(args))
    again = p.parse_args(words[2:])
    assert (again.cc, again.spray, again.csig, again.degrade_path, again.seed) == \
        ("rccc", "oblivious", "delay", [(2, 0.5)], 9)
