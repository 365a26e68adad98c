"""``uet fabric --topology leafspine:...`` (uet.net.route NET-T1 to NET-T4): the live relay carries datagrams
along the routes of a switched topology, each link a queue of the one network model (uet.net)."""

from __future__ import annotations

import argparse

import pytest
import trio

from uet.fabric import FabricConfig, open_fabric
from uet.fabric.command import add_arguments, apply_topology, config_from_args
from uet.fabric.paths import RouteLink
from uet.net.route import own_hop, switched_routes

from .helpers import LO, S, collect, crc_ok, psn_of, request, sealed, udp, until

DATA = 0x02  # DSCP 0 + ECT(0)


def addr(s):
    return s.getsockname()[:2]


def test_t1_routes_are_the_spines_and_cores():
    r = switched_routes("leafspine:2,2,3")
    assert [x[own_hop(x)] for x in r] == [("t0", "s0"), ("t0", "s1"), ("t0", "s2")]
    assert r[0] == [("h0", "t0"), ("t0", "s0"), ("s0", "t1"), ("t1", "h3")]
    assert len(switched_routes("leafspine:4,1,2")) == 1  # one ToR: h0 -> t0 -> h3
    assert len(switched_routes("fattree:4")) == 4         # (K/2)^2 cores between two pods
    assert FabricConfig(topology="leafspine:2,2,3").paths == 3
    assert FabricConfig(topology="paths:5").paths == 5


def test_csig_is_refused_on_a_topology():
    with pytest.raises(ValueError, match="csig: the relay stamps tags on parallel paths only"):
        FabricConfig(topology="leafspine:2,2,2", csig="abw")


def test_t3_links_are_shared_and_queue_in_turn():
    cfg = FabricConfig(topology="leafspine:2,2,2", rate_gbps=8e-6, rtt_us=8.0)
    from uet.fabric.paths import Releases, route_links
    fwd = route_links(cfg, Releases(0.0), 0, 42)
    a, b = fwd[0].route, fwd[1].route
    assert a.hops[0] is b.hops[0] and a.hops[-1] is b.hops[-1]   # the host links: every route
    assert a.hops[1] is not b.hops[1] and a.own is a.hops[1]      # t0->s0, t0->s1: their own
    import random
    (at, flags, _, _), where = a.offer(0.0, 958, False, True, random.Random(1))
    # 1000 bytes (with 42 of overhead) at 1000 B/s over 4 hops, 1 us each way: store and forward
    assert where is None and at == pytest.approx(4 * 1.0 + 4e-6)


@pytest.mark.trio
async def test_relay_over_leafspine_delivers_every_datagram_on_every_spine():
    rx = udp()
    txs = [udp(S, tos=DATA) for _ in range(8)]
    with trio.fail_after(10):
        async with open_fabric(to=addr(rx), config=FabricConfig(topology="leafspine:2,2,3")) as fab:
            sent = {}
            for k, tx in enumerate(txs):
                for i in range(4):
                    body = request(k * 10 + i, 1000)
                    sent[k * 10 + i] = body
                    tx.sendto(sealed(body, addr(tx), fab.address), fab.address)
            got = await collect(rx, len(sent))
            await until(lambda: fab.queued() == 0)
            c = fab.counters()
            assert all(isinstance(ln, RouteLink) for d in fab.links for ln in d)
    assert sorted(psn_of(d) for d, _, _ in got) == sorted(sent)
    assert all(crc_ok(d, s, addr(rx)) and d[:-4] == sent[psn_of(d)] for d, _, s in got)
    assert len(c["paths"]) == 3
    t = c["totals"]
    assert t["received"] == t["forwarded"] == len(sent) and t["dropped"] == 0
    assert sum(p["fwd"]["forwarded"] for p in c["paths"]) == len(sent)


@pytest.mark.trio
async def test_live_endpoints_transfer_through_a_leafspine_relay():
    """uet.io sender -> relay over leafspine:2,2,2 with loss and trimming -> uet.io receiver."""
    io = pytest.importorskip("uet.io")
    data = bytes(range(256)) * 4096  # 1 MiB
    cfg = FabricConfig(topology="leafspine:2,2,2", seed=2, loss=0.02, trim=0.05)
    with trio.fail_after(30):
        async with io.open_endpoint((LO, 0)) as rx:
            async with open_fabric(to=(LO, rx.port), config=cfg) as fab:
                async with io.open_endpoint(None, peer_port=fab.port, paths=4) as tx:
                    res = await tx.send(fab.host, data)
                    m = await rx.receive()
                c = fab.counters()
    assert m.data == data and res.nbytes == len(data)
    t = c["totals"]
    assert t["crc_bad"] == 0 and t["trimmed"] > 0 and t["loss_drops"] > 0
    assert t["fwd"]["forwarded"] > 256 and t["rev"]["forwarded"] > 0


def test_command_line_topology_sets_the_paths():
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--to", "127.0.0.1:4793", "--topology", "fattree:4",
                         "--fail-path", "3@10"])
    apply_topology(args)
    cfg = config_from_args(args)
    assert args.paths == cfg.paths == 4 and cfg.topology == "fattree:4"
    with pytest.raises(SystemExit):
        p.parse_args(["--to", "127.0.0.1:4793", "--topology", "ring:4"])


def test_t4_a_failed_path_is_its_own_link_only():
    """--fail-path 0@0 on leafspine:2,2,2 fails t0->s0 (and s0's way back): route 0 drops, counted
    as a failure on path 0; route 1 shares the host links and still carries."""
    import random
    from uet.fabric.paths import Releases, route_links
    cfg = FabricConfig(topology="leafspine:2,2,2", fail=[(0, 0.0)])
    fwd = route_links(cfg, Releases(0.0), 0, 42)
    assert fwd[0].offer(1e-3, 1000, False, False, random.Random(1))[0] is None
    assert fwd[1].offer(1e-3, 1000, False, False, random.Random(1))[0] is not None
    assert (fwd[0].fail_drops, fwd[0].dropped, fwd[1].dropped) == (1, 1, 0)
    assert fwd[0].route.own.fail_drops == 1 and fwd[0].route.hops[0].fail_drops == 0
