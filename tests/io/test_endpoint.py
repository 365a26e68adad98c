"""The live endpoint (uet.io) on loopback: transfers in both delivery modes, the socket contract
(entropy source ports, DSCP/ECN, zero UDP checksum; the ports of answers: tests/io/test_ports.py),
IPv6, failures."""

from __future__ import annotations

import hashlib
import os
import random
import socket
import struct

import pytest
import trio

from uet.io import SendFailed, open_endpoint
from uet.io import sockets as S

pytestmark = pytest.mark.trio

LO = "127.0.0.1"


def blob(n: int, seed: int = 0) -> bytes:
    return random.Random(seed * 7919 + n).randbytes(n)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.mark.parametrize("mode", ["rud", "rod"])
@pytest.mark.parametrize("size", [0, 1, 4096, 4097, 100_000, 3 << 20])
async def test_transfer_each_mode_and_size(mode, size):
    data = blob(size)
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx, open_endpoint(None, peer_port=rx.port, paths=4) as tx:
            res = await tx.send(LO, data, mode=mode, job_id=3, pid_on_fep=5, resource_index=9)
            m = await rx.receive()
    assert res.nbytes == size
    assert sha(m.data) == sha(data)
    # A.1: the initiator took an address of its own (uet.ownaddr OWNADDR-O1), and the receiver names it
    assert tx.local != LO and tx.address == (tx.local, rx.port)
    assert (m.peer, m.job_id, m.pid_on_fep, m.resource_index) == (tx.local, 3, 5, 9)
    if size > 4096:  # a one-packet message travels with the SES small header: no message id (D.4)
        assert m.message_id == res.message_id


@pytest.mark.parametrize("mode", ["rud", "rod"])
async def test_many_messages_in_flight_all_delivered(mode):
    msgs = [blob(n, i) for i, n in enumerate([10, 5000, 70_000, 1 << 20, 123, 9000, 300_000, 1])]
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx, open_endpoint(None, peer_port=rx.port, paths=8) as tx:
            handles = [tx.send_nowait(LO, d, mode=mode) for d in msgs]
            got = [await rx.receive() for _ in msgs]
            results = [await tx.wait(h) for h in handles]
    assert sorted(sha(m.data) for m in got) == sorted(sha(d) for d in msgs)
    if mode == "rod":  # C.8: ROD delivers in PSN order, so messages in send order
        assert [sha(m.data) for m in got] == [sha(d) for d in msgs]
    assert [r.nbytes for r in results] == [len(d) for d in msgs]


async def test_two_senders_one_receiver_both_modes():
    a, b = blob(2 << 20, 1), blob(1 << 20, 2)
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx, \
                open_endpoint(None, peer_port=rx.port, paths=4) as t1, \
                open_endpoint(None, peer_port=rx.port, paths=4) as t2:
            async with trio.open_nursery() as n:
                n.start_soon(lambda: t1.send(LO, a, mode="rud"))
                n.start_soon(lambda: t2.send(LO, b, mode="rod"))
                got = {sha((await rx.receive()).data), sha((await rx.receive()).data)}
    assert got == {sha(a), sha(b)}


async def test_bidirectional_endpoints_serve_and_send():
    """Each endpoint serves its UET port and sends to the other's (same peer port)."""
    x, y = blob(500_000, 3), blob(700_000, 4)
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as e1:
            async with open_endpoint(("127.0.0.2", e1.port)) as e2:
                async with trio.open_nursery() as n:
                    n.start_soon(lambda: e1.send("127.0.0.2", x))
                    n.start_soon(lambda: e2.send(LO, y))
                    m2 = await e2.receive()
                    m1 = await e1.receive()
    assert sha(m2.data) == sha(x) and m2.peer == LO
    assert sha(m1.data) == sha(y) and m1.peer == "127.0.0.2"


async def test_requests_leave_entropy_ports_with_ect0_and_dscp0():
    """A plain socket posing as the target sees the initiator's requests: source ports are the
    entropy sockets (all of them used, A.1/E.5), TOS = DSCP 0 + ECT(0) (A.2 / docs/design-notes.md)."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind((LO, 0))
    sink.setsockopt(socket.IPPROTO_IP, S.IP_RECVTOS, 1)
    sink.setblocking(False)
    seen = []
    try:
        with trio.fail_after(10):
            async with open_endpoint(None, peer_port=sink.getsockname()[1], paths=6) as tx:
                tx.send_nowait(LO, blob(64 * 1024))  # 16 packets, never ACKed
                while len(seen) < 16:
                    await trio.lowlevel.wait_readable(sink)
                    while True:
                        try:
                            data, anc, _f, addr = sink.recvmsg(65535, 64)
                        except BlockingIOError:
                            break
                        seen.append((data[0] >> 3, S.parse_anc(anc, socket.AF_INET)[0], addr[1]))
                ports = set(tx.entropy_ports)
                tx.skip_close = True
    finally:
        sink.close()
    reqs = [s for s in seen if s[0] == 2]  # RUD_REQ
    assert len(reqs) >= 16
    assert {tos for _, tos, _ in reqs} == {0 << 2 | 2}
    assert {p for _, _, p in reqs} == ports


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for an AF_PACKET capture on lo")
async def test_udp_checksum_zero_on_the_wire():
    """docs/design-notes.md Defaults: UDP checksum 0 (SO_NO_CHECK) for requests and for ACKs."""
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    cap.setsockopt(socket.SOL_SOCKET, S.SO_RCVBUFFORCE, 32 << 20)  # lo may be busy with others
    cap.bind(("lo", 0))
    cap.setblocking(False)
    seen: dict[bool, set] = {}
    ports: set = set()
    rx_ip = socket.inet_aton(LO)

    def take() -> None:
        while True:
            try:
                frame = cap.recv(70000)
            except BlockingIOError:
                return
            if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
                continue
            ihl = (frame[14] & 15) * 4
            sport, dport, _ln, csum = struct.unpack("!HHHH", frame[14 + ihl:22 + ihl])
            if sport in ports and dport == rx_port:  # A.1: requests and ACKs alike
                seen.setdefault(frame[26:30] == rx_ip, set()).add(csum)

    async def capture() -> None:
        while True:
            await trio.lowlevel.wait_readable(cap)
            take()

    try:
        with trio.fail_after(10):
            async with open_endpoint((LO, 0)) as rx, open_endpoint(None, peer_port=rx.port, paths=2) as tx:
                rx_port = rx.port
                ports |= {rx.port, *tx.entropy_ports}
                async with trio.open_nursery() as n:
                    n.start_soon(capture)
                    await tx.send(LO, blob(20_000))
                    await rx.receive()
                    await trio.sleep(0.05)
                    n.cancel_scope.cancel()
        take()
    finally:
        cap.close()
    assert seen.get(False) == {0}, seen  # requests from the entropy ports
    assert seen.get(True) == {0}, seen   # ACKs from the receiver, from the requests' EVs


async def test_ipv6_loopback_zero_checksum(ipv6_second):
    """IPv6: UDP_NO_CHECK6_TX on send, UDP_NO_CHECK6_RX on receive (sockets.py); works on ::1,
    the sender on a second loopback address (A.1: each endpoint its own, the test adds ::2)."""
    data = blob(1 << 20, 6)
    with trio.fail_after(20):
        async with open_endpoint(("::1", 0)) as rx, open_endpoint(None, peer="::1", peer_port=rx.port) as tx:
            await tx.send("::1", data, mode="rod")
            m = await rx.receive()
    assert sha(m.data) == sha(data) and m.peer == tx.local == ipv6_second


async def test_ipv6_computed_checksum_option(ipv6_second):
    data = blob(300_000, 7)
    with trio.fail_after(20):
        async with open_endpoint(("::1", 0), zero_checksum=False) as rx, \
                open_endpoint(None, local=ipv6_second, peer_port=rx.port, zero_checksum=False) as tx:
            await tx.send("::1", data)
            m = await rx.receive()
    assert sha(m.data) == sha(data)


async def test_ipv6_zero_checksum_needs_receiver_opt_in():
    """What the kernel does (documented in uet/io/sockets.py): a zero-checksum datagram to ::1 is
    dropped unless the receiving socket set UDP_NO_CHECK6_RX."""
    tx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    tx.setsockopt(S.SOL_UDP, S.UDP_NO_CHECK6_TX, 1)
    plain = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    plain.bind(("::1", 0))
    opted = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    opted.bind(("::1", 0))
    opted.setsockopt(S.SOL_UDP, S.UDP_NO_CHECK6_RX, 1)
    try:
        tx.sendto(b"zero", plain.getsockname()[:2])
        tx.sendto(b"zero", opted.getsockname()[:2])
        opted.settimeout(2)
        assert opted.recv(100) == b"zero"
        plain.settimeout(0.2)
        with pytest.raises(OSError):  # socket.timeout
            plain.recv(100)
    finally:
        for s in (tx, plain, opted):
            s.close()


@pytest.mark.parametrize("mode", ["rud", "rod"])
async def test_kernel_drops_are_recovered(mode):
    """Real losses: a receive buffer far smaller than the window makes the kernel drop datagrams
    (Udp RcvbufErrors); RACK, tail-loss probes and RTO (C.5, PDS-I7 to PDS-I9) still deliver every byte."""
    data = blob(2 << 20, 9)
    with trio.fail_after(30):
        async with open_endpoint((LO, 0), rcvbuf=150_000) as rx, \
                open_endpoint(None, peer_port=rx.port, paths=4) as tx:
            await tx.send(LO, data, mode=mode)
            m = await rx.receive()
            st = tx.stats
    assert sha(m.data) == sha(data)
    assert st["retransmissions"] > 0


class _Flaky:
    """A socket whose first ``n`` sends report EAGAIN (a full kernel send buffer)."""

    def __init__(self, sock, n):
        self._sock, self.n = sock, n

    def _maybe(self):
        if self.n > 0:
            self.n -= 1
            raise BlockingIOError(11, "Resource temporarily unavailable")

    def sendto(self, *a):
        self._maybe()
        return self._sock.sendto(*a)

    def sendmsg(self, *a):
        self._maybe()
        return self._sock.sendmsg(*a)

    def __getattr__(self, name):
        return getattr(self._sock, name)


async def test_eagain_backlog_is_sent_later():
    data = blob(300_000, 10)
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx, open_endpoint(None, peer_port=rx.port, paths=1) as tx:
            tx.entropy[0].sock = _Flaky(tx.entropy[0].sock, 3)
            await tx.send(LO, data)
            m = await rx.receive()
            st = tx.stats
    assert sha(m.data) == sha(data)
    assert st["io_tx_eagain"] == 3


async def test_send_to_nobody_fails_with_sendfailed():
    with trio.fail_after(20):
        dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        dead.bind((LO, 0))
        port = dead.getsockname()[1]
        dead.close()
        async with open_endpoint(None, peer_port=port, rto_initial=0.01, rto_min=0.01,
                                 max_rto_retx=3, close_timeout=0.2) as tx:
            with pytest.raises(SendFailed) as ei:
                await tx.send(LO, b"x" * 10000)
    assert "retransmission" in ei.value.reason


async def test_inbox_backpressure_keeps_everything():
    """With a tiny inbox and a receiver that reads late, nothing is lost."""
    msgs = [blob(50_000, i) for i in range(8)]
    with trio.fail_after(30):
        async with open_endpoint((LO, 0), max_inbox=2) as rx, open_endpoint(None, peer_port=rx.port) as tx:
            hs = [tx.send_nowait(LO, d, mode="rod") for d in msgs]
            await trio.sleep(0.3)
            assert rx.stats["io_rx_paused"] > 0  # the readers stopped while the inbox was full
            got = [sha((await rx.receive()).data) for _ in msgs]
            for h in hs:
                await tx.wait(h)
    assert got == [sha(d) for d in msgs]


async def test_api_rejects_other_port_and_unimplemented_ops():
    async with open_endpoint((LO, 0)) as ep:
        with pytest.raises(ValueError):
            ep.send_nowait((LO, ep.port + 1), b"x")
        with pytest.raises(NotImplementedError):
            ep.send_nowait(LO, b"x", op="tsend", match_bits=5)
        with pytest.raises(ValueError):
            ep.send_nowait("::1", b"x")
        with pytest.raises(ValueError):
            ep.send_nowait(LO, b"x", mode="uud")


async def test_a_message_in_reassembly_is_released_when_the_endpoint_closes(monkeypatch):
    """Issue 25 item 1 (HOST-H6 of uet/host.py): an endpoint that closes with a message in reassembly
    (its sender gave up) frees the storage in order - afterwards the mapping under the message
    has no view or C export left (it could be unmapped), although the endpoint's objects are
    still referenced; nothing is left for the garbage collector to clear at exit."""
    from uet.native import reassembly as R
    from uet.native import rxlane

    from .peer import Peer, fresh_spdcid

    pool = R.BufferPool(max_bytes=1 << 24)
    monkeypatch.setattr(R, "POOL", pool)  # a pool of our own: its mapping may be closed
    total, n, start, sp = 1 << 20, 200, 5000, fresh_spdcid()  # 200 of 256 packets
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx:
            peer = Peer((LO, rx.port))
            ses = rx.ses
            peer.send(Peer.request(start, spdcid=sp, start=start, payload=b"a" * 4096,
                                   total=total))
            while not ses.in_reassembly:
                await trio.sleep(0.01)
            [pdc] = rx.core.pdcs()
            for i in range(1, n):  # middle packets on the open PDC: the C lane's
                peer.send(Peer.request(start + i, spdcid=sp, dpdcid=pdc.pdcid, ar=False,
                                       payload=b"b" * 4096, offset=i * 4096, total=total))
            while ses.stats["requests"] < n:
                await trio.sleep(0.01)
            if rxlane.AVAILABLE:
                assert ses.lanes.taken > 0
            peer.close()
    [mapping] = pool._maps
    mapping.close()  # BufferError while any view or C export of it remained
    assert ses.in_reassembly == 0 and ses.stats["released"] == 1
