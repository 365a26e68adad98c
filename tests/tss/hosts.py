"""Two sans-IO hosts joined by a loop in the test (no simulator, no sockets): what TSS does at
the host's edge (HOST-H5 of uet.host) seen datagram by datagram."""

from __future__ import annotations

import dataclasses
from typing import Callable

from uet.host import Host
from uet.pds import PdsConfig
from uet.ses import SesConfig
from uet.ses.events import MessageReceived
from uet.tss import SecureDomain, SecurityConfig

A, B = "10.0.0.1", "10.0.0.2"
KEY = bytes(range(32))


def security(*, mode: str = "direct", epoch: int = 7, key: bytes = KEY, sdi: int = 1,
             role: str = "client", **kw) -> SecurityConfig:
    return SecurityConfig(domains=(SecureDomain(sdi=sdi, key=key, mode=mode, role=role),),
                          send_sdi=sdi, epoch=epoch, **kw)


def pair(sec_a: SecurityConfig | None, sec_b: SecurityConfig | None, *,
         seed_a: int = 1) -> tuple[Host, Host]:
    def host(addr: str, sec: SecurityConfig | None, seed: int) -> Host:
        return Host(addr, pds=PdsConfig(mtu=4096), seed=seed, security=sec,
                    ses=SesConfig(mtu=4096, seed=seed, auto_receive=True))
    return host(A, sec_a, seed_a), host(B, sec_b, 2)


def server(sec: SecurityConfig) -> SecurityConfig:
    return dataclasses.replace(sec, domains=tuple(dataclasses.replace(d, role="server")
                                                  for d in sec.domains))


Datagram = tuple[bytes, object]


def pump(a: Host, b: Host, *, until: Callable[[], bool], now: float = 0.0, steps: int = 20000,
         record: list[Datagram] | None = None,
         change: Callable[[bytes, object], Datagram | None] | None = None) -> float:
    """Move datagrams both ways (A's to B through ``change``, which may alter or drop them, and
    into ``record``) and fire timers, until ``until()`` or ``steps`` rounds; returns the time."""
    for _ in range(steps):
        moved = False
        for src, dst in ((a, b), (b, a)):
            for data, meta in src.datagrams_to_send(now):
                moved = True
                if src is a:
                    if record is not None:
                        record.append((data, meta))
                    if change is not None:
                        got = change(data, meta)
                        if got is None:
                            continue
                        data, meta = got
                dst.receive_datagram(data, meta, now)
        if until():
            return now
        if not moved:
            timers = [t for t in (a.get_timer(), b.get_timer()) if t is not None]
            if not timers:
                return now
            now = max(now, min(timers))
            a.handle_timer(now)
            b.handle_timer(now)
    return now


def received(host: Host) -> list[bytes]:
    """The messages ``host``'s SES delivered (events taken)."""
    out = []
    while (e := host.next_event()) is not None:
        if isinstance(e, MessageReceived):
            out.append(bytes(e.data))
    return out
