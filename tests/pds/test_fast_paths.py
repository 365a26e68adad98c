"""The hot paths are shortcuts, not different behaviour: with them disabled (the general way for
every packet) a transfer gives the same datagrams, events and summary; get_timer's cached value
is always the freshly computed one; zero-copy delivery hands up the same bytes."""

from __future__ import annotations

import io

import pytest

from uet.pds import Endpoint, MessageDelivered, PdsConfig, SendComplete
from uet.pds import endpoint as endpoint_mod
from uet.sim import SimConfig, Simulator

from .test_pair_properties import A, B

SCENARIOS = [
    SimConfig(bytes=1 << 20, paths=8, loss=0.02, seed=3, messages=3),
    SimConfig(bytes=1 << 20, mode="rod", reorder=0.1, dup=0.05, seed=4),
    SimConfig(bytes=512 * 1024, trim=0.05, corrupt=0.02, ack_loss=0.1, seed=5, messages=2),
    SimConfig(bytes=100 * 1024, mtu=1024, messages=37, loss=0.02, seed=6),
]


def _summary(cfg: SimConfig, fancy: bool = False, pcap: bool = False) -> tuple[dict, bytes]:
    buf = io.BytesIO() if pcap else None
    sim = Simulator(cfg, pcap=buf)  # (a pcap makes the simulator take its general path)
    if fancy:
        sim._fancy = True  # the simulator's general per-packet path for every datagram
    r = sim.run()
    r.pop("wall_time_s")
    return r, buf.getvalue() if buf is not None else b""


@pytest.mark.parametrize("cfg", SCENARIOS, ids=range(len(SCENARIOS)))
def test_general_and_hot_paths_agree(cfg, monkeypatch):
    fast, frames = _summary(cfg, pcap=True)
    assert fast["ok"], fast["failures"]
    assert frames.count(b"\x45") > 100
    # a request never qualifies for the target's hot path when its minimum size is out of reach:
    # every frame of the run (pcap) and the summary must stay the same
    monkeypatch.setattr(endpoint_mod, "_HOT_MIN", 1 << 30)
    assert _summary(cfg, pcap=True) == (fast, frames)
    # and the simulator's specialised send loop against its general one
    monkeypatch.undo()
    assert _summary(cfg)[0] == _summary(cfg, fancy=True)[0] == fast


def test_datagrams_identical_with_and_without_the_target_hot_path(monkeypatch):
    def run():
        a, b = (Endpoint(A, PdsConfig(mtu=512, window_bytes=1 << 20), seed=3),
                Endpoint(B, PdsConfig(mtu=512, window_bytes=1 << 20), seed=4))
        a.send_message(B, bytes(range(256)) * 40)
        wire = []
        now = 0.0
        for _ in range(50):
            now += 1e-6
            out_a = a.datagrams_to_send(now)
            for d, m in out_a:
                b.receive_datagram(d, m, now)
            out_b = b.datagrams_to_send(now)
            for d, m in out_b:
                a.receive_datagram(d, m, now)
            wire += [d for d, _ in out_a + out_b]
            if not out_a and not out_b:
                break
        evs = []
        for ep in (a, b):
            while (e := ep.next_event()) is not None:
                evs.append(e)
        return wire, evs

    wire, evs = run()
    assert any(isinstance(e, SendComplete) for e in evs)
    assert any(isinstance(e, MessageDelivered) for e in evs)
    monkeypatch.setattr(endpoint_mod, "_HOT_MIN", 1 << 30)
    assert run() == (wire, evs)


@pytest.mark.parametrize("seed", range(6))
def test_cached_timer_is_always_the_fresh_one(seed):
    """Drive a pair through drops, duplicates, reordering and timers; after every step the
    cached get_timer() must equal a fresh computation on both endpoints."""
    import random

    rng = random.Random(seed)
    cfg = dict(mtu=512, window_bytes=512 * 8, rto_initial=1e-4, max_rto_retx=20, max_nack_retx=50)
    a, b = Endpoint(A, PdsConfig(**cfg), seed=seed), Endpoint(B, PdsConfig(**cfg), seed=seed + 1)
    for size in (3000, 700, 0):
        a.send_message(B, bytes(size), mode=rng.choice(["rud", "rod"]))
    net, now, checks = [], 0.0, 0

    def check():
        nonlocal checks
        for ep in (a, b):
            cached = ep.get_timer()
            ep._timer_dirty = True
            assert cached == ep.get_timer()
            checks += 1

    for step in range(400):
        now += 1e-6
        for src, dst in ((a, b), (b, a)):
            net += [(dst, d, m) for d, m in src.datagrams_to_send(now)]
        check()
        op = rng.random()
        if net and op < 0.7:
            dst, d, m = net.pop(rng.randrange(len(net)) if op < 0.2 else 0)
            dst.receive_datagram(d, m, now)
        elif net and op < 0.8:
            net.pop(rng.randrange(len(net)))
        elif net and op < 0.85:
            dst, d, m = net[0]
            dst.receive_datagram(d, m, now)
        else:
            t = min((x for x in (a.get_timer(), b.get_timer()) if x is not None), default=None)
            if t is not None:
                now = max(now, t)
                a.handle_timer(now)
                b.handle_timer(now)
        check()
    assert checks > 0 and a.stats["internal_error"] == b.stats["internal_error"] == 0


def test_zero_copy_delivery_hands_up_the_buffer():
    msg = bytes(range(256)) * 64
    for zero_copy in (False, True):
        a = Endpoint(A, PdsConfig(zero_copy_delivery=zero_copy), seed=1)
        b = Endpoint(B, PdsConfig(zero_copy_delivery=zero_copy), seed=2)
        a.send_message(B, msg)
        for d, m in a.datagrams_to_send(0.0):
            b.receive_datagram(d, m, 1e-6)
        got = [e for e in iter(b.next_event, None) if isinstance(e, MessageDelivered)]
        assert len(got) == 1 and got[0].data == msg
        assert type(got[0].data) is (bytearray if zero_copy else bytes)
