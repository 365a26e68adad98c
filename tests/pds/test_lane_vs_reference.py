"""The C receive lane is a shortcut, not different behaviour: the lane (native/rxlane.c,
uet.native.rxlane) against the reference alone (the only Python path: uet.pds.endpoint
``_receive``, uet.pds.target, uet.ses.target). The same
datagram sequences give the same datagrams, events and state with the lane on and off - RUD and
ROD, IPv4 and IPv6 - except the counters that say which path ran (PDS-R5 of uet/pds/endpoint.py:
``rx_lane``, ``rx_reference``), which the tests below check on their own."""

from __future__ import annotations

import dataclasses
import io
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet import native
from uet.host import Host
from uet.native import rxlane
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.sim import SimConfig, Simulator

from .helpers import fire_timers

A, B = "10.0.0.1", "10.0.0.2"
ADDRESSES = {4: (A, B), 6: ("fd00::1", "fd00::2")}
PATH_KEYS = ("rx_lane", "rx_reference")  # PDS-R5: which path ran (differs by design)

SCENARIOS = [
    SimConfig(bytes=1 << 20, paths=8, loss=0.02, seed=3, messages=3),
    SimConfig(bytes=1 << 20, mode="rod", reorder=0.1, dup=0.05, seed=4),
    SimConfig(bytes=512 * 1024, trim=0.05, corrupt=0.02, ack_loss=0.1, seed=5, messages=2),
    SimConfig(bytes=100 * 1024, mtu=1024, messages=37, loss=0.02, seed=6),
    SimConfig(bytes=256 * 1024, op="tsend", messages=4, loss=0.02, seed=7),
]


def _twins(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """The C receive lane on, or the reference alone."""
    monkeypatch.setattr(rxlane, "ENABLED", on)


def _same(stats: object) -> dict:
    """Counters as the lane must leave them: all but the path counters (PDS-R5)."""
    return {k: v for k, v in dict(stats).items() if k not in PATH_KEYS}  # type: ignore[call-overload]


def _run(cfg: SimConfig) -> tuple[dict, bytes]:
    buf = io.BytesIO()
    r = Simulator(cfg, pcap=buf).run()
    r.pop("wall_time_s")
    return r, buf.getvalue()


@pytest.mark.parametrize("cfg", SCENARIOS, ids=range(len(SCENARIOS)))
def test_every_frame_and_the_summary_agree(cfg, monkeypatch):
    _twins(monkeypatch, True)
    fast, frames = _run(cfg)
    assert fast["ok"], fast["failures"]
    _twins(monkeypatch, False)
    assert _run(cfg) == (fast, frames)


def _pair(seed: int, mode: str, sizes: list[int], mtu: int, family: int = 4, *,
          ack_per_packet: bool = False) -> tuple[Host, Host]:
    cfg = dict(mtu=mtu, window_bytes=mtu * 16, rto_initial=1e-4, max_rto_retx=30,
               max_nack_retx=50, ack_per_packet=ack_per_packet)
    a_addr, b_addr = ADDRESSES[family]
    a = Host(a_addr, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=1), seed=seed)
    b = Host(b_addr, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=2, auto_receive=True),
             seed=seed + 1)
    rng = random.Random(seed)
    for n in sizes:
        a.send(b_addr, rng.randbytes(n), mode=mode)
    return a, b


def _drive(seed: int, mode: str, sizes: list[int], mtu: int, steps: int, *,
           batch: int | None = None, rudi: int = 0, area: bool = False, family: int = 4,
           ack_per_packet: bool = False) -> list:
    """A pair under seeded drops, duplicates and reordering until every message arrived (or
    ``steps`` rounds passed); the log of every datagram sent and every event, in order, and the
    state at the end. ``batch`` None: each datagram to its host in arrival order; otherwise
    (tests/pds/test_batch_receive.py) each host takes what reaches it in runs of at most
    ``batch`` (0: one by one), 1% of datagrams are damaged, ``rudi`` single-packet RUDI sends go
    beside the messages, and the timers are logged too; with ``area`` (tests/native/
    test_rxlane.py) B takes its runs as receive areas, read in place by the C receive lane;
    ``family`` 6: the pair speaks IPv6 (the trailer's pseudo-header, A.3); ``ack_per_packet``:
    every request asks for an ACK (C.9), so reordered ones leave an AR pending (PDS-A1)."""
    a, b = _pair(seed, mode, sizes, mtu, family, ack_per_packet=ack_per_packet)
    rng = random.Random(seed)
    for _ in range(rudi):
        a.send(b.address, rng.randbytes(rng.randrange(1, 300)), mode="rudi")
    log: list = []
    now = 0.0
    received = 0
    for _ in range(steps):
        now += 1e-6
        net = []
        for src, dst in ((a, b), (b, a)):
            for d, m in src.datagrams_to_send(now):
                log.append((src.address, d))
                x = rng.random()
                if x < 0.05:
                    continue  # lost
                if batch is not None and x > 0.99:
                    d = bytes([d[0]]) + bytes([d[1] ^ 0x40]) + d[2:]  # damaged: bad CRC
                net.append((dst, d, m))
                if x > 0.97:
                    net.append((dst, d, m))  # duplicated
        for k in range(len(net) - 1):  # reordered: neighbours swap
            if rng.random() < 0.2:
                net[k], net[k + 1] = net[k + 1], net[k]
        if batch is None:
            for dst, d, m in net:
                dst.receive_datagram(d, m, now)
        else:
            for h in (a, b):
                mine = [(d, m) for dst, d, m in net if dst is h]
                if batch:
                    for i in range(0, len(mine), batch):
                        if area and h is b:
                            from tests.native.areas import receive_as_area
                            receive_as_area(h, mine[i:i + batch], now)
                        else:
                            h.receive_datagrams(mine[i:i + batch], now)
                else:
                    for d, m in mine:
                        h.receive_datagram(d, m, now)
        if not net:
            fired = fire_timers(now, a, b)
            if fired is None:
                break
            now = fired
        for h in (a, b):
            if batch is not None:
                log.append((h.address, h.get_timer(), h._sweep_at))
            while (e := h.next_event()) is not None:
                log.append((h.address, _event(e)))
                received += type(e).__name__ == "MessageReceived"
        log.append(_state(b))
        if (received == len(sizes) and not a.rudi.outstanding
                and not a.pds.pdcs()[0].busy()):
            break
    return log + [_state(a), _same(a.stats), _same(b.stats), received]


def _event(e: object) -> tuple:
    """An event as comparable values (delivered data by its bytes)."""
    values = [getattr(e, f.name) for f in dataclasses.fields(e)]
    return (type(e).__name__, *(bytes(v) if isinstance(v, (memoryview, bytearray)) else v
                                for v in values))


TARGET_STATE = ("state", "cack", "bytes_since_ack", "pending_ar", "sack_base", "late", "rcvd_bytes",
                "ooo_count", "next_deliver", "clear_psn", "close_psn", "last_rx")


def _state(h: Host) -> tuple:
    """What the lane changes: the target PDCs' window and ACK state, the SES's messages in
    reassembly and its budget, the counters."""
    ses = h.ses
    return (tuple(tuple(getattr(t, k) for k in TARGET_STATE) for t in h.pds._tgts.values()),
            tuple((k, rx.got, rx.charged, rx.last, rx.asm.received if rx.asm else None)
                  for k, rx in ses._rx.items()),
            ses.budget.bytes, ses.budget.messages, tuple(sorted(ses.stats.items())),
            tuple(sorted(_same(h.pds.stats).items())))


def _both(*args, **kwargs) -> tuple[list, list]:
    """:func:`_drive` with the lane on, then with the reference alone."""
    with pytest.MonkeyPatch.context() as mp:
        _twins(mp, True)
        fast = _drive(*args, **kwargs)
        _twins(mp, False)
        slow = _drive(*args, **kwargs)
    return fast, slow


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["rud", "rod"]),
       sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1024, 4096]), family=st.sampled_from([4, 6]))
def test_a_pair_under_impairments_does_the_same_with_and_without_the_twins(seed, mode, sizes,
                                                                           mtu, family):
    fast, slow = _both(seed, mode, sizes, mtu, 3000, family=family)
    assert fast == slow



@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", range(3))
def test_an_ack_per_packet_with_an_ar_pending_agrees_and_the_lane_builds_it(seed, mode,
                                                                             monkeypatch):
    """PDS-A1 with an ACK per packet (C.9) under reordering: a request that arrives ahead of CACK
    leaves its AR pending, and the next ACK is due when CACK covers it. The lane keeps that PSN
    and builds those ACKs itself (status 3) as the reference would (the same datagrams, events
    and state), instead of handing each one to the reference (status 2)."""
    from uet.pds.endpoint import Endpoint

    fast, slow = _both(seed, mode, [300_000, 100_000], 4096, 3000, ack_per_packet=True)
    assert fast == slow and fast[-1] == 2
    if native.BACKEND != "c" or mode == "rod":  # ROD: the lane takes only the next PSN (PDS-W4)
        return
    statuses: list[int] = []
    real = Endpoint.acknowledge_lane

    def count(self, meta, status, now):
        statuses.append(status)
        real(self, meta, status, now)

    monkeypatch.setattr(Endpoint, "acknowledge_lane", count)
    _drive(seed, mode, [300_000, 100_000], 4096, 3000, ack_per_packet=True)
    assert statuses.count(3) > 50 and 2 not in statuses

@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", range(3))
def test_messages_over_several_reassembly_chunks_agree(seed, mode, family):
    """Messages that need new reassembly chunks in their middle packets (PDS-R1 charging)."""
    fast, slow = _both(seed, mode, [600_000, 300_000, 0], 4096, 5000, family=family)
    assert fast == slow and fast[-1] == 3


def _until_received(a: Host, b: Host, steps: int) -> list:
    """``a`` and ``b`` exchange datagrams, lossless and in order, until ``b`` reports a
    MessageReceived (at most ``steps`` rounds): those events."""
    now = 0.0
    for _ in range(steps):
        now += 1e-6
        for d, m in a.datagrams_to_send(now):
            b.receive_datagram(d, m, now)
        for d, m in b.datagrams_to_send(now):
            a.receive_datagram(d, m, now)
        got = [e for e in iter(b.next_event, None) if type(e).__name__ == "MessageReceived"]
        if got:
            return got
    return []


def _lossless(mode: str, family: int, nbytes: int = 2 << 20) -> Host:
    """One message A -> B over a lossless, in-order pair; the receiver B."""
    a, b = _pair(1, mode, [nbytes], 4096, family)
    assert _until_received(a, b, 3000), "the message did not arrive"
    return b


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("mode", ["rud", "rod"])
def test_the_path_counters_say_which_path_took_each_datagram(mode, family, monkeypatch):
    """PDS-R5 of uet/pds/endpoint.py: ``rx_lane`` + ``rx_reference`` = ``rx_datagrams``; the C lane
    takes the bulk of a transfer, RUD and ROD (in order: PDS-W4), IPv4 and IPv6, and with it off
    (or without the C backend) the reference takes every datagram."""
    stats = _lossless(mode, family).pds.stats
    assert stats["rx_lane"] + stats["rx_reference"] == stats["rx_datagrams"] >= 512
    if native.BACKEND == "c":
        # all but the first window (SYN requests, before the first ACK) and the message's first
        # and last packets
        assert stats["rx_lane"] > 400
    else:
        assert stats["rx_lane"] == 0
    monkeypatch.setattr(rxlane, "ENABLED", False)
    stats = _lossless(mode, family).pds.stats
    assert stats["rx_lane"] == 0 and stats["rx_reference"] == stats["rx_datagrams"] >= 512


def test_the_lane_takes_the_bulk_of_a_simulated_transfer():
    """A test that could not fail if the lane never ran would prove nothing: count it."""
    sim = Simulator(SimConfig(bytes=4 << 20, seed=1))
    r = sim.run()
    assert r["ok"] and r["data_packets"] == 1024
    lanes = sim.b.ep.ses.lanes
    assert (lanes is not None and lanes.taken > 800) == (native.BACKEND == "c")


def test_long_messages_arrive_without_a_copy():
    """A message longer than one reassembly chunk (256 KiB) is handed up as a view of its mapping
    (uet.native.reassembly), a short one as its bytearray; the bytes are those sent."""
    for n, kind in ((100_000, bytearray), (600_000, memoryview)):
        a, b = _pair(1, "rud", [], 4096)
        msg = random.Random(n).randbytes(n)
        a.send(B, msg)
        got = _until_received(a, b, 200)
        assert len(got) == 1 and type(got[0].data) is kind and bytes(got[0].data) == msg
