"""Bad input, replays, epochs, the failure limit, trimmed packets and IV uniqueness
(uet/tss/layer.py rules 4-7, replay.py rules 1-5, keys.py rule 2; F: Counter rules and Receive
checks)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from uet.tss import EpochStore, SecureDomain, SecurityConfig, TssLayer, open_frame
from uet.tss import layer as layer_mod
from uet.tss.layer import COUNTERS, pack_header

from .test_reference import Meta

K = bytes(range(100, 132))
A, B = "10.1.0.1", "10.1.0.2"
M = Meta(src=A, dst=B, sport=5000)
DROPS = [c for c in COUNTERS if c not in ("tss_protected", "tss_accepted", "tss_trimmed")]


def layer(mode="direct", *, epoch=0, sdi=1, ssi=None, key=K, first_tsc=0, **kw) -> TssLayer:
    dom = SecureDomain(sdi=sdi, key=key, mode=mode, ssi=ssi)
    return TssLayer(SecurityConfig(domains=(dom,), send_sdi=sdi, epoch=epoch, **kw),
                    first_tsc=first_tsc)


def drops(lay: TssLayer) -> int:
    return sum(lay.stats[c] for c in DROPS)


@pytest.mark.parametrize("mode,ssi", [("direct", None), ("cluster", None), ("server", 9),
                                      ("direct", 4)])
def test_every_single_bit_flip_is_rejected_and_counted(mode, ssi):
    pkt = layer(mode, ssi=ssi, epoch=2, first_tsc=5).protect(b"PDS header + SES + data", M)
    for bit in range(len(pkt) * 8):
        bad = bytearray(pkt)
        bad[bit // 8] ^= 0x80 >> (bit % 8)
        rx = layer(mode)
        assert rx.unprotect(bytes(bad), M) is None, bit
        assert drops(rx) == 1 and rx.stats["tss_accepted"] == 0 and len(rx.replay) == 0


@settings(max_examples=40)
@given(body=st.binary(max_size=600), bit=st.integers(0, 10**6), mode=st.sampled_from(
    ["direct", "cluster", "server"]), ssi=st.none() | st.integers(0, 2**32 - 1))
def test_random_bit_flip_hypothesis(body, bit, mode, ssi):
    pkt = layer(mode, ssi=ssi).protect(body, M)
    bit %= len(pkt) * 8
    bad = bytearray(pkt)
    bad[bit // 8] ^= 1 << (bit % 8)
    rx = layer(mode)
    got = rx.unprotect(bytes(bad), M)
    assert got is None and drops(rx) == 1


@settings(max_examples=150)
@given(data=st.binary(max_size=80), dscp=st.sampled_from([0, 11, 46]),
       prefix=st.sampled_from([b"", pack_header(sdi=1, an=0, ssi=None, epoch=0, tsc=0),
                               pack_header(sdi=1, an=0, ssi=7, epoch=3, tsc=9)[:14]]))
def test_random_bytes_never_raise(data, dscp, prefix):
    rx = layer("cluster")
    got = rx.unprotect(prefix + data, Meta(src=A, dst=B, dscp=dscp))
    assert got is None or got.trimmed
    fields, plain = open_frame(prefix + data, src=A, dst=B, sport=1,
                               domains=(SecureDomain(sdi=1, key=K, mode="server"),))
    assert plain is None and isinstance(fields, dict)


def test_open_frame_survives_bad_addresses():
    pkt = layer().protect(b"x", M)
    assert open_frame(pkt, src="not an address", dst=B, sport=1,
                      domains=(SecureDomain(sdi=1, key=K),))[1] is None


def test_replay_is_counted_and_changes_nothing():
    tx, rx = layer(), layer()
    pkts = [tx.protect(bytes([i]), M) for i in range(5)]
    for p in pkts:
        assert rx.unprotect(p, M) is not None
    before = rx.replay.snapshot()
    for p in pkts:
        assert rx.unprotect(p, Meta(src=A, dst=B, sport=6000)) is None  # any entropy port
    assert rx.stats["tss_replay"] == 5 and rx.replay.snapshot() == before


def test_tsc_below_the_window_is_too_old():
    tx, rx = layer(), layer(replay_window=64)
    pkts = [tx.protect(b"", M) for _ in range(66)]
    for p in pkts[1:65]:  # TSC 1..64
        assert rx.unprotect(p, M) is not None
    assert rx.unprotect(pkts[0], M) is None and rx.stats["tss_too_old"] == 1
    assert rx.unprotect(pkts[65], M) is not None


@settings(max_examples=20)
@given(st.randoms(use_true_random=False))
def test_reordering_within_the_window_is_accepted(rnd):
    tx, rx = layer("cluster"), layer("cluster", replay_window=64)
    pkts = [tx.protect(bytes([i]), M) for i in range(64)]
    rnd.shuffle(pkts)
    assert all(rx.unprotect(p, M) is not None for p in pkts)
    assert rx.stats["tss_accepted"] == 64


def test_new_epoch_after_many_packets_and_old_epoch_replays_still_refused():
    rx = layer("cluster")
    first = layer("cluster", epoch=5)
    old = [first.protect(b"a", M) for _ in range(600)]
    assert all(rx.unprotect(p, M) is not None for p in old)
    restarted = layer("cluster", epoch=6)  # the sender restarted: TSC from 0 again
    assert all(rx.unprotect(restarted.protect(b"b", M), M) is not None for _ in range(10))
    assert rx.stats["tss_replay"] == 0
    assert rx.unprotect(old[3], M) is None and rx.stats["tss_replay"] == 1


def test_stale_epoch_and_wraparound():
    rx = layer()
    assert rx.unprotect(layer(epoch=20).protect(b"", M), M) is not None
    assert rx.unprotect(layer(epoch=3).protect(b"", M), M) is None  # 17 behind
    assert rx.stats["tss_stale_epoch"] == 1
    assert rx.unprotect(layer(epoch=4).protect(b"", M), M) is not None  # 16 behind
    rx = layer()
    assert rx.unprotect(layer(epoch=2).protect(b"", M), M) is not None
    assert rx.unprotect(layer(epoch=0xFFF0).protect(b"", M), M) is None  # 18 behind across 0
    assert rx.unprotect(layer(epoch=0xFFF8).protect(b"", M), M) is not None  # 10 behind


def test_unknown_sdi_truncated_and_wrong_key():
    rx = layer()
    assert rx.unprotect(layer(sdi=2).protect(b"x", M), M) is None
    assert rx.unprotect(layer(ssi=1).protect(b"x", M)[:15], M) is None  # SP set, 15 bytes
    empty = layer().protect(b"", M)
    assert rx.unprotect(empty[:-1], M) is None  # shorter than header + tag
    assert rx.unprotect(layer().protect(b"abcdef", M)[:-3], M) is None  # tag cut: fails
    assert rx.unprotect(layer(key=bytes(32)).protect(b"x", M), M) is None
    assert (rx.stats["tss_unknown_sdi"], rx.stats["tss_truncated"], rx.stats["tss_auth_failed"]) \
        == (1, 2, 2)
    assert rx.unprotect(b"\x10" + empty[1:], M) is None  # type 2
    assert rx.unprotect(bytes([empty[0] | 0x02]) + empty[1:], M) is None  # reserved bit
    assert rx.stats["tss_bad_header"] == 2 and rx.stats["tss_accepted"] == 0


def test_failure_threshold_limits_only_the_failing_source():
    rx = layer(auth_fail_threshold=5)
    forger = Meta(src=A, dst=B, sport=9999)
    forged = layer(key=bytes(32))
    for _ in range(6):  # the 6th is the first probe of the limited source (one in 16)
        assert rx.unprotect(forged.protect(b"evil", forger), forger) is None
    assert rx.stats["tss_auth_failed"] == 6 and rx.limiter.limited((A, 9999))
    genuine = layer()
    assert rx.unprotect(genuine.protect(b"ok", forger), forger) is None  # limited: not tried
    assert rx.stats["tss_fail_limited"] == 1 and rx.stats["tss_auth_failed"] == 6
    for port in (5000, 5001, 5002):  # the genuine sender's entropy ports still pass
        m = Meta(src=A, dst=B, sport=port)
        assert rx.unprotect(genuine.protect(b"ok", m), m).plaintext == b"ok"


def test_forged_packet_far_ahead_does_not_slide_the_window():
    tx, rx = layer(), layer(replay_window=64)
    pkts = [tx.protect(bytes([i]), M) for i in range(12)]
    for p in pkts[:10]:
        rx.unprotect(p, M)
    before = rx.replay.snapshot()
    forged = bytearray(layer(first_tsc=10**6).protect(b"x" * 10, M))
    forged[-1] ^= 1
    assert rx.unprotect(bytes(forged), M) is None and rx.replay.snapshot() == before
    assert rx.unprotect(pkts[11], M) is not None and rx.unprotect(pkts[10], M) is not None
    assert rx.unprotect(pkts[5], M) is None and rx.stats["tss_replay"] == 1


@pytest.mark.parametrize("mode", ["direct", "cluster"])
def test_trimmed_packet_gives_an_unauthenticated_prefix_and_changes_nothing(mode):
    body = bytes(range(200))
    tx, rx = layer(mode, epoch=1), layer(mode)
    rx.unprotect(tx.protect(b"warm up", M), M)
    pkt = tx.protect(body, M)
    before = rx.replay.snapshot()
    got = rx.unprotect(pkt[:64], Meta(src=A, dst=B, dscp=11))
    assert got is not None and got.trimmed and got.plaintext == body[:52]
    assert (got.sdi, got.epoch, got.tsc) == (1, 1, 1)
    assert rx.stats["tss_trimmed"] == 1 and rx.replay.snapshot() == before
    assert rx.unprotect(pkt, M).plaintext == body  # the whole packet later is still accepted
    # once it arrived whole, a trimmed copy is a replay (read-only check)
    assert rx.unprotect(pkt[:64], Meta(src=A, dst=B, dscp=11)) is None


def test_trimmed_drop_choice():
    tx, rx = layer(), layer(trimmed="drop")
    assert rx.unprotect(tx.protect(bytes(200), M)[:64], Meta(src=A, dst=B, dscp=11)) is None
    assert rx.stats["tss_trimmed_dropped"] == 1 and rx.stats["tss_trimmed"] == 0


def test_trimmed_forgery_changes_no_failure_count():
    rx = layer(auth_fail_threshold=1)
    junk = layer(key=bytes(32)).protect(bytes(100), M)[:64]
    assert rx.unprotect(junk, Meta(src=A, dst=B, dscp=11)).trimmed  # garbage, but untrusted
    assert rx.limiter.failures((A, 5000)) == 0


@pytest.mark.parametrize("mode", ["direct", "cluster", "server"])
def test_two_processes_from_one_store_never_repeat_an_iv(tmp_path, monkeypatch, mode):
    seen: list[tuple[bytes, bytes]] = []
    real = layer_mod.seal
    monkeypatch.setattr(layer_mod, "seal", lambda k, iv, aad, pt: (seen.append((k, iv)),
                                                                   real(k, iv, aad, pt))[1])
    store = str(tmp_path / "k.key.epoch")
    senders = [layer(mode, epoch=EpochStore(store).take()) for _ in range(2)]
    rnd = random.Random(1)
    for _ in range(1200):  # interleaved, across rekey boundaries
        senders[rnd.randrange(2)].protect(b"d", M)
    assert len(seen) == 1200 and len(set(seen)) == 1200
    assert len({iv for _, iv in seen}) == 1200
