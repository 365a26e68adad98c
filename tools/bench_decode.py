#!/usr/bin/env python3
"""Benchmark: frames per second of ``uet decode --json`` beside ``tshark -r`` on the same capture.

Generates a capture of N frames (default 100,000: a mix of UET requests with SES headers, ACK_CC,
NACKs and control packets, each with its CRC-32C trailer, plus some RoCEv2), then times, in the same
run and as wall-clock medians of ``--repeat`` runs:

* ``uet decode --json FILE > /dev/null``
* ``tshark -r FILE > /dev/null`` (plain, one summary line per frame), when tshark is installed
* ``tshark -r FILE -X lua_script:<generated dissector> > /dev/null``, when the generator exists

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from scapy.utils import RawPcapWriter

from uet import native
from uet.wire import build


def sample_frames() -> list[bytes]:
    req = {"type": 2, "next_hdr": 3, "ar": False, "psn": 1000, "spdcid": 3, "dpdcid": 9}
    std = {"opcode": 5, "som": True, "eom": False, "message_id": 7, "job_id": 1, "request_length": 1 << 20}
    ack = {"type": 8, "cack_psn": 1000, "spdcid": 9, "dpdcid": 3, "mpr": 1, "sack_bitmap": 0xF0F0,
           "rcvd_bytes": 4096}
    nack = {"type": 10, "nack_code": 1, "nack_psn": 1001, "spdcid": 9, "dpdcid": 3}
    ctl = {"type": 11, "ctl_type": 1, "ar": True, "psn": 1002, "spdcid": 3, "dpdcid": 9}
    frames = []
    for i in range(8):
        frames.append(build.udp_frame(build.uet_bytes(dict(req, psn=1000 + i), std, payload=bytes(1024)),
                                      sport=49152 + i))
    frames.append(build.udp_frame(build.uet_bytes(ack), sport=4793, dport=49152, dscp=46))
    frames.append(build.udp_frame(build.uet_bytes(nack), sport=4793, dport=49153, dscp=46))
    frames.append(build.udp_frame(build.uet_bytes(ctl), sport=49154, dscp=46))
    frames.append(build.roce_frame({"opcode": 0x04, "dest_qp": 17, "psn": 5}, [], bytes(256)))
    return frames


def write_capture(path: str, n: int) -> None:
    frames = sample_frames()
    w = RawPcapWriter(path, linktype=1)
    for i in range(n):
        w.write(frames[i % len(frames)])
    w.close()


def timed(cmd: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    result: dict[str, object] = {"frames": args.frames, "native_backend": native.BACKEND}
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "bench.pcap")
        write_capture(pcap, args.frames)
        result["capture_bytes"] = os.path.getsize(pcap)
        t = timed([sys.executable, "-m", "uet", "decode", "--json", pcap], args.repeat)
        result["uet_decode_json_s"] = round(t, 3)
        result["uet_decode_json_fps"] = round(args.frames / t)
        tshark = shutil.which("tshark")
        if tshark:
            t = timed([tshark, "-n", "-r", pcap], args.repeat)
            result["tshark_s"] = round(t, 3)
            result["tshark_fps"] = round(args.frames / t)
            result["uet_vs_tshark"] = round(result["uet_decode_json_fps"] / result["tshark_fps"], 2)  # type: ignore[operator]
            try:
                from uet.wireshark import tshark_command  # type: ignore[attr-defined]
                from uet.wireshark.lua import generate_lua

                lua = os.path.join(tmp, "uet.lua")
                with open(lua, "w") as fh:
                    fh.write(generate_lua())
                t = timed(tshark_command(pcap, lua), args.repeat)
                result["tshark_lua_s"] = round(t, 3)
                result["tshark_lua_fps"] = round(args.frames / t)
            except ImportError:
                result["tshark_lua"] = "generator not available"
        else:
            result["tshark"] = "not installed"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
