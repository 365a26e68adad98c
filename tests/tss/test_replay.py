"""Replay windows, epoch ages and the failure limiter (uet/tss/replay.py rules 1-5; F)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from uet.tss.replay import (ACCEPT, REPLAY, STALE_EPOCH, TOO_OLD, FailureLimiter, ReplayTracker,
                            ReplayWindow, epoch_behind)


def test_window_basics():
    w = ReplayWindow(8)
    assert w.check(5) == ACCEPT
    w.commit(5)
    assert w.check(5) == REPLAY
    assert w.check(0) == ACCEPT and w.check(6) == ACCEPT
    w.commit(12)  # slides: 5..12 inside, 4 and below too old
    assert w.check(5) == REPLAY and w.check(4) == TOO_OLD and w.check(6) == ACCEPT
    w.commit(1000)  # a jump past the whole window clears it
    assert w.check(999) == ACCEPT and w.check(1000) == REPLAY and w.check(992) == TOO_OLD


@settings(max_examples=60)
@given(st.lists(st.integers(0, 300), max_size=200), st.integers(1, 64))
def test_window_against_a_set_model(tscs, size):
    w, seen, top = ReplayWindow(size), set(), -1
    for t in tscs:
        expect = (TOO_OLD if top - t >= size else REPLAY if t in seen else ACCEPT)
        assert w.check(t) == expect
        if expect == ACCEPT:
            w.commit(t)
            seen.add(t)
            top = max(top, t)


def test_epoch_serial_arithmetic():
    assert epoch_behind(20, 3) == 17 and epoch_behind(3, 20) == -17
    assert epoch_behind(2, 0xFFF0) == 18 and epoch_behind(0xFFF0, 2) == -18
    assert epoch_behind(5, 5) == 0 and epoch_behind(0, 0x8000) == 0x8000


def test_tracker_epochs_and_pruning():
    t = ReplayTracker(window=16, max_epoch_age=16, max_old_epochs=0, max_sources=8)
    t.commit("a", 20, 0)
    assert t.check("a", 3, 0) == STALE_EPOCH
    assert t.check("a", 4, 0) == ACCEPT  # 16 behind: still within the age
    assert t.check("a", 20, 0) == REPLAY
    t.commit("a", 4, 0)
    t.commit("a", 21, 7)  # newer epoch: a new window; epoch 4 is now 17 behind and forgotten
    snap = t.snapshot()["a"]
    assert snap[0] == 21 and set(snap[1]) == {20, 21}
    assert t.check("a", 4, 1) == STALE_EPOCH
    assert t.check("b", 4, 1) == ACCEPT


def test_tracker_keeps_an_old_epochs_window_whatever_its_age():  # rule 2
    t = ReplayTracker(window=16, max_epoch_age=16, max_old_epochs=1, max_sources=8)
    t.commit("a", 4, 0)
    t.commit("a", 3, 0)
    t.commit("a", 21, 0)  # 4 and 3 now older than the age; 3 was active last: it stays
    assert set(t.snapshot()["a"][1]) == {3, 21}
    assert t.check("a", 3, 1) == ACCEPT and t.check("a", 3, 0) == REPLAY
    assert t.check("a", 4, 1) == STALE_EPOCH
    assert t.check("a", 60000, 0) == STALE_EPOCH  # serially far behind, never accepted
    t.commit("a", 22, 0)  # 3 is still the most recently active old one
    assert set(t.snapshot()["a"][1]) == {3, 21, 22}


def test_tracker_and_limiter_are_bounded():
    t = ReplayTracker(window=16, max_sources=3)
    for i in range(10):
        t.commit(i, 0, 0)
    assert len(t) == 3
    lim = FailureLimiter(threshold=2, max_sources=3)
    for i in range(10):
        lim.record_failure(i)
    assert len(lim) == 3
    lim.record_failure(9)
    assert lim.limited(9) and not lim.limited(8)


def test_limiter_tries_one_in_probe_and_a_success_clears_it():  # rule 4
    lim = FailureLimiter(threshold=3, probe=5)
    for _ in range(3):
        assert lim.allow("s")
        lim.record_failure("s")
    tried = []
    for i in range(20):
        if lim.allow("s"):
            tried.append(i)
            lim.record_failure("s")
    assert tried == [0, 5, 10, 15] and lim.failures("s") == 23
    assert lim.allow("s") and lim.allow("s")  # a try that neither failed nor succeeded: tried again
    lim.record_success("s")
    assert lim.failures("s") == 0 and not lim.limited("s") and len(lim) == 0
    lim.record_success("never failed")  # no state for a source that never failed
    assert len(lim) == 0
