"""The live fabric's links (uet.fabric.paths over the network model of uet.net) on a virtual
clock, without sockets: rate, queue, ECN and trimming rules, configuration, determinism."""

from __future__ import annotations

import argparse
import random

import pytest

from uet.fabric.paths import FWD, FabricConfig, Link, Releases, flow_rng
from uet.net import Ecmp
from uet.sim import SimConfig

OVERHEAD = 42  # Ethernet + IPv4 + UDP, as the simulator's frames


def link(**kw) -> tuple[Link, Releases]:
    cfg = FabricConfig(**kw)
    rel = Releases(cfg.slack_us * 1e-6)
    return Link(cfg, 0, FWD, rel), rel


def keep(data: bytes, link: Link) -> bytes:
    link.crc_rewritten += 1
    return data


def test_rate_and_delay_serialise_a_burst():
    lk, rel = link(rate_gbps=8.0, rtt_us=100.0)  # 1 byte per ns
    for _ in range(5):
        lk.forward(0.0, bytes(958), 0x02, None, random.Random(1), keep)
    times = sorted(e[0] for e in rel.heap)
    # each 1000-byte frame takes 1 us; then 50 us of one-way delay
    assert times == pytest.approx([(k + 1) * 1e-6 + 50e-6 for k in range(5)])
    assert lk.depth(0.0) == pytest.approx(5000)
    assert lk.queued == 5 and lk.crc_rewritten == 5


def test_overflow_trims_eligible_data_and_drops_the_rest():
    lk, rel = link(rate_gbps=0.001, queue_bytes=2500)  # frames of 1042 bytes; 298 trimmed
    rng = random.Random(1)
    for _ in range(3):
        lk.forward(0.0, bytes(1000), 0x02, None, rng, keep)  # the third overflows: trimmed
    lk.forward(0.0, bytes(1000), 46 << 2, None, rng, keep)   # control: never trimmed, dropped
    lk.forward(0.0, bytes(200), 0x02, None, rng, keep)       # too short to trim: dropped
    assert (lk.received, lk.trimmed, lk.dropped, lk.overflow_drops) == (5, 1, 2, 2)
    trimmed = [e for e in rel.heap if e[4] >> 2 == 11]
    assert len(trimmed) == 1 and len(trimmed[0][3]) == 256 and trimmed[0][4] & 3 == 2


def test_ce_marking_between_kmin_and_kmax_only_for_ect():
    lk, rel = link(rate_gbps=0.001, kmin_bytes=2000, kmax_bytes=4000, queue_bytes=1 << 20)
    rng = random.Random(1)
    for i in range(10):
        lk.forward(0.0, bytes(958), [0x02, 0x00][i % 2], None, rng, keep)
    tos = [e[4] for e in sorted(rel.heap)]
    assert tos[:3] == [0x02, 0x00, 0x02]  # depth 0, 1000, 2000: not above kmin
    assert tos[5:] == [0x00, 0x03, 0x00, 0x03, 0x00]  # depth >= kmax: every ECT packet
    assert lk.ce_marked == sum(t == 3 for t in tos)


def test_failure_loss_and_determinism():
    lk, _ = link(fail=[(0, 5.0)])
    lk.fail_now(5e-6)
    lk.forward(4e-6, b"x" * 300, 2, None, random.Random(), keep)
    lk.forward(5e-6, b"x" * 300, 2, None, random.Random(), keep)
    assert (lk.received, lk.fail_drops, lk.dropped) == (2, 1, 1)

    def fates(seed):
        lk, rel = link(loss=0.2, trim=0.3, dup=0.1, reorder=0.1, corrupt=0.05, seed=seed)
        rng = flow_rng(seed, FWD, 0)
        for i in range(500):
            lk.forward(i * 1e-6, bytes(1000), 0x02, None, rng, keep)
        return (lk.loss_drops, lk.trimmed, lk.duplicated, lk.reordered, lk.corrupted)

    a = fates(3)
    assert a == fates(3) and a != fates(4)
    loss, trim, dup, reo, cor = a
    assert 60 <= loss <= 140 and 80 <= trim <= 160 and 20 <= dup <= 70 and 20 <= reo <= 70 and 5 <= cor <= 50


def test_path_hash_is_stable_and_spreads():
    h = Ecmp(FabricConfig(paths=4, seed=1)).entropy_path
    counts = [0] * 4
    for ev in range(49152, 49152 + 4096):
        counts[h(ev)] += 1
        assert h(ev) == h(ev)
    assert min(counts) > 800
    assert Ecmp(FabricConfig(paths=1)).entropy_path(12345) == 0


def test_config_validation_and_from_sim():
    with pytest.raises(ValueError):
        FabricConfig(loss=1.5)
    with pytest.raises(ValueError):
        FabricConfig(paths=0)
    with pytest.raises(ValueError):
        FabricConfig(kmin_bytes=10, kmax_bytes=10)
    sim = SimConfig(paths=2, rate_gbps=25.0, rtt_us=40.0, loss=0.1, trim=0.2, dup=0.01,
                    fail=[(1, 50.0)], seed=9)
    f = FabricConfig.from_sim(sim)
    assert (f.paths, f.rate_gbps, f.rtt_us, f.loss, f.trim, f.dup, f.fail, f.seed) == \
        (2, 25.0, 40.0, 0.1, 0.2, 0.01, [(1, 50.0)], 9)
    assert f.queue_bytes == FabricConfig().queue_bytes  # SimConfig's None keeps our default
    assert FabricConfig(rtt_us=10).reorder_delay_s == pytest.approx(2e-3)
    assert FabricConfig(rtt_us=10, reorder_delay_us=30).reorder_delay_s == pytest.approx(30e-6)


def test_config_from_sim_style_arguments():
    from uet.fabric.command import config_from_args
    from uet.sim.command import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--paths", "3", "--loss", "0.05", "--fail-path", "2@100", "--seed", "4"])
    cfg = config_from_args(args)
    assert (cfg.paths, cfg.loss, cfg.fail, cfg.seed) == (3, 0.05, [(2, 100.0)], 4)


@pytest.mark.parametrize("src,dst", [("127.0.0.1", "127.0.0.2"), ("::1", "fe80::2")])
def test_capture_frames_match_the_wire_builder(src, dst):
    from uet.fabric import FrameBuilder
    from uet.wire.build import udp_frame

    fb = FrameBuilder()
    for tos, n in ((0x02, 100), (0x2D, 256), (0xB8, 4100)):
        body = bytes(range(256)) * (n // 256) + bytes(n % 256)
        want = udp_frame(body, src=src, dst=dst, sport=49152, dport=4793, dscp=tos >> 2, ecn=tos & 3,
                         trailer=False)
        assert fb.frame(src, dst, 49152, 4793, tos, body) == want
