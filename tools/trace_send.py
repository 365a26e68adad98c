#!/usr/bin/env python3
"""The files one SEND enters (issue 28, "Done when": at most 16), one JSON object on stdout.

    python tools/trace_send.py [--cold] [--bytes 1MiB] [--port 4793]

Two live endpoints on loopback in one process (a receiver bound to 127.0.0.1:``--port``, an
initiator with 4 entropy paths, as ``uet send`` opens them). With the profiling hook on
(``sys.setprofile``) from the call of ``send()`` of ``--bytes`` random bytes until the receiver
has the message (``receive()`` returned and its SHA-256 checked), every file under ``uet/`` whose
functions run is listed once, in the order it is first entered, with the function that entered
it: both endpoints together. By default a warm-up SEND of 4 KiB (one packet) goes first and is
not counted (the PDC is then established); ``--cold`` counts the first SEND of the process.

Output: ``{"warm": bool, "bytes": n, "count": n, "files": [{"file": "host.py", "function":
"send"}, ...]}``, paths relative to the ``uet`` package. Port 0 binds an ephemeral port.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Any

# the checkout this tool is in, after PYTHONPATH: PYTHONPATH=<other checkout> traces that one
sys.path.append(os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))


def _size(text: str) -> int:
    t = text.strip()
    for unit, mult in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)):
        if t.endswith(unit):
            return int(float(t[: -len(unit)]) * mult)
    return int(t)


def trace(*, warm: bool = True, nbytes: int = 1 << 20, port: int = 4793) -> list[tuple[str, str]]:
    """(file relative to the package, function) of every file under ``uet/`` entered by one SEND
    of ``nbytes`` between two live loopback endpoints, in first-entry order (see the module
    docstring)."""
    import trio

    import uet
    from uet.io.endpoint import open_endpoint

    root = os.path.dirname(uet.__file__) + os.sep
    order: list[tuple[str, str]] = []
    seen: set[str] = set()

    def prof(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(root) and f not in seen:
                seen.add(f)
                order.append((f[len(root):], frame.f_code.co_name))

    async def main() -> None:
        data = os.urandom(nbytes)
        async with open_endpoint(("127.0.0.1", port)) as rx:
            async with open_endpoint(None, paths=4, peer_port=rx.port) as tx:
                if warm:
                    await tx.send(rx.address, data[:4096])
                    await rx.receive()
                sys.setprofile(prof)
                try:
                    await tx.send(rx.address, data)
                    msg = await rx.receive()
                finally:
                    sys.setprofile(None)
                if hashlib.sha256(msg.data).digest() != hashlib.sha256(data).digest():
                    raise RuntimeError("trace_send: the received message differs from the sent one")

    trio.run(main)
    return order


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", action="store_true", help="count the first SEND (no warm-up)")
    ap.add_argument("--bytes", type=_size, default=1 << 20, help="message size (default 1MiB)")
    ap.add_argument("--port", type=int, default=4793, help="the receiver's UET port (0: any)")
    a = ap.parse_args(argv)
    order = trace(warm=not a.cold, nbytes=a.bytes, port=a.port)
    print(json.dumps({"warm": not a.cold, "bytes": a.bytes, "count": len(order),
                      "files": [{"file": f, "function": fn} for f, fn in order]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
