"""Targets for the conformance tests: the reference endpoint (``uet recv`` as a subprocess, or
the same live endpoint in-process on a thread, which monkeypatches of its core can break), bad
UDP peers that never answer, answer garbage or flood, and a relay that contradicts a working
target's every ACK with a NACK."""

from __future__ import annotations

import os
import random
import socket
import struct
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


class UdpTarget:
    """A plain UDP socket on 127.0.0.1 that ``behaviour`` answers from: "silent" (never reads),
    "garbage" (random bytes back for each datagram) or "flood" (thousands of datagrams back for
    each one: valid UET NACKs with a correct trailer, so that the suite sees a target that does
    answer, and far too much)."""

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


class AckThenNack:
    """A target that contradicts itself: a UDP relay in front of ``backend`` (a working target,
    e.g. ``uet recv``) that passes every datagram both ways, trailer resealed for its own
    5-tuples (A.3) and TOS kept, and after each ACK it relays sends a NACK NO_RESOURCE of that
    ACK's ACK_PSN from the same PDC (issue 25 item 6: C.5 says an ACKed PSN is never NACKed).
    One back socket per client port: the backend answers each to the port a request came from.
    ``contradict=False``: the relay alone (the control)."""

    NACK_CODE = 0x0A   # NO_RESOURCE (B.11)

    def __init__(self, backend: tuple[str, int], *, contradict: bool = True):
        self.backend = backend
        self.contradict = contradict
        self.front = self._socket()
        self.addr = self.front.getsockname()
        self.backs: dict[tuple, socket.socket] = {}      # client -> its back socket
        self.clients: dict[socket.socket, tuple] = {}    # back socket -> client
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @staticmethod
    def _socket() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_RECVTOS", 13), 1)
        return s

    @staticmethod
    def _send(out: socket.socket, data: bytes, tos: int, dst: tuple) -> None:
        out.sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))], 0, dst)

    def _relay(self, data: bytes, tos: int, out: socket.socket, dst: tuple, came: tuple,
               to: tuple) -> None:
        """``data`` (from ``came`` to ``to``) sent from ``out`` to ``dst``, its trailer resealed
        when it verified (a trimmed or damaged one goes as it came)."""
        from uet.wire.trailer import seal_udp, udp_trailer_ok

        if udp_trailer_ok(data, came[0], to[0], came[1], to[1]):
            src = out.getsockname()
            data = seal_udp(data[:-4], src[0], dst[0], src[1], dst[1])
        self._send(out, data, tos, dst)

    def _contradict(self, data: bytes, client: tuple) -> None:
        """After an ACK (not a probe's, B.7): the NACK of its ACK_PSN, DSCP 46 as ACKs go."""
        from uet.wire.build import uet_bytes
        from uet.wire.packet import decode_uet
        from uet.wire.trailer import seal_udp

        pds = decode_uet(data, None, trailer="none").layer.get("pds") or {}
        if pds.get("type") in (7, 8, 9) and not pds.get("p"):
            nack = uet_bytes({"type": 10, "nack_code": self.NACK_CODE, "nack_psn": pds["ack_psn"],
                              "spdcid": pds["spdcid"], "dpdcid": pds["dpdcid"]})
            self._send(self.front, seal_udp(nack, self.addr[0], client[0], self.addr[1],
                                            client[1]), 46 << 2, client)

    def _serve(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.front, selectors.EVENT_READ)
        while not self.stop_flag.is_set():
            for key, _ in sel.select(0.05):
                s = key.fileobj
                try:
                    data, anc, _f, src = s.recvmsg(65535, 64)
                except OSError:
                    continue
                tos = next((d[0] for _l, _k, d in anc if d), 0)
                if s is self.front:
                    back = self.backs.get(src)
                    if back is None:
                        back = self.backs[src] = self._socket()
                        self.clients[back] = src
                        sel.register(back, selectors.EVENT_READ)
                    self._relay(data, tos, back, self.backend, src, self.addr)
                else:
                    client = self.clients[s]
                    self._relay(data, tos, self.front, client, src, s.getsockname())
                    if self.contradict:
                        self._contradict(data, client)
        sel.close()

    def __enter__(self) -> "AckThenNack":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_flag.set()
        self.thread.join(5)
        for s in [self.front, *self.backs.values()]:
            s.close()
