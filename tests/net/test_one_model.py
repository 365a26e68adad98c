"""One network model: ECN marking, trimming, ECMP and CSIG stamping are each written once in
uet/net (ecn.py NET-N1 to NET-N4, ecmp.py NET-M1 to NET-M2, csig.py NET-G1 to NET-G3) and every driver uses that one definition:
the two-host links and the live relay (uet.net.link, uet.fabric.paths), the switch ports
(uet.net.switch) and the RoCE fabric of uet compare (uet.compare.ports, rocefabric)."""

from __future__ import annotations

import pathlib
import random
import re

import pytest

from uet.cms import csig
from uet.compare.ports import ecmp_port
from uet.fabric.paths import FabricConfig
from uet.fabric.paths import Link as FabricLink
from uet.fabric.paths import Releases
from uet.net import Link, NetConfig
from uet.net.csig import utilisation
from uet.net.ecmp import five_tuple_key, pick, switch_salts
from uet.net.ecn import ECN_POINT, TRIM_VICTIM, red_mark
from uet.net.link import CE, TRIMMED
from uet.net.switch import Packet, Port
from uet.sim.fabric import FabricSimConfig, FabricSimulator

UET = pathlib.Path(__file__).resolve().parents[2] / "uet"
KMIN, KMAX = 1000, 2000


def port(**kw) -> Port:
    """1000 B/s (8000 b/s), a buffer far above the ramp, no trimming unless asked."""
    args = dict(rate_bps=8000.0, delay=0.0, buffer_bytes=10**6, kmin_bytes=KMIN, kmax_bytes=KMAX,
                trim_bytes=256, trimming=False, rng=random.Random(1))
    args.update(kw)
    return Port("t0->h0", None, **args)


def link() -> Link:
    cfg = NetConfig(paths=1, rate_gbps=8e-6, rtt_us=0.0, kmin_bytes=KMIN, kmax_bytes=KMAX)
    return Link(cfg, 0, 0, queue_bytes=10**6)


def test_defaults_are_e6s():
    """NET-N2, NET-N4: the UEC's reference simulator marks on dequeue and trims either packet (E.6)."""
    assert (ECN_POINT, TRIM_VICTIM) == ("dequeue", "either")
    assert (FabricSimConfig().ecn_point, FabricSimConfig().trim_victim) == ("dequeue", "either")
    p = port()
    assert (p.ecn_point, p.trim_victim) == ("dequeue", "either")


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("depth", [0, 875, 1000, 1125, 1500, 1875, 2000, 2500])
def test_n1_two_host_link_and_switch_port_mark_the_same_packet(depth, seed):
    """NET-N1, NET-N2 "enqueue": for the same queue depth and the same generator, the two-host link (and
    so the live relay) and a switch port mark an ECN-capable arrival alike, as red_mark says."""
    ln = link()
    ln.busy = depth / 1000  # 1000 B/s: the queue holds ``depth`` bytes at t = 0
    at, flags, _, _ = ln.offer(0.0, 100, False, True, random.Random(seed))
    p = port(ecn_point="enqueue", rng=random.Random(seed))
    for _ in range(depth // 125):
        assert p.enqueue(Packet(bytes(125), 0, 0, False, False), 0.0)  # not ECN-capable: no draw
    arriving = Packet(bytes(100), 0, 0, False, True)
    assert p.enqueue(arriving, 0.0)
    want = red_mark(depth, KMIN, KMAX, random.Random(seed))
    assert bool(flags & CE) is arriving.ce is want
    assert ln.ce_marked == p.ce_marked == int(want)


def test_n2_dequeue_reads_the_queue_behind_enqueue_the_queue_ahead():
    """An ECN-capable packet joins an empty queue and 2500 bytes (above kmax) join behind it:
    on dequeue (E.6) it leaves a queue above kmax and is marked; on enqueue it saw none."""
    for point, marked in (("dequeue", True), ("enqueue", False)):
        p = port(ecn_point=point)
        x = Packet(bytes(100), 0, 0, False, True)
        p.enqueue(x, 0.0)
        for _ in range(20):
            p.enqueue(Packet(bytes(125), 0, 0, False, False), 0.0)
        assert x.ce is False  # nothing decided yet on dequeue; nothing to mark on enqueue
        assert p.start(0.0)[0] is x
        assert x.ce is marked and p.ce_marked == int(marked)


def test_n2_bad_point_is_a_readable_error():
    with pytest.raises(ValueError, match="ecn_point is dequeue or enqueue"):
        port(ecn_point="egress")
    with pytest.raises(ValueError, match="trim_victim is either or arriving"):
        port(trim_victim="oldest")


@pytest.mark.parametrize("victim,last_trimmed", [("either", True), ("arriving", False)])
def test_n4_trim_victim(victim, last_trimmed):
    """A full data queue and a trimmable arrival, with a draw below one half: "either" trims the
    last queued packet (E.6), "arriving" the arriving one, without a draw."""
    rng = random.Random(0)
    draws = []
    rng.random = lambda: draws.append(1) or 0.1  # type: ignore[method-assign]
    p = port(buffer_bytes=1000, trimming=True, trim_victim=victim, rng=rng)
    last = Packet(bytes(1000), 0, 1, False, False)
    assert p.enqueue(last, 0.0)
    new = Packet(bytes(900), 0, 2, False, False)
    assert p.enqueue(new, 0.0)
    assert (last.trimmed, new.trimmed) == (last_trimmed, not last_trimmed)
    assert len(draws) == (1 if victim == "either" else 0) and p.trimmed == 1


def test_n3_link_trims_on_overflow_the_arriving_trimmable_packet_only():
    cfg = NetConfig(paths=1, rate_gbps=8e-6, rtt_us=0.0)
    ln = Link(cfg, 0, 0, queue_bytes=1000)
    ln.busy = 1.0  # 1000 bytes queued: full
    assert ln.offer(0.0, 900, False, False, random.Random(1))[1] & TRIMMED
    assert ln.offer(0.0, 900, True, False, random.Random(1))[0] is None  # DSCP 46: dropped
    assert ln.offer(0.0, 200, False, False, random.Random(1))[0] is None  # not above 256 bytes


@pytest.mark.parametrize("key", [0, 1, 0xDEADBEEF, 0xFFFFFFFF, 12345678])
def test_m2_compare_and_sim_switches_share_ecmp(key):
    up = list(range(7))
    for salt in (0, 0x1234, 0xFFFFFFFF):
        assert ecmp_port(up, key, salt) == pick(up, key, salt)  # type: ignore[arg-type]


def test_m2_switch_salts_and_frame_key_are_the_simulators():
    sim = FabricSimulator(FabricSimConfig(topology="leafspine:2,2,2", traffic=("incast", 1),
                                          flow_bytes=4096, seed=9))
    assert {n: s.salt for n, s in sim.switches.items()} == switch_salts(9, sim.topo.switches)
    frame = bytes(range(64))
    assert five_tuple_key(frame) == __import__("zlib").crc32(frame[26:38])


def test_g1_g2_switch_port_and_relay_link_stamp_alike():
    """NET-G1: a switch port and a relay link busy over the same span report the same utilisation;
    NET-G2: a stamp moves the same counters on both."""
    tau = 8e-6
    p = port(csig=csig.ABW, csig_interval=tau)
    p.tx_end, p.u_since = 3e-6, 0.0
    p._measure(10e-6)
    fcfg = FabricConfig(paths=1, csig="abw", csig_interval_us=tau * 1e6)
    ln = FabricLink(fcfg, 0, 0, Releases(0.0))
    ln._measure(10e-6, 3e-6)
    assert p.util == ln.util == utilisation(0.0, 0.0, 3e-6, 10e-6, tau)
    assert 0 < p.util < 1
    bits = csig.neutral(csig.ABW)
    from uet.net.csig import stamp_on, trim_on
    assert stamp_on(p, bits, 3, 5) == stamp_on(ln, bits, 3, 5) == csig.stamp(bits, 3, 5)
    assert (p.csig_stamped, ln.csig_stamped) == (1, 1)
    assert trim_on(p, bits) == trim_on(ln, bits) == csig.set_d(bits)
    assert (p.csig_d_set, ln.csig_d_set) == (1, 1)


# each rule's tell-tale, and the one module of uet/net allowed to write it
ONE_PLACE = {
    r"0x9E3779B1": "net/ecmp.py",                       # NET-M1, NET-M2: the Fibonacci spread
    r"\[26:38\]": "net/ecmp.py",                        # NET-M2: the 5-tuple bytes
    r"random\(\) < 0\.5": "net/ecn.py",                 # NET-N4: the either-victim draw
    r"- kmin\)|- self\._kmin\)": "net/ecn.py",          # NET-N1: the RED ramp
    r"\bset_d\(|\bstamp\(": "net/csig.py",              # NET-G2, NET-G3 (uet/cms/csig.py defines them)
    r"since - end": "net/csig.py",                      # NET-G1
}


@pytest.mark.parametrize("pattern", sorted(ONE_PLACE))
def test_each_rule_is_written_once(pattern):
    where = sorted(str(f.relative_to(UET)) for f in UET.rglob("*.py")
                   if f.relative_to(UET) != pathlib.Path("cms/csig.py")
                   and re.search(pattern, f.read_text()))
    assert where == [ONE_PLACE[pattern]]


@pytest.mark.parametrize("control", [False, True])
@pytest.mark.parametrize("n", [0, 255, 256, 257, 4096])
def test_n3_link_trims_what_trimmable_says(n, control):
    """The link inlines NET-N3 on its hot path: it trims (trim 1.0) exactly what trimmable() allows."""
    from uet.net.ecn import trimmable
    ln = Link(NetConfig(paths=1, trim=1.0), 0, 0, queue_bytes=10**6)
    flags = ln.offer(0.0, n, control, False, random.Random(1))[1]
    assert bool(flags & TRIMMED) is trimmable(n, control, 256)
