"""Issue 29 item 3: the simulators' receivers check a SEND by its digest and hold the window, not
the message (SES-M8, uet.native.digest); a damaged delivery still fails the run."""

from __future__ import annotations

import pytest

import uet.ses.target as target
from uet.native.digest import DigestReassembly
from uet.sim.fabric import FabricSimConfig, FabricSimulator
from uet.sim.simulator import SimConfig, Simulator
from uet.sim.traffic import TrafficError


class Recording(DigestReassembly):
    """Counts the chunks every message of the run holds at once (its storage, in chunks)."""

    live: list = []
    peak = 0

    def _engine_of(self, index):
        e = super()._engine_of(index)
        if self not in Recording.live:
            Recording.live.append(self)
        held = sum(len(r._chunks) * r._chunk for r in Recording.live)
        Recording.peak = max(Recording.peak, held)
        return e


class Damaging(DigestReassembly):
    """Flips a bit of the first byte of every message as it is placed: what a receive path that
    damaged the data after the checks of the wire would deliver."""

    def place(self, offset, data):
        if offset == 0 and len(data):
            data = bytes([data[0] ^ 0x40]) + bytes(data[1:])
        return super().place(offset, data)


def _peak_held(monkeypatch, run) -> int:
    monkeypatch.setattr(target, "DigestReassembly", Recording)
    Recording.live, Recording.peak = [], 0
    summary = run()
    assert summary["ok"], summary["failures"]
    return Recording.peak


@pytest.mark.parametrize("drops", [(), (100, 3000)])
def test_two_host_receiver_holds_the_window_not_the_message(monkeypatch, drops):
    sims = []

    def run(n):
        sims.append(Simulator(SimConfig(bytes=n, paths=2, drop_psns=drops, seed=5)))
        return sims[-1].run

    small = _peak_held(monkeypatch, run(4 << 20))
    big = _peak_held(monkeypatch, run(32 << 20))
    # 28 MiB more to move; what B holds is the chunks from the first hole to the furthest byte:
    # without loss the window and a chunk either side, whatever the message's length
    assert sims[0].window == sims[1].window
    if not drops:
        assert big <= sims[0].window + 2 * (256 << 10), (small, big)
    assert big - small < 1 << 20, (small, big)


def test_fabric_receivers_hold_the_window_not_the_flow(monkeypatch):
    def run(n):
        cfg = FabricSimConfig(topology="leafspine:4,2,1", traffic=("incast", 3), flow_bytes=n,
                              seed=2)
        return lambda: FabricSimulator(cfg).run()

    small = _peak_held(monkeypatch, run(1 << 20))
    big = _peak_held(monkeypatch, run(8 << 20))
    assert big - small <= 3 * (256 << 10) and big <= 4 << 20, (small, big)


def test_a_damaged_delivery_fails_the_two_host_run(monkeypatch):
    monkeypatch.setattr(target, "DigestReassembly", Damaging)
    s = Simulator(SimConfig(bytes=1 << 20, messages=2, paths=2, seed=1)).run()
    assert s["ok"] is False and s["delivered"] == 0


@pytest.mark.parametrize("mode", ["rud", "rod"])
def test_a_damaged_delivery_fails_the_fabric_run(monkeypatch, mode):
    monkeypatch.setattr(target, "DigestReassembly", Damaging)
    cfg = FabricSimConfig(topology="leafspine:4,2,1", traffic=("incast", 2), flow_bytes=300_000,
                          mode=mode, seed=1)
    s = FabricSimulator(cfg).run()
    assert s["ok"] is False
    assert any("that no flow sent" in f for f in s["failures"]), s["failures"]


def test_flows_are_limited_by_the_longest_not_by_their_sum():
    # 16 flows of 600 MiB (9.4 GiB in all) share one stream of 600 MiB: built (run not started)
    cfg = FabricSimConfig(topology="leafspine:8,2,1", traffic=("permutation", None),
                          flow_bytes=600 << 20)
    assert len(FabricSimulator(cfg).flows) == 16
    with pytest.raises(TrafficError, match="a flow carries 4294967297 bytes.*4GiB"):
        FabricSimulator(FabricSimConfig(topology="leafspine:8,2,1", traffic=("incast", 2),
                                        flow_bytes=(4 << 30) + 1))
