"""The fast twins (uet/pds/fastpath.py, uet/ses/fastpath.py) are shortcuts, not different
behaviour: the same datagram sequences through the twins and through the reference alone give the
same datagrams, events and state (principle of one path per rule: the reference is the readable
code, the twin is tested against it)."""

from __future__ import annotations

import dataclasses
import io
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet import native
from uet.host import Host
from uet.pds import PdsConfig
from uet.pds import fastpath as pds_fast
from uet.ses import SesConfig
from uet.ses import fastpath as ses_fast
from uet.sim import SimConfig, Simulator

from .helpers import fire_timers

A, B = "10.0.0.1", "10.0.0.2"

SCENARIOS = [
    SimConfig(bytes=1 << 20, paths=8, loss=0.02, seed=3, messages=3),
    SimConfig(bytes=1 << 20, mode="rod", reorder=0.1, dup=0.05, seed=4),
    SimConfig(bytes=512 * 1024, trim=0.05, corrupt=0.02, ack_loss=0.1, seed=5, messages=2),
    SimConfig(bytes=100 * 1024, mtu=1024, messages=37, loss=0.02, seed=6),
    SimConfig(bytes=256 * 1024, op="tsend", messages=4, loss=0.02, seed=7),
]


def _twins(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(pds_fast, "ENABLED", on)
    monkeypatch.setattr(ses_fast, "ENABLED", on)


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


def _pair(seed: int, mode: str, sizes: list[int], mtu: int) -> tuple[Host, Host]:
    cfg = dict(mtu=mtu, window_bytes=mtu * 16, rto_initial=1e-4, max_rto_retx=30,
               max_nack_retx=50)
    a = Host(A, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=1), seed=seed)
    b = Host(B, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, seed=2, auto_receive=True),
             seed=seed + 1)
    rng = random.Random(seed)
    for n in sizes:
        a.send(B, rng.randbytes(n), mode=mode)
    return a, b


def _drive(seed: int, mode: str, sizes: list[int], mtu: int, steps: int, *,
           batch: int | None = None, rudi: int = 0, area: bool = False) -> list:
    """A pair under seeded drops, duplicates and reordering until every message arrived (or
    ``steps`` rounds passed); the log of every datagram sent and every event, in order, and the
    state at the end. ``batch`` None: each datagram to its host in arrival order; otherwise
    (tests/pds/test_batch_receive.py) each host takes what reaches it in runs of at most
    ``batch`` (0: one by one), 1% of datagrams are damaged, ``rudi`` single-packet RUDI sends go
    beside the messages, and the timers are logged too; with ``area`` (tests/native/
    test_rxlane.py) B takes its runs as receive areas, read in place by the C receive lane."""
    a, b = _pair(seed, mode, sizes, mtu)
    rng = random.Random(seed)
    for _ in range(rudi):
        a.send(B, rng.randbytes(rng.randrange(1, 300)), mode="rudi")
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
    return log + [_state(a), dict(a.stats), dict(b.stats), received]


def _event(e: object) -> tuple:
    """An event as comparable values (delivered data by its bytes)."""
    values = [getattr(e, f.name) for f in dataclasses.fields(e)]
    return (type(e).__name__, *(bytes(v) if isinstance(v, (memoryview, bytearray)) else v
                                for v in values))


TARGET_STATE = ("state", "cack", "bytes_since_ack", "pending_ar", "sack_base", "late", "rcvd_bytes",
                "ooo_count", "next_deliver", "clear_psn", "close_psn", "last_rx")


def _state(h: Host) -> tuple:
    """What the twins change: the target PDCs' window and ACK state, the SES's messages in
    reassembly and its budget, the counters."""
    ses = h.ses
    return (tuple(tuple(getattr(t, k) for k in TARGET_STATE) for t in h.pds._tgts.values()),
            tuple((k, rx.got, rx.charged, rx.last, rx.asm.received if rx.asm else None)
                  for k, rx in ses._rx.items()),
            ses.budget.bytes, ses.budget.messages, tuple(sorted(ses.stats.items())),
            tuple(sorted(h.pds.stats.items())))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["rud", "rod"]),
       sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1024, 4096]))
def test_a_pair_under_impairments_does_the_same_with_and_without_the_twins(seed, mode, sizes,
                                                                           mtu):
    with pytest.MonkeyPatch.context() as mp:
        _twins(mp, True)
        fast = _drive(seed, mode, sizes, mtu, 3000)
        _twins(mp, False)
        slow = _drive(seed, mode, sizes, mtu, 3000)
    assert fast == slow


@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("seed", range(4))
def test_messages_over_several_reassembly_chunks_agree(seed, mode):
    """Messages that need new reassembly chunks in their middle packets (R1 charging)."""
    with pytest.MonkeyPatch.context() as mp:
        _twins(mp, True)
        fast = _drive(seed, mode, [600_000, 300_000, 0], 4096, 5000)
        _twins(mp, False)
        slow = _drive(seed, mode, [600_000, 300_000, 0], 4096, 5000)
    assert fast == slow and fast[-1] == 3


def test_the_twins_take_the_bulk_of_a_transfer(monkeypatch):
    """A test that could not fail if the twins never ran would prove nothing: count them."""
    calls = {"pds": 0, "ses": 0}
    pds_receive, ses_take = pds_fast.receive_request, ses_fast.take

    def count_pds(*a):
        taken = pds_receive(*a)
        calls["pds"] += taken
        return taken

    def count_ses(*a):
        taken = ses_take(*a)
        calls["ses"] += taken
        return taken

    monkeypatch.setattr(pds_fast, "receive_request", count_pds)
    monkeypatch.setattr(ses_fast, "take", count_ses)
    monkeypatch.setattr("uet.ses.endpoint.SesEndpoint.take", count_ses)
    sim = Simulator(SimConfig(bytes=4 << 20, seed=1))
    r = sim.run()
    assert r["ok"] and r["data_packets"] == 1024
    # all but the first window (SYN requests, before the first ACK: the reference's) and the
    # message's first and last packets; with the C backend the C receive lane takes them
    # (uet.native.rxlane), and the Python twins only what it does not serve
    lanes = sim.b.ep.ses.lanes
    c_taken = lanes.taken if lanes is not None else 0
    assert c_taken + calls["ses"] > 800 and c_taken + calls["pds"] >= calls["ses"]
    assert (c_taken > 800) == (native.BACKEND == "c")


def test_long_messages_arrive_without_a_copy():
    """A message longer than one reassembly chunk (256 KiB) is handed up as a view of its mapping
    (uet.native.reassembly), a short one as its bytearray; the bytes are those sent."""
    for n, kind in ((100_000, bytearray), (600_000, memoryview)):
        a, b = _pair(1, "rud", [], 4096)
        msg = random.Random(n).randbytes(n)
        a.send(B, msg)
        now = 0.0
        got = []
        for _ in range(200):
            now += 1e-6
            for d, m in a.datagrams_to_send(now):
                b.receive_datagram(d, m, now)
            for d, m in b.datagrams_to_send(now):
                a.receive_datagram(d, m, now)
            got += [e for e in iter(b.next_event, None) if type(e).__name__ == "MessageReceived"]
            if got:
                break
        assert len(got) == 1 and type(got[0].data) is kind and bytes(got[0].data) == msg
