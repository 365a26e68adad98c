#!/usr/bin/env python3
"""Benchmark: frames per second of ``uet decode --json`` beside ``tshark -r`` on the same capture.

Generates a capture of N frames (default 100,000: a mix of UET requests with SES headers, ACK_CC,
NACKs and control packets, each with its CRC-32C trailer, plus some RoCEv2), then times, in the same
run and as medians of ``--repeat`` runs of the child's CPU time (user + system, from rusage: the
machine's other load does not count), alternating the commands:

* ``uet decode --json FILE > /dev/null``
* ``tshark -r FILE > /dev/null`` (plain, one summary line per frame), when tshark is installed
* ``tshark -r FILE -X lua_script:<generated dissector> > /dev/null``, when the generator exists
* ``tshark -r FILE -T fields -e frame.number``, without and with the generated dissector: the
  plugin's cost beside tshark's own (``lua_over_tshark`` = frames/s with the plugin divided by
  frames/s without; 0.5 means the plugin doubles tshark's time per frame), with the plugin's
  preferences as they are by default (``plugin_prefs``: the CRC-32C trailer is not verified unless
  ``uet.check_crc`` is on, as Wireshark's own TCP and UDP checksums) and, as ``lua_check_crc_*``,
  with ``-o uet.check_crc:TRUE``

``--instructions N`` also counts instructions under ``valgrind --tool=callgrind`` (a count that
does not move with the machine's load): tshark over the capture's first N and 2N frames, without
and with the plugin; the difference over N frames is the cost of one frame, start-up excluded.

``--sim`` benchmarks a ``uet sim --bytes 64m --pcap`` capture instead (26,104 frames of 4 KiB
requests and their ACKs, each with its CRC-32C trailer); ``--pcap FILE`` any capture. Prints one
JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import resource
import statistics
import subprocess
import sys
import tempfile

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


def sim_capture(path: str, nbytes: str) -> None:
    """A seeded ``uet sim`` run's capture (one transfer of ``nbytes`` over 4 paths)."""
    subprocess.run([sys.executable, "-m", "uet", "sim", "--bytes", nbytes, "--seed", "1", "--pcap", path,
                    "--json"], stdout=subprocess.DEVNULL, check=True)


def count_frames(path: str) -> int:
    from scapy.utils import RawPcapReader

    with RawPcapReader(path) as rd:
        return sum(1 for _ in rd)


def cpu_time(cmd: list[str]) -> float:
    """User + system CPU seconds of one run of ``cmd`` (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed_many(cmds: list[list[str]], repeat: int) -> list[float]:
    """Median CPU seconds of each command, the commands alternating run by run."""
    runs: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            runs[i].append(cpu_time(cmd))
    return [statistics.median(r) for r in runs]


def timed(cmd: list[str], repeat: int) -> float:
    return timed_many([cmd], repeat)[0]


def callgrind_instructions(cmd: list[str]) -> int | None:
    """Instructions ``cmd`` executes under callgrind, or None when valgrind is missing or fails."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        # children traced: tshark may run through setpriv (uet.wireshark.tshark.run_as_for)
        proc = subprocess.run([valgrind, "--tool=callgrind", "--trace-children=yes",
                               f"--callgrind-out-file={tmp}/cg.%p", *cmd],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = None
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith(("summary:", "totals:")):
                        total = (total or 0) + int(line.split()[1])
                        break
        return total if proc.returncode == 0 else None


def instructions_per_frame(pcap: str, lua: str, n: int, tmp: str) -> dict[str, object]:
    """Instructions per frame of tshark printing frame numbers, without and with the plugin (and with
    check_crc on): (count over 2n frames - count over n frames) / n, so start-up cancels out."""
    editcap = shutil.which("editcap")
    if editcap is None or shutil.which("valgrind") is None:
        return {"instructions": "needs valgrind and editcap"}
    from uet.wireshark import tshark_command
    from uet.wireshark.tshark import probe

    ts = probe()
    if ts.usable:
        return {"instructions": ts.usable}
    cuts = []
    for k in (n, 2 * n):
        cut = os.path.join(tmp, f"first{k}.pcap")
        subprocess.run([editcap, "-r", pcap, cut, f"1-{k}"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        os.chmod(cut, 0o644)
        cuts.append(cut)
    fields = ["-T", "fields", "-e", "frame.number"]
    variants = {"tshark": ([], []), "lua": ([lua], []), "lua_check_crc": ([lua], [f"{ts.name}.check_crc:TRUE"])}
    out: dict[str, object] = {"instructions_frames": n}
    for key, (scripts, prefs) in variants.items():
        counts = [callgrind_instructions(tshark_command(c, scripts, output=None, tshark=ts.exe, prefs=prefs,
                                                        run_as=ts.run_as) + fields) for c in cuts]
        if None in counts:
            return {"instructions": "callgrind failed"}
        out[f"{key}_instructions_per_frame"] = round((counts[1] - counts[0]) / n)  # type: ignore[operator]
    return out


def plugin_cost(pcap: str, lua: str, frames: int, repeat: int) -> dict[str, object]:
    """tshark's frames/s on ``pcap`` printing only frame numbers: without the plugin, with it as it
    is by default, and with the CRC-32C trailer verified (check_crc on)."""
    from uet.wireshark import tshark_command
    from uet.wireshark.tshark import probe

    ts = probe()
    if ts.usable:
        return {"plugin": ts.usable}
    out: dict[str, object] = {}
    fields = ["-T", "fields", "-e", "frame.number"]
    plain = tshark_command(pcap, [], output=None, tshark=ts.exe, run_as=ts.run_as) + fields
    with_lua = tshark_command(pcap, lua, output=None, tshark=ts.exe, run_as=ts.run_as) + fields
    check = tshark_command(pcap, lua, output=None, tshark=ts.exe, run_as=ts.run_as,
                           prefs=[f"{ts.name}.check_crc:TRUE"]) + fields
    out["fields_command"] = " ".join(with_lua)
    out["plugin_prefs"] = {f"{ts.name}.check_crc": False, f"{ts.name}.trailer": "auto"}
    t_plain, t_lua, t_check = timed_many([plain, with_lua, check], repeat)
    out.update(tshark_fields_s=round(t_plain, 3), tshark_fields_fps=round(frames / t_plain),
               tshark_fields_lua_s=round(t_lua, 3), tshark_fields_lua_fps=round(frames / t_lua),
               lua_over_tshark=round(t_plain / t_lua, 3),
               # what the plugin adds to each frame (its load time spread over the capture)
               lua_extra_us_per_frame=round((t_lua - t_plain) / frames * 1e6, 1),
               lua_check_crc_s=round(t_check, 3), lua_check_crc_fps=round(frames / t_check),
               lua_check_crc_over_tshark=round(t_plain / t_check, 3))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000, help="frames of the generated mix (default 100000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command; the median is reported (default 3)")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--sim", action="store_true", help="benchmark a uet sim capture (--sim-bytes) instead")
    src.add_argument("--pcap", metavar="FILE", help="benchmark this capture instead")
    ap.add_argument("--sim-bytes", default="64m", help="bytes of the --sim transfer (default 64m: 26,104 frames)")
    ap.add_argument("--instructions", type=int, default=0, metavar="N",
                    help="also count instructions per frame under callgrind over N and 2N frames "
                         "(e.g. 1000: about a minute); default 0: not counted")
    args = ap.parse_args()

    result: dict[str, object] = {"native_backend": native.BACKEND}
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # tshark may run as an unprivileged user (uet.wireshark.tshark)
        if args.pcap:
            pcap = os.path.abspath(args.pcap)
            result["capture"] = pcap
        elif args.sim:
            pcap = os.path.join(tmp, "sim.pcap")
            sim_capture(pcap, args.sim_bytes)
            result["capture"] = f"uet sim --bytes {args.sim_bytes} --seed 1 --pcap"
        else:
            pcap = os.path.join(tmp, "bench.pcap")
            write_capture(pcap, args.frames)
            result["capture"] = "generated mix"
        frames = args.frames if not (args.pcap or args.sim) else count_frames(pcap)
        result["frames"] = frames
        result["capture_bytes"] = os.path.getsize(pcap)
        t = timed([sys.executable, "-m", "uet", "decode", "--json", pcap], args.repeat)
        result["uet_decode_json_s"] = round(t, 3)
        result["uet_decode_json_fps"] = round(frames / t)
        tshark = shutil.which("tshark")
        if tshark:
            t = timed([tshark, "-n", "-r", pcap], args.repeat)
            result["tshark_s"] = round(t, 3)
            result["tshark_fps"] = round(frames / t)
            result["uet_vs_tshark"] = round(result["uet_decode_json_fps"] / result["tshark_fps"], 2)  # type: ignore[operator]
            from uet.wireshark import tshark_command
            from uet.wireshark.lua import generate_lua

            lua = os.path.join(tmp, "uet.lua")
            with open(lua, "w") as fh:
                fh.write(generate_lua())
            os.chmod(lua, 0o644)
            t = timed(tshark_command(pcap, lua), args.repeat)
            result["tshark_lua_s"] = round(t, 3)
            result["tshark_lua_fps"] = round(frames / t)
            result.update(plugin_cost(pcap, lua, frames, args.repeat))
            if args.instructions > 0:
                result.update(instructions_per_frame(pcap, lua, args.instructions, tmp))
        else:
            result["tshark"] = "not installed"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
