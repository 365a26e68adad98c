"""uet.native.digest.DigestReassembly (SES-M8, issue 29 item 3): the same counts as the chunked
Reassembly it extends, a digest of every byte in place of the bytes, and storage that holds the
chunks in flight, not the message."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import Reassembly
from uet.native.digest import Digest, DigestReassembly

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(length=st.integers(1, 600), chunk=st.integers(1, 64), seed=st.integers(0, 2**32),
       pieces=st.integers(1, 80))
def test_counts_needed_and_holes_match_reassembly_and_digest_is_the_message(
        impl, length, chunk, seed, pieces):
    rng = random.Random(seed)
    msg = rng.randbytes(length)
    ref = Reassembly(length, chunk=chunk, engine=impl.Reassembly)
    dig = DigestReassembly(length, chunk=chunk, engine=impl.Reassembly)
    # random pieces (overlapping, repeated), then the whole message so that it completes
    starts = [rng.randrange(length) for _ in range(pieces)]
    spans = [(o, rng.randint(1, length - o)) for o in starts]
    for off, n in spans + [(0, length)]:
        assert dig.needed(off, n) == ref.needed(off, n)
        assert dig.place(off, msg[off:off + n]) == ref.place(off, msg[off:off + n])
        assert dig.received == ref.received
        assert dig.has(off, n) and dig.missing() == ref.missing()
    assert dig.complete
    assert dig.take() == Digest.of(msg) == Digest(length, Digest.of(msg).value)


def test_a_message_in_order_holds_two_chunks_at_most_and_duplicates_count_nothing(impl):
    chunk, n = 4096, 64
    msg = random.Random(7).randbytes(chunk * n)
    dig = DigestReassembly(len(msg), chunk=chunk, engine=impl.Reassembly)
    held = 0
    for k in range(0, len(msg), 1024):
        assert dig.place(k, msg[k:k + 1024]) == 1024
        held = max(held, len(dig._chunks))
        assert dig.place(0, msg[:1024]) == 0  # a chunk let go: every byte of it had arrived
    assert held <= 2  # the chunk being filled and the one before it, never the message
    assert dig.take() == Digest.of(msg)


def test_a_damaged_byte_or_a_missing_one_changes_the_digest(impl):
    msg = random.Random(3).randbytes(10_000)
    bad = bytearray(msg)
    bad[6_000] ^= 0x01
    dig = DigestReassembly(len(msg), chunk=1024, engine=impl.Reassembly)
    dig.place(0, bytes(bad))
    assert dig.take() == Digest(len(msg), Digest.of(bad).value) != Digest.of(msg)
    holes = DigestReassembly(len(msg), chunk=1024, engine=impl.Reassembly)
    holes.place(0, msg[:9_000])  # the rest never came: hashed as zeros
    assert holes.take() == Digest.of(msg[:9_000], bytes(1_000)) != Digest.of(msg)


def test_digest_of_pieces_is_the_digest_of_their_join():
    parts = [b"ab", bytearray(b"cd"), memoryview(b"ef")]
    assert Digest.of(*parts) == Digest.chain(iter(parts)) == Digest.of(b"abcdef")
    assert Digest.of(b"abcdef").length == 6 and len(Digest.of(b"").value) == 8


def test_reserve_of_a_chunk_let_go_takes_nothing_into_use(impl):
    dig = DigestReassembly(64, chunk=16, engine=impl.Reassembly)
    dig.place(0, bytes(16))
    dig.place(16, bytes(8))  # chunk 1 taken into use: chunk 0, complete, is let go
    assert dig.reserve(0, 16) == 0 and dig.reserve(8, 40) == 16  # only chunk 2 is new
    assert len(dig._chunks) == 2 and dig.allocated == 48
