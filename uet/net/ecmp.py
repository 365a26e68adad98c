"""ECMP: which path a datagram takes. Switches hash the entropy value (uet-facts E.5: "every packet
carries an entropy value... switches hash it for ECMP"); over UDP the entropy is the source port of
a request and, since an answer echoes its request's entropy (A.1), the destination port of the
answer. So a request and its answers hash alike and take the same path back."""

from __future__ import annotations

import zlib

from .. import UET_UDP_PORT
from .config import NetConfig


def salt(seed: int) -> int:
    """The per-run salt a seed gives the hash (so that seeds differ in their path maps)."""
    return zlib.crc32((seed & ((1 << 64) - 1)).to_bytes(8, "big"))


class Ecmp:
    """``entropy_path(ev)``: "hash" (default) mixes the entropy value with the salt; "mod" takes
    it modulo the number of paths (consecutive values on consecutive paths).
    ``path(src, dst, sport, dport)`` finds the entropy of a datagram first: its source port,
    unless that is the UET port (an answer), then its destination port."""

    def __init__(self, cfg: NetConfig, *, uet_port: int = UET_UDP_PORT):
        self.paths = cfg.paths
        self.mode = cfg.ecmp
        self.uet_port = uet_port
        self._salt = salt(cfg.seed)
        self._cache: dict[int, int] = {}

    def entropy_path(self, ev: int) -> int:
        p = self._cache.get(ev)
        if p is None:
            if self.mode == "mod":
                p = ev % self.paths
            else:
                h = zlib.crc32(ev.to_bytes(4, "big"), self._salt)
                h ^= h >> 16
                p = ((h * 0x9E3779B1) & 0xFFFFFFFF) % self.paths
            if len(self._cache) >= 1 << 16:
                self._cache.clear()
            self._cache[ev] = p
        return p

    def path(self, src: str, dst: str, sport: int, dport: int) -> int:
        return self.entropy_path(dport if sport == self.uet_port else sport)
