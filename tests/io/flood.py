"""A SYN flooder for the hostile-input tests, run as its own process so that it competes with the
endpoint under test for the CPU as another host would: ``python flood.py HOST PORT SECONDS
SOURCES [FIRST_SPDCID] [COUNT] [RATE]``.

It sends valid-CRC RUD SYN requests (each a new PDC: its own SPDCID) from SOURCES addresses
127.0.1.2 ... (away from the 127.0.0.x addresses the endpoints under test take, uet.ownaddr) to HOST:PORT at RATE datagrams a second (default 100,000: about the fastest one
Python sender that builds its packets reaches on loopback, issue 11), for at most SECONDS or COUNT
datagrams. It prints ``flooding`` when its first datagram goes (building them takes a while,
longer on a loaded machine) and at the end how many it sent. Loopback only: HOST must be a 127/8
address.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from uet import wire  # noqa: E402
from uet.wire.build import uet_bytes  # noqa: E402
from uet.wire.trailer import CrcContext, with_trailer  # noqa: E402

START = 0x40000


def datagrams(src: str, sport: int, dst: str, dport: int, first: int, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        spdcid = (first + i) % 0xFFFF + 1
        pds = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": START, "spdcid": spdcid,
               "psn_offset": 0}
        ses = {"opcode": 5, "message_id": 1, "request_length": 64, "som": True, "eom": True}
        body = uet_bytes(pds, ses, None, b"f" * 64)
        udp = wire.encode("udp", {"sport": sport, "dport": dport, "length": 8 + len(body) + 4,
                                  "checksum": 0})
        out.append(with_trailer(CrcContext(socket.inet_aton(src), socket.inet_aton(dst), udp),
                                body))
    return out


def main(argv: list[str]) -> int:
    host, port, seconds, sources = argv[0], int(argv[1]), float(argv[2]), int(argv[3])
    first = int(argv[4]) if len(argv) > 4 else 1
    count = int(argv[5]) if len(argv) > 5 and int(argv[5]) > 0 else 1 << 62
    rate = float(argv[6]) if len(argv) > 6 else 100_000.0
    if not host.startswith("127."):
        raise SystemExit("flood.py sends to loopback only")
    socks, pkts = [], []
    for k in range(sources):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((f"127.0.1.{2 + k}", 0))
        socks.append(s)
        pkts.append(datagrams(f"127.0.1.{2 + k}", s.getsockname()[1], host, port,
                              first + k * 4096, 4096))
    sent = 0
    print("flooding", flush=True)
    start = time.monotonic()
    end = start + seconds
    for i in itertools.count():
        if i & 255 == 0:
            now = time.monotonic()
            if now >= end:
                break
            ahead = start + i / rate - now  # pace: batches of 256 on the rate's schedule
            if ahead > 0:
                time.sleep(ahead)
        if sent >= count:
            break
        k = i % sources
        try:
            socks[k].sendto(pkts[k][(i // sources) % 4096], (host, port))
            sent += 1
        except OSError:  # a full socket buffer: a flood drops too
            pass
    print(sent, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
