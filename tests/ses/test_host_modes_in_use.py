"""HOST-H2 of uet/host.py with issue 28's rule for the per-send path: a host polls the queues and
timers of the RUDI and UUD endpoints only once it used them (``Outbox.used``), so a RUD transfer
never enters uet/pds/rudi.py nor uet/pds/uud.py; an endpoint used directly (not through
:meth:`Host.route`) is polled from then on."""

from __future__ import annotations

import os
import random
import sys

import uet.pds.rudi
import uet.pds.uud
from uet.host import Host
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.ses.events import MessageReceived

A, B = "10.0.0.1", "10.0.0.2"
SIDE = {os.path.abspath(uet.pds.rudi.__file__), os.path.abspath(uet.pds.uud.__file__)}


def _exchange(a: Host, b: Host, rounds: int = 2000) -> list:
    got, now = [], 0.0
    for _ in range(rounds):
        now += 1e-5
        moved = False
        for src, dst in ((a, b), (b, a)):
            for d, m in src.datagrams_to_send(now):
                dst.receive_datagram(d, m, now)
                moved = True
            t = src.get_timer()
            if t is not None and t <= now:
                src.handle_timer(now)
        while (e := b.next_event()) is not None:
            if isinstance(e, MessageReceived):
                got.append(e)
        while a.next_event() is not None:
            pass
        if got and not moved:
            break
    return got


def test_a_rud_transfer_never_enters_rudi_or_uud():
    a = Host(A, pds=PdsConfig(mtu=4096), ses=SesConfig(mtu=4096, seed=1), seed=3)
    b = Host(B, pds=PdsConfig(mtu=4096), ses=SesConfig(mtu=4096, seed=2, auto_receive=True),
             seed=4)
    entered: set[str] = set()

    def prof(frame, event, arg):
        if event == "call":
            f = os.path.abspath(frame.f_code.co_filename)
            if f in SIDE:
                entered.add(f)

    data = random.Random(7).randbytes(100_000)
    sys.setprofile(prof)
    try:
        a.send(B, data)
        got = _exchange(a, b)
    finally:
        sys.setprofile(None)
    assert [bytes(e.data) for e in got] == [data]
    assert entered == set()
    assert not a.rudi.used and not a.uud.used and not b.rudi.used and not b.uud.used


def test_an_endpoint_used_directly_is_polled_from_then_on():
    a, b = Host(A), Host(B)
    assert a.uud.send_datagram(B, b"ses bytes") and a.uud.used
    (d, m), = a.datagrams_to_send(0.0)
    b.receive_datagram(d, m, 0.0)
    assert b.uud.used and not b.rudi.used
    pid = a.rudi.send_request(B, 1, b"x" * 20, 0.0)
    assert a.rudi.used and a.rudi.outstanding == 1 and a.get_timer() is not None
    out = a.datagrams_to_send(0.0)
    assert len(out) == 1 and pid
