"""Every declared header by key, in one place (the generators iterate over this)."""

from __future__ import annotations

from .net_headers import NET_HEADERS
from .roce_headers import ROCE_HEADERS
from .schema import Header
from .uet_headers import UET_HEADERS

ALL_HEADERS: tuple[Header, ...] = UET_HEADERS + ROCE_HEADERS + NET_HEADERS
HEADERS: dict[str, Header] = {h.key: h for h in ALL_HEADERS}
