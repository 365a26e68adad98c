"""Issue 25 item 1: a host that stops with messages in reassembly frees their storage in an
explicit order (HOST-H6 of uet/host.py, SesEndpoint.release): each message leaves its C receive lane,
then its reassembly releases engines and views - so the mapping under it has no export left and
nothing is left for the garbage collector to clear at interpreter exit."""

from __future__ import annotations

import random

import pytest

from uet.host import INF, Host
from uet.native import reassembly as R
from uet.native import rxlane
from uet.native.reassembly import BufferPool
from uet.pds import PdsConfig
from uet.ses import SesConfig, SesEndpoint

from .test_resources import _std

A, B = "10.0.0.1", "10.0.0.2"
MTU = 4096


@pytest.fixture
def pool(monkeypatch):
    """A pool of the test's own: its mappings may be closed without harming anyone else."""
    p = BufferPool(max_bytes=1 << 24)
    monkeypatch.setattr(R, "POOL", p)
    return p


def _partial_at_b(nbytes: int, forward: int) -> Host:
    """B after the first ``forward`` datagrams of A's message of ``nbytes`` (the rest lost: the
    sender gave up), every answer of B back to A."""
    cfg = dict(mtu=MTU, window_bytes=MTU * 64)
    a = Host(A, pds=PdsConfig(**cfg), ses=SesConfig(mtu=MTU, seed=1), seed=5)
    b = Host(B, pds=PdsConfig(**cfg), ses=SesConfig(mtu=MTU, seed=2, auto_receive=True), seed=6)
    a.send(B, random.Random(5).randbytes(nbytes))
    now, sent = 0.0, 0
    while sent < forward:
        now += 1e-6
        out = a.datagrams_to_send(now)[:forward - sent]
        assert out, "A stopped sending"
        sent += len(out)
        for d, m in out:
            b.receive_datagram(d, m, now)
        for d, m in b.datagrams_to_send(now):
            a.receive_datagram(d, m, now)
    return b


def test_h6_shutdown_releases_a_message_in_reassembly_in_order(pool):
    b = _partial_at_b(1 << 20, 200)  # 200 of 256 packets: four chunks in use, no EOM
    ses = b.ses
    [rx] = ses._rx.values()
    if rxlane.AVAILABLE:  # the C lane placed its middle packets through the chunk table
        assert ses.stats["requests"] == 200 and ses.lanes.taken > 100
        assert "_lanes" in rx.__dict__
    asm = rx.asm
    engines = list(asm._chunks.values())
    [mapping] = pool._maps
    assert ses.in_reassembly == 1 and len(engines) == 4 and ses.budget.bytes == 1 << 20
    b.shutdown()
    mapping.close()  # BufferError while any view or C export of it remained
    assert ses.in_reassembly == 0 and ses.stats["released"] == 1 and not ses.events()
    assert ses.budget.bytes == 0 and ses.budget.messages == 0  # SES-R1: given back
    assert "_lanes" not in rx.__dict__ and rx.asm is None and asm.allocated == 0
    assert all(e.length == 0 for e in engines)
    assert b._sweep_at == INF  # H4: nothing left to sweep
    b.shutdown()  # idempotent
    assert ses.stats["released"] == 1


def test_release_drops_unexpected_messages_whole_and_partial(pool):
    """SES-M2: with no receive posted, a whole message waits on the unexpected list holding its
    storage, and a partial one is both there and in reassembly (SES-K1)."""
    s = SesEndpoint(SesConfig(mtu=MTU))
    total = 300_000  # longer than a chunk: a mapping of the pool
    for mid, end in ((1, total), (2, 100_000)):
        for offset in range(0, end, MTU):
            payload = bytes([mid]) * min(MTU, total - offset)
            f, _ = _std(mid, total, payload, offset=offset)
            s.receive(3, f, None, payload, peer=A, request_ref=offset)
    assert s.in_reassembly == 1 and len(s._unexpected) == 2 and s._unexpected_bytes == 2 * total
    s.release()
    for mapping in pool._maps:
        mapping.close()
    assert s.in_reassembly == 0 and not s._unexpected and s._unexpected_bytes == 0
    assert s.stats["released"] == 2 and s.budget.bytes == 0
