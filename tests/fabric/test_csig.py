"""CSIG through the live fabric (facts E.4; rules L1-L4 of uet.fabric.paths, the relay's tag
ahead of the UET bytes, uet.fabric.relay), per-path rates (``degrade_paths``) and the links' queue
figures: on a virtual clock without sockets, then on loopback with plain UDP sockets as sender
and receiver and hand-built UET packets, and the capture decoded by ``uet decode --json``."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest
import trio

from uet.cms.csig import (ABW, ABW_C, CSIG_ETHERTYPE, DELAY, NQD, TOP, neutral, pack, set_d,
                          stamp, unpack)
from uet.fabric import FabricConfig, open_fabric
from uet.fabric.command import main
from uet.fabric.paths import FWD, Link, Releases

from .helpers import LO, S, ack, collect, crc_ok, psn_of, request, sealed, send_tos, udp
from .test_relay import senders_on_every_path

DATA, ACKTOS = 0x02, 46 << 2
TPID = CSIG_ETHERTYPE.to_bytes(2, "big")
ROOT = __import__("os").path.dirname(__import__("os").path.dirname(
    __import__("os").path.dirname(__import__("os").path.abspath(__file__))))


def keep(data: bytes, link: Link) -> bytes:
    link.crc_rewritten += 1
    return data


def link(path: int = 0, **kw) -> tuple[Link, Releases]:
    cfg = FabricConfig(**kw)
    rel = Releases(cfg.slack_us * 1e-6)
    lk = Link(cfg, path, FWD, rel)
    lk.start(0.0)
    return lk, rel


def split(data: bytes) -> tuple[int, bytes]:
    """(the tag's 16 bits, the UET bytes) of what the relay sends."""
    assert data[:2] == TPID, data[:4]
    return (data[2] << 8) | data[3], data[4:]


def sent(rel: Releases) -> list[tuple[int, bytes, int]]:
    """(tag bits, UET bytes, tos) of every release, in time order."""
    return [(*split(e[3]), e[4]) for e in sorted(rel.heap)]


# --- the links, on a virtual clock ---------------------------------------------------------------

def test_degraded_path_serialises_at_its_fraction_of_the_rate():
    fast, rf = link(0, rate_gbps=8.0, rtt_us=0.0, degrade_paths=[(1, 0.25)])
    slow, rs = link(1, rate_gbps=8.0, rtt_us=0.0, degrade_paths=[(1, 0.25)])
    for lk in (fast, slow):
        lk.forward(0.0, bytes(958), DATA, None, random.Random(1), keep)  # a 1000-byte frame
    assert [e[0] for e in rf.heap] == pytest.approx([1e-6])
    assert [e[0] for e in rs.heap] == pytest.approx([4e-6])
    assert slow.snapshot(0.0)["rate_gbps"] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        FabricConfig(paths=2, degrade_paths=[(2, 0.5)])
    with pytest.raises(ValueError):
        FabricConfig(degrade_paths=[(0, 0.0)])
    with pytest.raises(ValueError):
        FabricConfig(csig="bogus")


def test_queue_figures_are_the_models_peak_and_time_average():
    lk, _ = link(rate_gbps=8.0, rtt_us=0.0)  # 1 byte per ns
    for _ in range(4):
        lk.forward(0.0, bytes(958), DATA, None, random.Random(1), keep)
    s = lk.snapshot(8e-6)
    # 4000 bytes queued at 0, drained linearly by 4 us: area 8000 B.us over 8 us -> 1000 B
    assert s["max_queue_bytes"] == 4000
    assert s["mean_queue_bytes"] == pytest.approx(1000.0, rel=1e-6)
    lk.forward(10e-6, bytes(958), DATA, None, random.Random(1), keep)
    assert lk.snapshot(20e-6)["mean_queue_bytes"] == pytest.approx((8000 + 500) / 20, rel=1e-6)
    assert "csig_stamped" not in s  # CSIG off: no tag, no CSIG counters
    off, rel = link()
    off.forward(0.0, bytes(500), DATA, None, random.Random(1), keep)
    assert rel.heap[0][3] == bytes(500)


def test_requests_are_stamped_answers_neutral_trims_get_d():
    lk, rel = link(2, rate_gbps=8.0, rtt_us=0.0, csig="abw", csig_interval_us=1.0,
                   queue_bytes=2500)
    rng = random.Random(1)
    lk.forward(0.0, bytes(958), DATA, None, rng, keep)          # idle link: s = 31, unchanged
    lk.forward(0.0, bytes(958), DATA, None, rng, keep)          # busy for 1 us of tau 1 us
    lk.forward(0.0, bytes(958), DATA, None, rng, keep)          # overflows: trimmed, d set
    lk.forward(0.0, bytes(100), ACKTOS, None, rng, keep)        # an answer: neutral
    got = sent(rel)
    tags = [unpack(t) for t, _, _ in got]
    assert all(t.t == ABW for t in tags)
    assert got[0][0] == neutral(ABW) and tags[0].s == TOP
    by_len = {len(body): (bits, tos) for bits, body, tos in got}
    bits, tos = by_len[256]
    assert tos >> 2 == 11 and bits == set_d(neutral(ABW))
    assert by_len[100][0] == neutral(ABW)
    c = lk.snapshot(0.0)
    assert (c["csig_stamped"], c["csig_d_set"], c["csig_neutral"]) == (2, 1, 1)
    # utilisation 1 - e^-1 after 1 us of busy link at a 1 us time constant: ABW 8 e^-1 Gb/s
    lk.forward(1e-6, bytes(958), DATA, None, rng, keep)
    bits = max(sent(rel), key=lambda x: len(x[1]) == 958 and x[0] != neutral(ABW))[0]
    want = lk.scale.bucket(ABW, abw_gbps=8.0 * math.exp(-1), capacity_gbps=8.0)
    assert want == 11 and unpack(bits).s == want and unpack(bits).lm == 2


@pytest.mark.parametrize("t", [DELAY, NQD, ABW_C])
def test_delay_nqd_and_abwc_buckets(t):
    name = {DELAY: "delay", NQD: "nqd", ABW_C: "abw/c"}[t]
    # a queue of 30990 bytes: a full one takes 30.99 us, so the delay unit (/ 31) is 0.9997 us
    # and packet k, behind k frames of 1000 bytes, is in bucket k of either scale (k x 1.0003)
    lk, rel = link(5, rate_gbps=8.0, rtt_us=0.0, csig=name, queue_bytes=30_990,
                   csig_interval_us=1e9)
    rng = random.Random(1)
    for _ in range(16):  # 1000-byte frames at 1 per us: packet k waits k us behind k frames
        lk.forward(0.0, bytes(958), DATA, None, rng, keep)
    tags = [unpack(b) for b, _, _ in sent(rel)]
    if t in (DELAY, NQD):
        assert [x.s for x in tags] == list(range(16))
        assert [x.lm for x in tags] == [0] + [5] * 15  # bucket 0 is not worse than neutral
    else:  # a huge time constant: the utilisation stays near 0, ABW/C at the top
        assert {x.s for x in tags} <= {TOP, TOP - 1} and tags[0].s == TOP


def test_an_incoming_tag_is_compare_and_replaced():
    lk, rel = link(3, rate_gbps=8.0, rtt_us=0.0, csig="nqd", queue_bytes=30_990)
    rng = random.Random(1)
    lk.forward(0.0, bytes(958), DATA, None, rng, keep, tag=pack(NQD, 20, lm=9))  # worse: kept
    lk.forward(0.0, bytes(958), DATA, None, rng, keep, tag=pack(NQD, 0, lm=9))   # 1 > 0: ours
    lk.forward(0.0, bytes(958), DATA, None, rng, keep, tag=pack(ABW, 3, lm=9))   # other type
    lk.forward(0.0, bytes(958), DATA, None, rng, keep, tag=set_d(pack(NQD, 0)))  # d: untouched
    tags = [b for b, _, _ in sent(rel)]
    assert tags[0] == pack(NQD, 20, lm=9)
    assert tags[1] == stamp(pack(NQD, 0, lm=9), 1, 3) == pack(NQD, 1, lm=3)
    assert tags[2] == pack(NQD, 2, lm=3)
    assert tags[3] == set_d(pack(NQD, 0))


# --- the relay, on loopback ----------------------------------------------------------------------

def addr(s):
    return s.getsockname()[:2]


@pytest.mark.trio
async def test_relay_tags_requests_answers_and_trims_and_captures_them(tmp_path):
    rx = udp(tos=ACKTOS)
    home = udp(S, port=addr(rx)[1])  # A.1: the senders' answers arrive at their UET port
    cfg = FabricConfig(paths=4, seed=3, csig="abw", trim=0.3)
    txs = senders_on_every_path(cfg, per_path=1)
    frames: list[bytes] = []
    with trio.fail_after(15):
        async with open_fabric(to=addr(rx), config=cfg,
                               capture=lambda ts, f: frames.append(f)) as fab:
            paths = {addr(tx)[1]: fab.path_of(addr(tx)[1]) for tx in txs}
            n = 0
            for k, tx in enumerate(txs):
                for i in range(6):
                    tx.sendto(sealed(request(k * 10 + i, 1000), addr(tx), fab.address),
                              fab.address)
                    n += 1
            got = await collect(rx, n)
            flows = {f["relay_port"]: f for f in fab.flow_list()}
            evs = {}
            for data, _, src in got:  # answers to every request: from its EV to the UET port
                bits, body = split(data)
                ev = evs.get(src[1]) or evs.setdefault(src[1], udp(LO, port=src[1]))
                back = (src[0], addr(rx)[1])
                send_tos(ev, sealed(ack(psn_of(body)), addr(ev), back), back, ACKTOS)
            answers = await collect(home, n)
            for ev in evs.values():
                ev.close()
            c = fab.counters()
    trims = 0
    for data, tos, src in got:
        bits, body = split(data)
        tag = unpack(bits)
        assert tag.t == ABW and tag.r == 0
        path = paths[flows[src[1]]["entropy"]]
        if tos >> 2 == 11:
            trims += 1
            assert tag.d == 1 and len(body) == 256
        else:
            assert tag.d == 0 and crc_ok(body, src, addr(rx))  # the trailer ignores the tag
            assert tag.s == TOP or tag.lm == path  # replaced only by this path's link
    assert trims == c["totals"]["trimmed"] > 0
    for data, tos, src in answers:
        bits, body = split(data)
        assert src[0] == fab.host and src[1] in paths  # from the relay, the request's EV
        assert bits == neutral(ABW) and tos == ACKTOS and crc_ok(body, src, addr(home))
    fwd = c["totals"]["fwd"]
    assert sum(p["fwd"]["csig_stamped"] + p["fwd"]["csig_d_set"] for p in c["paths"]) == n
    assert sum(p["rev"]["csig_neutral"] for p in c["paths"]) == n == fwd["received"]
    assert c["relay"]["csig"] == "abw"
    # the capture shows the tag as an L2 tag: uet decode reads it into a "csig" object
    from scapy.utils import RawPcapWriter

    pcap = tmp_path / "csig.pcap"
    w = RawPcapWriter(str(pcap), linktype=1)
    w.write_header(None)
    for f in frames:
        w.write_packet(f, sec=0, usec=0)
    w.close()
    assert all(f[12:14] == TPID and f[16:18] == b"\x08\x00" for f in frames)
    out = subprocess.run([sys.executable, "-m", "uet", "decode", "--json", "--port", str(addr(rx)[1]),
                          str(pcap)], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(objs) == len(frames) == 2 * n
    for o in objs:
        assert o["problems"] == [] and "pds" in o["uet"], o
        cs = o["csig"]
        assert cs["t_name"] == "ABW" and cs["ethertype"] == 0x0800
        if o["ip"]["dscp"] == 46:
            assert (cs["s"], cs["lm"], cs["d"]) == (TOP, 0, False)
        elif o["ip"]["dscp"] == 11:
            assert cs["d"] is True and o["udp"]["length"] == 8 + 256
        else:
            assert o["uet"]["crc"]["ok"] is True
            assert o["udp"]["length"] == 8 + 1000 + 12 + 4  # the tag is not UDP payload


@pytest.mark.trio
async def test_a_tagged_datagram_from_upstream_keeps_one_tag():
    rx, tx = udp(), udp(S, tos=DATA)
    with trio.fail_after(10):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=1, csig="delay")) as fab:
            body = sealed(request(7, 500), addr(tx), fab.address)
            up = pack(DELAY, 30, lm=100)
            tx.sendto(TPID + up.to_bytes(2, "big") + body, fab.address)
            [(data, _, src)] = await collect(rx, 1)
            c = fab.counters()
    bits, out = split(data)
    assert bits == up  # worse than an idle link's delay: kept (C3)
    assert out[:4] != TPID and crc_ok(out, src, addr(rx))
    assert c["relay"]["csig_tagged_in"] == 1


@pytest.mark.trio
async def test_without_csig_nothing_is_tagged():
    rx, tx = udp(), udp(S, tos=DATA)
    with trio.fail_after(10):
        async with open_fabric(to=addr(rx), config=FabricConfig(paths=2)) as fab:
            body = sealed(request(1, 300), addr(tx), fab.address)
            tx.sendto(body, fab.address)
            [(data, _, src)] = await collect(rx, 1)
            assert src[1] == fab.entropy_of(src[1]) == addr(tx)[1]  # the EV kept (A.1)
            assert fab.entropy_of(1) == 1
    assert data[:2] != TPID and crc_ok(data, src, addr(rx))


# --- uet fabric's options ------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["--csig", "bogus"], "argument --csig"),
    (["--degrade-path", "7:0.5"], "there is no path 7"),
    (["--degrade-path", "1:1.5"], "argument --degrade-path"),
    (["--degrade-path", "x"], "argument --degrade-path"),
    (["--csig-interval", "0"], "argument --csig-interval"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    assert main(["--to", f"{LO}:9", "--paths", "4", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.splitlines()[0].startswith("uet fabric: error:")
    assert len(err.splitlines()) == 2 and err.splitlines()[1].startswith("try ")


def test_csig_and_degrade_options_reach_the_config(capsys):
    rc = main(["--to", f"{LO}:9", "--duration", "0.1", "--interval", "0",
               "--json", "--paths", "4", "--csig", "abw/c", "--degrade-path", "2:0.5",
               "--csig-interval", "250"])
    out, _ = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out)
    assert doc["config"]["csig"] == "abw/c" and doc["config"]["degrade_paths"] == [[2, 0.5]]
    assert doc["config"]["csig_interval_us"] == 250.0
    assert doc["paths"][2]["fwd"]["rate_gbps"] == pytest.approx(50.0)
    assert doc["paths"][2]["fwd"]["csig_mean_bucket"] is None  # nothing stamped yet
