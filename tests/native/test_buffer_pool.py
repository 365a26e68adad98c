"""No per-message zero-fill, and no stale bytes (issue 15 item 3): message buffers longer than one
chunk come from uet.native.reassembly.POOL and are reused once nothing refers to them; a message
delivered from a reused buffer holds only its own bytes (holes, if taken early, read as zeros)."""

from __future__ import annotations

import gc
import hashlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import reassembly as R
from uet.native.reassembly import BufferPool, Reassembly

CHUNK = 4096  # small chunks: many chunks per message, quick tests


def _sha(b) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def pool(monkeypatch):
    p = BufferPool(max_bytes=1 << 22, chunk=CHUNK)
    monkeypatch.setattr(R, "POOL", p)
    return p


def _fill(length: int, payload: bytes, rnd: random.Random, step: int = 1000) -> Reassembly:
    r = Reassembly(length, chunk=CHUNK)
    offs = list(range(0, length, step))
    rnd.shuffle(offs)
    for o in offs:
        r.place(o, payload[o:o + step])
    return r


def test_a_dropped_message_buffer_is_reused_and_holds_only_the_new_message(pool):
    rnd = random.Random(1)
    a = rnd.randbytes(50_000)
    ra = _fill(len(a), a, rnd)
    da = ra.take()
    assert _sha(da) == _sha(a)
    del da, ra
    gc.collect()
    b = rnd.randbytes(49_000)  # shorter: the same mapping serves it
    db = _fill(len(b), b, rnd).take()
    assert pool.reused == 1 and pool.made == 1
    assert len(db) == len(b) and _sha(db) == _sha(b)


def test_a_buffer_still_referenced_is_never_handed_out(pool):
    rnd = random.Random(2)
    a = rnd.randbytes(30_000)
    da = _fill(len(a), a, rnd).take()
    view = da[100:200]  # a slice of the delivered message, still alive
    del da
    b = rnd.randbytes(30_000)
    db = _fill(len(b), b, rnd).take()
    assert pool.reused == 0 and pool.made == 2
    assert bytes(view) == a[100:200] and _sha(db) == _sha(b)


def test_holes_of_a_reused_buffer_read_as_zeros(pool):
    rnd = random.Random(3)
    a = rnd.randbytes(40_000)
    da = _fill(len(a), a, rnd)
    del da
    gc.collect()
    da = _fill(len(a), a, rnd).take()
    del da
    r = Reassembly(40_000, chunk=CHUNK)
    r.place(5000, b"\x01" * 3000)
    r.place(20_000, b"\x02" * 100)
    out = bytes(r.take())
    assert pool.reused >= 1
    want = bytearray(40_000)
    want[5000:8000] = b"\x01" * 3000
    want[20_000:20_100] = b"\x02" * 100
    assert out == bytes(want)


def test_the_pool_keeps_at_most_its_bytes(pool):
    held = [Reassembly(1 << 20, chunk=CHUNK) for _ in range(6)]
    for r in held:
        r.place(0, b"x")
    assert pool.kept_bytes <= pool.max_bytes
    assert pool.made == 6


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.large_base_example])
@given(st.lists(st.integers(CHUNK + 1, 60_000), min_size=2, max_size=6), st.integers(0, 2**32))
def test_messages_in_a_row_each_equal_their_own_payload(lengths, seed):
    rnd = random.Random(seed)
    p = BufferPool(max_bytes=1 << 22, chunk=CHUNK)
    old = R.POOL
    R.POOL = p
    try:
        for n in lengths:
            data = rnd.randbytes(n)
            step = rnd.choice([7, 333, 1000, 4096])
            got = _fill(n, data, rnd, step).take()
            assert _sha(got) == _sha(data)
            del got
    finally:
        R.POOL = old
