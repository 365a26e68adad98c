"""The engine hands each read batch to the core in one call (``Host.receive_datagrams``) and
keeps the order: a CSIG-tagged datagram (IO-T1) goes alone, in its place, between the batches
before and after it; the DatagramMeta of each datagram is what its addressing and TOS say (one
object per 5-tuple and TOS, reused). Real loopback sockets; the core is a recorder."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import trio

from uet.cms.csig import CSIG_ETHERTYPE
from uet.io import sockets as S
from uet.io.engine import SocketEngine, _Sock
from uet.pds import DatagramMeta

LO = "127.0.0.1"
TPID = CSIG_ETHERTYPE.to_bytes(2, "big")


class Recorder:
    def __init__(self, csig: bool):
        self.pds = SimpleNamespace(config=SimpleNamespace(csig=1 if csig else None))
        self.calls: list = []

    def receive_datagrams(self, items, now):
        self.calls.append(("batch", [(d, m) for d, m in items]))

    def receive_datagram(self, data, meta, now, *, csig=None):
        self.calls.append(("one", [(data, meta)], csig))


def _engine(csig: bool) -> tuple[SocketEngine, Recorder, socket.socket]:
    raw = S.udp_socket(LO, 0, tos=46 << 2)
    host = Recorder(csig)
    eng = SocketEngine(host, _Sock(raw, LO, 46 << 2, True), [])
    return eng, host, raw


def _run(eng: SocketEngine, raw: socket.socket, datagrams: list[bytes], tos: int = 0) -> int:
    async def main() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            for d in datagrams:
                s.sendto(d, raw.getsockname())
            sport = s.getsockname()[1]
            await trio.sleep(0.05)
            assert eng._drain(eng.uet_sock, 64) == len(datagrams)
        return sport

    return trio.run(main)


def test_untagged_datagrams_go_in_one_call_with_their_metas():
    eng, host, raw = _engine(False)
    try:
        ds = [bytes([2 << 3, k]) + b"x" * 40 for k in range(10)]
        sport = _run(eng, raw, ds, tos=(10 << 2) | 2)
        assert [c[0] for c in host.calls] == ["batch"]
        items = host.calls[0][1]
        assert [d for d, _ in items] == ds
        want = DatagramMeta(LO, LO, sport, raw.getsockname()[1], 2, 10)
        assert all(m == want for _, m in items)
        assert len({id(m) for _, m in items}) == 1  # one object for one 5-tuple and TOS
    finally:
        raw.close()


def test_a_tagged_datagram_goes_alone_in_its_place():
    for csig in (False, True):
        eng, host, raw = _engine(csig)
        try:
            plain = [bytes([2 << 3, k]) + b"y" * 20 for k in range(5)]
            tagged = TPID + b"\x12\x34" + plain[2]
            _run(eng, raw, plain[:2] + [tagged] + plain[2:])
            kinds = [c[0] for c in host.calls]
            assert kinds == ["batch", "one", "batch"]
            assert [d for d, _ in host.calls[0][1]] == plain[:2]
            assert host.calls[1][1][0][0] == plain[2] and host.calls[1][2] == (0x1234 if csig
                                                                                else None)
            assert [d for d, _ in host.calls[2][1]] == plain[2:]
            assert eng.io["csig_tags" if csig else "csig_unasked"] == 1
        finally:
            raw.close()
