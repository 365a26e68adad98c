"""ECMP: which path a datagram takes. Switches hash the entropy value (uet-facts E.5: "every packet
carries an entropy value... switches hash it for ECMP"); over UDP the entropy is the source port of
every UET datagram, requests and answers alike, since an answer copies its request's EV into its
own source port and goes to the UET port like any other (A.1, H.1 #19). So on these parallel
paths (``uet sim --topology paths:N``, the live relay) the path is a function of the EV in both
directions; the switched topologies of uet.sim.fabric hash each frame's own 5-tuple instead, so
there an ACK takes a path of its own, as in real fabrics."""

from __future__ import annotations

import zlib

from .config import NetConfig


def salt(seed: int) -> int:
    """The per-run salt a seed gives the hash (so that seeds differ in their path maps)."""
    return zlib.crc32((seed & ((1 << 64) - 1)).to_bytes(8, "big"))


class Ecmp:
    """``entropy_path(ev)``: "hash" (default) mixes the entropy value with the salt; "mod" takes
    it modulo the number of paths (consecutive values on consecutive paths).
    ``path(src, dst, sport, dport)`` is the path of a datagram's entropy: its source port (A.1)."""

    def __init__(self, cfg: NetConfig):
        self.paths = cfg.paths
        self.mode = cfg.ecmp
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
        return self.entropy_path(sport)
