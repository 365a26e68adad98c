"""A target that acknowledges at the PDS and never answers at the semantic layer (facts D.7):
the project's sans-IO PDS endpoint (uet.pds.Endpoint) with its default upper layer (Accepting:
every request taken, no SES response ever) on a UDP socket of 127.0.0.1, served by a thread. Its
ACKs carry no SES response, so a sender's messages are acknowledged but never complete. Answers
go as A.1 says: to the initiator's UET port, from a socket bound to the request's EV."""

from __future__ import annotations

import socket
import threading
import time

from uet.pds import DatagramMeta, Endpoint, PdsConfig

LO = "127.0.0.1"


class MuteTarget:
    """``with MuteTarget() as t:`` serves ``t.addr`` until the block ends; ``t.pds`` is its
    endpoint (its counters: ``t.pds.stats``)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LO, 0))
        self.sock.settimeout(0.05)
        self.addr = self.sock.getsockname()
        self.pds = Endpoint(LO, PdsConfig(port=self.addr[1]), seed=7)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.ev_socks: dict[int, socket.socket] = {}

    def _ev_sock(self, ev: int) -> socket.socket:
        """The socket answers with entropy ``ev`` leave from (A.1: their source port is the EV)."""
        s = self.ev_socks.get(ev)
        if s is None:
            s = self.ev_socks[ev] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((LO, ev))
        return s

    def _serve(self) -> None:
        port = self.addr[1]
        while not self.stop.is_set():
            try:
                data, (src, sport) = self.sock.recvfrom(65535)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            now = time.monotonic()
            self.pds.receive_datagram(data, DatagramMeta(src, LO, sport, port, 0, 0), now)
            for out, meta in self.pds.datagrams_to_send(now):
                try:
                    self._ev_sock(meta.sport).sendto(out, (meta.dst, meta.dport))
                except OSError:
                    pass  # the sender is gone: nothing to answer

    def __enter__(self) -> "MuteTarget":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        for s in self.ev_socks.values():
            s.close()
