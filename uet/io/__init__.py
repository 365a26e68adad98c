"""The live transport: a sans-IO UET host (uet.host) on real UDP sockets, driven by trio (docs/design-notes.md
principle 3: the only place trio appears).

>>> import trio
>>> from uet.io import open_endpoint
>>> async def main():
...     async with open_endpoint(("127.0.0.1", 0)) as rx, \\
...             open_endpoint(None, peer_port=rx.port) as tx:
...         await tx.send("127.0.0.1", b"hello", mode="rud")
...         return (await rx.receive()).data
>>> trio.run(main)
b'hello'
"""

from typing import TYPE_CHECKING, Any

#: NSCC and RCCC (uet.cms.choice) need the network's rate and base RTT. A live endpoint's round
#: trip costs about a millisecond of its own (measured through ``uet demo``'s relay on loopback:
#: an unloaded minimum of 0.7-1.0 ms; batches, timers and two Python processes' turns), on top of
#: whatever delay the network adds, so no base RTT below LIVE_CC_RTT_US is used; on loopback
#: without a fabric one process moves about 1 GB/s, hence LIVE_CC_RATE_GBPS.
LIVE_CC_RTT_US = 1000.0
LIVE_CC_RATE_GBPS = 10.0

__all__ = ["LiveEndpoint", "Message", "SendFailed", "SendResult", "SesFailed", "TooBig",
           "open_endpoint"]

if TYPE_CHECKING:  # pragma: no cover
    from .endpoint import (LiveEndpoint, Message, SendFailed, SendResult, SesFailed, TooBig,
                           open_endpoint)


def __getattr__(name: str) -> Any:
    # lazy: `uet --help` and `uet decode` register the recv/send commands (uet.io.command) without
    # importing trio and the PDS core
    if name in __all__:
        from . import endpoint

        return getattr(endpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
