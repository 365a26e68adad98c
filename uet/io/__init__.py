"""The live transport: a sans-IO UET host (uet.host) on real UDP sockets, driven by trio (design.md
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

__all__ = ["LiveEndpoint", "Message", "SendFailed", "SendResult", "SesFailed", "open_endpoint"]

if TYPE_CHECKING:  # pragma: no cover
    from .endpoint import LiveEndpoint, Message, SendFailed, SendResult, SesFailed, open_endpoint


def __getattr__(name: str) -> Any:
    # lazy: `uet --help` and `uet decode` register the recv/send commands (uet.io.command) without
    # importing trio and the PDS core
    if name in __all__:
        from . import endpoint

        return getattr(endpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
