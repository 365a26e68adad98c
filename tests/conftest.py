"""Shared test settings: hypothesis profiles (CI runs the default profile, derandomized), and the
fixtures several packages use."""

import json
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=150,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=150)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def decode_json(tmp_path, capsys):
    """``decode_json(frames)``: Ethernet frames written to a pcap and read back by ``uet decode
    --json``, one object per frame."""
    from uet.cli import main
    from uet.sim.frames import PcapWriter

    def run(frames: list[bytes]) -> list[dict]:
        path = tmp_path / "frames.pcap"
        with open(path, "wb") as fh:
            w = PcapWriter(fh)
            for i, f in enumerate(frames):
                w.write(i * 1e-6, f)
            w.flush()
        capsys.readouterr()
        assert main(["decode", "--json", str(path)]) == 0
        return [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    return run


def _can_bind_v6(addr: str) -> bool:
    import socket

    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
        try:
            s.bind((addr, 0))
        except OSError:
            return False
    return True


def _ensure_v6(addr: str) -> str:
    """``addr`` on lo (facts A.1: every endpoint receives on its own address at the UET port,
    and IPv6 loopback has only ::1): added as root with ``ip -6 addr add ADDR/128 dev lo`` when
    missing, and left there (other tests may be using it); skips otherwise."""
    import subprocess
    import time

    if not _can_bind_v6(addr) and os.geteuid() == 0:
        subprocess.run(["ip", "-6", "addr", "add", f"{addr}/128", "dev", "lo"],
                       capture_output=True, check=False)
        for _ in range(50):  # no duplicate address detection on lo; allow a moment all the same
            if _can_bind_v6(addr):
                break
            time.sleep(0.02)
    if not _can_bind_v6(addr):
        pytest.skip(f"needs a second IPv6 loopback address (root: ip -6 addr add {addr}/128 dev lo)")
    return addr


@pytest.fixture(scope="session")
def ipv6_second() -> str:
    """``::2`` on lo (see :func:`_ensure_v6`)."""
    return _ensure_v6("::2")


@pytest.fixture(scope="session")
def ipv6_third(ipv6_second) -> str:
    """``::3`` on lo as well (three endpoints: sender, relay, receiver)."""
    return _ensure_v6("::3")
