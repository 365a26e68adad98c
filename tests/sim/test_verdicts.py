"""Issue 11 item 10: honest verdicts in ``uet sim``. ``delivered`` and ``sent`` are always in the
summary; for UUD ``ok`` means that everything that arrived is intact, and a datagram the network
duplicated is delivered twice (UUD has no PSN, B.14) and counted in ``duplicates``."""

from __future__ import annotations

import pytest

from uet.sim.simulator import SimConfig, Simulator


@pytest.mark.parametrize("mode,op,messages", [("rud", "send", 3), ("rod", "send", 2),
                                              ("rud", "write", 4), ("rud", "tsend", 3),
                                              ("rudi", "read", 2), ("uud", "send", 1)])
def test_delivered_and_sent_are_always_reported(mode, op, messages):
    r = Simulator(SimConfig(bytes=64 << 10, messages=messages, mode=mode, op=op, seed=2)).run()
    assert r["ok"], r["failures"]
    assert r["delivered"] == r["sent"] == r["messages"]


def test_uud_duplicates_are_delivered_and_counted():
    r = Simulator(SimConfig(bytes=128 << 10, mode="uud", dup=0.3, seed=4)).run()
    assert r["ok"] and r["duplicated"] > 0
    assert r["duplicates"] == r["duplicated"] and r["delivered"] == r["sent"] + r["duplicated"]


def test_uud_datagrams_with_equal_bytes_are_not_taken_for_duplicates():
    r = Simulator(SimConfig(bytes=4096, mtu=1, mode="uud", seed=5)).run()  # 4096 one-byte datagrams
    assert r["ok"], r["failures"]
    assert r["duplicates"] == 0 and r["delivered"] == r["sent"] == 4096


def test_uud_losses_leave_ok_true_and_show_in_delivered():
    r = Simulator(SimConfig(bytes=256 << 10, mode="uud", loss=0.2, seed=6)).run()
    assert r["ok"] and r["dropped"] > 0 and r["delivered"] == r["sent"] - r["dropped"]
