"""``FabricConfig.mtu`` / ``uet fabric --mtu`` (facts A.1: DF, never IP fragments): the paths
carry datagrams up to the largest one of ``mtu`` payload bytes (uet.mtu.packet_overhead with TSS
and a CSIG tag); a longer one is dropped and counted ``too_big``, as a switch drops a frame above
its MTU, and never forwarded."""

from __future__ import annotations

import pytest
import trio

from uet import mtu as M
from uet.fabric import FabricConfig, open_fabric

from .helpers import S, collect, psn_of, request, sealed, udp, until

pytestmark = pytest.mark.trio


def addr(s):
    return s.getsockname()[:2]


async def test_a1_a_datagram_above_the_paths_mtu_is_dropped_and_counted():
    rx, tx = udp(), udp(S)
    # the largest UDP payload of a 1024-byte payload: 1024 + 160 - 20 (IPv4) - 8 (UDP)
    limit = 1024 + M.packet_overhead(tss=True, csig=True) - M.IPV4_LEN - M.UDP_LEN
    fits, too_long = limit - 16, limit - 16 + 1  # request(): 12-byte header and 4-byte trailer
    with trio.fail_after(10):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2, mtu=1024)) as fab:
            assert fab.max_udp == limit == 1156
            for psn, n in ((1, fits), (2, too_long), (3, 100)):
                tx.sendto(sealed(request(psn, n), addr(tx), fab.address), fab.address)
            got = await collect(rx, 2)
            await until(lambda: fab.counters()["relay"]["too_big"] == 1)
            c = fab.counters()
    assert sorted(psn_of(d) for d, _, _ in got) == [1, 3]
    assert len(got[0][0]) <= limit
    assert c["relay"]["too_big"] == 1 and c["totals"]["received"] == 2


async def test_without_mtu_nothing_is_dropped_for_its_size():
    rx, tx = udp(), udp(S)
    with trio.fail_after(10):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2)) as fab:
            tx.sendto(sealed(request(1, 9000), addr(tx), fab.address), fab.address)
            got = await collect(rx, 1)
            c = fab.counters()
    assert psn_of(got[0][0]) == 1 and c["relay"]["too_big"] == 0
