"""Targets for the conformance tests: the reference endpoint (``uet recv`` as a subprocess, or
the same live endpoint in-process on a thread, which monkeypatches of its core can break, such as
:func:`answer_to_source_port`), bad UDP peers that never answer, answer garbage or flood, and a
break that contradicts every ACK of the in-process target with a NACK."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MKEY = 0x5EC0DE          # the memory region the in-process target exposes for the SES checks
MKEY_LEN = 4096


def env() -> dict:
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


class RecvProcess:
    """``uet recv --bind BIND --quiet``; ``addr`` read from its banner line."""

    def __init__(self, bind: str = "127.0.0.1:0") -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "uet.cli", "recv", "--bind",
                                      bind, "--quiet"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env(), cwd=ROOT)
        line = ""
        for _ in range(20):  # warnings (no C extension ...) may come before the banner
            line = self.proc.stderr.readline().decode()
            if "listening on" in line or not line:
                break
        if "listening on" not in line:
            self.proc.kill()
            raise RuntimeError(f"uet recv did not start: {line!r}")
        host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        self.addr = (host.strip("[]"), int(port))
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ThreadTarget:
    """The live endpoint (uet.io.open_endpoint, as ``uet recv`` opens it) on a trio thread,
    serving 127.0.0.1 with a registered region ``MKEY``. Patch its core before entering."""

    def __init__(self, **kw: Any) -> None:
        self.kw = kw
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.addr: tuple[str, int] = ("127.0.0.1", 0)

    async def _main(self) -> None:
        import trio

        from uet.io.endpoint import open_endpoint

        async with open_endpoint(("127.0.0.1", 0), paths=1, max_pdcs=1024, **self.kw) as ep:
            self.ep = ep
            ep.register(MKEY, bytearray(MKEY_LEN))
            self.addr = ("127.0.0.1", ep.port)
            self.token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as cs:
                self.cs = cs
                self.ready.set()
                while True:
                    await ep.receive()
            ep.skip_close = True

    def _run(self) -> None:
        import trio

        try:
            trio.run(self._main)
        except BaseException as exc:  # noqa: BLE001 - reported by __enter__ / __exit__
            self.error = exc
            self.ready.set()

    def __enter__(self) -> "ThreadTarget":
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.ready.wait(20) or self.error is not None:
            raise RuntimeError(f"the in-process target did not start: {self.error!r}")
        return self

    def __exit__(self, *exc: Any) -> None:
        import trio

        if self.error is None:
            trio.from_thread.run_sync(self.cs.cancel, trio_token=self.token)
        self.thread.join(10)
        assert self.error is None, self.error


def answer_to_source_port(monkeypatch) -> None:
    """The rule A.1 replaced: every answer of the in-process target leaves from its UET port to
    the request's source port (the initiator's EV), its trailer made for those ports, as this
    project did before issue 26 (and as the reference provider drops)."""
    from uet.io.engine import SocketEngine
    from uet.pds import DatagramMeta, seal

    def old_rule(self, data, meta):
        m2 = DatagramMeta(meta.src, meta.dst, self.uet_sock.port, meta.sport, meta.ecn, meta.dscp)
        return seal((data[:-4],), m2), m2, self.uet_sock

    monkeypatch.setattr(SocketEngine, "_ev_sock", lambda self, src, port: None)
    monkeypatch.setattr(SocketEngine, "_renat", old_rule)


class UdpTarget:
    """A plain UDP socket on 127.0.0.1 that ``behaviour`` answers from, to the UET port of the
    sender's address (A.1): "silent" (never reads), "garbage" (random bytes back for each
    datagram) or "flood" (thousands of datagrams back for each one: valid UET NACKs with a
    correct trailer, so that the suite sees a target that does answer, and far too much)."""

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.addr = self.sock.getsockname()
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        from uet.wire.build import uet_bytes
        from uet.wire.trailer import seal_udp

        rng = random.Random(5)
        self.sock.settimeout(0.05)
        while not self.stop_flag.is_set():
            try:
                _data, src = self.sock.recvfrom(65535)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            src = (src[0], self.addr[1])  # A.1: answers go to the UET port
            try:
                if self.behaviour == "garbage":
                    for _ in range(3):
                        self.sock.sendto(rng.randbytes(rng.randrange(1, 80)), src)
                elif self.behaviour == "flood":
                    body = uet_bytes({"type": 10, "nack_code": 0x19, "nack_psn": 1, "spdcid": 9,
                                      "dpdcid": 9})
                    pkt = seal_udp(body, self.addr[0], src[0], self.addr[1], src[1])
                    for _ in range(3000):
                        if self.stop_flag.is_set():
                            break
                        try:
                            self.sock.sendto(pkt, src)
                        except BlockingIOError:
                            pass
            except OSError:
                pass

    def __enter__(self) -> "UdpTarget":
        if self.behaviour != "silent":
            self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_flag.set()
        if self.thread.is_alive():
            self.thread.join(5)
        self.sock.close()


def ack_then_nack(monkeypatch) -> None:
    """A target that contradicts itself (issue 25 item 6): after every ACK the in-process target
    sends (not a probe's, B.7) comes a NACK NO_RESOURCE of that ACK's ACK_PSN from the same PDC,
    ports and DSCP, its trailer sealed for them; C.5 says an ACKed PSN is never NACKed."""
    from uet.io.engine import SocketEngine
    from uet.pds import seal
    from uet.wire.build import uet_bytes
    from uet.wire.packet import decode_uet

    orig = SocketEngine._send_batch

    def contradicting(self, out, start=0):
        more = []
        for data, meta in out[start:]:
            more.append((data, meta))
            pds = decode_uet(data, None, trailer="none").layer.get("pds") or {}
            if pds.get("type") in (7, 8, 9) and not pds.get("p"):
                nack = uet_bytes({"type": 10, "nack_code": ACK_THEN_NACK_CODE,
                                  "nack_psn": pds["ack_psn"], "spdcid": pds["spdcid"],
                                  "dpdcid": pds["dpdcid"]})
                more.append((seal((nack,), meta), meta))
        return orig(self, more)

    monkeypatch.setattr(SocketEngine, "_send_batch", contradicting)


ACK_THEN_NACK_CODE = 0x0A   # NO_RESOURCE (B.11)
