"""Scenario tests through the simulated fabric over a seed matrix. Every byte must arrive intact
(checked by hash inside the simulator); ROD must deliver in order. A failure names the replay."""

from __future__ import annotations

import pytest

from uet.sim import SimConfig, run

KB = 1024


def check(cfg: SimConfig) -> dict:
    r = run(cfg)
    replay = (f"replay: SimConfig({', '.join(f'{k}={v!r}' for k, v in vars(cfg).items() if v != getattr(SimConfig(), k))})")
    assert r["ok"], f"{r['failures']} {replay}"
    assert r["internal_errors"] == 0, replay
    return r


@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", [1, 2])
def test_lossless_never_retransmits(mode, seed):
    r = check(SimConfig(bytes=1 << 20, mode=mode, seed=seed, messages=3))
    assert r["retransmissions"] == 0 and r["dropped"] == 0 and r["nacks"] == {}
    assert r["paths_used"] == 4


@pytest.mark.parametrize("paths, mib", [(16, 20), (32, 16)])
def test_lossless_many_paths_long_transfer_never_retransmits(paths, mib):
    # 64 entropy values hash unevenly onto many paths: one path's queue keeps growing, and its
    # packets, still in flight, must not be taken for lost (PDS-I7's windowed maximum RTT)
    r = check(SimConfig(bytes=mib << 20, paths=paths, seed=1))
    assert r["retransmissions"] == 0 and r["dropped"] == 0 and r["nacks"] == {}


@pytest.mark.parametrize("loss", [0.01, 0.05, 0.1])
@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_loss(loss, mode, seed):
    r = check(SimConfig(bytes=512 * KB, loss=loss, mode=mode, seed=seed, messages=2))
    assert r["dropped"] > 0 or loss < 0.05
    assert r["retransmissions"] >= 1 or r["dropped"] == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trimming_gets_trimmed_nacks(seed):
    r = check(SimConfig(bytes=512 * KB, trim=0.05, seed=seed))
    assert r["trimmed"] > 0
    assert r["nacks"].get("TRIMMED") == r["trimmed"]


@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reordering_few_spurious(mode, seed):
    r = check(SimConfig(bytes=1 << 20, reorder=0.1, mode=mode, seed=seed))
    assert r["spurious_retransmissions"] <= 0.05 * r["data_packets"]


@pytest.mark.parametrize("seed", [1, 2])
def test_duplication(seed):
    r = check(SimConfig(bytes=512 * KB, dup=0.1, seed=seed, mode="rod"))
    assert r["duplicated"] > 0 and r["retransmissions"] == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_corruption_caught_by_crc(seed):
    r = check(SimConfig(bytes=512 * KB, corrupt=0.05, seed=seed))
    assert r["corrupted"] > 0 and r["bad_crc"] == r["corrupted"]


@pytest.mark.parametrize("spray", ["rr", "random"])
@pytest.mark.parametrize("seed", [1, 2])
def test_path_fails_mid_transfer(spray, seed):
    r = check(SimConfig(bytes=1 << 20, seed=seed, spray=spray, fail=[(0, 20), (1, 20)]))
    assert r["dropped"] > 0


@pytest.mark.parametrize("path", range(4))
def test_single_entropy_rehashes_off_a_failed_path(path):
    r = check(SimConfig(bytes=1 << 20, seed=1, spray="single", fail=[(path, 20)]))
    assert r["paths_used"] >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ack_and_nack_loss(seed):
    check(SimConfig(bytes=512 * KB, ack_loss=0.2, trim=0.05, seed=seed))


@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("last", [1, 2, 3])
def test_tail_loss(mode, last):
    n = (256 * KB) // 4096
    r = check(SimConfig(bytes=256 * KB, mode=mode, drop_psns=tuple(range(n - last + 1, n + 1))))
    assert r["retransmissions"] >= last
    assert r["tlp"] + r["rto"] >= 1


def test_small_messages_and_mtu():
    check(SimConfig(bytes=100 * KB, messages=37, mtu=1024, loss=0.02, seed=5))
    check(SimConfig(bytes=0, messages=1))


def test_deterministic_from_seed():
    a = run(SimConfig(bytes=256 * KB, loss=0.05, reorder=0.1, seed=9))
    b = run(SimConfig(bytes=256 * KB, loss=0.05, reorder=0.1, seed=9))
    for k in ("sim_time_s", "packets_sent", "retransmissions", "dropped", "nacks"):
        assert a[k] == b[k]


@pytest.mark.slow
@pytest.mark.parametrize("loss", [0.0, 0.02, 0.05, 0.1])
@pytest.mark.parametrize("seed", range(10, 16))
@pytest.mark.parametrize("mode", ["rud", "rod"])
def test_matrix_combined_impairments(loss, seed, mode):
    check(SimConfig(bytes=1 << 20, loss=loss, trim=0.03, reorder=0.05, dup=0.02, corrupt=0.01,
                    mode=mode, seed=seed, paths=8, messages=4, ack_loss=0.02))
