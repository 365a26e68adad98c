"""TSS at the host's edge (HOST-H5 of uet.host; facts A.3, B.15, F): a protected pair delivers,
and everything the issue calls an attack - a plain datagram, the wrong key, a replay, a flipped
bit - is dropped, counted under its own name and delivers nothing; trimmed protected packets are
answered with NACK TRIMMED and the transfer completes."""

from __future__ import annotations

import dataclasses
import hashlib
import random

import pytest

from uet.pds import DatagramMeta
from uet.pds.datagram import DSCP_TRIMMED

from .hosts import A, B, pair, pump, received, security, server


def blob(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


def digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def transfer(a, b, data: bytes, **kw) -> list[bytes]:
    a.send(B, data)
    got: list[bytes] = []

    def done() -> bool:
        got.extend(received(b))
        return bool(got)
    pump(a, b, until=done, **kw)
    return got


@pytest.mark.parametrize("mode", ["direct", "cluster", "server"])
def test_f_protected_pair_delivers_and_every_datagram_is_tss(mode):
    sec = security(mode=mode)
    a, b = pair(sec, server(sec) if mode == "server" else dataclasses.replace(sec, epoch=8))
    data = blob(1_200_000, 1)  # > 256 packets: a cluster-mode rekey happens on the way
    seen: list[tuple[bytes, DatagramMeta]] = []
    got = transfer(a, b, data, record=seen)
    assert [digest(m) for m in got] == [digest(data)]
    assert seen and all(d[0] >> 3 == 1 for d, _ in seen)  # B.15: type 1 on the wire
    assert len(seen) > 256
    assert b.stats["tss_accepted"] >= len(seen) - b.stats["tss_replay"]
    assert a.stats["tss_accepted"] > 0  # the ACKs came back protected too
    assert b.stats["tss_auth_failed"] == 0 and b.stats["tss_plain"] == 0


def test_h5_a_plain_sender_delivers_nothing_to_a_protected_host():
    a, b = pair(None, security())
    a.send(B, blob(20 * 4096, 2))
    pump(a, b, until=lambda: False, steps=50)
    assert received(b) == []
    assert b.stats["tss_plain"] > 0
    assert b.datagrams_to_send(1.0) == []  # nothing answered: a forger learns nothing


def test_f_wrong_key_delivers_nothing_and_counts_auth_failures():
    a, b = pair(security(key=bytes(32)), security())
    a.send(B, blob(8 * 4096, 3))
    pump(a, b, until=lambda: False, steps=50)
    assert received(b) == []
    assert b.stats["tss_auth_failed"] > 0
    assert b.pdcs() == []  # no state changed: no PDC was opened


def test_f_replayed_transfer_delivers_nothing_and_counts_replays():
    sec = security()
    a, b = pair(sec, dataclasses.replace(sec, epoch=8))
    data = blob(64 << 10, 4)
    seen: list = []
    assert [digest(m) for m in transfer(a, b, data, record=seen)] == [digest(data)]
    before = b.stats["tss_replay"]
    for d, meta in seen:
        b.receive_datagram(d, meta, 10.0)
    assert received(b) == []
    assert b.stats["tss_replay"] - before == len(seen)


def test_f_a_flipped_bit_is_dropped_and_the_transfer_still_completes():
    sec = security()
    a, b = pair(sec, dataclasses.replace(sec, epoch=8))
    data = blob(40 * 4096, 5)
    flipped = []

    def flip_third(d: bytes, meta):
        if not flipped and len(d) > 1000:
            flipped.append(1)
            bad = bytearray(d)
            bad[700] ^= 0x10
            return bytes(bad), meta
        return d, meta
    got = transfer(a, b, data, change=flip_third)
    assert [digest(m) for m in got] == [digest(data)]
    assert b.stats["tss_auth_failed"] == 1


def test_c6_h5_trimmed_protected_packets_get_nack_trimmed_and_the_transfer_completes():
    sec = security()
    a, b = pair(sec, dataclasses.replace(sec, epoch=8))
    data = blob(40 * 4096, 6)
    trimmed = []

    def trim_some(d: bytes, meta: DatagramMeta):
        if len(d) > 256 and len(trimmed) < 5 and meta.dscp != 46:
            trimmed.append(1)  # docs/design-notes.md Defaults: the first 256 bytes, DSCP 11
            return d[:256], dataclasses.replace(meta, dscp=DSCP_TRIMMED)
        return d, meta
    got = transfer(a, b, data, change=trim_some)
    assert [digest(m) for m in got] == [digest(data)]
    assert b.stats["tss_trimmed"] == 5
    assert b.nacks_sent["TRIMMED"] == 5


def test_f_trimmed_drop_choice_counts_and_still_completes():
    sec = security(trimmed="drop")
    a, b = pair(sec, dataclasses.replace(sec, epoch=8))
    data = blob(20 * 4096, 7)
    trimmed = []

    def trim_one(d: bytes, meta: DatagramMeta):
        if len(d) > 256 and not trimmed:
            trimmed.append(1)
            return d[:256], dataclasses.replace(meta, dscp=DSCP_TRIMMED)
        return d, meta
    got = transfer(a, b, data, change=trim_one)
    assert [digest(m) for m in got] == [digest(data)]
    assert b.stats["tss_trimmed_dropped"] == 1 and b.nacks_sent["TRIMMED"] == 0


def test_f_a_restarted_sender_with_a_new_epoch_is_not_a_replay():
    sec = security(epoch=7)
    a, b = pair(sec, dataclasses.replace(sec, epoch=100))
    first = blob(30_000, 8)
    assert [digest(m) for m in transfer(a, b, first)] == [digest(first)]
    a2, _ = pair(dataclasses.replace(sec, epoch=9), None, seed_a=11)  # same address, new process
    second = blob(30_000, 9)
    assert [digest(m) for m in transfer(a2, b, second)] == [digest(second)]
    assert b.stats["tss_replay"] == 0 and b.stats["tss_stale_epoch"] == 0
