"""facts A.1 and H.1 #19 on the live endpoint: every UET datagram, requests and answers alike,
goes to UDP destination port = the UET port; an answer's source port is the EV of the request it
answers; every endpoint receives on (its own address, UET port), initiators included (uet.ownaddr
OWNADDR-O1 to OWNADDR-O2, rules IO-P1 to IO-P4 of uet.io.endpoint)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest
import trio

from uet import ownaddr
from uet.conformance.peer import request
from uet.io import open_endpoint
from uet.ownaddr import LocalAddressError, bind_own
from uet.wire.packet import decode_uet
from uet.wire.trailer import seal_udp, udp_trailer_ok

from .conftest import RecvProcess, env, uet_cmd

LO = "127.0.0.1"


class RawInitiator:
    """Plain sockets on an address of its own (uet.ownaddr): ``evs`` sockets whose ports are the
    EVs requests leave from, and the socket at the UET port where every answer must arrive."""

    def __init__(self, port: int, evs: int = 1):
        def make(a: str) -> socket.socket:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                s.bind((a, port))
            except OSError:
                s.close()
                raise
            return s

        self.uet, self.addr = bind_own(make, port=port, peer=LO)
        self.port = port
        self.evs = []
        for _ in range(evs):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((self.addr, 0))
            self.evs.append(s)
        for s in [self.uet, *self.evs]:
            s.setblocking(False)

    def ev(self, i: int = 0) -> int:
        return self.evs[i].getsockname()[1]

    def syn(self, i: int, spdcid: int, psn: int = 70_000, to: tuple[str, int] | None = None) -> None:
        """A SYN request (AR) from EV socket ``i`` to the target's UET port (A.1)."""
        host, port = to or (LO, self.port)
        body = request(psn, spdcid=spdcid, start=psn, payload=b"ports")
        self.evs[i].sendto(seal_udp(body, self.addr, host, self.ev(i), port), (host, port))

    async def answer(self) -> tuple[bytes, tuple[str, int]]:
        while True:
            await trio.lowlevel.wait_readable(self.uet)
            try:
                return self.uet.recvfrom(65535)
            except BlockingIOError:
                continue

    def strays(self) -> int:
        """Datagrams that came to an EV socket (the rule A.1 replaced: answers to the source port)."""
        n = 0
        for s in self.evs:
            while True:
                try:
                    s.recv(65535)
                except BlockingIOError:
                    break
                n += 1
        return n

    def close(self) -> None:
        for s in [self.uet, *self.evs]:
            s.close()


def _ack(data: bytes) -> dict:
    d = decode_uet(data, None, trailer="crc")
    assert d.error is None
    return d.layer["pds"]


@pytest.mark.trio
async def test_a1_answer_to_the_uet_port_from_the_request_ev():
    """The ACK of a request from EV e arrives at the initiator's UET port, from (target, e), and
    its trailer covers exactly those ports (A.3); nothing comes to the EV socket."""
    with trio.fail_after(10):
        async with open_endpoint((LO, 0), paths=1) as rx:
            ini = RawInitiator(rx.port)
            try:
                ini.syn(0, spdcid=11)
                data, src = await ini.answer()
                assert src == (LO, ini.ev(0))
                assert udp_trailer_ok(data, LO, ini.addr, ini.ev(0), rx.port)
                a = _ack(data)
                assert a["type_name"] == "ACK_CC" and a["dpdcid"] == 11
                await trio.sleep(0.05)
                assert ini.strays() == 0
                assert rx.io["ev_sockets_opened"] == 1 and rx.io["tx_renat"] == 0
            finally:
                ini.close()


@pytest.mark.trio
async def test_p2_ev_sockets_are_a_bounded_cache():
    """IO-P2: with ev_sockets=2, three EVs answered make three sockets, the least recently used
    closed; each answer still leaves from its own EV."""
    with trio.fail_after(10):
        async with open_endpoint((LO, 0), paths=1, ev_sockets=2) as rx:
            ini = RawInitiator(rx.port, evs=3)
            try:
                for i in range(3):
                    ini.syn(i, spdcid=20 + i)
                    data, src = await ini.answer()
                    assert src == (LO, ini.ev(i)) and _ack(data)["dpdcid"] == 20 + i
                assert rx.io["ev_sockets_opened"] == 3 and rx.io["ev_sockets_closed"] == 1
                assert len(rx._ev) == 2
            finally:
                ini.close()


@pytest.mark.trio
async def test_p3_an_ev_port_that_cannot_be_bound_answers_from_the_uet_port():
    """IO-P3: another socket holds (target address, EV): the answer still arrives at the UET port,
    from the target's UET port, its trailer made for that port; counted ev_unbound, tx_renat."""
    with trio.fail_after(10):
        async with open_endpoint((LO, 0), paths=1) as rx:
            ini = RawInitiator(rx.port)
            hold = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                hold.bind((LO, ini.ev(0)))
                ini.syn(0, spdcid=31)
                data, src = await ini.answer()
                assert src == (LO, rx.port)
                assert udp_trailer_ok(data, LO, ini.addr, rx.port, rx.port)
                assert _ack(data)["dpdcid"] == 31
                assert rx.io["ev_unbound"] == 1 and rx.io["tx_renat"] >= 1
            finally:
                hold.close()
                ini.close()


@pytest.mark.trio
async def test_p4_a_datagram_to_an_entropy_port_is_dropped_and_counted():
    """IO-P4: only the UET-port socket feeds the core; what comes to an entropy socket (an answer
    sent by the old rule) is counted io_rx_not_uet_port and dropped."""
    with trio.fail_after(10):
        async with open_endpoint((LO, 0), paths=1) as rx, \
                open_endpoint(None, peer_port=rx.port, paths=2) as tx:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(b"\x38" + bytes(40), (tx.local, tx.entropy_ports[0]))
                while tx.io["rx_not_uet_port"] < 1:
                    await trio.sleep(0.01)
            assert tx.core.stats["rx_datagrams"] == 0 and tx.io["rx_datagrams"] == 0


@pytest.mark.trio
async def test_o1_initiators_take_loopback_addresses_of_their_own():
    """O1: two initiators towards one loopback receiver take two addresses, neither the
    receiver's, each at the UET port; the receiver names each by its own."""
    with trio.fail_after(20):
        async with open_endpoint((LO, 0)) as rx, \
                open_endpoint(None, peer_port=rx.port, paths=2) as t1, \
                open_endpoint(None, peer_port=rx.port, paths=2) as t2:
            assert len({LO, t1.local, t2.local}) == 3
            assert t1.address[1] == t2.address[1] == rx.port
            await t1.send(LO, b"one")
            await t2.send(LO, b"two")
            got = {(m.peer, bytes(m.data)) for m in [await rx.receive(), await rx.receive()]}
    assert got == {(t1.local, b"one"), (t2.local, b"two")}


@pytest.mark.trio
async def test_o2_a_wildcard_receiver_holds_the_port_on_every_address():
    """O2: a receiver bound to 0.0.0.0 holds the UET port on every address, so a sender on the
    same host cannot bind it: one line that says to bind the receiver to one address."""
    async with open_endpoint(("0.0.0.0", 0)) as rx:
        with pytest.raises(LocalAddressError) as ei:
            async with open_endpoint(None, peer_port=rx.port):
                pass
    msg = str(ei.value)
    assert "bind the receiver to one address" in msg and f"0.0.0.0:{rx.port}" in msg
    assert "\n" not in msg and "A.1" in msg


@pytest.mark.trio
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for an AF_PACKET capture on lo")
async def test_p2_a_wildcard_receiver_answers_from_the_address_asked():
    """Bound to 0.0.0.0, the UET socket learns each request's destination (IP_PKTINFO): the CRC
    covers it, and the answer leaves from (that address, the request's EV) to the initiator's
    UET port (a request to 127.0.0.3 is ACKed from 127.0.0.3). The wildcard socket holds the
    UET port of the initiator's address too, so the ACK is seen on the wire."""
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    cap.bind(("lo", 0))
    cap.setblocking(False)
    ev_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with trio.fail_after(10):
            async with open_endpoint(("0.0.0.0", 0), paths=1) as rx:
                ev_sock.bind(("127.0.0.4", 0))
                ev = ev_sock.getsockname()[1]
                body = request(90_000, spdcid=41, start=90_000, payload=b"wild")
                ev_sock.sendto(seal_udp(body, "127.0.0.4", "127.0.0.3", ev, rx.port),
                               ("127.0.0.3", rx.port))
                want = (socket.inet_aton("127.0.0.3"), socket.inet_aton("127.0.0.4"), ev, rx.port)
                while True:
                    await trio.lowlevel.wait_readable(cap)
                    frame = cap.recv(70000)
                    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
                        continue
                    ihl = (frame[14] & 15) * 4
                    udp = frame[14 + ihl:]
                    sport, dport = struct.unpack("!HH", udp[:4])
                    if (frame[26:30], frame[30:34], sport, dport) == want:
                        break
    finally:
        cap.close()
        ev_sock.close()
    data = udp[8:struct.unpack("!H", udp[4:6])[0]]
    assert udp_trailer_ok(data, "127.0.0.3", "127.0.0.4", ev, rx.port)
    assert _ack(data)["dpdcid"] == 41


def test_o2_ipv6_loopback_needs_a_second_address():
    """O2: where IPv6 loopback has only ::1, the message says a second address is needed and
    how to add one."""
    def make(a: str) -> socket.socket:
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    with pytest.raises(LocalAddressError) as ei:
        bind_own(make, port=4793, peer="::1", option="--local", who="uet send")
    msg = str(ei.value)
    assert "ip -6 addr add ::2/128 dev lo" in msg and "--local" in msg and "\n" not in msg


def test_o1_candidates_skip_the_peer_and_stop_at_the_first_free():
    tried = []

    def make(a: str) -> socket.socket:
        tried.append(a)
        if a in ("127.0.0.2", "127.0.0.4"):
            raise OSError(errno.EADDRINUSE, "in use")
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    s, addr = bind_own(make, port=65000, peer="127.0.0.3")
    s.close()
    assert tried == ["127.0.0.2", "127.0.0.4", "127.0.0.5"] and addr == "127.0.0.5"
    assert list(ownaddr.loopback_candidates(socket.AF_INET6))[:3] == ["::2", "::3", "::4"]


def test_o2_an_explicit_address_in_use_names_the_option():
    def make(a: str) -> socket.socket:
        raise OSError(errno.EADDRINUSE, "in use")

    with pytest.raises(LocalAddressError) as ei:
        bind_own(make, port=65001, local="127.0.0.9", option="--bind")
    assert "127.0.0.9:65001 is in use" in str(ei.value) and "--bind" in str(ei.value)


# --- two processes, every frame captured --------------------------------------------------------

def _why_no_capture() -> str | None:
    if os.geteuid() != 0:
        return "needs root (tcpdump on lo)"
    if shutil.which("tcpdump") is None:
        return "needs tcpdump (.ci/run installs it)"
    return None


def test_a1_send_to_recv_every_datagram_to_the_uet_port_each_answer_from_its_ev(tmp_path):
    """Done-when of issue 26 item 1: `uet send` to `uet recv`, two processes on loopback, deliver
    by hash, and every captured UET datagram goes to the UET port with each answer's source port
    the EV of the request it answers (uet.capture.refprov RP1, RP5)."""
    why = _why_no_capture()
    if why:
        pytest.skip(why)
    pcap = tmp_path / "run.pcap"
    rp = RecvProcess("--count", "1", "--json")
    host, port = rp.addr
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-n", "-w", str(pcap),
                             f"udp port {port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        line = dump.stderr.readline().decode()  # "listening on lo ...": capturing from now
        assert "listening" in line, line
        r = subprocess.run(uet_cmd("send", "--to", f"{host}:{port}", "--bytes", "3m",
                                   "--paths", "4", "--json", "--timeout", "30"),
                           capture_output=True, text=True, env=env(), timeout=60)
        assert r.returncode == 0, r.stderr
        code, out = rp.stop(timeout=20)
        time.sleep(0.2)
    finally:
        dump.send_signal(signal.SIGINT)
        dump.wait(10)
        rp.stop()
    sent, got = json.loads(r.stdout), json.loads(out.decode().splitlines()[-1])
    assert sent["ok"] and got["sha256"] == sent["sha256"]
    assert sent["local"].endswith(f":{port}") and not sent["local"].startswith(host + ":")
    from uet.capture.refprov import check_capture

    rep = check_capture(str(pcap), uet_port=port)
    assert rep.by_rule.get("RP1", 0) == 0 and rep.by_rule.get("RP5", 0) == 0, rep.text()
    # tcpdump may miss frames on a busy lo (unpaired answers are not violations): most are there
    assert rep.requests >= 100 and rep.paired >= 50, rep.text()


def test_uet_port_overrides_the_port_of_to(capsys):
    """``uet send --uet-port N``: the UET port is N whatever ``--to`` names, and the sender
    receives on it at its own address (``local`` in the JSON)."""
    from uet.io.command import main

    rp = RecvProcess("--count", "1")
    try:
        host, port = rp.addr
        rc = main(["send", "--to", f"{host}:9", "--uet-port", str(port), "--bytes", "64k",
                   "--json", "--timeout", "30"])
        out = json.loads(capsys.readouterr().out)
    finally:
        rp.stop()
    assert rc == 0 and out["ok"] and out["to"] == f"{host}:{port}"
    assert out["local"].endswith(f":{port}") and not out["local"].startswith(f"{host}:")


def test_a_sender_beside_a_wildcard_receiver_says_so_in_one_line(capsys):
    """O2 through ``uet send``: exit 2 and one line naming the cure."""
    from uet.io.command import main

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as wild:
        wild.bind(("0.0.0.0", 0))
        port = wild.getsockname()[1]
        rc = main(["send", "--to", f"{LO}:{port}", "--bytes", "1k", "--timeout", "5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "bind the receiver to one address" in err[0] and err[0].startswith("uet send: ")
