"""UUD: unreliable unordered datagrams, connectionless and sans-IO.

RULES (each names its docs/facts.md row; "choice" marks a project decision)
==========================================================================
  PDS-D1  B.14: UUD request type 6, 4-byte header, next_hdr = the SES header type (normally 3), flags 0.
  PDS-D2  C.8: single-packet datagrams (DATAGRAM_SEND only, checked by the SES): no PDC, no ACK, no
      response, never retransmitted; what is lost stays lost.
  PDS-D3  A.3: the CRC-32C trailer must verify; a corrupted datagram is dropped and counted, never
      delivered (``bad_crc``).
  PDS-D4  C.6 / choice: a trimmed datagram (DSCP 11) is dropped and counted: UUD has no NACK to
      send (no PSN or pkt_id names it) and nobody would resend it.
  PDS-D5  docs/design-notes.md principle 6: nothing raises out of receive_datagram.
  PDS-D6  choice: ``mtu`` bounds the SES bytes of one datagram (send_datagram refuses longer ones).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from .. import UET_UDP_PORT
from ..errors import DecodeError
from ..wire.trailer import TRAILER_LEN as TRAILER
from .datagram import DSCP_DATA, DSCP_TRIMMED, ECT0, DatagramMeta, Outbox, seal, trailer_ok
from .rudi import UUD_REQ

UUD_HEADER_LEN = 4


@dataclass(frozen=True, slots=True)
class UudDatagram:
    meta: DatagramMeta
    next_hdr: int
    ses: bytes


class UudEndpoint(Outbox):
    def __init__(self, address: str, *, port: int = UET_UDP_PORT, mtu: int = 4096 + 64,
                 entropy_base: int = 49152, entropy_values: int = 64):
        self.address = address
        self.port = port
        self.mtu = mtu
        self.entropy_base = entropy_base
        self.entropy_values = max(1, entropy_values)
        self.stats: Counter[str] = Counter()
        self._tx: list[tuple[bytes, DatagramMeta]] = []
        self._events: deque[Any] = deque()
        self._n = 0

    def get_timer(self) -> float | None:
        return None  # PDS-D2: nothing is ever retransmitted

    def handle_timer(self, now: float) -> None:
        return None

    def send_datagram(self, dst: str, ses: bytes, *, next_hdr: int = 3, dport: int | None = None) -> bool:
        """Queue one datagram (PDS-D1); False (and counted) when longer than ``mtu`` (PDS-D6)."""
        self.used = True
        if len(ses) > self.mtu:
            self.stats["too_long"] += 1
            return False
        sport = self.entropy_base + self._n % self.entropy_values
        self._n += 1
        nh = next_hdr & 0xF
        hdr = bytes((UUD_REQ << 3 | nh >> 1, (nh & 1) << 7, 0, 0))
        meta = DatagramMeta(self.address, dst, sport, self.port if dport is None else dport, ECT0, DSCP_DATA)
        self._tx.append((seal(hdr + bytes(ses), meta), meta))
        self.stats["sent"] += 1
        return True

    def receive_datagram(self, data: bytes, meta: DatagramMeta, now: float = 0.0) -> None:
        self.used = True
        try:
            data = bytes(data)
            if getattr(meta, "dscp", 0) == DSCP_TRIMMED:  # PDS-D4
                self.stats["trimmed"] += 1
                return
            if len(data) < UUD_HEADER_LEN + TRAILER or data[0] >> 3 != UUD_REQ:
                self.stats["malformed"] += 1
                return
            if not trailer_ok(data, meta):  # PDS-D3
                self.stats["bad_crc"] += 1
                return
            nh = ((data[0] & 7) << 1) | (data[1] >> 7)
            self.stats["received"] += 1
            self._events.append(UudDatagram(meta, nh, data[UUD_HEADER_LEN:-TRAILER]))
        except DecodeError:
            self.stats["malformed"] += 1
        except Exception as exc:  # noqa: BLE001 - PDS-D5: a bug is counted and kept, never raised
            self._internal_error(exc, data)
