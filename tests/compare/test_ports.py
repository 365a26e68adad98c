"""The RoCE fabric's ports (uet.compare.ports COMPARE-R1 to COMPARE-R6): the adaptive switch picks the shortest queue,
ECMP pins a 5-tuple, RED marks as configured, a paused port holds its data."""

from __future__ import annotations

import random

from uet.compare.ports import CPort, Pkt, adaptive_port, ecmp_port


def port(name, rng=None, **kw):
    args = dict(rate_bps=100e9, delay=1e-6, buffer_bytes=100_000, kmin=10_000, kmax=100_000,
                pmax=0.01, rng=rng or random.Random(1))
    args.update(kw)
    return CPort(name, None, **args)


def pkt(n=4000, control=False, flow=0):
    return Pkt(bytes(n), 0, 7, control, not control, flow)


def test_r6_adaptive_picks_the_shortest_queue():
    ups = [port(f"u{i}") for i in range(4)]
    for i, depth in enumerate((3, 1, 2, 5)):
        for _ in range(depth):
            ups[i].enqueue(pkt())
    rng = random.Random(1)
    assert all(adaptive_port(ups, 0.0, rng) is ups[1] for _ in range(10))
    ups[1].gate.receive(0xFFFF, 0.0, 100e9)           # paused: counts as full
    assert adaptive_port(ups, 1e-6, rng) is ups[2]


def test_r6_ties_are_drawn_from_the_seed():
    ups = [port(f"u{i}") for i in range(4)]
    picks = {adaptive_port(ups, 0.0, random.Random(s)).name for s in range(20)}
    assert len(picks) > 1
    assert adaptive_port(ups, 0.0, random.Random(3)) is adaptive_port(ups, 0.0, random.Random(3))


def test_r5_ecmp_is_a_function_of_the_key_and_salt():
    ups = [port(f"u{i}") for i in range(8)]
    assert len({ecmp_port(ups, 12345, 99).name for _ in range(5)}) == 1
    assert len({ecmp_port(ups, k, 99).name for k in range(200)}) == 8


def test_r1_control_first_and_r2_drop_when_full():
    p = port("p", buffer_bytes=10_000)
    assert p.enqueue(pkt(4000)) and p.enqueue(pkt(4000))
    assert not p.enqueue(pkt(4000)) and p.dropped == 1
    p.enqueue(pkt(60, control=True))
    first, _ = p.start(0.0)
    assert first.control


def test_r3_red_marks_all_above_kmax_none_below_kmin():
    p = port("p", buffer_bytes=1 << 30, kmin=10_000, kmax=20_000, pmax=0.0)
    for _ in range(10):
        p.enqueue(pkt(4000))
    marks = []
    while (r := p.start(0.0)) is not None:
        marks.append(r[0].ce)
    # depths at dequeue: 40k, 36k, ... 4k: >= 20k marked (pmax 0 in between), <= 10k not
    assert marks == [True] * 6 + [False] * 4


def test_p5_a_paused_port_sends_only_control():
    p = port("p")
    p.enqueue(pkt())
    p.gate.receive(100, 0.0, 100e9)
    assert p.start(1e-9) is None
    p.enqueue(pkt(60, control=True))
    assert p.start(2e-9)[0].control
    assert p.start(1.0)[0].control is False  # the pause ran out
