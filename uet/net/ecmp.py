"""ECMP: which path a datagram takes, for every topology and driver (the two-host paths of
``uet sim --topology paths:N`` and the live relay, the switches of ``leafspine``/``fattree``, the
RoCE fabric of ``uet compare``). Switches hash the entropy value (facts E.5: "every packet
carries an entropy value... switches hash it for ECMP"); over UDP the entropy is the source port of
every UET datagram, requests and answers alike, since an answer copies its request's EV into its
own source port and goes to the UET port like any other (A.1, H.1 #19).

  NET-M1  parallel paths (:class:`Ecmp`, ``paths:N`` and the live relay): the path is a function of
      the EV alone, so it is the same in both directions: "hash" (default) mixes the EV with a
      per-run salt (:func:`salt`), "mod" takes it modulo the number of paths.
  NET-M2  switches (:func:`five_tuple_key`, :func:`pick`): the input is the hash of the frame's own
      5-tuple bytes (IPv4 addresses and UDP ports, the source port being the EV), read once at the
      sender; each switch XORs its own salt (:func:`switch_salts`, so that switches do not all
      make the same choice) and spreads the result over its up ports by Fibonacci hashing. Each
      frame's own 5-tuple is hashed, so an ACK (addresses swapped, the UET port as destination)
      takes a path of its own, as in real fabrics. A RoCE QP's fixed source port pins it to one
      path the same way (uet.compare.ports COMPARE-R5).
"""

from __future__ import annotations

import random
import zlib
from typing import Iterable, Sequence, TypeVar

from .config import NetConfig

HASH_MUL = 0x9E3779B1  # Fibonacci hashing: spreads a salted CRC over the ports
T = TypeVar("T")


def salt(seed: int) -> int:
    """NET-M1: the per-run salt a seed gives the hash (so that seeds differ in their path maps)."""
    return zlib.crc32((seed & ((1 << 64) - 1)).to_bytes(8, "big"))


def five_tuple_key(frame: bytes) -> int:
    """NET-M2: the ECMP input of an Ethernet/IPv4/UDP frame (or its first 42 bytes): a CRC-32 of the
    IPv4 source and destination addresses and the UDP ports."""
    return zlib.crc32(frame[26:38])


def switch_salts(seed: int, names: Iterable[str]) -> dict[str, int]:
    """NET-M2: each switch's salt, drawn in ``names`` order from a generator the run's seed gives."""
    rng = random.Random(seed ^ 0xEC3F)
    return {n: rng.getrandbits(32) for n in names}


def pick(ports: Sequence[T], key: int, salt: int) -> T:
    """NET-M2: the up port a switch with ``salt`` gives a frame of 5-tuple hash ``key``."""
    return ports[(((key ^ salt) * HASH_MUL & 0xFFFFFFFF) >> 8) % len(ports)]


class Ecmp:
    """NET-M1. ``entropy_path(ev)``: "hash" (default) mixes the entropy value with the salt; "mod"
    takes it modulo the number of paths (consecutive values on consecutive paths).
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
                p = ((h * HASH_MUL) & 0xFFFFFFFF) % self.paths
            if len(self._cache) >= 1 << 16:
                self._cache.clear()
            self._cache[ev] = p
        return p

    def path(self, src: str, dst: str, sport: int, dport: int) -> int:
        return self.entropy_path(sport)
