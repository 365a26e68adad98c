"""Fixtures of the live tests: `uet recv` as a subprocess (through uet.io.command.main until the
CLI is wired), with its stderr collected line by line."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = "import sys; from uet.io.command import main; sys.exit(main(sys.argv[1:]))"


def uet_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", RUN, *args]


def env() -> dict:
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


class RecvProcess:
    """A running `uet recv --bind 127.0.0.1:0 ...`; ``addr`` from its first stderr line.
    ``cli``: as `python -m uet recv` (the whole CLI imported, as a user runs it)."""

    def __init__(self, *args: str, cli: bool = False):
        argv = ("recv", "--bind", "127.0.0.1:0", *args)
        cmd = [sys.executable, "-m", "uet", *argv] if cli else uet_cmd(*argv)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env())
        self.lines: list[str] = []
        first = ""
        for _ in range(20):  # skip warnings (e.g. no C extension) before the banner
            first = self.proc.stderr.readline().decode()
            if "listening on" in first or not first:
                break
        if "listening on" not in first:
            self.proc.kill()
            raise RuntimeError(f"uet recv did not start: {first!r} {self.proc.stderr.read()!r}")
        self.lines.append(first)
        hostport = first.rsplit(" ", 1)[1].strip()
        host, port = hostport.rsplit(":", 1)
        self.addr = (host, int(port))
        self._t = threading.Thread(target=self._collect, daemon=True)
        self._t.start()

    def _collect(self) -> None:
        for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace"))

    def wait_line(self, needle: str, timeout: float = 5.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ln in list(self.lines):
                if needle in ln:
                    return ln
            time.sleep(0.02)
        raise AssertionError(f"no stderr line with {needle!r}; got {self.lines}")

    def stop(self, timeout: float = 10.0) -> tuple[int, bytes]:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self._t.join(2)
        return self.proc.returncode, out


@pytest.fixture(scope="module")
def uet_recv():
    """One `uet recv` serving all tests of a module (each test uses its own SPDCIDs)."""
    rp = RecvProcess("--json", "--max-pdcs", "256")
    try:
        yield rp
    finally:
        code, _ = rp.stop()
