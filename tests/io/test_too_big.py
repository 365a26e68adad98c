"""IO-M1 of uet.io.engine (facts A.1: DF, no IP fragments): a datagram the kernel refuses with
EMSGSIZE stops the endpoint - one line naming the route's MTU and ``--mtu``, every waiter fails
with it, nothing more is sent (no retransmission loop) - and the commands exit 2.

The sockets are real loopback sockets wrapped so that a send longer than ``LIMIT`` bytes fails
with EMSGSIZE, as a DF socket does on a route whose MTU is smaller; the clock is trio's
MockClock (virtual time), so the retransmission timers that would resend run in no time."""

from __future__ import annotations

import errno
import io
from contextlib import redirect_stderr, redirect_stdout

import pytest
import trio
import trio.testing

import uet.io.engine as engine_mod
from uet.io import sockets as S
from uet.io.command import main
from uet.io.endpoint import TooBig, open_endpoint

LIMIT = 1500 - 28  # the UDP payload of a 1500-byte IPv4 MTU


class TooBigSock:
    """A real socket whose sends of more than ``LIMIT`` bytes fail with EMSGSIZE."""

    def __init__(self, real):
        self._real = real
        self.refused = 0
        self.sent = 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _check(self, data) -> None:
        if len(data) > LIMIT:
            self.refused += 1
            raise OSError(errno.EMSGSIZE, "Message too long")
        self.sent += 1

    def sendto(self, data, addr):
        self._check(data)
        return self._real.sendto(data, addr)

    def sendmsg(self, buffers, anc=(), flags=0, addr=None):
        self._check(b"".join(bytes(b) for b in buffers))
        return self._real.sendmsg(buffers, anc, flags, addr)


@pytest.fixture
def fake_sockets(monkeypatch):
    made: list[TooBigSock] = []
    real = S.udp_socket

    def udp_socket(*a, **kw):
        s = TooBigSock(real(*a, **kw))
        made.append(s)
        return s

    monkeypatch.setattr(S, "udp_socket", udp_socket)
    return made


async def _send_too_big(mtu: int, paths: int) -> tuple[TooBig, dict]:
    async with open_endpoint(None, peer_port=9, paths=paths, mtu=mtu, seed=3) as tx:
        with pytest.raises(TooBig) as e:
            await tx.send("127.0.0.1", bytes(64 << 10))
        await trio.sleep(30.0)  # virtual: every RTO and tail-loss timer fires meanwhile
        with pytest.raises(TooBig):  # a later send fails at once, with the same line
            await tx.send("127.0.0.1", b"x")
        with pytest.raises(TooBig):
            await tx.receive()
        tx.skip_close = True
        return e.value, dict(tx.io)


def test_m1_emsgsize_fails_the_send_with_one_line_and_sends_nothing_more(fake_sockets):
    exc, io_counters = trio.run(_send_too_big, 4096, 1,
                                clock=trio.testing.MockClock(autojump_threshold=0))
    line = exc.reason
    assert "\n" not in line and "--mtu 4096" in line and "MTU" in line and "A.1" in line
    assert str(exc) == line
    refused = sum(s.refused for s in fake_sockets)
    # the first datagram of the window was refused; none was tried again in 30 s of timers
    assert refused == 1 and io_counters["tx_too_big"] == 1
    assert io_counters.get("retransmissions", 0) == 0 and io_counters.get("tx_errors", 0) == 0


def test_m1_the_sendmmsg_run_path_stops_too(fake_sockets, monkeypatch):
    """A run of datagrams for one socket goes through send_batch (the C twin's sendmmsg, which
    reports the errno of the first datagram it could not send)."""
    calls: list[int] = []

    def send_batch(sock, items, tos_default, wildcard):
        calls.append(len(items))
        return 0, errno.EMSGSIZE

    monkeypatch.setattr(engine_mod, "send_batch", send_batch)
    exc, io_counters = trio.run(_send_too_big, 8192, 1,
                                clock=trio.testing.MockClock(autojump_threshold=0))
    assert "--mtu 8192" in exc.reason
    assert len(calls) == 1 and calls[0] >= engine_mod.RUN_MIN and io_counters["tx_too_big"] == 1


def test_m1_uet_send_exits_2_with_the_line(fake_sockets):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(["send", "--to", "127.0.0.1:9", "--bytes", "64k", "--mtu", "4096", "--json",
                   "--timeout", "20"])
    assert rc == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("uet send: a datagram of ")
    assert "--mtu 4096" in lines[0] and "give a smaller --mtu" in lines[0]
    import json

    res = json.loads(out.getvalue())
    assert res["ok"] is False and res["mtu"] == 4096 and res["error"] == lines[0][10:]
    assert res["stats"]["io_tx_too_big"] == 1 and res["retransmissions"] == 0


def test_m1_uet_demo_exits_2_with_the_line(fake_sockets):
    from uet.demo.command import main as demo_main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = demo_main(["--no-fabric", "--bytes", "64k", "--mtu", "4096", "--json", "--quiet",
                        "--timeout", "20"])
    assert rc == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("uet demo: a datagram of ")
    assert "--mtu 4096" in lines[0]
    import json

    s = json.loads(out.getvalue())
    assert s["ok"] is False and s["mtu"] == 4096 and s["too_big"] == lines[0][10:]


def test_m1_uet_conformance_exits_2_with_the_line(monkeypatch):
    """The suite's sockets set DF; a datagram the route refuses stops the run (exit 2)."""
    import uet.conformance.peer as peer_mod
    from uet.conformance.command import main as conf_main

    init = peer_mod.Peer.__init__

    def small_route(self, *a, **kw):
        init(self, *a, **kw)
        self.sock = TooBigSock(self.sock)
        self.sock._limit = 40  # even the SYN request does not fit

    monkeypatch.setattr(peer_mod.Peer, "__init__", small_route)
    monkeypatch.setattr(TooBigSock, "_check", lambda self, data: _refuse_over(self, data))
    err = io.StringIO()
    with redirect_stderr(err):
        rc = conf_main(["conformance", "127.0.0.1:9", "--check", "syn_establishment", "--mtu", "1024"])
    assert rc == 2
    last = err.getvalue().splitlines()[-1]
    assert last.startswith("uet conformance: a datagram of ") and "--mtu 1024" in last


def _refuse_over(sock: TooBigSock, data) -> None:
    if len(data) > getattr(sock, "_limit", LIMIT):
        sock.refused += 1
        raise OSError(errno.EMSGSIZE, "Message too long")
    sock.sent += 1
