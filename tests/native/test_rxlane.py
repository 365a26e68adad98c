"""The C receive lane (native/rxlane.c, uet.native.rxlane) against its Python twin
(uet.pds.fastpath.receive_request with uet.ses.fastpath.take): the same datagram sequences give
the same datagrams, events and state, with ``rxlane.ENABLED`` on (the C lane takes what it
serves) and off (the twin takes it). The twin is itself held equal to the reference by
tests/pds/test_fastpath.py. Also: hostile datagrams (fields changed under a valid trailer) change
nothing the twin would not, and the lane really runs."""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet import native
from uet.host import Host
from uet.native import rxlane
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.ses.lanes import lane_layout
from uet.sim import SimConfig, Simulator
from uet.wire.trailer import seal_udp

from tests.pds.test_fastpath import SCENARIOS, _drive, _event, _state

pytestmark = pytest.mark.skipif(native.BACKEND != "c", reason="the C lane needs the C backend")

A, B = "10.0.0.1", "10.0.0.2"


def _both(run, *args, **kwargs) -> tuple:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rxlane, "ENABLED", True)
        c = run(*args, **kwargs)
        mp.setattr(rxlane, "ENABLED", False)
        twin = run(*args, **kwargs)
    return c, twin


def _sim(cfg: SimConfig) -> tuple:
    buf = io.BytesIO()
    sim = Simulator(cfg, pcap=buf)
    r = sim.run()
    r.pop("wall_time_s")
    return r, buf.getvalue(), sim.b.ep.ses.lanes.taken


@pytest.mark.parametrize("cfg", SCENARIOS, ids=range(len(SCENARIOS)))
def test_every_frame_and_the_summary_agree_with_the_twin(cfg):
    (c, c_frames, c_taken), (twin, twin_frames, twin_taken) = _both(_sim, cfg)
    assert c["ok"], c["failures"]
    assert (c, c_frames) == (twin, twin_frames) and twin_taken == 0
    # that the lane takes the bulk of a transfer: tests/pds/test_fastpath.py


def test_a_bulk_transfer_goes_the_c_way():
    (c, _, c_taken), (twin, _, twin_taken) = _both(_sim, SimConfig(bytes=4 << 20, seed=2))
    assert c == twin and c["ok"] and c_taken > 800 and twin_taken == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1024, 4096]), batch=st.sampled_from([None, 1, 16, 64]),
       rudi=st.integers(0, 2))
def test_a_pair_under_impairments_does_the_same_with_the_c_lane_and_the_twin(seed, sizes, mtu,
                                                                            batch, rudi):
    c, twin = _both(_drive, seed, "rud", sizes, mtu, 3000, batch=batch, rudi=rudi)
    assert c == twin and c[-1] == len(sizes)


def _recorded(seed: int, nbytes: int, mtu: int) -> list:
    """The datagrams a sender sends for one message to B, in order, over a lossless pair."""
    cfg = dict(mtu=mtu, window_bytes=mtu * 32)
    a = Host(A, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=1), seed=seed)
    b = Host(B, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=2, auto_receive=True),
             seed=seed + 1)
    a.send(B, random.Random(seed).randbytes(nbytes))
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
    b = Host(B, pds=PdsConfig(mtu=4096, window_bytes=4096 * 32),
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


@pytest.mark.parametrize("seed", range(6))
def test_fields_changed_under_a_valid_trailer_change_nothing_the_twin_would_not(seed):
    recorded = _recorded(seed, 700_000, 4096)
    assert len(recorded) > 170
    (c, c_taken), (twin, twin_taken) = _both(_hostile, recorded, seed)
    assert c == twin and c_taken > 0 and twin_taken == 0  # a hit on the message fails it (T8)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), dscp=st.integers(0, 63), ecn=st.integers(0, 3))
def test_random_bytes_are_never_taken(data, dscp, ecn):
    """Nothing but a request of an open PDC is taken: random datagrams (their trailer made
    valid or not) at an endpoint whose PDC lane is open leave every lane as it was."""
    lanes = rxlane.RxLanes(lane_layout())
    win = native.PsnWindow(100, 64)
    lane = lanes.add_pdc(7)
    lane.win, lane.peer, lane.peer_pdcid = win._w, bytes([10, 0, 0, 1]), 9
    lane.size, lane.open = 64, 1
    for d in (data, seal_udp(data, A, B, 5000, 4793)):
        assert lanes.take(d, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 5000, 4793, dscp, ecn,
                          1.0, 1.0) == 0
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
        taken.append(k - start + (status == 2))
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
def test_acks_under_receiver_pressure_are_the_twins(seed, monkeypatch):
    """A5: while the SES's reassembly bytes for the peer are more than half its budget, the ACKs
    carry a penalty, and the first after it says restore_cwnd: the C lane leaves those ACKs to
    the reference and builds the others; every datagram is the twin's."""
    import functools

    import tests.pds.test_fastpath as tf

    small = functools.partial(SesConfig, rx_bytes_per_peer=4 << 18, rx_bytes=8 << 18)
    monkeypatch.setattr(tf, "SesConfig", small)
    c, twin = _both(_drive, seed, "rud", [300_000, 280_000, 260_000], 4096, 5000, batch=16)
    assert c == twin and c[-1] == 3
    assert _pending(c) > 0  # the penalty happened: the test covers the hand-over both ways
