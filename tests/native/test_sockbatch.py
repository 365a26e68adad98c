"""uet.native.sockbatch: the batched receive and send (recvmmsg / sendmmsg through cffi) against
their reference, the per-datagram recvmsg / sendto / sendmsg loop, on real loopback sockets.

Every combination of sender (reference, C) and receiver (reference, C) must give the same
datagrams, addresses, ports, TOS bytes and truncation flags, for random payload sizes (0..65507),
random TOS values, random receive buffer sizes (truncation) and batches smaller and larger than
one system call's (MMSG_MAX)."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uet.native import sockbatch as B

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IS_C = B.BATCH_BACKEND == "c"
requires_c = pytest.mark.skipif(not IS_C, reason="the C batch calls are not in use")
LO = "127.0.0.1"
TOS_DEFAULT = 0x01  # DSCP 0 + ECT(1): the sender's default in these tests


def _sock(host: str, tos: int = 0) -> socket.socket:
    from uet.io.sockets import udp_socket
    return udp_socket(host, 0, tos=tos, rcvbuf=32 << 20, sndbuf=8 << 20)


@pytest.fixture(scope="module")
def socks():
    tx = _sock(LO, TOS_DEFAULT)
    rx = _sock(LO)
    rxw = _sock("0.0.0.0")  # wildcard: IP_PKTINFO gives the destination
    yield tx, rx, rxw
    for s in (tx, rx, rxw):
        s.close()


def _receive(recv, rx: socket.socket, want: int, limit: int, bufsize: int) -> list:
    out: list = []
    deadline = time.monotonic() + 5
    while len(out) < want and time.monotonic() < deadline:
        got, errors = recv(rx, limit, bufsize)
        assert errors == 0
        assert len(got) <= limit
        out += got
        if not got:
            time.sleep(0.001)
    return out


def _expected(items: list, bufsize: int, sport: int, dst: str | None) -> list:
    return [(d[:bufsize], LO, sport, dst, tos, len(d) > bufsize) for d, _h, _p, tos, _s in items]


SENDERS = [("py", B.send_batch_py), ("c", B.send_batch)]
RECEIVERS = [("py", B.recv_batch_py), ("c", B.recv_batch)]

sizes = st.one_of(st.integers(0, 200), st.integers(0, 4200), st.integers(60000, 65507))
toses = st.integers(0, 255)


@requires_c
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(sizes, toses), min_size=1, max_size=150),
       st.integers(1, 200), st.one_of(st.integers(1, 5000), st.just(65535)), st.booleans(),
       st.randoms(use_true_random=False))
def test_c_and_reference_agree(socks, shape, limit, bufsize, wildcard, rnd):
    tx, rx, rxw = socks
    r = rxw if wildcard else rx
    port = r.getsockname()[1]
    sport = tx.getsockname()[1]
    if sum(n for n, _ in shape) > 6 << 20:
        shape = shape[:40]
    items = [(rnd.randbytes(n), LO, port, tos, LO) for n, tos in shape]
    want = _expected(items, bufsize, sport, LO if wildcard else None)
    for sname, send in SENDERS:
        for rname, recv in RECEIVERS:
            sent, err = send(tx, items, TOS_DEFAULT, False)
            assert (sent, err) == (len(items), 0), (sname, rname)
            got = _receive(recv, r, len(items), limit, bufsize)
            assert got == want, (sname, rname)


@requires_c
def test_wildcard_sender_names_its_source(socks):
    """A wildcard-bound sender puts TOS and IP_PKTINFO (the source address) on every datagram."""
    _tx, rx, _rxw = socks
    txw = _sock("0.0.0.0", TOS_DEFAULT)
    try:
        port, sport = rx.getsockname()[1], txw.getsockname()[1]
        items = [(bytes([i]) * i, LO, port, (i * 37) & 0xFF, LO) for i in range(100)]
        for send in (B.send_batch_py, B.send_batch):
            assert send(txw, items, TOS_DEFAULT, True) == (100, 0)
            got = _receive(B.recv_batch, rx, 100, 100, 65535)
            assert got == _expected(items, 65535, sport, None)
    finally:
        txw.close()


@requires_c
def test_a_failure_stops_the_batch_at_that_datagram(socks):
    """A datagram too long for UDP: both say how many went before it, and its errno."""
    tx, rx, _ = socks
    port = rx.getsockname()[1]
    items = [(b"a" * 10, LO, port, 0, LO)] * 3 + [(bytes(70000), LO, port, 0, LO)] + \
        [(b"b", LO, port, 0, LO)] * 2
    for send in (B.send_batch_py, B.send_batch):
        assert send(tx, items, TOS_DEFAULT, False) == (3, errno.EMSGSIZE)
        assert send(tx, items[4:], TOS_DEFAULT, False) == (2, 0)
        got = _receive(B.recv_batch, rx, 5, 64, 65535)
        assert [d for d, *_ in got] == [b"a" * 10] * 3 + [b"b"] * 2


def test_empty_socket_and_closed_socket():
    rx = _sock(LO)
    for recv in (B.recv_batch_py, B.recv_batch):
        assert recv(rx, 64, 65535) == ([], 0)
    rx.close()
    for recv in (B.recv_batch_py, B.recv_batch):
        got, errors = recv(rx, 5, 65535)
        assert got == [] and errors == 5  # every read failed (EBADF), each counted


def test_ipv6_takes_the_reference():
    try:
        rx, tx = _sock("::1"), _sock("::1", TOS_DEFAULT)
    except OSError:
        pytest.skip("no IPv6 loopback")
    try:
        port, sport = rx.getsockname()[1], tx.getsockname()[1]
        items = [(b"x" * i, "::1", port, (i * 4) & 0xFF, "::1") for i in range(70)]
        assert B.send_batch(tx, items, TOS_DEFAULT, False) == (70, 0)
        got = _receive(B.recv_batch, rx, 70, 100, 65535)
        assert [(d, h, p, dst, tos, t) for d, h, p, dst, tos, t in got] == \
            [(d, "::1", sport, None, tos, False) for d, _h, _p, tos, _s in items]
    finally:
        rx.close()
        tx.close()


def test_uet_native_0_uses_the_reference():
    code = ("import uet.native as n, uet.native.sockbatch as b; "
            "assert n.BACKEND == 'python' and b.BATCH_BACKEND == 'python'; "
            "assert b.recv_batch is b.recv_batch_py and b.send_batch is b.send_batch_py; "
            "import uet.io.engine as e, uet.fabric.relay as r; "
            "assert e.recv_batch is b.recv_batch_py and r.send_batch is b.send_batch_py")
    env = dict(os.environ, UET_NATIVE="0", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
