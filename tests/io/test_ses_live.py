"""SES operations on the live endpoint (``open_endpoint(..., ses=True)``) on loopback (issue 6's
list): tagged send matched to a posted receive, RMA write and read back in RUD, ROD and RUDI, a
fetching atomic SUM sequence, BAD_MKEY, UUD datagrams, and plain sends through an SES target.
Two endpoints: 127.0.0.1 and 127.0.0.2 on one UET port (the core tells peers by address)."""

from __future__ import annotations

import hashlib
import random
from contextlib import AsyncExitStack, asynccontextmanager

import pytest
import trio

from uet.io import SendFailed, SesFailed, open_endpoint

pytestmark = pytest.mark.trio

A, B = "127.0.0.1", "127.0.0.2"
KEY = 7


def blob(n: int, seed: int = 0) -> bytes:
    return random.Random(seed * 7919 + n).randbytes(n)


def sha(b: bytes) -> str:
    return hashlib.sha256(bytes(b)).hexdigest()


@asynccontextmanager
async def pair(**kw):
    """A at 127.0.0.1:P (P ephemeral) and B at 127.0.0.2:P; another P if that one is taken."""
    for attempt in range(5):
        async with AsyncExitStack() as stack:
            a = await stack.enter_async_context(open_endpoint((A, 0), ses=True, paths=4, **kw))
            try:
                b = await stack.enter_async_context(
                    open_endpoint((B, a.port), ses=True, paths=4, **kw))
            except OSError:
                if attempt == 4:
                    raise
                continue
            yield a, b
            return


async def test_tagged_send_matched_to_posted_receive():
    msgs = {5: blob(100, 1), 9: blob(20_000, 2), 1 << 40: blob(4096, 3)}
    with trio.fail_after(20):
        async with pair() as (a, b):
            for tag in msgs:
                b.post_recv(match_bits=tag)
            for tag, d in msgs.items():
                assert await a.tsend(B, d, match_bits=tag) == len(d)
            got = {}
            for _ in msgs:
                m = await b.receive()
                got[m.tag] = m
    assert {t: sha(m.data) for t, m in got.items()} == {t: sha(d) for t, d in msgs.items()}
    assert all(m.op == "tsend" and m.peer == A for m in got.values())


async def test_tagged_send_before_post_is_unexpected_then_matched():
    d = blob(9000, 4)
    with trio.fail_after(20):
        async with pair() as (a, b):
            await a.tsend(B, d, match_bits=0x1234)  # no receive posted: the unexpected list
            b.post_recv(match_bits=0x1200, ignore_bits=0xFF)
            m = await b.receive()
    assert m.tag == 0x1234 and sha(m.data) == sha(d)


@pytest.mark.parametrize("mode", ["rud", "rod", "rudi"])
async def test_rma_write_then_read_back(mode):
    n = 256 * 1024
    data = blob(n, 5)
    with trio.fail_after(30):
        async with pair() as (a, b):
            mem = bytearray(n + 100)
            b.register(KEY, mem)
            assert await a.write(B, KEY, 50, data, mode=mode) == n
            assert sha(mem[50:50 + n]) == sha(data)
            assert mem[:50] == bytes(50) and mem[50 + n:] == bytes(50)
            back = await a.read(B, KEY, 50, n, mode=mode)
            small = await a.read(B, KEY, 60, 10, mode=mode)  # inside an ACK (IO-P1)
        st = a.stats
    assert len(back) == n and sha(back) == sha(data)
    assert small == data[10:20]
    if mode == "rudi":  # no PDC: every piece was one RUDI request with its response
        assert st["rudi"]["requests_sent"] >= 2 * (n // 4096) and st["pdcs"] == 0
    else:
        assert st["rudi"].get("requests_sent", 0) == 0


async def test_fetching_atomic_sum_sequence():
    n = 20
    with trio.fail_after(20):
        async with pair() as (a, b):
            mem = bytearray(16)
            b.register(KEY, mem)
            fetched = [await a.atomic(B, KEY, 8, "SUM", "UINT64", i, fetch=True)
                       for i in range(1, n + 1)]
            # concurrent ones too: every SUM exactly once
            more = []
            async with trio.open_nursery() as nursery:
                for i in range(1, 6):
                    async def one(i=i):
                        more.append((await a.atomic(B, KEY, 8, "SUM", "UINT64", 100 * i,
                                                    fetch=True, mode="rod"), 100 * i))
                    nursery.start_soon(one)
            assert await a.atomic(B, KEY, 0, "SUM", "UINT64", 3) is None  # non-fetching
            old = await a.cswap(B, KEY, 0, 3, 42)
    total = n * (n + 1) // 2
    assert fetched == [i * (i - 1) // 2 for i in range(1, n + 1)]
    v = total
    for f, op in sorted(more):
        assert f == v
        v += op
    assert int.from_bytes(mem[8:], "little") == total + 1500
    assert old == 3 and int.from_bytes(mem[:8], "little") == 42


async def test_bad_memory_key_gives_bad_mkey():
    with trio.fail_after(20):
        async with pair() as (a, b):
            b.register(KEY, bytearray(64))
            for op in (a.write(B, KEY + 1, 0, b"x" * 10), a.read(B, 99, 0, 10),
                       a.read(B, 99, 0, 10, mode="rudi"),
                       a.atomic(B, 99, 0, "SUM", "UINT64", 1, fetch=True)):
                with pytest.raises(SesFailed) as ei:
                    await op
                assert ei.value.rc_name == "BAD_MKEY"
                assert "BAD_MKEY" in str(ei.value) and isinstance(ei.value, SendFailed)
            with pytest.raises(SesFailed) as ei:  # outside the region
                await a.read(B, KEY, 60, 10)
            assert ei.value.rc_name == "AT_OUT_OF_RANGE"
            assert await a.read(B, KEY, 0, 4) == bytes(4)  # still fine afterwards


async def test_uud_datagrams_delivered_intact():
    msgs = [blob(n, i) for i, n in enumerate([1, 100, 1000, 4096, 17, 3000] * 5)]
    with trio.fail_after(20):
        async with pair() as (a, b):
            for d in msgs:
                a.datagram(B, d)
            got = [await b.receive() for _ in msgs]
    assert all(m.op == "datagram" and m.peer == A for m in got)
    assert sorted(sha(m.data) for m in got) == sorted(sha(d) for d in msgs)


@pytest.mark.parametrize("mode", ["rud", "rod"])
async def test_plain_and_ses_sends_reach_an_ses_receiver(mode):
    big, small = blob(300_000, 8), blob(10, 9)
    with trio.fail_after(20):
        async with pair() as (a, b):
            await a.send(B, big, mode=mode)
            assert await a.ses_send(B, small, mode=mode) == len(small)
            got = [await b.receive(), await b.receive()]
    assert sorted(sha(m.data) for m in got) == sorted((sha(big), sha(small)))
    assert all(m.tag is None and m.op == "send" for m in got)


async def test_ses_api_checks():
    with trio.fail_after(10):
        async with open_endpoint((A, 0)) as plain:  # every endpoint has an SES (uet/host.py)
            with pytest.raises(SesFailed) as e:
                await plain.write(A, 1, 0, b"x")  # to itself: no region 1
            assert e.value.rc_name == "BAD_MKEY"
    with trio.fail_after(10):
        async with pair() as (a, b):
            with pytest.raises(ValueError):
                await a.atomic(B, KEY, 0, "SUM", "UINT64", 1, mode="rudi")
            with pytest.raises(ValueError):
                await a.write(B, KEY, 0, b"x", mode="tcp")
            with pytest.raises(ValueError):
                await a.atomic(B, KEY, 0, "NOPE", "UINT64", 1)
            with pytest.raises(ValueError):  # UUD carries DATAGRAM_SEND only
                await a.read(B, KEY, 0, 1, mode="uud")
            st = a.stats
            assert {"ses", "rudi", "uud", "ses_host"} <= set(st)


async def test_both_directions_at_once_each_mode():
    """A and B are each other's initiator and target at the same time, in every mode."""
    sizes = {"rud": 70_001, "rod": 50_003, "rudi": 10_001}
    with trio.fail_after(30):
        async with pair() as (a, b):
            mem_a, mem_b = bytearray(200_000), bytearray(200_000)
            a.register(1, mem_a)
            b.register(2, mem_b)
            out = {}

            async def run(src, dst_addr, key, mode, off, seed):
                d = blob(sizes[mode], seed)
                await src.write(dst_addr, key, off, d, mode=mode)
                out[(dst_addr, mode)] = (sha(d), sha(await src.read(dst_addr, key, off, len(d),
                                                                      mode=mode)))

            async with trio.open_nursery() as nursery:
                for i, (mode, off) in enumerate((("rud", 0), ("rod", 80_000), ("rudi", 140_000))):
                    nursery.start_soon(run, a, B, 2, mode, off, i)
                    nursery.start_soon(run, b, A, 1, mode, off, 10 + i)
    assert len(out) == 6 and all(x == y for x, y in out.values())
    assert sha(mem_b[80_000:80_000 + sizes["rod"]]) == out[(B, "rod")][0]
    assert sha(mem_a[140_000:140_000 + sizes["rudi"]]) == out[(A, "rudi")][0]
