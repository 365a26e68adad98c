"""How a long-running command (``uet recv``, ``uet fabric``) stops: on SIGINT or SIGTERM it
cancels what it is doing and then reports as it would at its normal end, instead of dying with a
traceback halfway through its summary."""

from __future__ import annotations

import signal
from typing import AsyncIterator

import trio

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def cancel_on_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    """Cancel ``scope`` at the first of ``signals`` (from ``trio.open_signal_receiver``)."""
    async for _ in signals:
        scope.cancel()
        return
