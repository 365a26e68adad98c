"""TSS on the live endpoint (issue 18; facts B.15, F; HOST-H5 of uet.host): the forgery the issue
opens with - twenty 4 KiB requests from another port of 127.0.0.1 - is delivered without TSS and
dropped and counted with it, while a protected transfer beside it completes by hash; and the
command line: ``uet send``/``uet recv --sd-key``, key files others may read refused, and two
runs from one key file never sharing an epoch (so never an IV)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import struct
import subprocess
import threading
from contextlib import asynccontextmanager

import pytest
import trio

from uet.io import open_endpoint
from uet.tss import SecureDomain, SecurityConfig, write_key_file
from uet.tss.layer import pack_header

from .conftest import RecvProcess, env, uet_cmd
from .peer import Peer, fresh_spdcid

LO = "127.0.0.1"
KEY = bytes(range(100, 132))


def sha(b: bytes) -> str:
    return hashlib.sha256(bytes(b)).hexdigest()


def sec(epoch: int, role: str = "client") -> SecurityConfig:
    return SecurityConfig(domains=(SecureDomain(sdi=1, key=KEY, role=role),), send_sdi=1,
                          epoch=epoch)


@asynccontextmanager
async def protected_pair(epoch: int):
    """A receiver and a 4-path sender protected with TSS, each with an epoch of its own."""
    async with open_endpoint((LO, 0), security=sec(epoch + 1, "server")) as srv, \
            open_endpoint(None, peer_port=srv.port, paths=4, security=sec(epoch)) as cli:
        yield srv, cli


def forge(peer: Peer, n: int = 20) -> None:
    """``n`` one-packet SENDs of 4 KiB in the clear, each on a PDC of its own (SYN form)."""
    for i in range(n):
        psn = 1000 + i
        peer.send(Peer.request(psn, spdcid=fresh_spdcid(), start=psn, payload=b"F" * 4096,
                               message_id=i + 1))


async def _delivered(ep, quiet: float = 0.5) -> list[bytes]:
    out = []
    while True:
        with trio.move_on_after(quiet) as cs:
            out.append((await ep.receive()).data)
        if cs.cancelled_caught:
            return out


@pytest.mark.trio
async def test_without_tss_the_forgery_is_delivered():
    """The issue's starting point, kept so that the test below proves something."""
    async with open_endpoint((LO, 0)) as srv:
        forger = Peer((LO, srv.port))
        forge(forger)
        got = await _delivered(srv)
        forger.close()
    assert len(got) == 20 and all(g == b"F" * 4096 for g in got)


@pytest.mark.trio
async def test_h5_with_tss_the_forgery_is_dropped_and_a_protected_transfer_completes():
    data = random.Random(1).randbytes(4 << 20)
    with trio.fail_after(60):
        async with protected_pair(1) as (srv, cli):
            h = cli.send_nowait(LO, data)
            forger = Peer((LO, srv.port))
            forge(forger)
            res = await cli.wait(h)
            got = await _delivered(srv)
            forger.close()
            st = srv.stats
    assert res.nbytes == len(data)
    assert [sha(g) for g in got] == [sha(data)]
    assert st["tss_plain"] == 20
    assert st["tss_accepted"] > 0 and st["tss_auth_failed"] == 0


def _spoofed(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> bytes:
    """An IPv4 + UDP datagram from ``src``, for a raw socket (the kernel fills in the IP
    checksum; a UDP checksum of 0 means none)."""
    udp = struct.pack(">HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    return struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                       socket.inet_aton(src[0]), socket.inet_aton(dst[0])) + udp


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a raw socket that spoofs addresses")
@pytest.mark.trio
async def test_f_spoofed_garbage_from_the_peers_address_and_port_does_not_stop_a_transfer():
    """Issue 25 item 3 (uet.tss.replay rule 4; F: Receive checks): 1,500 garbage TSS datagrams
    spoofed from the receiver's address and each EV at the sender's UET port, and from the
    sender's address and EVs at the receiver's (A.1), before and during a transfer. Before, the sender latched the
    receiver's source at 1,000 failures and dropped every ACK after it; now the transfer
    completes by hash, the failures are counted and the genuine packets keep authenticating."""
    data = random.Random(4).randbytes(4 << 20)
    rnd = random.Random(5)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def garbage(n: int, srv: tuple[str, int], cli: tuple[str, int], evs: list[int]) -> None:
        # A.1: genuine answers come from (the receiver's address, the EV of the request) to the
        # sender's UET port, and requests from (the sender's address, an EV) to the receiver's
        for i in range(n):
            body = pack_header(sdi=1, an=0, ssi=None, epoch=rnd.randrange(8), tsc=i) \
                + rnd.randbytes(64)
            ev = evs[i % len(evs)]
            raw.sendto(_spoofed((srv[0], ev), cli, body), (cli[0], 0))  # at the sender
            raw.sendto(_spoofed((cli[0], ev), srv, body), (srv[0], 0))  # at the receiver

    with trio.fail_after(60):
        async with protected_pair(5) as (srv, cli):
            evs, at_srv, at_cli = cli.entropy_ports, srv.address, cli.address
            garbage(1500, at_srv, at_cli, evs)
            for _ in range(1000):  # until the endpoints have read them (bounded)
                if min(cli.stats["tss_auth_failed"], srv.stats["tss_auth_failed"]) >= 1000:
                    break
                await trio.sleep(0.01)
            h = cli.send_nowait(LO, data)
            for _ in range(20):  # and more during the transfer
                garbage(50, at_srv, at_cli, evs)
                await trio.sleep(0)
            res = await cli.wait(h)
            got = await _delivered(srv)
            st, rst = cli.stats, srv.stats
    raw.close()
    assert res.nbytes == len(data) and [sha(g) for g in got] == [sha(data)]
    assert st["tss_auth_failed"] >= 1000 and rst["tss_auth_failed"] >= 1000
    assert st["tss_accepted"] > 0 and rst["tss_accepted"] > 0


def _key_file(tmp_path, mode: int = 0o600) -> str:
    path = str(tmp_path / "sd.key")
    write_key_file(path, KEY)
    os.chmod(path, mode)
    return path


def test_o1_a_key_file_others_may_read_is_refused_in_one_line(tmp_path):
    path = _key_file(tmp_path, 0o644)
    p = subprocess.run(uet_cmd("send", "--to", "127.0.0.1:9", "--bytes", "1k", "--sd-key", path),
                       capture_output=True, text=True, env=env(), timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and path in lines[0], p.stderr


def test_o3_an_epoch_file_that_exists_but_is_empty_is_refused_in_one_line(tmp_path):
    """keys rule 2 (issue 25 item 2): an empty epoch file once read as "never used" and gave
    epoch 0 again (so IVs again); now the command refuses it, naming the file, exit 2."""
    path = _key_file(tmp_path)
    epochs = tmp_path / "sd.key.epoch"
    epochs.write_bytes(b"")
    p = subprocess.run(uet_cmd("send", "--to", "127.0.0.1:9", "--bytes", "1k", "--sd-key", path),
                       capture_output=True, text=True, env=env(), timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(epochs) in lines[0] and "empty" in lines[0], p.stderr
    assert epochs.read_bytes() == b""


def test_a_failed_send_says_what_came_back_and_why_it_was_dropped(tmp_path):
    """Issue 25 item 7: a "receiver" that answers every datagram with a TSS datagram that does
    not authenticate. ``uet send`` used to say "nothing came back" (the PDS saw nothing); now it
    says how many came back and why they were dropped, from the endpoint's counters."""
    path = _key_file(tmp_path)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((LO, 0))
    sock.settimeout(0.2)
    stop = threading.Event()
    answered = [0]

    def answer() -> None:
        rnd = random.Random(6)
        while not stop.is_set() and answered[0] < 100_000:
            try:
                _, src = sock.recvfrom(65536)
            except socket.timeout:
                continue
            sock.sendto(pack_header(sdi=1, an=0, ssi=None, epoch=0, tsc=answered[0])
                        + rnd.randbytes(64), (src[0], port))  # A.1: to the sender's UET port
            answered[0] += 1

    port = sock.getsockname()[1]
    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        p = subprocess.run(uet_cmd("send", "--to", f"{LO}:{port}", "--bytes",
                                   "64k", "--sd-key", path, "--json"),
                           capture_output=True, text=True, env=env(), timeout=120)
    finally:
        stop.set()
        t.join(10)
        sock.close()
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    st = json.loads(p.stdout)["stats"]
    n, got = st["tss_auth_failed"], st["io_rx_datagrams"]
    assert len(lines) == 1 and n > 0 and "nothing came back" not in lines[0], p.stderr
    assert (f"; {got:,} datagrams came back from {LO}:{port} but were dropped: "
            f"{n:,} failed authentication (tss_auth_failed)") in lines[0], p.stderr


def test_o3_cli_protected_transfer_and_two_sends_never_share_an_epoch(tmp_path):
    path = _key_file(tmp_path)
    rx = RecvProcess("--sd-key", path, "--json", "--count", "2", "--quiet")
    epochs = []
    try:
        for seed in (1, 2):
            p = subprocess.run(uet_cmd("send", "--to", f"{rx.addr[0]}:{rx.addr[1]}", "--bytes",
                                       "1m", "--seed", str(seed), "--sd-key", path, "--json"),
                               capture_output=True, text=True, env=env(), timeout=60)
            assert p.returncode == 0, p.stderr
            out = json.loads(p.stdout)
            assert out["ok"] and out["tss"]["sdi"] == 1
            epochs.append(out["tss"]["epoch"])
        stdout, _ = rx.proc.communicate(timeout=30)
    finally:
        rx.proc.kill()
    summary = json.loads(stdout)
    assert summary["messages"] == 2
    assert summary["stats"]["tss_accepted"] > 0 and summary["stats"].get("tss_plain", 0) == 0
    assert summary["tss"]["epoch"] not in epochs  # the receiver's own ACKs: an epoch of its own
    assert len(set(epochs)) == 2  # F: a fresh epoch per process, so no IV repeats


@pytest.mark.trio
async def test_protected_requests_are_counted_per_entropy_port():
    """paths_used reads the PDS type, which TSS hides: protected data counts by its DSCP."""
    data = random.Random(2).randbytes(1 << 20)
    with trio.fail_after(30):
        async with protected_pair(3) as (srv, cli):
            await cli.send(LO, data)
            st = cli.stats
    assert st["paths_used"] == 4
