"""The congestion-control and entropy-selector interfaces are the interfaces (issue 12 item 3):
the PDS calls them for every packet, with no class special-cased. A recording CC and selector
(subclasses of the interfaces, not of the defaults) check what the PDS tells them and when."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from uet.cms import CongestionControl
from uet.multipath import EntropySelector
from uet.pds import Endpoint, PdsConfig
from uet.wire.enums import NACK_CODE

from .helpers import A, B, ack_to, nack_to, out, send

NC = {name: code for code, name in NACK_CODE.table.items()}
EVS = list(range(50000, 50008))


class RecordingCC(CongestionControl):
    """A window of ``window`` bytes that writes down every call."""

    def __init__(self, window: int = 1 << 20):
        self.window = window
        self.calls: list[tuple] = []

    @property
    def cwnd_bytes(self) -> int:
        return self.window

    def can_send(self, inflight_bytes: int, nbytes: int) -> bool:
        ok = super().can_send(inflight_bytes, nbytes)
        self.calls.append(("can_send", inflight_bytes, nbytes, ok))
        return ok

    def on_send(self, *, now, size, retx):
        self.calls.append(("send", size, retx))

    def on_ack(self, *, now, size, inflight, ack=None):
        self.calls.append(("ack", size, inflight))

    def on_ce(self, *, now, size):
        self.calls.append(("ce", size))

    def on_nack(self, *, now, size, code):
        self.calls.append(("nack", code, size))

    def on_loss(self, *, now, size):
        self.calls.append(("loss", size))

    def on_timeout(self, *, now):
        self.calls.append(("timeout",))

    def on_rtt_sample(self, *, now, rtt):
        self.calls.append(("rtt", rtt))

    def named(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]


class RecordingSelector(EntropySelector):
    """Round robin over EVS, writing down every call."""

    def __init__(self):
        super().__init__(EVS)
        self.k = 0
        self.calls: list[tuple] = []

    def choose(self, now):
        self.k += 1
        return EVS[self.k % len(EVS)]

    def next(self, now):
        ev = super().next(now)
        self.calls.append(("next", ev))
        return ev

    def on_delivered(self, *, now, ev):
        super().on_delivered(now=now, ev=ev)
        self.calls.append(("delivered", ev))

    def on_ack(self, *, now, ev, ce):
        super().on_ack(now=now, ev=ev, ce=ce)
        self.calls.append(("ack", ev, ce))

    def on_nack(self, *, now, ev, code):
        super().on_nack(now=now, ev=ev, code=code)
        self.calls.append(("nack", ev, code))

    def on_loss(self, *, now, ev):
        super().on_loss(now=now, ev=ev)
        self.calls.append(("loss", ev))

    def on_timeout(self, *, now):
        self.calls.append(("timeout",))

    def named(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]


def recorded(window: int = 1 << 20, **cfg) -> tuple[Endpoint, RecordingCC, RecordingSelector]:
    from .helpers import Recorder
    cc, sel = RecordingCC(window), RecordingSelector()
    ep = Endpoint(A, PdsConfig(cc_factory=lambda c: cc, entropy_factory=lambda c, r: sel, **cfg),
                  seed=2, upper=Recorder())
    return ep, cc, sel


def test_every_new_packet_asks_the_cc_and_the_selector_and_goes_on_its_ev():
    ep, cc, sel = recorded()
    send(ep, B, bytes(4096 * 5))
    pkts = out(ep)
    assert len(pkts) == 5
    assert [m.sport for _, m in pkts] == [ev for _, ev in sel.named("next")]
    assert cc.named("send") == [("send", 4096, False)] * 5  # payload bytes, not resent
    assert len(cc.named("can_send")) >= 5


def test_a_small_window_of_any_class_limits_what_goes_out():
    """No class is special-cased: the recording CC's 2-packet window is the one obeyed."""
    ep, cc, sel = recorded(window=2 * 4096)
    send(ep, B, bytes(4096 * 6))
    assert len(out(ep)) == 2
    assert cc.named("can_send")[-1][3] is False


@settings(max_examples=50, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=8))
def test_on_ce_exactly_when_the_ack_has_m(marks):
    """on_ce once per ACK whose M flag is set (A.2), never otherwise; the selector hears the
    echoed EV and the flag of every ACK."""
    ep, cc, sel = recorded()
    send(ep, B, bytes(4096 * len(marks)))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    for i, m in enumerate(marks):
        psn = p0["psn"] + i
        ep.receive_datagram(*ack_to(p0["spdcid"], psn, ack_psn=psn, m=m, ev=pkts[i][1].sport),
                            1e-5 * (i + 1))
    assert len(cc.named("ce")) == sum(marks)
    assert [c[2] for c in sel.named("ack")] == marks
    assert [c[1] for c in sel.named("ack")] == [m.sport for _, m in pkts]
    assert len(cc.named("ack")) == len(marks)


def test_on_nack_gets_the_code():
    ep, cc, sel = recorded(rto_initial=50e-3)
    send(ep, B, bytes(4096 * 2))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    ep.receive_datagram(*nack_to(p0["spdcid"], p0["psn"], NC["TRIMMED"], spdcid=0, ev=4242),
                        1e-5)
    assert cc.named("nack") == [("nack", NC["TRIMMED"], 4096)]
    assert sel.named("nack") == [("nack", 4242, NC["TRIMMED"])]


def test_karn_no_rtt_sample_from_a_retransmitted_packet():
    ep, cc, sel = recorded(rto_initial=1e-3, rto_adaptive=False)
    send(ep, B, bytes(100))
    (p, _), = out(ep)
    psn, pdcid = p["pds"]["psn"], p["pds"]["spdcid"]
    t = ep.get_timer()
    ep.handle_timer(t)  # RTO: the packet is resent
    assert any(d["pds"].get("retx") for d, _ in out(ep, t))
    assert cc.named("timeout") == [("timeout",)] and sel.named("timeout") == [("timeout",)]
    assert cc.named("send")[-1][2] is True
    ep.receive_datagram(*ack_to(pdcid, psn, ack_psn=psn), t + 1e-4)
    assert cc.named("rtt") == []  # which copy did this ACK answer? (Karn)
    send(ep, B, bytes(100))
    (p2, _), = out(ep, t + 2e-4)
    ep.receive_datagram(*ack_to(pdcid, p2["pds"]["psn"], ack_psn=p2["pds"]["psn"]), t + 3e-4)
    (rtt,) = cc.named("rtt")
    assert abs(rtt[1] - 1e-4) < 1e-9


def test_on_loss_for_each_packet_inferred_lost_on_its_ev():
    """PDS-I7: a PSN not SACKed while later ones were is lost after the reorder window: on_loss to
    the CC (its bytes) and to the selector (the EV it went on)."""
    ep, cc, sel = recorded()
    send(ep, B, bytes(4096 * 8))
    pkts = out(ep)
    p0 = pkts[0][0]["pds"]
    base = p0["psn"]
    ep.receive_datagram(*ack_to(p0["spdcid"], base, ack_psn=base), 10e-6)
    ep.receive_datagram(*ack_to(p0["spdcid"], base, ack_psn=base + 7, sack_base=base,
                                bitmap=0b11111101), 11e-6)
    assert cc.named("loss") == []
    t = ep.get_timer()
    ep.handle_timer(t)
    assert len(cc.named("loss")) == 1 and sel.named("loss") == [("loss", pkts[1][1].sport)]
    assert {c[1] for c in sel.named("delivered")} >= {pkts[0][1].sport, pkts[2][1].sport}


def test_a_pair_with_random_loss_tells_both_interfaces_consistently():
    """Over a lossy exchange: every retransmission is reported as one to on_send, each RTT
    sample is positive, and no ACK goes unreported to on_ack."""
    from uet.host import Host
    from uet.ses import SesConfig

    cc, sel = RecordingCC(64 * 1024), RecordingSelector()
    a = Host(A, pds=PdsConfig(cc_factory=lambda c: cc, entropy_factory=lambda c, r: sel,
                              rto_initial=1e-4), seed=3)
    b = Host(B, ses=SesConfig(auto_receive=True), seed=4)
    a.send(B, random.Random(1).randbytes(200_000))
    rng = random.Random(5)
    now, acks = 0.0, 0
    for _ in range(5000):
        now += 1e-6
        moved = False
        for src, dst in ((a, b), (b, a)):
            for d, m in src.datagrams_to_send(now):
                moved = True
                if rng.random() < 0.15:
                    continue
                acks += src is b and d[0] >> 3 in (7, 8, 9)
                dst.receive_datagram(d, m, now)
        if not moved:
            t = a.get_timer()
            if t is None:
                break
            now = max(now, t)
            a.handle_timer(now)
    assert a.stats["retransmissions"] > 0
    assert sum(c[2] for c in cc.named("send")) == a.stats["retransmissions"]
    assert all(c[1] > 0 for c in cc.named("rtt"))
    assert len(cc.named("ack")) == acks == len(sel.named("ack"))
