"""The namespace test bed's tools, shared by the tests that build it (docs/design-notes.md test bed 3):
``ip`` commands, whether this machine can run the bed, two namespaces joined by one veth pair
(IPv4 or IPv6, a given MTU, waited for until both ends carry traffic), and a tcpdump capture on
one end that keeps every frame. Everything is removed in a finally; traffic stays inside."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from typing import Iterator

#: (sender address, receiver address, prefix length) per IP version
ADDRS = {4: ("10.203.0.1", "10.203.0.2", 24), 6: ("fd00:203::1", "fd00:203::2", 64)}


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=20)


def why_not(*, tools: tuple[str, ...] = ("ip", "tcpdump")) -> str | None:
    """Why the bed cannot run here (a skip reason), or None; ``tools``: the commands it needs."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"needs {tool} (.ci/run installs it from Debian's packages)"
    name = f"uetprobe{os.getpid()}"
    r = ip("netns", "add", name, check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    ip("netns", "del", name, check=False)
    return None


def _settle(links: list[tuple[str, str]]) -> None:
    """Wait (bounded) until both ends are up with carrier and no tentative address: a fresh veth
    drops what it is given before (seen with IPv6: the first answer of a conformance run was lost,
    and the suite, which does not retransmit, judged the target silent)."""
    for _ in range(200):
        if all("state UP" in ip("-n", ns, "-o", "link", "show", "dev", dev).stdout
               and not ip("-n", ns, "-o", "addr", "show", "dev", dev, "tentative").stdout.strip()
               for ns, dev in links):
            return
        time.sleep(0.05)
    raise AssertionError(f"the veth pair {links} never came up")


@contextlib.contextmanager
def namespaces(tag: str) -> Iterator[tuple[str, str]]:
    """Namespaces ``uet<tag>A`` and ``uet<tag>B`` (with the pid), loopback up; deleted after."""
    a, b = f"uet{tag}A{os.getpid()}", f"uet{tag}B{os.getpid()}"
    made = []
    try:
        for ns in (a, b):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        for ns in made:
            ip("netns", "del", ns, check=False)


@contextlib.contextmanager
def veth_pair(tag: str, *, mtu: int, version: int = 4) -> Iterator[tuple[str, str, str]]:
    """:func:`namespaces` joined by the veth ``v<tag>a`` - ``v<tag>b`` at ``mtu``, addressed from
    :data:`ADDRS` (IPv6 without DAD); yields (A, B, the device in A)."""
    dev_a, dev_b = f"v{tag}a", f"v{tag}b"
    with namespaces(tag) as (a, b):
        ip("link", "add", dev_a, "netns", a, "type", "veth", "peer", "name", dev_b, "netns", b)
        src, dst, plen = ADDRS[version]
        extra = ["nodad"] if version == 6 else []
        for ns, dev, addr in ((a, dev_a, src), (b, dev_b, dst)):
            ip("-n", ns, "addr", "add", f"{addr}/{plen}", "dev", dev, *extra)
            ip("-n", ns, "link", "set", dev, "mtu", str(mtu), "up")
        _settle([(a, dev_a), (b, dev_b)])
        yield a, b, dev_a


class Capture:
    """tcpdump on ``dev`` in ``ns``, both directions, every byte of every frame. Immediate mode
    and a 64 MiB ring: without them a short transfer's frames were never written, and a 1 MiB
    one lost more than half of them."""

    def __init__(self, ns: str, dev: str, path: str):
        self.path = path
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-s", "0",
                                      "-U", "--immediate-mode", "-B", "65536", "-n", "-w", path,
                                      "ip or ip6"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = self.proc.stderr.readline().decode()  # "listening on ..." once it captures
        assert "listening on" in line, line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=30)
