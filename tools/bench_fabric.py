"""Throughput of the live fabric on loopback: ``python tools/bench_fabric.py [--size 4096] [--count N]``.

The relay runs in this process (trio); a child process is sender and receiver: it keeps at most
``--window`` datagrams between its sender socket and its receiver socket (a credit window, so the
relay's receive buffer never overflows), sends ``--count`` UET datagrams with valid trailers over
``--flows`` entropy ports, and reports when the last one arrived. Prints one JSON object:
datagrams/s and MB/s through a lossless relay (median of ``--repeat`` runs), the same harness
without the relay, and the relay's CPU time per datagram (user + system), which is what a shared
machine's load does not distort.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import select
import socket
import statistics
import time

import trio

from uet.fabric.paths import FabricConfig
from uet.fabric.relay import open_fabric


# the sender's own address: the receiver's is 127.0.0.1, and the relay tells answers (from the
# receiver's address) from requests by their source address (uet.fabric.relay, facts A.1)
SENDER = "127.0.0.20"


def _peer(relay: tuple[str, int], rx_sock: socket.socket, count: int, size: int, window: int,
          flows: int, out: "mp.connection.Connection") -> None:
    from uet.wire.build import uet_bytes
    from uet.wire.trailer import CrcContext, with_trailer

    txs = []
    for _ in range(flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((SENDER, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)  # data: DSCP 0 + ECT(0)
        txs.append(s)
    pkts = []
    for s in txs:
        body = uet_bytes({"type": 2, "next_hdr": 0, "psn": 1, "spdcid": 1, "dpdcid": 2},
                         payload=bytes(max(0, size - 16)))
        ulen = 8 + len(body) + 4
        udp = s.getsockname()[1].to_bytes(2, "big") + relay[1].to_bytes(2, "big") + ulen.to_bytes(2, "big") + b"\0\0"
        pkts.append(with_trailer(CrcContext(socket.inet_aton(SENDER), socket.inet_aton(relay[0]), udp), body))
    rx_sock.setblocking(False)
    sent = got = 0
    t0 = time.perf_counter()
    last = t0
    while got < count:
        while sent < count and sent - got < window:
            txs[sent % flows].sendto(pkts[sent % flows], relay)
            sent += 1
        n = 0
        while True:
            try:
                rx_sock.recv(70000)
            except BlockingIOError:
                break
            got += 1
            n += 1
        if n:
            last = time.perf_counter()
        elif time.perf_counter() - last > 1.0:
            break  # lost datagrams: stop rather than hang
        elif sent - got >= window or sent >= count:
            select.select([rx_sock], [], [], 0.1)  # block, don't spin: the relay needs the CPU
    out.send((got, time.perf_counter() - t0))


def _direct(count: int, size: int, window: int, flows: int) -> dict:
    """The same peer sending straight to its receiver: the harness's own ceiling."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)
    rx.bind(("127.0.0.1", 0))
    a, b = mp.Pipe()
    p = mp.get_context("fork").Process(target=_peer, args=(rx.getsockname(), rx, count, size, window, flows, b))
    p.start()
    got, dt = a.recv()
    p.join(5)
    rx.close()
    return {"datagrams": got, "seconds": dt, "dps": got / dt, "MBps": got * size / dt / 1e6}


async def _one(count: int, size: int, window: int, flows: int) -> dict:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
    rx.bind(("127.0.0.1", 0))
    async with open_fabric(to=rx.getsockname(), config=FabricConfig(paths=4)) as fab:
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        a, b = mp.Pipe()
        p = mp.get_context("fork").Process(target=_peer, args=(fab.address, rx, count, size, window, flows, b))
        p.start()
        while not a.poll():
            await trio.sleep(0.05)
        got, dt = a.recv()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        p.join(5)
        c = fab.counters()["totals"]
    rx.close()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"datagrams": got, "seconds": dt, "dps": got / dt, "MBps": got * size / dt / 1e6,
            "relay_cpu_us": cpu / max(got, 1) * 1e6, "crc_rewritten": c["crc_rewritten"],
            "crc_bad": c["crc_bad"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m uet.fabric.bench", description=__doc__)
    ap.add_argument("--size", type=int, default=4096, help="UDP payload bytes per datagram")
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    runs = [trio.run(_one, a.count, a.size, a.window, a.flows) for _ in range(a.repeat)]
    direct = [_direct(a.count, a.size, a.window, a.flows) for _ in range(a.repeat)]
    med = statistics.median(r["dps"] for r in runs)
    dmed = statistics.median(r["dps"] for r in direct)
    cpu = statistics.median(r["relay_cpu_us"] for r in runs)
    # the relay's FabricConfig.mtu: None, no limit (uet fabric's --mtu drops longer datagrams)
    print(json.dumps({"size": a.size, "mtu": FabricConfig().mtu, "count": a.count,
                      "window": a.window, "flows": a.flows,
                      "datagrams_per_s": round(med), "MB_per_s": round(med * a.size / 1e6, 1),
                      "direct_datagrams_per_s": round(dmed), "relay_vs_direct": round(med / dmed, 3),
                      "relay_cpu_us_per_datagram": round(cpu, 2),
                      "relay_cpu_bound_datagrams_per_s": round(1e6 / cpu),
                      "runs": runs, "direct_runs": direct}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
