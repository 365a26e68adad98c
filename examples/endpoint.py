"""The live endpoint (trio, UDP on loopback): a SEND, an RMA write and a read between two
endpoints in one process.

Every UET datagram goes to the UET port (facts A.1), so each endpoint receives on an address of
its own at one port: the target takes a free port on 127.0.0.1, the initiator the first free
loopback address (127.0.0.2, 127.0.0.3 ...) at that same port.

Run from the repository:  python examples/endpoint.py
"""

import hashlib

import trio

import uet.io

KEY = 0x1234  # the memory region's key


async def main() -> None:
    async with uet.io.open_endpoint(("127.0.0.1", 0), paths=2, seed=1) as target:
        port = target.port
        async with uet.io.open_endpoint(None, peer="127.0.0.1", peer_port=port, paths=2,
                                        seed=2) as initiator:
            dest = ("127.0.0.1", port)
            region = bytearray(4096)
            target.register(KEY, region)                       # a memory region by key

            data = bytes(range(256)) * 64                       # 16 KiB: several packets
            await initiator.send(dest, data)                   # SEND, placed by the target
            msg = await target.receive()
            digest = hashlib.sha256(msg.data).hexdigest()
            print("SEND:", len(msg.data), "bytes, sha256", digest[:16])
            assert msg.data == data

            await initiator.write(dest, KEY, 100, b"hello")     # RMA write (RUD by default)
            print("WRITE: region[100:105] =", bytes(region[100:105]))
            assert region[100:105] == b"hello"

            back = await initiator.read(dest, KEY, 100, 5)      # RMA read
            print("READ:", back)
            assert back == b"hello"


trio.run(main)
