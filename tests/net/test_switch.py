"""One switch output port (uet/net/switch.py): its rules NET-S1 to NET-S4 (the switch of facts E.6,
trimming as C.6) and NET-S5 to NET-S6 (CSIG, E.4), driven by hand in virtual time with a seeded
``random.Random``."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.cms import csig
from uet.net.switch import CSIG_COUNTERS, PORT_COUNTERS, Packet, Port

HDR = 42          # Ethernet + IPv4 + UDP: what a trim keeps besides trim_bytes of UDP payload
TRIM = 256
KEEP = HDR + TRIM  # 298: the frame bytes a trimmed header occupies


def port(*, buffer=3000, kmin=1000, kmax=2000, trim_bytes=TRIM, trimming=True, seed=1,
         rate_bps=8000.0, fail_at=float("inf"), rng=None) -> Port:
    """rate 8000 b/s is 1000 B/s: a frame of n bytes takes n/1000 s, exact in binary for the
    sizes used here."""
    return Port("t0->h0", None, rate_bps=rate_bps, delay=0.5, buffer_bytes=buffer,
                kmin_bytes=kmin, kmax_bytes=kmax, trim_bytes=trim_bytes, trimming=trimming,
                rng=rng if rng is not None else random.Random(seed), fail_at=fail_at)


def pkt(n: int, tag: int = 0, *, control=False, ect=False, dst=0) -> Packet:
    return Packet(bytes([tag & 0xFF]) * n, dst, tag, control, ect)


def queued(p: Port) -> tuple[int, int]:
    """The byte counts the queues should have: data frames whole, trimmed headers KEEP."""
    return (sum(len(q.frame) for q in p.data),
            sum(p._keep_frame if q.trimmed else len(q.frame) for q in p.prio))


def test_kmax_must_exceed_kmin():
    with pytest.raises(ValueError, match="kmax_bytes must exceed kmin_bytes"):
        port(kmin=1000, kmax=1000)


# --- NET-S1: strict priority, FIFO within a queue, the link time --------------------------------------

def test_s1_control_and_trimmed_leave_before_data_in_fifo_order():
    p = port(buffer=2000, kmin=10_000, kmax=20_000)
    d1, d2 = pkt(1000, 1), pkt(1000, 2)
    c1, c2 = pkt(100, 3, control=True), pkt(120, 4, control=True)
    big = pkt(600, 5)  # does not fit the full data queue: trimmed (NET-S2)
    assert p.enqueue(d1, 0.0) and p.enqueue(d2, 0.0) and p.enqueue(c1, 0.0)
    p.rng = random.Random(0)
    p.rng.random = lambda: 0.9  # type: ignore[method-assign]  # the arriving one is trimmed
    assert p.enqueue(big, 0.0) and p.enqueue(c2, 0.0)
    assert big.trimmed and p.trimmed == 1
    order, t = [], 0.0
    while (r := p.start(t)) is not None:
        sent, t = r
        order.append(sent)
    assert order == [c1, big, c2, d1, d2]
    assert t == (100 + KEEP + 120 + 1000 + 1000) / 1000
    assert p.tx_packets == 5 and p.tx_bytes == 100 + KEEP + 120 + 2000
    assert (p.qbytes, p.pbytes) == (0, 0)
    assert p.busy is False


def test_s1_start_returns_done_time_frame_over_rate():
    p = port(rate_bps=8e9)  # 1e9 B/s
    f = pkt(1000, 7)
    assert p.enqueue(f, 2.0)
    assert p.start(2.0) == (f, 2.0 + 1000 / 1e9)
    assert p.busy is True
    assert p.start(3.0) is None
    assert p.busy is False


def test_s1_start_on_an_empty_port_is_none_and_not_busy():
    p = port()
    assert p.start(0.0) is None
    assert p.busy is False
    assert p.counters() == {c: 0 for c in PORT_COUNTERS}


def test_s1_control_packets_are_refused_when_the_priority_queue_is_full():
    p = port(buffer=1000)
    assert p.enqueue(pkt(600, 1, control=True), 0.0)
    assert p.enqueue(pkt(400, 2, control=True), 0.0)  # exactly the capacity (pcap = buffer)
    assert not p.enqueue(pkt(1, 3, control=True), 0.0)
    assert (p.pbytes, len(p.prio), p.dropped) == (1000, 2, 1)


# --- NET-S2: trimming when the data queue is full (C.6, E.6) -----------------------------------------

def test_s2_arriving_packet_trimmed_when_the_coin_says_so():
    p = port(buffer=3000)
    q = [pkt(1000, i) for i in range(3)]
    for x in q:
        assert p.enqueue(x, 0.0)
    rng = p.rng
    clone = random.Random()
    clone.setstate(rng.getstate())
    # find a seed position where the draw keeps the queue (>= 0.5): the arriving one is trimmed
    while clone.random() < 0.5:
        rng.random()
    new = pkt(1000, 9)
    assert p.enqueue(new, 1.0) is True
    assert new.trimmed and not any(x.trimmed for x in q)
    assert list(p.data) == q and list(p.prio) == [new]
    assert (p.qbytes, p.pbytes, p.trimmed, p.dropped) == (3000, KEEP, 1, 0)
    assert p.start(1.0) == (new, 1.0 + KEEP / 1000)
    assert p.tx_bytes == KEEP


def test_s2_last_queued_packet_trimmed_when_the_coin_says_so():
    p = port(buffer=3000)
    q = [pkt(1000, i) for i in range(3)]
    for x in q:
        assert p.enqueue(x, 0.0)
    clone = random.Random()
    clone.setstate(p.rng.getstate())
    while clone.random() >= 0.5:
        p.rng.random()
    new = pkt(900, 9)
    assert p.enqueue(new, 1.0) is True
    assert q[2].trimmed and not new.trimmed
    assert list(p.data) == [q[0], q[1], new] and list(p.prio) == [q[2]]
    assert (p.qbytes, p.pbytes, p.trimmed) == (2900, KEEP, 1)


def test_s2_e6_coin_toss_both_outcomes_follow_the_ports_rng():
    """E.6: the arriving or the last queued packet, with equal chance, drawn from the port's rng:
    exactly one draw per trim, < 0.5 trims the last queued."""
    rng = random.Random(2024)
    mirror = random.Random(2024)
    last_trimmed = arriving_trimmed = 0
    for trial in range(400):
        p = port(buffer=3000, rng=rng)
        q = [pkt(1000, i) for i in range(3)]
        for x in q:
            p.enqueue(x, 0.0)
        new = pkt(1000, 99)
        assert p.enqueue(new, 0.0)
        expect_last = mirror.random() < 0.5
        assert q[2].trimmed is expect_last and new.trimmed is (not expect_last)
        assert p.qbytes == 3000 <= p.cap and (p.qbytes, p.pbytes) == queued(p)
        last_trimmed += q[2].trimmed
        arriving_trimmed += new.trimmed
    assert last_trimmed + arriving_trimmed == 400
    assert last_trimmed == 213 and arriving_trimmed == 187  # seed 2024
    assert 150 < last_trimmed < 250


def test_s2_last_queued_not_trimmable_then_the_arriving_one_is():
    p = port(buffer=1300, rng=random.Random(0))
    p.rng.random = lambda: 0.0  # type: ignore[method-assign]  # always "trim the last queued"
    a, short = pkt(1000, 1), pkt(KEEP, 2)  # KEEP bytes: not longer than a trim keeps
    assert p.enqueue(a, 0.0) and p.enqueue(short, 0.0)
    new = pkt(500, 3)
    assert p.enqueue(new, 0.0)
    assert new.trimmed and not short.trimmed
    assert list(p.data) == [a, short] and (p.qbytes, p.pbytes) == (1000 + KEEP, KEEP)


def test_s2_swap_that_would_overflow_the_data_queue_trims_the_arriving_one():
    p = port(buffer=2000, rng=random.Random(0))
    p.rng.random = lambda: 0.0  # type: ignore[method-assign]
    a, b = pkt(1200, 1), pkt(500, 2)
    assert p.enqueue(a, 0.0) and p.enqueue(b, 0.0)  # 1700 of 2000
    new = pkt(900, 3)  # 1700 - 500 + 900 = 2100 > 2000: cannot take b's place
    assert p.enqueue(new, 0.0)
    assert new.trimmed and not b.trimmed and list(p.data) == [a, b]
    assert (p.qbytes, p.pbytes) == (1700, KEEP)


@pytest.mark.parametrize("n,trimmed", [(KEEP, False), (KEEP + 1, True)])
def test_s2_trimmable_only_when_longer_than_what_a_trim_keeps(n, trimmed):
    p = port(buffer=1000)
    p.rng.random = lambda: 0.9  # type: ignore[method-assign]  # the arriving one is trimmed
    assert p.enqueue(pkt(1000, 1), 0.0)
    x = pkt(n, 2)
    assert p.enqueue(x, 0.0) is trimmed
    assert x.trimmed is trimmed
    assert (p.trimmed, p.dropped) == (int(trimmed), int(not trimmed))
    assert (p.qbytes, p.pbytes) == (1000, KEEP if trimmed else 0)


def test_s2_trim_bytes_sets_what_a_header_occupies():
    p = port(buffer=1000, trim_bytes=64)
    p.rng.random = lambda: 0.9  # type: ignore[method-assign]
    p.enqueue(pkt(1000, 1), 0.0)
    x = pkt(1000, 2)
    assert p.enqueue(x, 0.0) and x.trimmed
    assert p.pbytes == HDR + 64 == 106


def test_s2_control_packets_are_never_trimmed():
    p = port(buffer=1000)
    for i in range(2):
        assert p.enqueue(pkt(500, i, control=True), 0.0)
    c = pkt(1000, 9, control=True)  # priority queue full: dropped, not trimmed
    assert p.enqueue(c, 0.0) is False
    assert not c.trimmed and (p.trimmed, p.dropped, p.pbytes) == (0, 1, 1000)


def test_s2_dropped_when_the_priority_queue_has_no_room_for_the_header():
    p = port(buffer=1000)
    assert p.enqueue(pkt(1000, 1), 0.0)
    assert p.enqueue(pkt(1000 - KEEP + 1, 2, control=True), 0.0)  # KEEP - 1 bytes left
    x = pkt(1000, 3)
    assert p.enqueue(x, 0.0) is False
    assert not x.trimmed and (p.trimmed, p.dropped) == (0, 1)


def test_s2_trimming_off_drops():
    p = port(buffer=1000, trimming=False)
    assert p.enqueue(pkt(1000, 1), 0.0)
    x = pkt(1000, 2)
    assert p.enqueue(x, 0.0) is False
    assert not x.trimmed and (p.trimmed, p.dropped, p.qbytes, p.pbytes) == (0, 1, 1000, 0)


def test_s2_a_trimmed_header_forwarded_to_the_next_port_occupies_what_a_trim_keeps():
    first = port(buffer=1000)
    first.rng.random = lambda: 0.9  # type: ignore[method-assign]  # the arriving one is trimmed
    assert first.enqueue(pkt(1000, 1), 0.0)
    hdr = pkt(1000, 2)
    assert first.enqueue(hdr, 0.0) and hdr.trimmed
    assert first.start(0.0)[0] is hdr and first.pbytes == 0
    nxt = port(buffer=1000)  # the next hop: the header arrives trimmed, frame still 1000 bytes
    assert nxt.enqueue(hdr, 1.0)
    assert nxt.pbytes == KEEP  # observed: 1000
    assert nxt.start(1.0) == (hdr, 1.0 + KEEP / 1000)
    assert nxt.pbytes == 0  # observed: 702, with the priority queue empty


def test_s1_an_empty_priority_queue_takes_control_after_forwarded_trims():
    nxt = port(buffer=2000)
    for i in range(3):
        hdr = pkt(1000, i)
        hdr.trimmed = True  # trimmed upstream
        assert nxt.enqueue(hdr, float(i))  # observed: the third is dropped
        assert nxt.start(float(i))[0] is hdr
    assert not nxt.prio
    assert nxt.enqueue(pkt(1000, 9, control=True), 5.0)
    assert nxt.dropped == 0


# --- NET-S3: ECN on dequeue (E.6) ---------------------------------------------------------------------

def _held_depth_marks(depth_pkts: int, size: int, n: int, rng: random.Random, *, ect=True,
                      kmin=1000, kmax=3000) -> int:
    """Dequeue ``n`` packets, each leaving a queue of ``depth_pkts`` packets of ``size`` bytes
    (the departing one included), topping it up after each; the CE marks counted."""
    p = port(buffer=100_000, kmin=kmin, kmax=kmax, rng=rng)
    for i in range(depth_pkts):
        p.enqueue(pkt(size, i, ect=ect), 0.0)
    marks = 0
    for i in range(n):
        sent, _ = p.start(float(i))
        assert p.qbytes == (depth_pkts - 1) * size
        marks += sent.ce
        p.enqueue(pkt(size, i, ect=ect), float(i))
    assert p.ce_marked == marks
    return marks


@pytest.mark.parametrize("depth_pkts,size", [(1, 1000), (2, 500), (4, 250)])
def test_s3_no_mark_at_or_below_kmin(depth_pkts, size):
    rng = random.Random(5)
    state = rng.getstate()
    assert _held_depth_marks(depth_pkts, size, 200, rng) == 0  # depth 1000 = kmin
    assert rng.getstate() == state  # no draw at all
    assert _held_depth_marks(1, 999, 200, rng) == 0


@pytest.mark.parametrize("depth_pkts,size", [(3, 1000), (6, 500), (4, 1000)])
def test_s3_always_marked_at_or_above_kmax(depth_pkts, size):
    rng = random.Random(5)
    state = rng.getstate()
    assert _held_depth_marks(depth_pkts, size, 200, rng) == 200  # depth >= 3000 = kmax
    assert rng.getstate() == state


def test_s3_one_byte_above_kmin_draws():
    rng = random.Random(5)
    p = port(kmin=1000, kmax=3000, buffer=5000, rng=rng)
    p.rng.random = lambda: 0.0004  # type: ignore[method-assign]  # < (1001-1000)/2000 = 0.0005
    p.enqueue(pkt(1001, 1, ect=True), 0.0)
    assert p.start(0.0)[0].ce is True


@pytest.mark.parametrize("depth_pkts,size,expected", [
    (3, 500, 2000 * 0.25),   # depth 1500: (1500-1000)/2000
    (2, 1000, 2000 * 0.5),   # depth 2000
    (5, 500, 2000 * 0.75),   # depth 2500
])
def test_s3_mark_fraction_rises_linearly_between_kmin_and_kmax(depth_pkts, size, expected):
    seed = 77
    marks = _held_depth_marks(depth_pkts, size, 2000, random.Random(seed))
    # exactly one draw per dequeue, marked when the draw is below the ramp's probability
    p_mark = (depth_pkts * size - 1000) / 2000
    mirror = random.Random(seed)
    assert marks == sum(mirror.random() < p_mark for _ in range(2000))
    # and a bound no seed is near: 2000 draws, sd <= 22.4; 5 sd
    assert abs(marks - expected) < 112


def test_s3_marks_at_seed_77_exactly():
    """The counts the test above gets with its seed, pinned: a change in how the port draws
    (order, count, comparison) shows here."""
    assert [_held_depth_marks(d, s, 2000, random.Random(77))
            for d, s in [(3, 500), (2, 1000), (5, 500)]] == [511, 1019, 1517]


@pytest.mark.parametrize("depth_pkts,size", [(2, 1000), (10, 1000)])
def test_s3_non_ect_packets_are_never_marked(depth_pkts, size):
    rng = random.Random(3)
    state = rng.getstate()
    assert _held_depth_marks(depth_pkts, size, 300, rng, ect=False) == 0
    assert rng.getstate() == state


def test_s3_control_packets_are_not_marked():
    p = port(buffer=100_000, kmin=1, kmax=2)
    c = pkt(5000, 1, control=True, ect=True)
    p.enqueue(c, 0.0)
    assert p.start(0.0)[0] is c and c.ce is False and p.ce_marked == 0


# --- NET-S4: link time, failure, queue statistics -----------------------------------------------------

def test_s4_failed_port_sends_before_fail_at_and_drops_from_then_on():
    p = port(buffer=10_000, fail_at=5.0)
    a, b, c, d = (pkt(1000, i) for i in range(4))
    ctl = pkt(100, 9, control=True)
    for x in (a, b, c, d):
        assert p.enqueue(x, 0.0)
    assert p.start(3.0) == (a, 4.0)
    assert p.start(4.999) == (b, 5.999)
    assert p.enqueue(ctl, 5.0)
    assert p.start(5.0) is None  # ctl, c, d all dropped at once
    assert p.busy is False
    assert (p.tx_packets, p.tx_bytes, p.dropped) == (2, 2000, 3)
    assert (p.qbytes, p.pbytes, len(p.data), len(p.prio)) == (0, 0, 0, 0)


def test_s4_mean_queue_and_max_qbytes_on_a_hand_example():
    p = port(buffer=10_000)
    assert p.mean_queue(0.0) == 0.0
    p.enqueue(pkt(1000, 1), 0.0)     # depth 1000 over [0, 1)
    p.enqueue(pkt(500, 2), 1.0)      # depth 1500 over [1, 3)
    p.enqueue(pkt(100, 3, control=True), 2.0)  # the priority queue is not the data queue
    assert p.start(3.0)[0].control   # the control packet: data depth unchanged
    assert p.start(3.0)[0].frame[0] == 1  # depth 500 over [3, 4)
    assert p.max_qbytes == 1500
    assert p.mean_queue(4.0) == (1000 * 1 + 1500 * 2 + 500 * 1) / 4 == 1125.0
    assert p.mean_queue(8.0) == (4500 + 500 * 4) / 8 == 812.5
    assert p.counters() == {"tx_packets": 2, "tx_bytes": 1100, "trimmed": 0, "dropped": 0,
                            "ce_marked": 0, "max_qbytes": 1500}


def test_s4_max_qbytes_follows_a_trim_that_swaps_in_a_bigger_packet():
    p = port(buffer=2000, rng=random.Random(0))
    p.rng.random = lambda: 0.0  # type: ignore[method-assign]  # trim the last queued
    p.enqueue(pkt(1000, 1), 0.0)
    p.enqueue(pkt(600, 2), 0.0)
    assert p.max_qbytes == 1600
    p.enqueue(pkt(1000, 3), 0.0)  # 1000 + 1000 replaces the 600
    assert (p.qbytes, p.max_qbytes) == (2000, 2000)


# --- hypothesis: the counters always match the queues ---------------------------------------------

OPS = st.lists(st.one_of(
    st.tuples(st.just("enq"), st.integers(1, 9000), st.booleans(), st.booleans()),
    st.tuples(st.just("start"), st.integers(0, 0), st.booleans(), st.booleans()),
), max_size=120)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, buffer=st.integers(1, 20_000), trimming=st.booleans(),
       trim_bytes=st.integers(1, 9000), seed=st.integers(0, 2**32 - 1),
       fail_at=st.sampled_from([float("inf"), 0.0, 30.0]))
def test_s1_s4_byte_counters_equal_the_queues(ops, buffer, trimming, trim_bytes, seed, fail_at):
    p = port(buffer=buffer, kmin=buffer // 4, kmax=buffer // 4 + max(1, buffer // 2),
             trimming=trimming, trim_bytes=trim_bytes, seed=seed, fail_at=fail_at)
    offered = refused = 0
    now = 0.0
    for i, (op, n, control, ect) in enumerate(ops):
        now += 1.0
        if op == "enq":
            offered += 1
            x = pkt(n, i, control=control, ect=ect)
            ok = p.enqueue(x, now)
            refused += not ok
            if ok:
                assert x in p.data or x in p.prio
        else:
            r = p.start(now)
            if r is None:
                assert p.busy is False and not p.data and not p.prio
            else:
                sent, done = r
                n_sent = p._keep_frame if sent.trimmed else len(sent.frame)
                assert done == now + n_sent / p.Bps
                assert now < fail_at
                assert sent.ce is False or (sent.ect and not sent.control and not sent.trimmed)
        assert (p.qbytes, p.pbytes) == queued(p)
        assert 0 <= p.qbytes <= p.cap and 0 <= p.pbytes <= p.pcap
        assert p.max_qbytes >= p.qbytes
        assert all(not q.trimmed for q in p.data) and all(q.control or q.trimmed for q in p.prio)
        # every packet offered is queued, sent or dropped (refused on arrival, or at a failure)
        assert offered == len(p.data) + len(p.prio) + p.tx_packets + p.dropped
        assert refused <= p.dropped
    assert p.trimmed <= offered


# --- NET-S5, NET-S6: CSIG measurement and stamping (uet.cms.csig CMS-C1 to CMS-C3) -----------------------------------

TAU = 8e-6  # NET-S5's default time constant
# full scale 8 Gb/s, the ports' rate; delay buckets of 0.3 us keep whole microseconds off edges
FULL = csig.Scale(abw_full_gbps=8.0, delay_unit_s=0.3e-6)


def cport(t, *, lm=1, rate_bps=8e9, buffer=100_000, scale=FULL, **kw) -> Port:
    """A CSIG port of 1e9 B/s: a 1000-byte frame takes 1 us."""
    return Port(f"s{lm}", None, rate_bps=rate_bps, delay=0.0, buffer_bytes=buffer,
                kmin_bytes=buffer, kmax_bytes=buffer + 1, trim_bytes=TRIM, trimming=True,
                rng=random.Random(1), csig=t, csig_scale=scale, csig_lm=lm, **kw)


def through(p: Port, tagged: Packet, *, before: int = 0, after: int = 0) -> float:
    """Queue ``before`` untagged 1000-byte frames, ``tagged``, then ``after`` more at t=0 and
    send back to back until ``tagged`` leaves; when it left."""
    for i in range(before):
        p.enqueue(pkt(1000, i), 0.0)
    p.enqueue(tagged, 0.0)
    for i in range(after):
        p.enqueue(pkt(1000, i), 0.0)
    now = 0.0
    while True:
        sent, done = p.start(now)
        if sent is tagged:
            return now
        now = done


def tagged(t, bits=None) -> Packet:
    x = pkt(1000, 7)
    x.csig = csig.neutral(t) if bits is None else bits
    return x


@pytest.mark.parametrize("loads,expected", [
    # the link busy for 4, 8 and 1 us before the packet leaves: ABW = 8 Gb/s x e^(-busy/8us),
    # buckets 18, 11, 27: the path minimum and the locator of the port that set it
    ((4, 8, 1), (11, 2)),
    ((8, 1, 4), (11, 1)),
    ((1, 4, 8), (11, 3)),
])
def test_s5_s6_abw_compare_and_replace_over_a_path_keeps_the_worst(loads, expected):
    x = tagged(csig.ABW)
    ports = [cport(csig.ABW, lm=i + 1) for i in range(3)]
    buckets = []
    for p, busy in zip(ports, loads):
        left = through(p, x, before=busy)
        buckets.append(p.csig_bucket(left))
    assert sorted(buckets) == [11, 18, 27]  # 31 x e^-1, 31 x e^-0.5, 31 x e^-0.125
    tag = csig.unpack(x.csig)
    assert (tag.t, tag.s, tag.lm, tag.d) == (csig.ABW, *expected, 0)
    assert [p.csig_stamped for p in ports] == [1, 1, 1]
    assert sum(p.csig_replaced for p in ports) == 1 + (loads[1] > loads[0]) + (
        loads[2] > max(loads[:2]))


@pytest.mark.parametrize("loads,expected", [((4, 8, 1), (26, 2)), ((8, 1, 4), (26, 1))])
def test_s5_s6_delay_is_the_wait_and_the_path_keeps_the_largest(loads, expected):
    x = tagged(csig.DELAY)
    for i, busy in enumerate(loads):  # waits 4, 8, 1 us in units of 0.3 us: 13, 26, 3
        through(cport(csig.DELAY, lm=i + 1), x, before=busy)
    tag = csig.unpack(x.csig)
    assert (tag.t, tag.s, tag.lm) == (csig.DELAY, *expected)


def test_s5_abw_of_an_idle_port_is_full_scale_and_of_a_saturated_one_zero():
    idle, busy = tagged(csig.ABW), tagged(csig.ABW)
    through(cport(csig.ABW), idle)
    p = cport(csig.ABW)
    left = through(p, busy, before=40)  # busy 40 us = 5 time constants: utilisation 1 - e^-5
    assert left == pytest.approx(40e-6)
    assert p.util == pytest.approx(1 - math.exp(-5))
    assert csig.unpack(idle.csig).s == csig.TOP == 31
    tag = csig.unpack(busy.csig)
    assert (tag.s, tag.lm) == (0, 1)


def test_s5_idle_time_lowers_the_utilisation_again():
    p = cport(csig.ABW, csig_interval=TAU)
    for i in range(8):
        p.enqueue(pkt(1000, i), 0.0)
    now = 0.0
    while (r := p.start(now)) is not None:
        now = r[1]
    x = tagged(csig.ABW)
    p.enqueue(x, 16e-6)  # 8 us busy, then 8 us idle: (1 - e^-1) x e^-1
    assert p.start(16e-6)[0] is x
    assert p.util == pytest.approx((1 - math.exp(-1)) * math.exp(-1))
    assert csig.unpack(x.csig).s == int(31 * (1 - p.util))  # 23


def test_s5_abw_counts_a_degraded_rate_abw_c_does_not():
    a, c = tagged(csig.ABW), tagged(csig.ABW_C)
    through(cport(csig.ABW, rate_bps=2e9), a)     # idle at a quarter of full scale
    through(cport(csig.ABW_C, rate_bps=2e9), c)
    assert (csig.unpack(a.csig).s, csig.unpack(c.csig).s) == (7, 31)  # 31 x 0.25, 31


def test_s5_nqd_is_the_depth_left_behind_over_the_buffer():
    x = tagged(csig.NQD)
    p = cport(csig.NQD, buffer=10_000)
    through(p, x, after=5)  # 5000 of 10000 bytes behind it
    assert csig.unpack(x.csig).s == 15
    y = tagged(csig.NQD)
    through(cport(csig.NQD, buffer=10_000), y, before=5)  # nothing behind it: 0
    assert csig.unpack(y.csig).s == 0 and y.csig == csig.neutral(csig.NQD)


def test_s6_a_trimmed_tag_gets_d_and_is_never_changed_after():
    p = cport(csig.NQD, buffer=1000)
    p.rng.random = lambda: 0.9  # type: ignore[method-assign]  # the arriving one is trimmed
    assert p.enqueue(pkt(1000, 1), 0.0)
    x = tagged(csig.NQD)
    assert p.enqueue(x, 0.0) and x.trimmed
    assert x.csig == csig.set_d(csig.neutral(csig.NQD)) and p.csig_d_set == 1
    assert p.start(0.0)[0] is x and p.csig_stamped == 0  # the header leaves first, unstamped
    bits = x.csig
    nxt = cport(csig.NQD, lm=9, buffer=1000)
    through(nxt, x, after=3)
    assert x.csig == bits and nxt.csig_replaced == 0
    y = tagged(csig.NQD, csig.set_d(csig.neutral(csig.NQD)))  # d set, in the data queue
    through(cport(csig.NQD, buffer=10_000), y, after=5)      # a worse bucket (15) ...
    assert y.csig == csig.set_d(csig.neutral(csig.NQD))      # ... left alone (C3)


def test_s6_csig_off_and_untagged_packets_are_left_as_they_are():
    x = tagged(csig.ABW)
    p = port(buffer=100_000, kmin=50_000, kmax=60_000, rate_bps=8e9)
    through(p, x, before=40)
    assert x.csig == csig.neutral(csig.ABW) and p.util == 0.0
    assert {c: getattr(p, c) for c in CSIG_COUNTERS} == dict.fromkeys(CSIG_COUNTERS, 0)
    q = cport(csig.ABW)
    u = pkt(1000, 3)
    through(q, u, before=40)
    assert u.csig is None and q.csig_stamped == 0 and q.util > 0.99  # measured all the same


def test_s6_port_refuses_a_locator_beyond_7_bits():
    with pytest.raises(ValueError, match="7-bit"):
        cport(csig.ABW, lm=128)
