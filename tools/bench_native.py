#!/usr/bin/env python3
"""Benchmark uet.native: C backend vs google-crc32c vs the pure-Python twin.

Prints one JSON object:
  crc32c_gbps[size][impl]   CRC-32C throughput (GB/s = 1e9 bytes/s) at 64 B,
                            4 KiB and 1 MiB for "c" (uet.native C backend),
                            "google_crc32c" and "twin";
  crc32c_c_over_google      ratio C / google-crc32c per size (target >= 0.5);
  icrc_pps                  RoCEv2 ICRC packets/s, 4 KiB payload, IPv4;
  reassembly_places_per_s   4 KiB placements/s into a 64 MiB message in
                            shuffled order, called from Python (target
                            >= 500,000 for C).
Every figure is the median of several runs; nothing is asserted.

Usage: python tools/bench_native.py [--runs N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time

MSG_LEN = 64 << 20
CHUNK = 4096


def _median_rate(fn, arg, calls, runs, units):
    """Median of ``runs`` timings of ``calls`` calls of fn(arg); units per second."""
    rates = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(arg)
        dt = time.perf_counter() - t0
        rates.append(units * calls / dt)
    return statistics.median(rates)


def bench_crc(impls, runs, quick):
    sizes = [64, 4096, 1 << 20]
    out = {}
    rng = random.Random(1)
    for size in sizes:
        data = rng.randbytes(size)
        row = {}
        for name, fn in impls.items():
            if fn is None:
                row[name] = None
                continue
            if name == "twin":
                calls = max(1, (400_000 if not quick else 100_000) // size)
            else:
                calls = max(20, (200_000_000 if not quick else 40_000_000) // size)
                calls = min(calls, 200_000 if not quick else 40_000)
            _median_rate(fn, data, max(1, calls // 4), 1, size)  # warm up
            row[name] = round(_median_rate(fn, data, calls, runs, size) / 1e9, 4)
        out[str(size)] = row
    return out


def _roce_packet(payload_len):
    rng = random.Random(2)
    ip = bytearray(20)
    total = 20 + 8 + 12 + payload_len + 4
    ip[0], ip[1] = 0x45, 0x02
    ip[2:4] = total.to_bytes(2, "big")
    ip[8], ip[9] = 64, 17
    ip[12:20] = bytes([10, 0, 0, 1, 10, 0, 0, 2])
    udp = (0xC001).to_bytes(2, "big") + (4791).to_bytes(2, "big") + (total - 20).to_bytes(2, "big") + b"\0\0"
    bth = bytes([0x0A, 0x40, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x00, 0x01])
    return bytes(ip) + udp + bth + rng.randbytes(payload_len)


def bench_icrc(impls, runs, quick):
    pkt = _roce_packet(4096)
    out = {}
    for name, fn in impls.items():
        calls = 20_000 if name == "c" else 5_000
        if quick:
            calls //= 5
        fn(pkt)
        out[name] = round(_median_rate(fn, pkt, calls, runs, 1))
    return out


def bench_reassembly(classes, runs, quick):
    msg_len = MSG_LEN if not quick else MSG_LEN // 8
    payload = random.Random(3).randbytes(CHUNK)
    offsets = list(range(0, msg_len, CHUNK))
    random.Random(4).shuffle(offsets)
    out = {}
    for name, cls in classes.items():
        rates = []
        for _ in range(runs if name == "c" else max(1, min(runs, 3))):
            r = cls(msg_len)  # allocation (and page faults) outside the timing
            place = r.place
            t0 = time.perf_counter()
            for off in offsets:
                place(off, payload)
            dt = time.perf_counter() - t0
            assert r.complete
            rates.append(len(offsets) / dt)
            del r, place
        out[name] = round(statistics.median(rates))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (median reported)")
    ap.add_argument("--quick", action="store_true", help="fewer iterations, smaller message")
    args = ap.parse_args(argv)

    import uet.native
    from uet.native import _twin

    c = None
    if uet.native.BACKEND == "c":
        from uet.native import _cbackend as c
    try:
        import google_crc32c

        google = google_crc32c.value
        google_impl = getattr(google_crc32c, "implementation", "?")
    except ImportError:
        google, google_impl = None, None

    crc = bench_crc({"c": c.crc32c if c else None, "google_crc32c": google, "twin": _twin.crc32c},
                    args.runs, args.quick)
    ratio = {}
    for size, row in crc.items():
        if row.get("c") and row.get("google_crc32c"):
            ratio[size] = round(row["c"] / row["google_crc32c"], 3)

    icrc_impls = {"twin": _twin.roce_icrc}
    reasm_classes = {"twin": _twin.Reassembly}
    if c:
        icrc_impls = {"c": c.roce_icrc, **icrc_impls}
        reasm_classes = {"c": c.Reassembly, **reasm_classes}

    result = {
        "backend": uet.native.BACKEND,
        "hw_crc32c": bool(c and c.HAS_HW_CRC32C),
        "google_crc32c_impl": google_impl,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "runs": args.runs,
        "crc32c_gbps": crc,
        "crc32c_c_over_google": ratio,
        "icrc_pps_4k_payload": bench_icrc(icrc_impls, args.runs, args.quick),
        "reassembly_places_per_s_4k_into_64MiB_shuffled": bench_reassembly(
            reasm_classes, args.runs, args.quick),
    }
    if args.quick:
        result["quick"] = True
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
