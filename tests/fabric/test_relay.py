"""The live fabric (uet.fabric) on loopback with plain UDP sockets as sender and receiver and
hand-built UET packets: the router between two addresses (facts A.1, H.1 #19: every datagram
keeps its UET destination port and its entropy source port), CRC-32C trailer rewriting (docs/design-notes.md
"Defaults", A.3), DSCP/ECN (A.2), trimming (C.6), loss, failure, CE marking, duplication,
reordering."""

from __future__ import annotations

import collections

import pytest
import trio

from uet.fabric import FabricConfig, open_fabric
from uet.net import Ecmp

from .helpers import (HANG_GUARD_S, LO, S, ack, collect, crc_ok, drain, psn_of, request, sealed,
                      send_tos, udp, until)

pytestmark = pytest.mark.trio
DATA, ACKTOS = 0x02, 46 << 2  # DSCP 0 + ECT(0); DSCP 46 Not-ECT


def addr(s):
    return s.getsockname()[:2]


async def settle(fab, n: int) -> None:
    """Until the fabric has taken in ``n`` datagrams and released everything."""
    await until(lambda: fab.counters()["totals"]["received"] >= n and fab.queued() == 0)


async def test_lossless_relay_delivers_all_with_recomputed_crc():
    rx = udp()
    txs = [udp(S, tos=DATA) for _ in range(4)]
    sizes = [0, 1, 100, 252, 253, 1000, 4096, 8000]
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=4)) as fab:
            sent = {}
            for k, tx in enumerate(txs):
                for i, n in enumerate(sizes):
                    psn = k * 100 + i
                    body = request(psn, n)
                    sent[psn] = body
                    tx.sendto(sealed(body, addr(tx), fab.address), fab.address)
            got = await collect(rx, len(sent))
            c = fab.counters()
            flows = {f["relay_port"]: f for f in fab.flow_list()}
    assert len(got) == len(sent)
    evs = {addr(tx)[1] for tx in txs}
    for data, tos, src in got:
        # A.1: from the relay's address, the sender's EV kept; to the UET port (the receiver's)
        assert src[0] == fab.back_host != LO and src[1] in flows and src[1] in evs
        assert crc_ok(data, src, addr(rx)), "trailer recomputed for the relay -> receiver hop"
        assert data[:-4] == sent[psn_of(data)]
        assert tos == DATA
    t = c["totals"]
    assert t["received"] == t["forwarded"] == t["crc_rewritten"] == len(sent)
    assert t["dropped"] == t["crc_bad"] == t["trimmed"] == 0
    assert t["bytes"] == sum(len(d) for d, _, _ in got)


async def test_entropy_selects_a_stable_path_spread_over_paths():
    rx = udp()
    txs = [udp(S, tos=DATA) for _ in range(24)]
    cfg = FabricConfig(paths=4, seed=7)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=cfg) as fab:
            for rnd in range(3):
                for k, tx in enumerate(txs):
                    tx.sendto(sealed(request(k, 64), addr(tx), fab.address), fab.address)
            got = await collect(rx, 3 * len(txs))
            c = fab.counters()
            flows = [fab.flow_for(addr(tx)) for tx in txs]
    # A.1: each sender's EV is kept as the source port of all its datagrams
    ports = collections.defaultdict(set)
    for data, _, src in got:
        ports[psn_of(data)].add(src[1])
    assert all(ports[k] == {addr(tx)[1]} for k, tx in enumerate(txs))
    h = Ecmp(cfg).entropy_path
    for tx, f in zip(txs, flows):
        assert f["entropy"] == addr(tx)[1] and f["path"] == h(addr(tx)[1]) == fab.path_of(f["entropy"])
        assert {f["relay_port"]} == ports[txs.index(tx)]
    per_path = collections.Counter(f["path"] for f in flows)
    assert len(per_path) >= 3  # spread (24 entropies over 4 paths)
    for p in c["paths"]:
        assert p["fwd"]["forwarded"] == 3 * per_path.get(p["path"], 0)
    # mod mode: consecutive entropy values on consecutive paths
    m = Ecmp(FabricConfig(paths=4, ecmp="mod")).entropy_path
    assert [m(e) for e in range(1000, 1008)] == [0, 1, 2, 3, 0, 1, 2, 3]


async def test_answers_reach_the_sender_uet_port_from_the_ev():
    """A.1: the receiver answers each request from its EV to the UET port of the address it came
    from (the relay's back address); the relay sends the answer on to the sender's UET port, from
    its front address and the same EV, on the flow's path back."""
    rx = udp(tos=ACKTOS)
    txs = [udp(S, tos=DATA) for _ in range(3)]
    port = addr(rx)[1]
    home = udp(S, port=port)  # the senders' UET-port socket: every answer arrives here
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2)) as fab:
            for k, tx in enumerate(txs):
                tx.sendto(sealed(request(k, 500), addr(tx), fab.address), fab.address)
            got = await collect(rx, len(txs))
            for data, _, src in got:  # from (receiver, EV) to (relay back address, UET port)
                ev = udp(LO, tos=ACKTOS, port=src[1])
                back = (src[0], port)
                ev.sendto(sealed(ack(psn_of(data)), addr(ev), back), back)
                ev.close()
            answers = await collect(home, len(txs))
            c = fab.counters()
    assert len(answers) == 3
    for data, tos, src in answers:
        k = psn_of(data)  # cack_psn of the ACK sits where a request has its PSN
        assert src == (fab.host, addr(txs[k])[1])
        assert tos == ACKTOS
        assert crc_ok(data, src, (S, port))
    rev = c["totals"]["rev"]
    assert rev["forwarded"] == rev["crc_rewritten"] == 3
    assert [p["rev"]["forwarded"] for p in c["paths"]] == [
        sum(fab.path_of(addr(tx)[1]) == p for tx in txs) for p in range(2)]  # each its flow's path


async def test_a_second_sender_with_the_same_ev_is_remapped_and_mapped_back():
    """Two sender addresses with one EV: the back side tells flows apart by the EV alone, so the
    second gets another port there (entropy_remapped); the receiver's answer to that port comes
    back to the second sender with its own EV."""
    rx = udp(tos=ACKTOS)
    port = addr(rx)[1]
    t1 = udp(S, tos=DATA)
    ev = addr(t1)[1]
    t2 = udp("127.0.0.21", tos=DATA, port=ev)
    home2 = udp("127.0.0.21", port=port)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2)) as fab:
            t1.sendto(sealed(request(0, 100), addr(t1), fab.address), fab.address)
            [(_, _, src1)] = await collect(rx, 1)
            t2.sendto(sealed(request(1, 100), addr(t2), fab.address), fab.address)
            [(d2, _, src2)] = await collect(rx, 1)
            assert src1[1] == ev and psn_of(d2) == 1 and src2[1] != ev
            assert fab.stats["entropy_remapped"] == 1 and fab.entropy_of(src2[1]) == ev
            assert fab.flow_for(addr(t2))["relay_port"] == src2[1]
            a = udp(LO, tos=ACKTOS, port=src2[1])
            a.sendto(sealed(ack(1), addr(a), (src2[0], port)), (src2[0], port))
            a.close()
            [(d, _, src)] = await collect(home2, 1)
    assert psn_of(d) == 1 and src == (fab.host, ev) and crc_ok(d, src, ("127.0.0.21", port))


async def test_the_receiver_initiating_reaches_the_last_sender():
    """A request of the receiver's own (an RMA read's data: an EV no flow has) goes to the sender
    whose flow opened last, at its UET port, from the relay's front address and that EV."""
    rx = udp()
    port = addr(rx)[1]
    tx, home = udp(S, tos=DATA), udp(S, port=port)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2)) as fab:
            tx.sendto(sealed(request(1, 100), addr(tx), fab.address), fab.address)
            [(_, _, src)] = await collect(rx, 1)
            own = udp(LO, tos=DATA)
            x = addr(own)[1]
            own.sendto(sealed(request(7, 100), addr(own), (src[0], port)), (src[0], port))
            [(d, _, asrc)] = await collect(home, 1)
            own.close()
    assert psn_of(d) == 7 and asrc == (fab.host, x)
    assert crc_ok(d, asrc, (S, port))


async def test_trim_all_cuts_data_to_256_bytes_with_dscp_11_never_dscp_46():
    rx = udp()
    tx = udp(S)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2, trim=1.0)) as fab:
            plan = {}  # psn -> (tos sent, udp payload length)
            for i in range(40):
                n = [100, 240, 241, 1000, 4096][i % 5]  # 12-byte header + payload + 4-byte trailer
                tos = ACKTOS if i % 4 == 3 else [0x00, 0x01, 0x02][i % 3]
                wire = sealed(request(i, n), addr(tx), fab.address)
                plan[i] = (tos, len(wire), wire)
                send_tos(tx, wire, fab.address, tos)
            got = await collect(rx, 40)
            c = fab.counters()
    trims = 0
    for data, tos, src in got:
        sent_tos, n, wire = plan[psn_of(data)]
        if sent_tos == ACKTOS or n <= 256:
            assert len(data) == n and tos == sent_tos and crc_ok(data, src, addr(rx))
        else:
            trims += 1
            assert len(data) == 256 and data == wire[:256]  # the trailer is gone with the tail
            assert tos >> 2 == 11 and tos & 3 == sent_tos & 3
    assert trims == c["totals"]["trimmed"] > 0
    assert c["totals"]["crc_rewritten"] == 40 - trims


async def test_loss_one_drops_everything():
    rx, tx = udp(), udp(S, tos=DATA)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(loss=1.0)) as fab:
            for i in range(50):
                tx.sendto(sealed(request(i, 300), addr(tx), fab.address), fab.address)
            await settle(fab, 50)
            c = fab.counters()["totals"]
            assert drain(rx) == []
    assert c["received"] == c["dropped"] == c["loss_drops"] == 50 and c["forwarded"] == 0


def senders_on_every_path(cfg: FabricConfig, per_path: int = 3) -> list:
    """Sender sockets whose (kernel-chosen) ports cover every path ``per_path`` times."""
    h = Ecmp(cfg).entropy_path
    keep, spare = [], []
    count = collections.Counter()
    for _ in range(400):
        if min(count[p] for p in range(cfg.paths)) >= per_path:
            break
        s = udp(S, tos=DATA)
        p = h(addr(s)[1])
        if count[p] < per_path:
            count[p] += 1
            keep.append(s)
        else:
            spare.append(s)
    for s in spare:
        s.close()
    assert min(count[p] for p in range(cfg.paths)) >= per_path
    return keep


async def test_failed_path_drops_from_its_fail_time_on():
    rx = udp()
    cfg = FabricConfig(paths=4, fail=[(0, 0.0)], seed=3)
    txs = senders_on_every_path(cfg)
    victim = 2
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=cfg) as fab:
            paths = [fab.path_of(addr(tx)[1]) for tx in txs]
            for tx in txs:
                tx.sendto(sealed(request(1, 64), addr(tx), fab.address), fab.address)
            await settle(fab, len(txs))
            first = drain(rx)
            fab.fail_path(victim)  # fails now
            for tx in txs:
                tx.sendto(sealed(request(2, 64), addr(tx), fab.address), fab.address)
            await settle(fab, 2 * len(txs))
            second = drain(rx)
            c = fab.counters()
    assert len(first) == sum(p != 0 for p in paths) == 9
    assert len(second) == sum(p not in (0, victim) for p in paths) == 6
    assert c["paths"][0]["failed"] and c["paths"][victim]["failed"] and not c["paths"][1]["failed"]
    assert c["paths"][0]["fail_drops"] == 6 and c["paths"][victim]["fail_drops"] == 3
    assert c["totals"]["forwarded"] + c["totals"]["dropped"] == 2 * len(txs)


async def test_counters_add_up_under_loss_and_trimming():
    rx, tx = udp(), udp(S, tos=DATA)
    cfg = FabricConfig(paths=2, loss=0.3, trim=0.5, seed=11)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=cfg) as fab:
            for i in range(300):
                tx.sendto(sealed(request(i, 1000), addr(tx), fab.address), fab.address)
            await settle(fab, 300)
            got = drain(rx)
            c = fab.counters()
    t = c["totals"]
    assert t["received"] == 300 == t["forwarded"] + t["dropped"]
    assert t["dropped"] == t["loss_drops"] and 30 <= t["dropped"] <= 150
    assert len(got) == t["forwarded"] == t["packets"]
    assert sum(tos >> 2 == 11 for _, tos, _ in got) == t["trimmed"] > 0
    assert t["trimmed"] + t["crc_rewritten"] == t["forwarded"]
    assert sum(p["received"] for p in c["paths"]) == 300


async def test_ce_marked_when_the_queue_builds_only_on_ect_packets():
    rx, tx = udp(), udp(S)
    cfg = FabricConfig(paths=1, rate_gbps=0.008, kmin_bytes=8 << 10, kmax_bytes=32 << 10,
                       queue_bytes=8 << 20, rtt_us=0)
    n = 120
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=cfg) as fab:
            for i in range(n):  # a burst: 127 kB at 1 MB/s queues up
                send_tos(tx, sealed(request(i, 1000), addr(tx), fab.address), fab.address,
                         0x02 if i % 2 == 0 else 0x00)
            got = await collect(rx, n)
            c = fab.counters()["totals"]
    ce = [psn_of(d) for d, tos, _ in got if tos & 3 == 3]
    assert ce and c["ce_marked"] == len(ce)
    assert all(p % 2 == 0 for p in ce), "only ECT packets are marked"
    assert min(ce) >= 8, "no mark while the queue is below kmin (8 datagrams of 1058 bytes)"
    assert sorted(psn_of(d) for d, _, _ in got) == list(range(n))


@pytest.mark.parametrize("seed", [5])
async def test_duplication_and_reordering_at_their_fractions(seed):
    async def run():
        rx, tx = udp(), udp(S, tos=DATA)
        cfg = FabricConfig(paths=1, dup=0.1, reorder=0.2, reorder_delay_us=20_000, seed=seed)
        async with open_fabric(to=addr(rx), config=cfg) as fab:
            for i in range(400):
                tx.sendto(sealed(request(i, 200), addr(tx), fab.address), fab.address)
            await settle(fab, 400)
            c = fab.counters()["totals"]
            got = await collect(rx, c["packets"])
        return c, [psn_of(d) for d, _, _ in got]

    with trio.fail_after(HANG_GUARD_S):
        c1, order = await run()
        c2, _ = await run()
    assert 15 <= c1["duplicated"] <= 70 and 45 <= c1["reordered"] <= 125
    assert len(order) == 400 + c1["duplicated"] and set(order) == set(range(400))
    assert sum(v - 1 for v in collections.Counter(order).values()) == c1["duplicated"]
    assert any(b < a for a, b in zip(order, order[1:])), "some arrivals out of order"
    # the fate of a flow's n-th datagram depends only on the seed
    assert (c2["duplicated"], c2["reordered"]) == (c1["duplicated"], c1["reordered"])


async def test_bad_trailers_pass_unchanged_and_tss_is_not_checked():
    rx, tx = udp(), udp(S, tos=DATA)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig()) as fab:
            good = sealed(request(1, 100), addr(tx), fab.address)
            bad = sealed(request(5, 100), addr(tx), fab.address)
            bad = bad[:-1] + bytes([bad[-1] ^ 1])
            wrong_hop = sealed(request(2, 100), addr(tx), (fab.host, fab.port + 1))
            tss = bytes.fromhex("0800000300000000") + bytes(40)
            for d in (good, bad, wrong_hop, tss, b"\x10\x00"):
                tx.sendto(d, fab.address)
            got = await collect(rx, 5)
            c = fab.counters()["totals"]
    by = {d[:8]: (d, src) for d, _, src in got}
    d, src = by[good[:8]]
    assert crc_ok(d, src, addr(rx))
    assert by[bad[:8]][0] == bad and by[wrong_hop[:8]][0] == wrong_hop
    assert by[tss[:8]][0] == tss and by[b"\x10\x00"][0] == b"\x10\x00"
    assert (c["crc_rewritten"], c["crc_bad"], c["crc_skipped"]) == (1, 3, 1)


async def test_corruption_is_caught_by_the_receivers_check():
    rx, tx = udp(), udp(S, tos=DATA)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=FabricConfig(corrupt=1.0)) as fab:
            for i in range(30):
                tx.sendto(sealed(request(i, 500), addr(tx), fab.address), fab.address)
            got = await collect(rx, 30)
            c = fab.counters()["totals"]
    assert c["corrupted"] == 30
    assert not any(crc_ok(d, src, addr(rx)) for d, _, src in got)


async def test_ipv6_loopback(ipv6_third):
    """IPv6 needs three loopback addresses (receiver ::1, relay ::2, sender ::3; the test adds
    them as root)."""
    rx, tx = udp("::1"), udp(ipv6_third, tos=DATA)
    port = addr(rx)[1]
    home = udp(ipv6_third, port=port)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx)) as fab:
            assert fab.host == "::2"
            tx.sendto(sealed(request(9, 4000), addr(tx), fab.address), fab.address)
            [(d, tos, src)] = await collect(rx, 1)
            ev = udp("::1", port=src[1])
            ev.sendto(sealed(ack(9), addr(ev), (src[0], port)), (src[0], port))
            ev.close()
            [(a, atos, asrc)] = await collect(home, 1)
    assert crc_ok(d, src[:2], addr(rx)) and tos == DATA and src[1] == addr(tx)[1]
    assert asrc[:2] == (fab.host, addr(tx)[1]) and crc_ok(a, asrc[:2], (ipv6_third, port))


async def test_listen_port_other_than_the_uet_port_is_refused():
    rx = udp()
    with pytest.raises(ValueError, match="keeps the UET port"):
        async with open_fabric(listen=(None, addr(rx)[1] + 1), to=addr(rx)):
            pass
    rx.close()


async def test_preserve_entropy_is_what_the_relay_always_does():
    """FabricConfig.preserve_entropy is a documented no-op: with it or without, the receiver sees
    the sender's EV as the source port, and the UET port as the destination."""
    for cfg in (FabricConfig(preserve_entropy=True), FabricConfig()):
        rx, tx = udp(), udp(S, tos=DATA)
        with trio.fail_after(HANG_GUARD_S):
            async with open_fabric(to=addr(rx), config=cfg) as fab:
                tx.sendto(sealed(request(1, 64), addr(tx), fab.address), fab.address)
                [(d, _, src)] = await collect(rx, 1)
        assert src == (fab.back_host, addr(tx)[1]) and crc_ok(d, src, addr(rx))
        rx.close()
        tx.close()


async def test_capture_records_every_forwarded_datagram_both_directions(tmp_path):
    from uet.capture.frame import DecodeConfig, decode_frame
    from uet.capture.pcap import read_frames
    from uet.wire.build import udp_frame

    rx, tx = udp(tos=ACKTOS), udp(S, tos=DATA)
    home = udp(S, port=addr(rx)[1])
    path = tmp_path / "fab.pcap"
    cfg = FabricConfig(trim=1.0)
    with trio.fail_after(HANG_GUARD_S):
        async with open_fabric(to=addr(rx), config=cfg, capture=str(path)) as fab:
            for i, n in enumerate((100, 2000)):
                tx.sendto(sealed(request(i, n), addr(tx), fab.address), fab.address)
            got = await collect(rx, 2)
            src = got[0][2]
            ev = udp(LO, tos=ACKTOS, port=src[1])
            ev.sendto(sealed(ack(1), addr(ev), (src[0], addr(rx)[1])), (src[0], addr(rx)[1]))
            ev.close()
            await collect(home, 1)
    frames = list(read_frames(str(path)))
    assert [lt for lt, _, _ in frames] == [1, 1, 1]
    dc = DecodeConfig(ports=(addr(rx)[1],))
    objs = [decode_frame(1, raw, i + 1, dc).obj for i, (_, raw, _) in enumerate(frames)]
    # A.1: every datagram to the UET port, from the EV, both directions
    assert [o["udp"]["dport"] for o in objs] == [addr(rx)[1]] * 3
    assert [o["udp"]["sport"] for o in objs] == [addr(tx)[1]] * 3
    assert objs[2]["ip"]["dscp"] == 46
    assert sorted(o["ip"]["dscp"] for o in objs[:2]) == [0, 11]
    for o in objs[:2]:
        assert (o["ip"]["src"], o["ip"]["dst"]) == (fab.back_host, LO) and not o.get("error")
    # the capture is a tap between relay and receiver: the answer as the receiver sent it
    assert (objs[2]["ip"]["src"], objs[2]["ip"]["dst"]) == (LO, fab.back_host)
    assert sum(bool(o["uet"]["crc"]["ok"]) for o in objs) == 2  # the trimmed one has no trailer
    # the frame is what uet.wire.build frames around the same bytes
    d, tos, s = got[0] if len(got[0][0]) != 256 else got[1]
    raw = next(r for _, r, _ in frames if r.endswith(d))
    assert raw == udp_frame(d, src=s[0], dst=LO, sport=s[1], dport=addr(rx)[1], dscp=tos >> 2,
                            ecn=tos & 3, trailer=False)
    assert all(ts > 1e9 for _, _, ts in frames)  # wall-clock timestamps


@pytest.mark.parametrize("impair", [{}, {"loss": 0.02, "trim": 0.05, "dup": 0.02, "reorder": 0.02}])
async def test_live_endpoints_transfer_through_the_fabric(impair):
    """The ``uet demo`` arrangement: uet.io sender -> fabric -> uet.io receiver, ACKs back."""
    io = pytest.importorskip("uet.io")
    data = bytes(range(256)) * 4096  # 1 MiB
    with trio.fail_after(HANG_GUARD_S):
        async with io.open_endpoint((LO, 0)) as rx:
            async with open_fabric(to=(LO, rx.port), config=FabricConfig(seed=2, **impair)) as fab:
                async with io.open_endpoint(None, peer_port=fab.port, paths=4) as tx:
                    res = await tx.send(fab.host, data)  # the relay's address, the UET port
                    m = await rx.receive()
                c = fab.counters()
    assert m.data == data and res.nbytes == len(data) and m.peer == fab.back_host
    t = c["totals"]
    assert t["crc_bad"] == 0 and t["fwd"]["forwarded"] > 256 and t["rev"]["forwarded"] > 0
    assert c["relay"]["flows"] >= 1
    if impair:
        assert t["trimmed"] > 0 and t["dropped"] > 0
