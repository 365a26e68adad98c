"""An address in use is one line naming it and what to do, exit status 2 (OWNADDR-O2 of
uet.ownaddr), never a bare "[Errno 98] Address already in use": uet recv --bind, uet fabric
--back."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from .conftest import env


@pytest.fixture
def held():
    """A UDP socket holding 127.0.0.1 at a free port, as another uet process would."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    yield s.getsockname()[1]
    s.close()


def _run(*args: str) -> tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-m", "uet", *args], capture_output=True, text=True, env=env(),
                       timeout=60)  # a hang guard: a bind that succeeded would serve
    return p.returncode, p.stdout, p.stderr


def test_recv_bind_in_use_names_the_address_and_the_option(held):
    rc, out, err = _run("recv", "--bind", f"127.0.0.1:{held}", "--count", "1")
    assert rc == 2 and out == ""
    assert err == (f"uet recv: 127.0.0.1:{held} is in use (another uet process on this host?): "
                   "the receiver receives on its own address at the UET port (facts A.1); stop "
                   "that process, or give another address with --bind\n")


def test_recv_wildcard_bind_over_a_held_port_says_why(held):
    rc, _, err = _run("recv", "--bind", f"0.0.0.0:{held}", "--count", "1")
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"uet recv: 0.0.0.0:{held}: UDP port {held} is already bound on an "
                          "address of this host")
    assert err.rstrip().endswith("give one address or another port with --bind")
    assert "Errno" not in err


def test_fabric_back_address_in_use_names_it_and_back(held):
    rc, _, err = _run("fabric", "--to", f"127.0.0.1:{held}", "--back", "127.0.0.1",
                      "--duration", "1", "--interval", "0")
    assert rc == 2 and "Errno" not in err
    assert err == (f"uet fabric: 127.0.0.1:{held} is in use (another uet process on this host?): "
                   "the relay's back side receives on its own address at the UET port (facts "
                   "A.1); stop that process, or give another address with --back\n")
