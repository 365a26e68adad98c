"""The C receive lane (native/rxlane.c, uet.native.rxlane) against the reference (the only Python
path: uet.pds.endpoint ``_receive``, uet.pds.target, uet.ses.target): the same datagram sequences
give the same datagrams, events and state, with ``rxlane.ENABLED`` on (the C lane takes what it
serves) and off (the reference takes everything) - RUD and ROD, IPv4 and IPv6. Also: hostile
datagrams (fields changed under a valid trailer) change nothing the reference would not; the lane
really runs; a datagram is offered to it once and its trailer checked once (PDS-R5 of
uet/pds/endpoint.py)."""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet import native
from uet.host import Host
from uet.native import rxlane
from uet.pds import PdsConfig
from uet.pds import endpoint as pds_endpoint
from uet.ses import SesConfig
from uet.ses.lanes import lane_layout
from uet.sim import SimConfig, Simulator
from uet.wire.trailer import seal_udp

from tests.pds.test_lane_vs_reference import ADDRESSES, SCENARIOS, _drive, _event, _state

pytestmark = pytest.mark.skipif(native.BACKEND != "c", reason="the C lane needs the C backend")

A, B = "10.0.0.1", "10.0.0.2"


def _both(run, *args, **kwargs) -> tuple:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rxlane, "ENABLED", True)
        c = run(*args, **kwargs)
        mp.setattr(rxlane, "ENABLED", False)
        reference = run(*args, **kwargs)
    return c, reference


def _sim(cfg: SimConfig) -> tuple:
    buf = io.BytesIO()
    sim = Simulator(cfg, pcap=buf)
    r = sim.run()
    r.pop("wall_time_s")
    return r, buf.getvalue(), sim.b.ep.ses.lanes.taken


@pytest.mark.parametrize("cfg", SCENARIOS, ids=range(len(SCENARIOS)))
def test_every_frame_and_the_summary_agree_with_the_reference(cfg):
    (c, c_frames, c_taken), (ref, ref_frames, ref_taken) = _both(_sim, cfg)
    assert c["ok"], c["failures"]
    assert (c, c_frames) == (ref, ref_frames) and ref_taken == 0
    # that the lane takes the bulk of a transfer: tests/pds/test_lane_vs_reference.py


def test_a_bulk_transfer_goes_the_c_way():
    (c, _, c_taken), (ref, _, ref_taken) = _both(_sim, SimConfig(bytes=4 << 20, seed=2))
    assert c == ref and c["ok"] and c_taken > 800 and ref_taken == 0


def test_an_in_order_rod_transfer_goes_the_c_way():
    """PDS-W4: on one path (in order) the lane takes ROD's middle packets as it takes RUD's."""
    (c, _, c_taken), (ref, _, ref_taken) = _both(_sim, SimConfig(bytes=4 << 20, seed=2,
                                                                 mode="rod", paths=1))
    assert c == ref and c["ok"] and c_taken > 800 and ref_taken == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1024, 4096]), batch=st.sampled_from([None, 1, 16, 64]),
       rudi=st.integers(0, 2), mode=st.sampled_from(["rud", "rod"]),
       family=st.sampled_from([4, 6]))
def test_a_pair_under_impairments_does_the_same_with_the_c_lane_and_without(seed, sizes, mtu,
                                                                           batch, rudi, mode,
                                                                           family):
    c, ref = _both(_drive, seed, mode, sizes, mtu, 3000, batch=batch, rudi=rudi, family=family)
    assert c == ref and c[-1] == len(sizes)


def _recorded(seed: int, nbytes: int, mtu: int, mode: str = "rud", family: int = 4) -> list:
    """The datagrams a sender sends for one message to B, in order, over a lossless pair."""
    cfg = dict(mtu=mtu, window_bytes=mtu * 32)
    a_addr, b_addr = ADDRESSES[family]
    a = Host(a_addr, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=1), seed=seed)
    b = Host(b_addr, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=2, auto_receive=True),
             seed=seed + 1)
    a.send(b_addr, random.Random(seed).randbytes(nbytes), mode=mode)
    sent: list = []
    now = 0.0
    for _ in range(2000):
        now += 1e-6
        out = a.datagrams_to_send(now)
        sent += out
        for d, m in out:
            b.receive_datagram(d, m, now)
        for d, m in b.datagrams_to_send(now):
            a.receive_datagram(d, m, now)
        if not out and b.next_event() is not None:
            break
    return sent


def _hostile(recorded: list, seed: int) -> list:
    """Feed ``recorded`` to a fresh receiver, with fields changed under a valid trailer: random
    bits of the PDS and SES headers flipped, lengths cut, copies - what the receiver sends and
    raises, and its state."""
    rng = random.Random(seed)
    b = Host(recorded[0][1].dst, pds=PdsConfig(mtu=4096, window_bytes=4096 * 32),
             ses=SesConfig(mtu=4096, seed=2, auto_receive=True), seed=seed + 1)
    log: list = []
    now = 0.0
    for i, (data, meta) in enumerate(recorded):
        now += 1e-6
        body = bytearray(data[:-4])
        # the handshake and the message's first packet intact, so that most of the rest is
        # the C lane's to take or refuse
        x = rng.random() if i > 40 else 1.0
        if x < 0.1:
            for _ in range(rng.randrange(1, 4)):
                bit = rng.randrange(min(len(body), 56) * 8)
                body[bit >> 3] ^= 0x80 >> (bit & 7)
        elif x < 0.12:
            body = body[:rng.randrange(len(body) + 1)]
        d = seal_udp(bytes(body), meta.src, meta.dst, meta.sport, meta.dport)
        b.receive_datagram(d, meta, now)
        if x > 0.95:
            b.receive_datagram(d, meta, now)
        log += [d for d, _ in b.datagrams_to_send(now)]
        while (e := b.next_event()) is not None:
            log.append(_event(e))
    lanes = b.ses.lanes
    return log + [_state(b)], lanes.taken


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", range(4))
def test_fields_changed_under_a_valid_trailer_change_nothing_the_reference_would_not(seed, mode,
                                                                                    family):
    recorded = _recorded(seed, 700_000, 4096, mode, family)
    assert len(recorded) > 170
    (c, c_taken), (ref, ref_taken) = _both(_hostile, recorded, seed)
    assert c == ref and c_taken > 0 and ref_taken == 0  # a hit on the message fails it (SES-T8)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), dscp=st.integers(0, 63), ecn=st.integers(0, 3))
def test_random_bytes_are_never_taken(data, dscp, ecn):
    """Nothing but a request of an open PDC is taken: random datagrams (their trailer made
    valid or not) at an endpoint whose PDC lane is open leave every lane as it was."""
    lanes = rxlane.RxLanes(lane_layout())
    win = native.PsnWindow(100, 64)
    lane = lanes.add_pdc(7)
    lane.win, lane.peer, lane.peer_len, lane.peer_pdcid = win._w, bytes([10, 0, 0, 1]), 4, 9
    lane.size, lane.open = 64, 1
    for d in (data, seal_udp(data, A, B, 5000, 4793)):
        assert lanes.take(d, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 5000, 4793, dscp, ecn,
                          1.0, 1.0) in (0, 4, 5)  # not taken (with or without a verdict)
    assert win.cack == 99 and lane.rcvd_bytes == 0 and lanes.counters() == (0, 0, 0, 0, 0)


def test_a_layout_that_misses_a_field_is_refused():
    """The lane names no field itself: a layout without one (a schema change that missed
    uet.ses.lanes) is an error at once, never a lane that reads zeros."""
    layout = dict(lane_layout())
    del layout["psn"]
    with pytest.raises(ValueError, match="psn"):
        rxlane.RxLanes(layout)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1024, 4096]), batch=st.sampled_from([1, 5, 64]),
       rudi=st.integers(0, 2), mode=st.sampled_from(["rud", "rod"]))
def test_receive_areas_read_in_place_do_what_the_batches_of_bytes_do(seed, sizes, mtu, batch,
                                                                     rudi, mode):
    """Host.receive_area (the live engine's recvmmsg area, read in place by the C lane) and
    Host.receive_datagrams over the same runs: the same datagrams, events, timers and state."""
    in_place = _drive(seed, mode, sizes, mtu, 3000, batch=batch, rudi=rudi, area=True)
    as_bytes = _drive(seed, mode, sizes, mtu, 3000, batch=batch, rudi=rudi)
    assert in_place == as_bytes and in_place[-1] == len(sizes)


def test_the_area_path_takes_requests_in_place(monkeypatch):
    """A test that could not fail if the in-place path never took anything would prove little."""
    from uet.pds.endpoint import Endpoint

    taken = []
    real = Endpoint.receive_area

    def count(self, area, start, n, *args):
        k, status = real(self, area, start, n, *args)
        taken.append(k - start + (status in (2, 3)))  # taken, its ACK due or built
        return k, status

    monkeypatch.setattr(Endpoint, "receive_area", count)
    log = _drive(5, "rud", [300_000, 200_000], 4096, 3000, batch=64, rudi=1, area=True)
    assert log[-1] == 2 and sum(taken) > 80


def _pending(log: list) -> int:
    """ACK_CC datagrams in ``log`` that carry a receiver penalty (B.8 rcv_cwnd_pend > 0)."""
    from uet.pds.packets import read_ack
    from uet.wire.enums import ACK_CC_TYPE

    n = 0
    for entry in log:
        if (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], bytes)
                and entry[1] and entry[1][0] >> 3 == ACK_CC_TYPE):
            n += read_ack(ACK_CC_TYPE, entry[1], len(entry[1]) - 4).rcv_cwnd_pend > 0
    return n


@pytest.mark.parametrize("seed", range(4))
def test_acks_under_receiver_pressure_are_the_references(seed, monkeypatch):
    """PDS-A5: while the SES's reassembly bytes for the peer are more than half its budget, the ACKs
    carry a penalty, and the first after it says restore_cwnd: the C lane leaves those ACKs to
    the reference and builds the others; every datagram is the reference's."""
    import functools

    import tests.pds.test_lane_vs_reference as tf

    small = functools.partial(SesConfig, rx_bytes_per_peer=4 << 18, rx_bytes=8 << 18)
    monkeypatch.setattr(tf, "SesConfig", small)
    c, ref = _both(_drive, seed, "rud", [300_000, 280_000, 260_000], 4096, 5000, batch=16)
    assert c == ref and c[-1] == 3
    assert _pending(c) > 0  # the penalty happened: the test covers the hand-over both ways


def test_a_datagram_is_offered_to_the_lane_once_and_its_trailer_checked_once(monkeypatch):
    """PDS-R5 of uet/pds/endpoint.py over receive areas (the live engine's path): a datagram the
    area's lane left is not offered to the lane again (no per-datagram ``take`` at all), and the
    reference does not check again a trailer the lane checked (its verdict, good or bad, goes
    with the datagram to the reference, which runs before the area's next datagram)."""
    from uet.wire.trailer import TRAILER_LEN

    verdicts: list[int] = []
    left: list = [None]  # the datagram the lane just left with a verdict
    offered_again: list = []
    recomputed: list = []
    real_area, real_take, real_crc = (rxlane.RxLanes.take_area, rxlane.RxLanes.take,
                                      pds_endpoint._crc_prefix)

    def take_area(self, area, start, n, *args):
        k, status = real_area(self, area, start, n, *args)
        left[0] = bytes(area.item(k, True)[0]) if k < n and status in (4, 5) else None
        if left[0] is not None:
            verdicts.append(status)
        return k, status

    def take(self, data, *args):
        offered_again.append(bytes(data))
        return real_take(self, data, *args)

    def crc(data, end, seed):
        if end == len(data) - TRAILER_LEN and bytes(data) == left[0]:
            recomputed.append(bytes(data))
        return real_crc(data, end, seed)

    monkeypatch.setattr(rxlane.RxLanes, "take_area", take_area)
    monkeypatch.setattr(rxlane.RxLanes, "take", take)
    monkeypatch.setattr(pds_endpoint, "_crc_prefix", crc)
    log = _drive(5, "rud", [300_000, 200_000], 4096, 3000, batch=64, rudi=1, area=True)
    assert log[-1] == 2
    # the messages' last packets (the lane checks their trailer, then leaves them: they complete
    # their message) and the damaged ones (1%: a bad trailer)
    assert 4 in verdicts and 5 in verdicts
    assert offered_again == [] and recomputed == []
