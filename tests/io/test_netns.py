"""Test bed 3 (docs/design-notes.md): sender and receiver in two network namespaces joined by several veth
pairs, with an ECMP route hashing on L4 ports (net.ipv4.fib_multipath_hash_policy = 1), so that
the kernel itself spreads the entropy values (UDP source ports) over the paths.

Two details that decide whether the kernel spreads at all (found while building this bed):
  * the veths get MTU 9000, so that the default payload per packet is 8 KiB (facts A.1: the
    largest of 1024..8192 that fits; datagrams are never fragmented, and a fragment would carry no
    ports for the kernel's L4 hash);
  * the sender's address lives on its loopback (10.200.0.1/32) and the sockets bind it: recent
    kernels prefer a nexthop whose own source address equals the socket's, so a socket bound to
    a veth address keeps to that veth whatever the hash says.
Skipped unless root with `ip netns`. Namespaces are deleted in a finally.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess

import pytest

from .conftest import env, uet_cmd
from .netns import ip as _ip
from .netns import namespaces, why_not

PATHS = 4
SRC, DST = "10.200.0.1", "10.200.1.1"


def _tx_packets(ns: str, dev: str) -> int:
    out = _ip("-n", ns, "-s", "-j", "link", "show", "dev", dev).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["packets"])


@pytest.fixture
def two_namespaces():
    why = why_not(tools=("ip",))
    if why:
        pytest.skip(why)
    with namespaces("") as (a, b):
        _ip("-n", a, "addr", "add", f"{SRC}/32", "dev", "lo")
        _ip("-n", b, "addr", "add", f"{DST}/32", "dev", "lo")
        nh_a, nh_b = [], []
        for i in range(PATHS):
            _ip("link", "add", f"va{i}", "netns", a, "type", "veth", "peer", "name", f"vb{i}", "netns", b)
            _ip("-n", a, "addr", "add", f"10.201.{i}.1/24", "dev", f"va{i}")
            _ip("-n", b, "addr", "add", f"10.201.{i}.2/24", "dev", f"vb{i}")
            _ip("-n", a, "link", "set", f"va{i}", "mtu", "9000", "up")
            _ip("-n", b, "link", "set", f"vb{i}", "mtu", "9000", "up")
            nh_a += ["nexthop", "via", f"10.201.{i}.2", "dev", f"va{i}", "weight", "1"]
            nh_b += ["nexthop", "via", f"10.201.{i}.1", "dev", f"vb{i}", "weight", "1"]
        _ip("-n", a, "route", "add", f"{DST}/32", *nh_a)
        _ip("-n", b, "route", "add", f"{SRC}/32", *nh_b)
        for ns in (a, b):
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                            "net.ipv4.fib_multipath_hash_policy=1", "net.ipv4.conf.all.rp_filter=0",
                            "net.ipv4.conf.default.rp_filter=0"], check=True, timeout=20)
        yield a, b


def test_ecmp_over_veth_spreads_entropy(two_namespaces, tmp_path):
    a, b = two_namespaces
    n = 8 << 20
    data = random.Random(77).randbytes(n)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    out = tmp_path / "out.bin"
    before = {i: _tx_packets(a, f"va{i}") for i in range(PATHS)}
    rx = subprocess.Popen(["ip", "netns", "exec", b, *uet_cmd("recv", "--bind", f"{DST}:4793",
                                                               "--count", "1", "--out", str(out), "--quiet")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        line = rx.stderr.readline().decode()
        assert "listening on" in line, line
        tx = subprocess.run(["ip", "netns", "exec", a, *uet_cmd(
            "send", "--to", f"{DST}:4793", "--local", SRC, str(src), "--paths", "8", "--json",
            "--timeout", "30")], capture_output=True, text=True, env=env(), timeout=60)
        assert tx.returncode == 0, tx.stderr
        assert rx.wait(timeout=30) == 0
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    res = json.loads(tx.stdout)
    assert res["ok"] and res["sha256"] == hashlib.sha256(data).hexdigest()
    assert res["mtu"] == 8192  # A.1: the largest payload that fits the veths' MTU 9000
    assert out.read_bytes() == data
    carried = {i: _tx_packets(a, f"va{i}") - before[i] for i in range(PATHS)}
    # the kernel's L4 hash put the entropy values on more than one veth (each path that carried
    # data saw at least a few dozen 8 KiB packets, not just neighbour discovery)
    busy = [i for i, c in carried.items() if c > 50]
    assert len(busy) > 1, carried
    assert sum(carried.values()) >= n // 8192
