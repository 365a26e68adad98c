"""CSIG in the many-host simulator (uet.sim.fabric SIM-F1 to SIM-F3; the ports' NET-S5 to NET-S6 are tested with the
switch) and the CSIG-aware entropy selector (uet.multipath.csig MULTIPATH-K1 to MULTIPATH-K5). Every run is seeded; the
directions asserted are counts of packets, never timings."""

from __future__ import annotations

import random

import pytest
from scapy.utils import rdpcap

from uet.cms import csig
from uet.multipath import CsigSelector, EntropySelector, Reps, csig_selector
from uet.sim.fabric import FabricSimConfig, FabricSimulator
from uet.sim.frames import insert_tag, strip_tag
from uet.sim.traffic import Flow, write_matrix

US = 1e-6
DEGRADED = [("t0", "s3", 0.25)]


def _one_flow(tmp_path, nbytes: int) -> tuple[str, str]:
    """h0 -> h1 on leafspine:1,2,8 (one host per ToR, eight spines): its data leaves t0 on
    t0->s0 ... t0->s7."""
    path = tmp_path / "h0-h1.cm"
    write_matrix(path, 2, [Flow(0, 1, nbytes)])
    return ("matrix", str(path))


def _sim(tmp_path, nbytes=256 << 10, *, pcap=None, **kw) -> FabricSimulator:
    kw.setdefault("topology", "leafspine:1,2,8")
    return FabricSimulator(FabricSimConfig(traffic=_one_flow(tmp_path, nbytes), **kw), pcap=pcap)


def _up(sim: FabricSimulator) -> dict[str, int]:
    return {p.name: p.tx_packets for p in sim.ports if p.name.startswith("t0->s")}


# --- frames: the tag as an L2 tag ---------------------------------------------------------------

def test_insert_and_strip_put_the_tag_after_the_macs():
    frame = bytes(range(12)) + b"\x08\x00" + b"ip..."
    tagged = insert_tag(frame, 0xBEEF, 0x9900)
    assert tagged == bytes(range(12)) + b"\x99\x00\xbe\xef\x08\x00ip..."
    assert strip_tag(tagged) == (frame, 0xBEEF)


# --- SIM-F1 to SIM-F3 ----------------------------------------------------------------------------------------

def test_f1_f3_pcap_shows_a_real_l2_tag_and_the_last_hop_saturates(tmp_path):
    """At send time every data frame carries the neutral tag between the MACs and IP, control
    frames none; at arrival the changed tags. The sender runs at line rate, so the receiver's
    ToR port (t1->h1, lm 1) ends up full: the last tags say no bandwidth there (bucket 0),
    whatever spine the packet crossed."""
    pcap = tmp_path / "csig.pcap"
    with open(pcap, "wb") as fh:
        sim = _sim(tmp_path, 1 << 20, csig="abw", seed=2, pcap=fh)
        s = sim.run()
    assert s["ok"]
    frames = [bytes(p) for p in rdpcap(str(pcap))]
    tagged = [f for f in frames if f[12:14] == csig.CSIG_ETHERTYPE.to_bytes(2, "big")]
    plain = [f for f in frames if f[12:14] == b"\x08\x00"]
    assert len(tagged) + len(plain) == len(frames) and plain
    assert all(f[16:18] == b"\x08\x00" and f[18] == 0x45 for f in tagged)  # inner IPv4
    assert all(f[15] >> 2 == 46 for f in plain)  # untagged: ACKs and control (DSCP 46)
    sent = [f for f in tagged if (f[14] << 8 | f[15]) == csig.neutral(csig.ABW)]
    changed = [csig.unpack(f[14] << 8 | f[15]) for f in tagged
               if (f[14] << 8 | f[15]) != csig.neutral(csig.ABW)]
    assert len(sent) == s["packets_sent"] - len(plain)  # one neutral copy per data frame
    assert all(t.t == csig.ABW and t.d == 0 for t in changed)
    assert [(t.s, t.lm) for t in changed[-20:]] == [(0, 1)] * 20
    assert s["csig"] == "abw" and s["csig_replaced"] > 0
    assert s["csig_stamped"] == 3 * len(sent)  # t0->sK, sK->t1, t1->h1: the NIC does not


def test_f3_the_host_gets_the_payload_and_the_bits_beside_it(tmp_path):
    sim = _sim(tmp_path, 64 << 10, csig="delay", seed=1)
    got = []
    ep = sim.hosts[1].ep
    orig = ep.receive_datagram

    def receive(data, meta, now, *, csig=None):
        got.append((data[0] >> 3, csig))
        orig(data, meta, now, csig=csig)

    ep.receive_datagram = receive
    assert sim.run()["ok"]
    assert got and all(bits is not None and bits >> 14 == csig.DELAY for _, bits in got)
    assert {t for t, _ in got} <= {1, 2, 3, 4, 5}  # UET PDS request types: the tag is gone


def test_f1_trims_set_d_once_per_trim_and_summary_counts(tmp_path):
    s = FabricSimulator(FabricSimConfig(topology="leafspine:5,1,1", traffic=("incast", 4),
                                        flow_bytes=256 << 10, csig="nqd", seed=1)).run()
    assert s["ok"] and s["trimmed"] > 0
    assert s["csig_d_set"] == s["trimmed"]  # every trimmed packet is a tagged request
    assert s["csig"] == "nqd" and s["csig_stamped"] >= s["csig_replaced"] > 0


def test_csig_off_leaves_frames_and_summary_as_they_were(tmp_path):
    pcap = tmp_path / "plain.pcap"
    with open(pcap, "wb") as fh:
        s = _sim(tmp_path, 64 << 10, seed=1, pcap=fh).run()
    assert s["ok"] and s["csig"] is None and not any(k.startswith("csig_") for k in s)
    assert all(bytes(p)[12:14] == b"\x08\x00" for p in rdpcap(str(pcap)))


def test_unknown_signal_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown CSIG signal"):
        _sim(tmp_path, csig="loss")


def test_the_same_seed_gives_the_same_csig_run(tmp_path):
    a, b = (_sim(tmp_path, 256 << 10, csig="abw", seed=3).run() for _ in range(2))
    for s in (a, b):
        s.pop("wall_time_s")
    assert a == b


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_k3_k4_csig_moves_packets_off_a_degraded_spine(tmp_path, seed):
    """t0-s3 at a quarter of its rate; one 2 MB flow h0 -> h1 whose window is half a BDP, so
    that the receiver's link is not full: the ABW tags then show t0->s3 (7 of 31 buckets when
    idle) far below the other spines, and the selector sends fewer packets there. (At line
    rate the receiver's own full link sets every path's tag to 0, as the pcap test shows, and
    no path is worse than another.)"""
    runs = {}
    for c in (None, "abw"):
        sim = _sim(tmp_path, 2_000_000, csig=c, seed=seed, degrade=DEGRADED,
                   nscc={"max_window": 0.5})
        s = sim.run()
        assert s["ok"], (c, seed)
        runs[c] = _up(sim)
    assert runs["abw"]["t0->s3"] < runs[None]["t0->s3"]
    assert sum(runs["abw"].values()) == sum(runs[None].values())  # the same data, moved


# --- the selector (K1-K5) -------------------------------------------------------------------------

A, B, C = 50001, 50002, 50003


class Scripted(EntropySelector):
    """An inner policy that offers ``offers`` in turn (the last one forever) and records the
    hooks it hears."""

    def __init__(self, offers):
        super().__init__([A, B, C])
        self.offers = list(offers)
        self.heard: list[tuple] = []

    def choose(self, now):
        return self.offers.pop(0) if len(self.offers) > 1 else self.offers[0]

    def on_delivered(self, *, now, ev):
        self.heard.append(("delivered", ev))

    def on_ack(self, *, now, ev, ce):
        self.heard.append(("ack", ev, ce))

    def on_nack(self, *, now, ev, code):
        self.heard.append(("nack", ev, code))

    def on_loss(self, *, now, ev):
        self.heard.append(("loss", ev))

    def on_timeout(self, *, now):
        self.heard.append(("timeout",))

    def on_signal(self, *, now, ev, bits):
        self.heard.append(("signal", ev, bits))


def _sel(offers, t=csig.ABW, **kw) -> CsigSelector:
    return csig_selector(Scripted(offers), t=t, scale=csig.Scale(), **kw)


def test_k3_k4_a_clearly_worse_offer_is_asked_again():
    sel = _sel([B, A])
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 30))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, 3, lm=5))
    assert sel.next(1 * US) == A
    assert sel.counters["reasked"] == 1 and sel.counters["signals"] == 2


def test_k4_at_most_reasks_times_then_the_last_offer():
    sel = _sel([B], reasks=3)
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 30))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, 3))
    assert sel.next(1 * US) == B
    assert (sel.counters["reasked"], sel.counters["kept_bad"]) == (3, 1)


@pytest.mark.parametrize("good,bad,worse", [
    (30, 16, False),   # above half the best
    (30, 14, True),    # below half, and 16 buckets below
    (4, 0, False),     # below half but within the margin: noise at the bottom
    (10, 4, True),
])
def test_k3_minimum_types_half_the_best_and_beyond_the_margin(good, bad, worse):
    sel = _sel([B, A])
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, good))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, bad))
    assert sel.next(1 * US) == (A if worse else B)


@pytest.mark.parametrize("bad,worse", [(6, False), (7, True)])
def test_k3_maximum_types_keep_a_margin_above_the_best(bad, worse):
    sel = _sel([B, A], t=csig.DELAY)
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.DELAY, 2))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.DELAY, bad))
    assert sel.next(1 * US) == (A if worse else B)


def test_k2_signals_expire():
    sel = _sel([B, A, B, A], max_age=50 * US, recent=20 * US)
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 30))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, 3))
    sel.on_signal(now=40 * US, ev=A, bits=csig.pack(csig.ABW, 30))  # A keeps the reference recent
    assert sel.next(45 * US) == A                       # B's 3 still counts at 45 us
    assert sel.next(51 * US) == B                       # ... and is forgotten after 50 us
    assert sel.counters["expired"] == 1


def test_k3_the_reference_is_recent_only():
    """A high value from before the load changed does not make newer ones look bad."""
    sel = _sel([B, A], max_age=200 * US, recent=20 * US)
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 31))  # the idle fabric of the first RTTs
    sel.on_signal(now=30 * US, ev=B, bits=csig.pack(csig.ABW, 3))   # now every path is loaded
    assert sel.next(31 * US) == B and sel.counters["reasked"] == 0


def test_k3_the_cached_reference_follows_a_best_path_that_got_worse():
    sel = _sel([B, A, B, A])
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 30))
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, 3))
    assert sel.next(1 * US) == A
    sel.on_signal(now=2 * US, ev=A, bits=csig.pack(csig.ABW, 2))    # A is as loaded as B now
    assert sel.next(3 * US) == B


def test_k1_other_types_d_and_r_are_ignored():
    sel = _sel([B])
    for bits in (csig.pack(csig.DELAY, 30), csig.pack(csig.ABW, 3, d=1),
                 csig.pack(csig.ABW, 3, r=1)):
        sel.on_signal(now=0.0, ev=B, bits=bits)
    assert sel.counters["ignored"] == 3 and sel.paths(0.0) == {}
    sel.on_signal(now=0.0, ev=B, bits=csig.pack(csig.ABW, 31))
    assert sel.paths(0.0) == {B: pytest.approx(100.0)}  # Gb/s on the default scale


def test_k5_every_hook_reaches_the_inner_policy_and_the_health_rules():
    sel = _sel([A])
    inner = sel.inner
    sel.on_delivered(now=0.0, ev=A)
    sel.on_ack(now=0.0, ev=A, ce=True)
    sel.on_nack(now=0.0, ev=B, code=1)
    sel.on_loss(now=0.0, ev=C)
    sel.on_loss(now=0.0, ev=C)
    sel.on_timeout(now=0.0)
    sel.on_signal(now=0.0, ev=A, bits=csig.pack(csig.ABW, 9))
    assert inner.heard == [("delivered", A), ("ack", A, True), ("nack", B, 1), ("loss", C),
                           ("loss", C), ("timeout",), ("signal", A, csig.pack(csig.ABW, 9))]
    assert sel.failed == {C}                 # MULTIPATH-H1 in the selector's own health rules
    assert sel.known(A) and sel.known(B)     # H3: ACK and NACK round trips


def test_k5_reps_inside_recycles_as_it_would_alone():
    rng = random.Random(4)
    sel = csig_selector(Reps([A, B, C], rng), t=csig.ABW)
    sel.on_ack(now=0.0, ev=B, ce=False)
    assert sel.inner.ring[0] == (B, True)
    assert sel.next(1 * US) == B and sel.inner.counters["recycled"] == 1
    sel.on_nack(now=0.0, ev=B, code=0x01)  # a NACK is not an ACK: nothing recycled
    assert sel.inner.counters["recycled"] == 1


def test_selector_refuses_nonsense():
    with pytest.raises(ValueError):
        _sel([A], frac=0.0)
    with pytest.raises(ValueError):
        _sel([A], recent=300 * US, max_age=200 * US)
    with pytest.raises(ValueError):
        csig_selector(Scripted([A]), t=4)
