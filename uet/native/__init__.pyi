"""Type stubs for uet.native (identical for the "c" and "python" backends)."""

import random
from typing import Final, Literal

_BytesLike = bytes | bytearray | memoryview

BACKEND: Literal["c", "python"]
"""Which backend is in use: "c" (cffi extension) or "python" (the twin)."""

NEW: Final[int]
"""PsnWindow.set result: the PSN was new and is now recorded (value 0)."""
DUPLICATE: Final[int]
"""PsnWindow.set result: at or before cack, or already received (value 1)."""
OUT_OF_WINDOW: Final[int]
"""PsnWindow.set result: beyond cack + size in serial order (value 2)."""

def crc32c_prefix(data: _BytesLike, length: int, crc: int = 0) -> int:
    """CRC-32C of the first ``length`` bytes of ``data`` (no copy), chained from ``crc``.
    Raises ValueError for a length outside 0..len(data)."""

def crc32c(data: _BytesLike, crc: int = 0) -> int:
    """CRC-32C (Castagnoli; reflected poly 0x82F63B78, init/xorout 0xFFFFFFFF).

    Chaining: ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
    ``crc32c(b"123456789") == 0xE3069283``; ``crc32c(b"") == 0``.
    ``crc`` is taken mod 2^32.
    """

def crc32(data: _BytesLike, crc: int = 0) -> int:
    """Ordinary zlib CRC-32 (IEEE 802.3), same chaining rule as zlib.crc32."""

def roce_icrc(ip_packet: _BytesLike) -> int:
    """RoCEv2 ICRC (docs/facts.md G.6) of an IP packet.

    ``ip_packet`` starts at the IPv4 or IPv6 header (version from the first
    nibble; IPv4 header length from IHL; for IPv6 the UDP header follows the
    40-byte fixed header) and runs to the end of the BTH payload and pad,
    excluding the 4 ICRC bytes.  On a masked copy (IPv4 TOS, TTL, header
    checksum; IPv6 traffic class, flow label, hop limit; UDP checksum; BTH
    byte 4 set to all ones) the result is the zlib CRC-32 of 8 bytes of 0xFF
    followed by the masked bytes.  Store it least-significant byte first.

    Raises ValueError for a packet too short to hold IP + UDP + BTH, an IPv4
    IHL below 5, or an IP version other than 4 and 6.
    """

def psn_diff(a: int, b: int) -> int:
    """Signed 32-bit serial difference ``a - b`` (inputs taken mod 2^32);
    result in [-2^31, 2^31)."""

def psn_lt(a: int, b: int) -> bool:
    """Serial-number comparison: ``psn_diff(a, b) < 0``."""

# The chunked, lazily allocated reassembly the protocol uses (its engines per chunk are the
# backends' contiguous ``Reassembly`` classes in _cbackend / _twin).
from .reassembly import CHUNK_BYTES as CHUNK_BYTES
from .reassembly import Reassembly as Reassembly

class PsnWindow:
    """Receive window over 32-bit PSNs with serial arithmetic (wraps at 2^32).

    Tracks PSNs in [cack + 1, cack + size].
    """

    def __init__(self, start_psn: int, size: int = 1024) -> None:
        """Expect ``start_psn`` first; ``cack`` starts at start_psn - 1 mod 2^32.

        Raises ValueError if start_psn is outside 0..2^32-1 or size outside
        1..2^24.
        """
    @property
    def handle(self) -> object:
        """The C window a C receive lane shares (uet.native.rxlane); None in the Python twin."""
    @property
    def cack(self) -> int:
        """Highest PSN such that it and all PSNs before it were received."""
    @property
    def size(self) -> int:
        """Window size in PSNs."""
    @property
    def highest(self) -> int:
        """Highest PSN received, in serial order (cack until one arrives)."""
    def set(self, psn: int) -> int:
        """Record ``psn`` and return NEW, DUPLICATE or OUT_OF_WINDOW.

        DUPLICATE: at or before cack, or already set.  OUT_OF_WINDOW: more
        than ``size`` after cack (serial).  NEW advances cack over the
        contiguous run of received PSNs.  ValueError if psn is not in
        0..2^32-1.
        """
    def test(self, psn: int) -> bool:
        """True iff ``psn`` was received; PSNs at or before cack count as received."""
    def sack_word(self, base_psn: int) -> int:
        """64-bit int: bit i set iff PSN (base_psn + i) mod 2^32 was received
        (PSNs at or before cack count as received)."""

def randbytes(rng: random.Random, n: int) -> bytes:
    """The next ``n`` bytes of ``rng``, advancing it: what ``rng.randbytes(n)`` returns, at any
    ``n`` (one randbytes call stops at 256 MiB). ValueError for a negative ``n``."""
