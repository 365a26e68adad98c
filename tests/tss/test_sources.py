"""Datagram sources nobody authenticates, and source identities that several processes share
(issue 25 items 3 and 4; uet/tss/replay.py rules 2 and 4; docs/facts.md F: Receive checks)."""

from __future__ import annotations

from uet.tss import SecureDomain, SecurityConfig, TssLayer

from .test_reference import Meta

K = bytes(range(100, 132))
A, B = "10.1.0.1", "10.1.0.2"
M = Meta(src=A, dst=B, sport=4793)  # the genuine peer's address and port, which anyone can spoof


def layer(*, epoch=0, key=K, **kw) -> TssLayer:
    return TssLayer(SecurityConfig(domains=(SecureDomain(sdi=1, key=key),), send_sdi=1,
                                   epoch=epoch, **kw))


# --- item 3: F's auth-failure threshold (1000) is no kill switch for a spoofed source ------------

def test_f_threshold_forgeries_from_the_genuine_address_and_port_do_not_shut_it_out():
    """2,000 forgeries carrying the genuine peer's address and port, in runs of 10 between its
    own packets: every genuine packet is still accepted (before: the source latched at the
    1,000th failure, and 99 of the 200 genuine packets were accepted)."""
    rx, tx, forger = layer(), layer(epoch=1), layer(epoch=1, key=bytes(32))
    accepted = 0
    for i in range(200):
        for _ in range(10):
            assert rx.unprotect(forger.protect(b"garbage" * 100, M), M) is None
        got = rx.unprotect(tx.protect(b"genuine %d" % i, M), M)
        accepted += got is not None and got.plaintext == b"genuine %d" % i
    assert accepted == 200
    assert rx.stats["tss_auth_failed"] == 2000 and rx.stats["tss_accepted"] == 200
    assert rx.stats["tss_fail_limited"] == 0 and rx.limiter.failures((A, 4793)) == 0


def test_f_threshold_a_source_that_never_authenticates_costs_one_decryption_in_probe():
    """The protection kept: past the threshold, a source's datagrams are tried one in
    ``auth_fail_probe`` (the rest dropped undecrypted); the first that authenticates clears it."""
    rx, forger = layer(auth_fail_threshold=10, auth_fail_probe=4), layer(key=bytes(32))
    for _ in range(50):
        assert rx.unprotect(forger.protect(b"x" * 64, M), M) is None
    assert rx.stats["tss_auth_failed"] == 10 + 10 and rx.stats["tss_fail_limited"] == 30
    assert rx.limiter.limited((A, 4793)) and not rx.limiter.limited((A, 4794))
    other = Meta(src=A, dst=B, sport=4794)  # another port of the same address is not limited
    assert rx.unprotect(layer(epoch=2).protect(b"other", other), other).plaintext == b"other"
    tx = layer(epoch=1)
    got = [rx.unprotect(tx.protect(b"back %d" % i, M), M) for i in range(8)]
    first = next(i for i, g in enumerate(got) if g is not None)
    assert first < 4 and all(g is not None for g in got[first:])  # tried within one probe
    assert rx.stats["tss_fail_limited"] == 30 + first
    assert not rx.limiter.limited((A, 4793)) and rx.limiter.failures((A, 4793)) == 0


# --- item 4: F's epoch age (16) must not let short senders on one address stale a long one -------

def test_f_epoch_age_a_busy_epoch_stays_valid_while_20_newer_ones_appear():
    """One address, one key: a long transfer in epoch 10 keeps sending while twenty short
    senders take epochs 11..30 (keys.EpochStore order) and come and go. Before, the long one's
    packets were tss_stale_epoch from the 17th newer epoch on (the transfer failed)."""
    rx, long_ = layer(), layer(epoch=10)
    kept = []
    for e in range(11, 31):
        short, m = layer(epoch=e), Meta(src=A, dst=B, sport=5000 + e)
        for _ in range(5):
            assert rx.unprotect(short.protect(b"short", m), m) is not None
            pkt = long_.protect(b"long", M)
            kept.append(pkt)
            assert rx.unprotect(pkt, M) is not None, e
    assert rx.stats["tss_stale_epoch"] == 0 and rx.stats["tss_accepted"] == 200
    # the kept window still refuses replays of the busy epoch
    assert rx.unprotect(kept[3], M) is None and rx.stats["tss_replay"] == 1
    # an epoch this far behind that was never accepted is still stale
    for e in (9, 3, 0):  # 21, 27 and 30 behind the newest (30), none of them ever accepted
        assert rx.unprotect(layer(epoch=e).protect(b"old", M), M) is None
    assert rx.stats["tss_stale_epoch"] == 3


def test_epoch_windows_per_source_stay_bounded_and_idle_old_ones_go_first():
    """replay rule 2: at most max_epoch_age + 1 windows within the age plus max_old_epochs
    older ones (the most recently active) per source; an old one that was let go is stale."""
    rx = layer(max_epoch_age=2, max_old_epochs=3)
    busy = layer(epoch=0)
    assert rx.unprotect(busy.protect(b"b", M), M) is not None
    idle = layer(epoch=1)
    assert rx.unprotect(idle.protect(b"i", M), M) is not None
    for e in range(2, 40):
        assert rx.unprotect(layer(epoch=e).protect(b"n", M), M) is not None
        assert rx.unprotect(busy.protect(b"b", M), M) is not None, e
        (newest, windows), = rx.replay.snapshot().values()
        assert newest == e and len(windows) <= 2 + 1 + 3 and 0 in windows
    assert 1 not in windows  # idle and older than the age: let go ...
    assert rx.unprotect(idle.protect(b"i", M), M) is None  # ... and now stale
    assert rx.stats["tss_stale_epoch"] == 1
