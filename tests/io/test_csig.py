"""CSIG tags at the live endpoint (rules IO-T1, IO-T2 of uet.io.engine; facts E.4): stripped ahead of
the core, reflected and used through the live fabric, counted when bad or not asked for; the
entropy-selection kinds and congestion control of ``open_endpoint``, ``uet send`` and ``uet recv``.
Loopback only, every run bounded."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
import trio

from uet.cms.choice import pds_overrides
from uet.cms.csig import ABW, CSIG_ETHERTYPE, TYPE_BY_NAME, neutral
from uet.fabric import FabricConfig, open_fabric
from uet.io.endpoint import open_endpoint
from uet.multipath import SELECTOR_KINDS, SelectorFactory

from .conftest import RecvProcess, env, uet_cmd

LO = "127.0.0.1"
TPID = CSIG_ETHERTYPE.to_bytes(2, "big")
KIB = 1 << 10


async def _until(pred, poll: float = 0.005) -> None:
    while not pred():
        await trio.sleep(poll)


def _raw(dest: tuple, *datagrams: bytes) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for d in datagrams:
            s.sendto(d, dest)


@pytest.mark.trio
@pytest.mark.parametrize("csig", [None, ABW])
async def test_short_or_stray_tags_are_counted_and_the_endpoint_goes_on(csig):
    """IO-T2: a datagram starting with the TPID but shorter than a tag is counted and dropped; a
    lone 0x99 is no tag (the core reads it, and refuses it); IO-T1: a tag ahead of garbage goes
    to the core like any garbage. The endpoint serves a transfer afterwards."""
    extra = {} if csig is None else {"csig": csig}
    with trio.fail_after(20):
        async with open_endpoint((LO, 0), paths=1, **extra) as rx:
            _raw((LO, rx.port), b"\x99\x00", b"\x99\x00\x07", b"\x99",
                 TPID + neutral(ABW).to_bytes(2, "big") + b"\x00" * 11)
            await _until(lambda: rx.io["rx_datagrams"] >= 4)
            st = rx.stats
            assert st["csig_bad"] == 2
            assert st["io_csig_tags" if csig is not None else "io_csig_unasked"] == 1
            assert st.get("internal_error", 0) == 0
            async with open_endpoint(None, peer_port=rx.port, paths=2, **extra) as tx:
                await tx.send(LO, b"x" * (64 * KIB))
                assert bytes((await rx.receive()).data) == b"x" * (64 * KIB)
            assert rx.stats["csig_bad"] == 2


async def _through_fabric(rx_kw: dict, tx_kw: dict, fab_cfg: FabricConfig, nbytes: int,
                          alias: bool = True) -> tuple[dict, dict, dict, list, list]:
    """One message through the live fabric: (rx stats, tx stats, fabric counters, tx selectors,
    tx entropy ports)."""
    payload = bytes(range(256)) * (nbytes // 256)
    with trio.fail_after(30):
        async with open_endpoint((LO, 0), paths=1, **rx_kw) as rx:
            async with open_fabric(to=(LO, rx.port), config=fab_cfg) as fab:
                kw = dict(tx_kw)
                if alias:
                    kw["ev_alias"] = fab.entropy_of
                async with open_endpoint(None, peer_port=fab.port, paths=fab_cfg.paths,
                                         **kw) as tx:
                    await tx.send(fab.host, payload)  # the relay's address (A.1)
                    got = await rx.receive()
                    assert bytes(got.data) == payload
                    now = trio.current_time()
                    sels = list(tx.selectors)
                    fresh = [set(s.paths(now)) for s in sels if hasattr(s, "paths")]
                    tx_stats, ports = tx.stats, tx.entropy_ports
                await fab.drain()
                counters = fab.counters()
                fwd = counters["totals"]["fwd"]["forwarded"]
                await _until(lambda: rx.io["rx_datagrams"] >= fwd)  # all read
            rx_stats = rx.stats
    return rx_stats, tx_stats, counters, fresh, ports


@pytest.mark.trio
async def test_tags_are_stripped_reflected_and_steer_the_sender():
    """IO-T1 with csig on at both ends: the receiver hands every tag to its core, which reflects
    them; the sender's CSIG selector hears them under its own entropy ports (ev_alias)."""
    cfg = FabricConfig(paths=4, csig="abw", rate_gbps=1.0)
    rx, tx, c, fresh, ports = await _through_fabric(
        {"csig": ABW}, {"csig": ABW, "spray": "reps"}, cfg, 2 << 20)
    assert rx["io_csig_tags"] == c["totals"]["fwd"]["forwarded"] > 0
    assert rx["csig_bad"] == rx["csig_unasked"] == 0
    assert tx["io_csig_tags"] > 0 and tx["csig_unasked"] == 0  # the answers' neutral tags
    assert fresh and fresh[0] and fresh[0] <= set(ports)  # reflected EVs mapped to ours
    assert rx["bad_crc"] == tx["bad_crc"] == 0


@pytest.mark.trio
async def test_a_misconfigured_pair_still_works():
    """IO-T1 with csig off at both ends behind a tagging fabric: tags stripped, counted, ignored."""
    cfg = FabricConfig(paths=2, csig="delay")
    rx, tx, c, fresh, _ = await _through_fabric({}, {}, cfg, 1 << 20, alias=False)
    assert rx["csig_unasked"] >= c["totals"]["fwd"]["forwarded"] > 0
    assert tx["csig_unasked"] >= 1 and rx.get("io_csig_tags", 0) == tx.get("io_csig_tags", 0) == 0
    assert fresh == []  # no CSIG selector without csig


@pytest.mark.trio
@pytest.mark.parametrize("kind", SELECTOR_KINDS)
async def test_every_spray_kind_over_the_entropy_sockets(kind):
    with trio.fail_after(20):
        async with open_endpoint((LO, 0), paths=1) as rx:
            async with open_endpoint(None, peer_port=rx.port, paths=4, spray=kind) as tx:
                await tx.send(LO, b"y" * (256 * KIB))
                assert len((await rx.receive()).data) == 256 * KIB
                used = {p for p, n in tx.tx_data_by_port.items() if n}
                assert used <= set(tx.entropy_ports)
                assert len(used) == 1 if kind == "single" else len(used) > 1
                # the core builds its selectors with uet.multipath, from the sockets' ports
                factory = tx.core.config.entropy_factory
                assert type(factory) is SelectorFactory and factory.made == tx.selectors
                assert factory.spec.values == tuple(tx.entropy_ports)
    with pytest.raises(ValueError, match="unknown entropy selection"):
        async with open_endpoint(None, peer_port=rx.port, spray="bogus"):
            pass


@pytest.mark.trio
@pytest.mark.parametrize("cc", ["nscc", "rccc"])
async def test_nscc_and_rccc_on_both_ends(cc):
    fields = pds_overrides(cc, rate_gbps=10.0, base_rtt=1e-3, window_bytes=1 << 20)
    with trio.fail_after(30):
        async with open_endpoint((LO, 0), paths=1, **fields) as rx:
            async with open_endpoint(None, peer_port=rx.port, paths=4, spray="reps",
                                     **fields) as tx:
                await tx.send(LO, b"z" * (1 << 20))
                assert len((await rx.receive()).data) == 1 << 20
                init = [p for p in tx.core.pdcs() if p.role == "initiator"][0]
                assert type(init.cc).__name__ == cc.capitalize()
                if cc == "rccc":
                    c = init.cc.counters  # CMS-R1 of uet.cms.rccc: one MTU without a grant
                    assert c["granted"] + c["initial"] >= 1 << 20 and c["granted"] > 0


# --- uet send / uet recv -------------------------------------------------------------------------

def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(uet_cmd(*args), capture_output=True, text=True, env=env(),
                          timeout=timeout)


@pytest.mark.parametrize("argv, needle", [
    (["send", "--to", f"{LO}:9", "--bytes", "1", "--cc", "cubic"], "argument --cc"),
    (["send", "--to", f"{LO}:9", "--bytes", "1", "--spray", "bogus"], "argument --spray"),
    (["send", "--to", f"{LO}:9", "--bytes", "1", "--csig", "ecn"], "argument --csig"),
    (["send", "--to", f"{LO}:9", "--bytes", "1", "--cc-rate", "0"], "argument --cc-rate"),
    (["recv", "--cc-rtt", "-1"], "argument --cc-rtt"),
    (["recv", "--csig", "x"], "argument --csig"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    from uet.io.command import main

    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and needle in lines[0] and lines[1].startswith("try ")


def test_send_and_recv_with_csig_and_rccc_through_uet_fabric():
    """Three processes: uet recv and uet send with --csig abw --cc rccc, uet fabric --csig abw
    between them; the receiver reflected tags, the sender's selector heard them."""
    rp = RecvProcess("--csig", "abw", "--cc", "rccc", "--count", "1", "--json", "--quiet")
    fab = subprocess.Popen([*uet_cmd()[:2], "import sys; from uet.fabric.command import main; "
                            "sys.exit(main(sys.argv[1:]))", "--to",
                            "%s:%d" % rp.addr, "--csig", "abw", "--interval", "0", "--json",
                            "--duration", "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        first = fab.stderr.readline().decode()
        assert "listening on" in first, first
        host, port = first.split("listening on ")[1].split(",")[0].split(" ")[0].rsplit(":", 1)
        r = _run("send", "--to", f"{host}:{port}", "--bytes", "2m", "--csig", "abw", "--cc", "rccc",
                 "--spray", "oblivious", "--paths", "4", "--json", "--timeout", "30")
        assert r.returncode == 0, r.stderr
        code = rp.proc.wait(timeout=20)
        rout = rp.proc.stdout.read().decode()
    finally:
        rp.stop()
        fab.kill()
        fab.wait()
    sent = json.loads(r.stdout)
    got = json.loads(rout)
    assert code == 0 and sent["ok"] and got["ok"] and got["sha256"] == sent["sha256"]
    assert (sent["cc"], sent["spray"], sent["csig"]) == ("rccc", "oblivious", "abw")
    assert got["cc"] == "rccc" and got["csig"] == "abw"
    assert sent["mtu"] == 8192  # A.1: loopback's default payload per packet
    assert got["stats"]["io_csig_tags"] >= (2 << 20) // 8192 and got["stats"]["csig_bad"] == 0
    assert sent["stats"]["io_csig_tags"] > 0 and sent["stats"]["csig_unasked"] == 0
    assert TYPE_BY_NAME[sent["csig"]] == ABW
