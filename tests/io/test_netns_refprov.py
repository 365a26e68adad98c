"""Issue 26's test bed: `uet send --ses-header standard` to `uet recv` between two network
namespaces joined by a veth pair (MTU 1500 and 9000), every frame on the veth captured and judged
by the UEC reference provider's receive rules (uet.capture.refprov, facts A.1, A.3): UET
port 4793 for every datagram, each answer from the EV of its request, DF and no fragments, only
standard request headers and no small response, the CRC trailer; and the payload per packet the
largest of 1024/2048/4096/8192 that fits the link (1024 at MTU 1500, 8192 at 9000).

Skipped unless root with `ip netns` and tcpdump (.ci/run installs it). Namespaces are deleted in
a finally; traffic stays inside them.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess

import pytest

from uet.capture.refprov import check_capture

from .conftest import env, uet_cmd
from .netns import ADDRS, Capture, why_not
from .netns import veth_pair as netns_veth_pair

SRC, DST, _ = ADDRS[4]
DEFAULT_PAYLOAD = {1500: 1024, 9000: 8192}  # A.1: the reference's sizes, the largest that fits


@pytest.fixture(params=[1500, 9000], ids=["mtu1500", "mtu9000"])
def veth_pair(request):
    why = why_not()
    if why:
        pytest.skip(why)
    with netns_veth_pair("R", mtu=request.param) as (a, b, dev):
        yield a, b, request.param, dev


def _recv(ns: str, out: str) -> subprocess.Popen:
    rx = subprocess.Popen(["ip", "netns", "exec", ns, *uet_cmd(
        "recv", "--bind", f"{DST}:4793", "--count", "1", "--out", out, "--quiet")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    line = rx.stderr.readline().decode()
    assert "listening on" in line, line
    return rx


def _send(ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *uet_cmd(
        "send", "--to", f"{DST}:4793", "--local", SRC, "--json", "--timeout", "60", *args)],
        capture_output=True, text=True, env=env(), timeout=180)


def _request_payloads(path: str) -> list[int]:
    from uet.capture.frame import DecodeConfig, decode_frame
    from uet.capture.pcap import read_frames

    sizes = []
    for n, (linktype, raw, _t) in enumerate(read_frames(path), 1):
        obj = decode_frame(linktype, raw, n, DecodeConfig()).obj
        pds = obj.get("uet", {}).get("pds", {})
        if pds.get("type_name") in ("RUD_REQ", "ROD_REQ", "RUD_CC_REQ", "ROD_CC_REQ"):
            sizes.append(obj["uet"]["payload_len"])
    return sizes


@pytest.mark.slow
@pytest.mark.parametrize("size,paths", [(1 << 20, 4), (100, 1)], ids=["1MiB-4paths", "100B"])
def test_a1_a3_a_transfer_between_namespaces_passes_the_reference_receive_rules(
        veth_pair, tmp_path, size, paths):
    a, b, mtu, dev = veth_pair
    data = random.Random(size).randbytes(size)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    out = tmp_path / "out.bin"
    pcap = str(tmp_path / "veth.pcap")
    cap = Capture(a, dev, pcap)
    rx = None
    try:
        rx = _recv(b, str(out))
        tx = _send(a, str(src), "--paths", str(paths), "--ses-header", "standard")
        assert tx.returncode == 0, tx.stderr
        assert rx.wait(timeout=60) == 0
    finally:
        cap.stop()
        if rx is not None and rx.poll() is None:
            rx.kill()
            rx.wait()
    res = json.loads(tx.stdout)
    assert res["sha256"] == hashlib.sha256(data).hexdigest()
    assert out.read_bytes() == data
    report = check_capture(pcap, max_payload=DEFAULT_PAYLOAD[mtu])
    assert report.ok, report.text()
    assert report.requests > 0 and report.answers > 0
    assert report.paired == report.answers, report.text()  # every answer's request is captured
    sizes = _request_payloads(pcap)
    if size > DEFAULT_PAYLOAD[mtu]:
        assert max(sizes) == DEFAULT_PAYLOAD[mtu], sizes  # A.1: the default payload per packet
    else:
        assert sizes and set(sizes) == {size}


def test_a1_a_payload_that_does_not_fit_the_link_is_one_line_and_exit_2(veth_pair, tmp_path):
    a, b, mtu, _dev = veth_pair
    if mtu != 1500:
        pytest.skip("4096 bytes fit at MTU 9000")
    src = tmp_path / "data.bin"
    src.write_bytes(bytes(64 << 10))
    rx = _recv(b, str(tmp_path / "out.bin"))
    try:
        tx = _send(a, str(src), "--mtu", "4096")
    finally:
        rx.kill()
        rx.wait()
    assert tx.returncode == 2, (tx.returncode, tx.stderr)
    err = [ln for ln in tx.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "1500" in err[0] and "--mtu" in err[0], err
