"""Property test: a PDC pair driven through arbitrary drop / reorder / duplicate / delay schedules.

Two whole hosts (uet.host: the PDS with the SES above it) move SEND messages over one RUD or ROD
PDC. The layer above never sees corrupted or duplicated data, every message arrives once the
network heals (and its sender hears it complete), and a lossless in-order run never retransmits.
"""

from __future__ import annotations

import hashlib

from hypothesis import HealthCheck, given, settings, strategies as st

from uet.host import Host
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.ses.events import MessageReceived, OperationComplete, OperationFailed

from .helpers import fire_timers

A, B = "10.0.0.1", "10.0.0.2"


def _pair(seed, mtu):
    cfg = dict(mtu=mtu, window_bytes=mtu * 16, rto_initial=1e-3, max_rto_retx=12, max_nack_retx=50)

    def host(addr, s):
        # every untagged SEND finds a receive at the target (SES-M7 of uet/ses/target.py)
        return Host(addr, pds=PdsConfig(**cfg), ses=SesConfig(mtu=mtu, auto_receive=True, seed=s),
                    seed=s)

    return host(A, seed), host(B, seed + 1)


def _drain_events(ep, log):
    while (e := ep.next_event()) is not None:
        log.append(e)


def run_schedule(mode, sizes, actions, seed=0, mtu=512):
    a, b = _pair(seed, mtu)
    msgs = [bytes((i * 7 + j) & 255 for j in range(n)) for i, n in enumerate(sizes)]
    handles = [a.send(B, m, mode=mode) for m in msgs]
    net = []  # (dst host, data, meta)
    now = 0.0
    log_a, log_b = [], []

    def pump():
        for d, m in a.datagrams_to_send(now):
            net.append((b, d, m))
        for d, m in b.datagrams_to_send(now):
            net.append((a, d, m))

    pump()
    for op, k in actions:
        now += 1e-6
        if net:
            i = k % len(net)
            dst, d, m = net[i]
            if op == "deliver":
                net.pop(i)
                dst.receive_datagram(d, m, now)
            elif op == "drop":
                net.pop(i)
            elif op == "dup":
                dst.receive_datagram(d, m, now)
            elif op == "corrupt":
                net.pop(i)
                bad = bytearray(d)
                bad[k % len(bad)] ^= 1 << (k % 8)
                dst.receive_datagram(bytes(bad), m, now)
        if op == "timer":
            now += 2e-3
            for ep in (a, b):
                ep.handle_timer(now)
        pump()
        _drain_events(a, log_a)
        _drain_events(b, log_b)
    # heal: deliver everything in order, fire timers, until done
    for _ in range(5000):
        if not net:
            fired = fire_timers(now, a, b)
            if fired is None:
                break
            now = fired
        while net:
            now += 1e-6
            dst, d, m = net.pop(0)
            dst.receive_datagram(d, m, now)
            pump()
        pump()
        _drain_events(a, log_a)
        _drain_events(b, log_b)
        if sum(isinstance(e, (OperationComplete, OperationFailed)) for e in log_a) == len(msgs):
            break
    return a, b, msgs, handles, log_a, log_b


ACTIONS = st.lists(st.tuples(st.sampled_from(["deliver", "deliver", "deliver", "drop", "dup",
                                              "corrupt", "timer"]), st.integers(0, 1000)),
                   max_size=120)


def _errors(*hosts):
    return [(h.stats["internal_errors"], h.pds.last_error, h.pds.last_error_datagram,
             h.ses.last_error) for h in hosts]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["rud", "rod"]), st.lists(st.integers(0, 3000), min_size=1, max_size=4),
       ACTIONS, st.integers(0, 2 ** 16))
def test_arbitrary_schedules_deliver_exactly_once_intact(mode, sizes, actions, seed):
    a, b, msgs, handles, log_a, log_b = run_schedule(mode, sizes, actions, seed)
    delivered = [e.data for e in log_b if isinstance(e, MessageReceived)]
    failed = [e for e in log_a if isinstance(e, OperationFailed)]
    assert a.stats["internal_errors"] == 0 and b.stats["internal_errors"] == 0, _errors(a, b)
    # never corrupted, never duplicated
    want = {hashlib.sha256(m).digest(): m for m in msgs}
    hashes = [hashlib.sha256(d).digest() for d in delivered]
    assert all(h in want for h in hashes), "corrupted data delivered"
    assert sorted(hashes) == sorted(set(hashes)) or len(set(map(bytes, msgs))) < len(msgs)
    assert len(delivered) <= len(msgs)
    assert all(e.peer == A for e in log_b if isinstance(e, MessageReceived))
    if not failed:
        assert sorted(hashes) == sorted(hashlib.sha256(m).digest() for m in msgs)
        if mode == "rod":
            assert [bytes(d) for d in delivered] == msgs
        # and the sender heard each one complete, once (the old SendComplete)
        done = [e.handle for e in log_a if isinstance(e, OperationComplete)]
        assert sorted(done) == sorted(handles)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["rud", "rod"]), st.lists(st.integers(0, 20000), min_size=1, max_size=5),
       st.integers(0, 2 ** 16))
def test_lossless_in_order_run_never_retransmits(mode, sizes, seed):
    actions = [("deliver", 0)] * 2000
    a, b, msgs, handles, log_a, log_b = run_schedule(mode, sizes, actions, seed)
    assert a.stats["retransmissions"] == 0
    assert a.stats["rto"] == 0 and a.stats["tlp"] == 0
    assert [bytes(e.data) for e in log_b if isinstance(e, MessageReceived)] == msgs
    assert [e.handle for e in log_a if isinstance(e, OperationComplete)] == handles
