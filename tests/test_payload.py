"""uet.payload (issue 11, item 6): the seeded data of ``uet sim``, ``uet demo`` and ``uet send
--bytes`` at any size. One ``random.Random.randbytes`` call fails from 256 MiB (2^31 bits, a C
int); below that the stream is byte-for-byte what that call gives, so existing seeds keep their
data."""

from __future__ import annotations

import argparse
import hashlib
import random

import pytest

from uet.payload import CHUNK, seeded_bytes, seeded_chunks

BIG = (1 << 28) + 5  # just above what one randbytes call can make


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 4099, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 12345])
@pytest.mark.parametrize("seed", [0, 1, 7 ^ 0x5EED])
def test_same_bytes_as_one_randbytes_call(seed, n):
    assert seeded_bytes(seed, n) == random.Random(seed).randbytes(n)


@pytest.mark.parametrize("size", [1, 3, 4, 1001, 4096, CHUNK, 2 * CHUNK + 3])
def test_chunks_of_any_size_concatenate_to_the_stream(size):
    n = 2 * CHUNK + 777
    pieces = list(seeded_chunks(9, n, size))
    assert b"".join(pieces) == random.Random(9).randbytes(n)
    assert all(len(p) == size for p in pieces[:-1]) and 0 < len(pieces[-1]) <= size
    assert list(seeded_chunks(9, 0, size)) == []


def _length_and_digest(seed: int, n: int, size: int) -> tuple[int, str, bytes]:
    """Length, sha256 and first piece of the stream, without holding it."""
    h = hashlib.sha256()
    total = 0
    first = b""
    for piece in seeded_chunks(seed, n, size):
        first = first or piece
        h.update(piece)
        total += len(piece)
    return total, h.hexdigest(), first


def test_above_256_mib_gives_n_bytes_deterministically():
    with pytest.raises(OverflowError):  # what the commands called before: one call stops here
        random.Random(1).randbytes(BIG)
    n1, d1, first = _length_and_digest(1, BIG, 64 << 20)
    n2, d2, _ = _length_and_digest(1, BIG, 7 << 20)
    assert n1 == n2 == BIG and d1 == d2
    assert first[:CHUNK] == random.Random(1).randbytes(CHUNK)
    assert _length_and_digest(2, CHUNK, CHUNK)[1] != hashlib.sha256(first[:CHUNK]).hexdigest()


def test_one_piece_above_256_mib():
    """Issue 15: ``uet send --bytes 1g --message-size 1g`` asked for one 1 GiB piece, made by one
    randbytes call, which overflows from 256 MiB."""
    pieces = list(seeded_chunks(5, BIG, BIG))
    try:
        assert [len(p) for p in pieces] == [BIG]
        assert hashlib.sha256(pieces[0]).hexdigest() == _length_and_digest(5, BIG, CHUNK)[1]
    finally:
        del pieces


def test_demo_payload_above_256_mib():
    from uet.demo.run import DemoConfig, payload

    data = payload(DemoConfig(bytes=BIG, seed=1))
    try:
        assert len(data) == BIG
        assert data[:CHUNK] == random.Random(1 ^ 0x5EED).randbytes(CHUNK)
    finally:
        del data


@pytest.mark.slow  # a few seconds and about 1 GB of memory
def test_sim_runs_above_256_mib(capsys):
    import json

    from uet.sim.command import main

    assert main(["--bytes", str(BIG), "--json", "--seed", "2"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["ok"] is True and s["bytes"] == BIG


def _send_args(*argv: str) -> argparse.Namespace:
    from uet.io.command import add_send_arguments

    p = argparse.ArgumentParser()
    add_send_arguments(p)
    return p.parse_args(["--to", "127.0.0.1:9", *argv])


def test_send_bytes_above_256_mib_one_message_at_a_time():
    """``uet send --bytes`` makes each message as it goes: 2^28+5 bytes in 64 MiB messages."""
    from uet.io.command import _Source

    src = _Source(_send_args("--bytes", str(BIG), "--seed", "4"))
    assert src.total == BIG
    sizes = []
    while (m := src.next()) is not None:
        assert src.taken == sum(sizes) + len(m)  # nothing generated ahead of the message
        sizes.append(len(m))
        del m
    assert sizes == [64 << 20] * 4 + [5]
    assert src.hash.hexdigest() == _length_and_digest(4, BIG, CHUNK)[1]


def test_send_file_is_read_one_message_at_a_time(tmp_path):
    from uet.io.command import _Source

    data = random.Random(3).randbytes(3 * CHUNK + 10)
    f = tmp_path / "in.bin"
    f.write_bytes(data)
    src = _Source(_send_args(str(f), "--message-size", "1m"))
    try:
        assert src.total == len(data)
        got = []
        while (m := src.next()) is not None:
            got.append(m)
            assert src.fh.tell() == sum(map(len, got))  # read no further than this message
        assert [len(m) for m in got] == [CHUNK] * 3 + [10] and b"".join(got) == data
        assert src.hash.hexdigest() == hashlib.sha256(data).hexdigest()
    finally:
        src.close()


def test_empty_data_is_one_empty_message(tmp_path):
    from uet.io.command import _Source

    f = tmp_path / "empty"
    f.write_bytes(b"")
    for args in (_send_args(str(f)), _send_args("--bytes", "0")):
        src = _Source(args)
        assert src.next() == b"" and src.next() is None
        src.close()


def test_seeded_bytes_peaks_at_the_stream_not_twice_it():
    # issue 29 item 3: a join held the pieces and the result (2n at the peak)
    import tracemalloc

    n = 24 << 20
    tracemalloc.start()
    try:
        data = seeded_bytes(5, n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data == random.Random(5).randbytes(n)
    assert peak < n + n // 4 + 2 * CHUNK, peak
