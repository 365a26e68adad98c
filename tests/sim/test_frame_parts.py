"""The simulator carries a frame as its header and its payload (uet.sim.frames.FrameCache) and
checks what arrived where it landed (uet.sim.workloads.same_bytes): the parts are the frame
uet.wire.build makes, the metadata read back is the metadata sent, a host's reused buffer cannot
change a datagram in flight, and the check compares any buffer as bytes compare."""

from __future__ import annotations

import mmap
import random

import pytest

from uet.host import Host
from uet.pds import DatagramMeta
from uet.sim import SimConfig, Simulator
from uet.sim.frames import HDRS, FrameCache, set_ce
from uet.sim.workloads import buffer_len, same_bytes
from uet.wire.build import udp_frame


@pytest.mark.parametrize("seed", range(3))
def test_header_and_payload_are_the_frame_and_read_back_as_the_metadata(seed):
    rng = random.Random(seed)
    facts = []
    cache = FrameCache(lambda meta, header: facts.append(meta) or len(facts))
    metas = [DatagramMeta("10.0.0.1", "10.0.0.2", rng.randrange(49152, 65536), 4793,
                          rng.randrange(4), rng.choice([0, 26, 46])) for _ in range(8)]
    for _ in range(200):
        meta = rng.choice(metas)
        data = rng.randbytes(rng.randint(0, 600))
        header, fact = cache.headers(data, meta)
        assert len(header) == HDRS
        assert header + data == cache.frame(data, meta)[0] == udp_frame(
            data, src=meta.src, dst=meta.dst, sport=meta.sport, dport=meta.dport,
            dscp=meta.dscp, ecn=meta.ecn, trailer=False)
        assert facts[fact - 1] is meta  # the facts made for this very metadata
        got = cache.meta(header)
        assert (got.src, got.dst, got.sport, got.dport, got.ecn, got.dscp) == (
            meta.src, meta.dst, meta.sport, meta.dport, meta.ecn, meta.dscp)
        assert cache.meta(bytes(bytearray(header))) is got  # by value, not by object
        marked = cache.meta(set_ce(header))
        assert marked.ecn == 3 and marked.dscp == meta.dscp
    assert len(facts) == len(set(map(id, facts)))  # made once per metadata object


def test_same_bytes_compares_any_buffer_as_bytes_do():
    want = random.Random(1).randbytes(5000)
    m = mmap.mmap(-1, len(want))
    m[:] = want
    for data in (want, bytearray(want), memoryview(want), memoryview(m)):
        assert buffer_len(data) == len(want)
        assert same_bytes(want, data)
        assert not same_bytes(want + b"x", data)  # a prefix is not the whole
        assert not same_bytes(want[:-1], data)
    damaged = bytearray(want)
    damaged[4321] ^= 1
    assert not same_bytes(want, memoryview(damaged))
    assert same_bytes(b"", bytearray()) and not same_bytes(b"", b"\0")
    wide = memoryview(bytearray(want[:4000])).cast("I")
    assert buffer_len(wide) == 4000 and same_bytes(want[:4000], wide)


def test_a_host_that_reuses_its_send_buffers_changes_nothing_in_flight(monkeypatch):
    """The hosts return bytes today; a datagram handed over in a buffer the host later reuses
    must still arrive as it was when it was sent."""
    cfg = SimConfig(bytes=256 * 1024, paths=4, loss=0.01, reorder=0.05, seed=11)
    plain = Simulator(cfg).run()
    handed: list[bytearray] = []
    send = Host.datagrams_to_send

    def reusing(self: Host, now: float) -> list:
        for buf in handed:  # what the previous call handed over is overwritten now
            buf[:] = bytes(len(buf))
        handed.clear()
        out = [(bytearray(d), m) for d, m in send(self, now)]
        handed.extend(d for d, _ in out)
        return out

    monkeypatch.setattr(Host, "datagrams_to_send", reusing)
    reused = Simulator(cfg).run()
    for r in (plain, reused):
        r.pop("wall_time_s")
    assert reused == plain and plain["ok"]
