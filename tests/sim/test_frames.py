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
