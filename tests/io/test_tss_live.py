"""TSS on the live endpoint (issue 18; uet-facts B.15, F; H5 of uet.host): the forgery the issue
opens with - twenty 4 KiB requests from another port of 127.0.0.1 - is delivered without TSS and
dropped and counted with it, while a protected transfer beside it completes by hash; and the
command line: ``uet send``/``uet recv --sd-key``, key files others may read refused, and two
runs from one key file never sharing an epoch (so never an IV)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from contextlib import asynccontextmanager

import pytest
import trio

from uet.io import open_endpoint
from uet.tss import SecureDomain, SecurityConfig, write_key_file

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
