"""uet.sim.frames: the cached frame headers and the incremental CE marking give the bytes
uet.wire.build gives."""

from __future__ import annotations

import random

import pytest

from uet.sim.frames import HDRS, Framer, set_ce, trim
from uet.wire.build import trim as wire_trim
from uet.wire.build import udp_frame


@pytest.mark.parametrize("seed", range(3))
def test_frames_match_udp_frame_and_parse_back(seed):
    rng = random.Random(seed)
    f = Framer()
    for _ in range(400):
        payload = rng.randbytes(rng.randint(0, 600))
        src, dst = rng.choice([("10.0.0.1", "10.0.0.2"), ("10.0.0.2", "10.0.0.1"), ("192.168.7.9", "10.1.2.3")])
        sport, dport = rng.randrange(65536), rng.randrange(65536)
        dscp, ecn = rng.randrange(64), rng.randrange(4)
        frame = f.frame(payload, src, dst, sport, dport, dscp, ecn)
        assert frame == udp_frame(payload, src=src, dst=dst, sport=sport, dport=dport, dscp=dscp,
                                  ecn=ecn, trailer=False)
        assert f.parse(frame) == (src, dst, sport, dport, dscp, ecn, payload)
        marked = set_ce(frame)
        assert marked == udp_frame(payload, src=src, dst=dst, sport=sport, dport=dport, dscp=dscp,
                                   ecn=3, trailer=False)
        assert len(marked) == len(frame) and marked[HDRS:] == payload
        if len(payload) > 256:
            assert trim(frame) == wire_trim(frame)


def test_headers_built_from_a_shared_ip_part_match_udp_frame_for_every_port():
    """The Ethernet and IP part is built once per (addresses, DSCP, ECN, length) and each source
    port (entropy value) only adds its UDP bytes: the same bytes as uet.wire.build, port by port."""
    f = Framer()
    payload = bytes(range(200))
    for sport in (0, 1, 4793, 49152, 49215, 65535):
        for dport in (4793, 1):
            frame = f.frame(payload, "10.0.0.3", "10.0.1.7", sport, dport, 0, 2)
            assert frame == udp_frame(payload, src="10.0.0.3", dst="10.0.1.7", sport=sport,
                                      dport=dport, dscp=0, ecn=2, trailer=False)
            assert f.parse(frame)[2:4] == (sport, dport)


def test_a_fabric_of_metadata_objects_is_framed_without_rebuilding_them():
    """FrameCache keeps its facts per metadata object for as many as a 128-host fabric spraying
    on 64 entropy values has (both directions: 16,384), so that cycling through them asks the
    driver for each one's facts once (it thrashed at 4,096 entries, re-deriving them)."""
    from uet.pds.datagram import DatagramMeta
    from uet.sim.frames import FrameCache

    asked = []
    cache = FrameCache(lambda meta, header: asked.append(meta) or len(asked))
    metas = [DatagramMeta(f"10.0.{h >> 8}.{h & 255}", "10.9.0.1", 49152 + ev, 4793, 2, 0)
             for h in range(128) for ev in range(64)]
    metas += [DatagramMeta(m.dst, m.src, m.sport, m.dport, 0, 46) for m in metas]
    for _ in range(2):
        for m in metas:
            h, _facts = cache.headers(b"x" * 64, m)
            assert h[34:36] == m.sport.to_bytes(2, "big")
    assert len(asked) == len(metas) == 16384
