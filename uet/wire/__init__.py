"""Wire formats: the one schema of every header and everything derived from it.

>>> from uet import wire
>>> fields = wire.decode("pds.ack", bytes.fromhex("38000005000003e800010002"))
>>> fields["cack_psn"], fields["ack_psn_offset"]
(1000, 5)
"""

from __future__ import annotations

from typing import Any, Mapping

from .codec import Codec, codec
from .registry import ALL_HEADERS, HEADERS
from .schema import DEFAULT_OPTIONS, Options


def decode(key: str, data: bytes | bytearray | memoryview, offset: int = 0,
           opts: Options = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Decode one header (``"pds.rud_rod_req"``, ``"ses.std"``, ``"roce.bth"``, ...) at ``offset``."""
    return codec(key).decode(data, offset, opts)[0]


def encode(key: str, fields: Mapping[str, Any], opts: Options = DEFAULT_OPTIONS) -> bytes:
    """Encode one header from a dict of field values (missing fields are 0)."""
    return codec(key).encode(fields, opts)


__all__ = ["ALL_HEADERS", "HEADERS", "Codec", "DEFAULT_OPTIONS", "Options", "codec", "decode", "encode"]
