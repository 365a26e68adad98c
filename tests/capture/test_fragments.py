"""IP fragments in captures (issue 27 item 2, uet.capture.reassembly): ``uet decode`` and ``uet
analyze`` read a datagram cut into fragments as the whole datagram, in the frame that completes it,
and hostile fragments give a problem line each and bounded memory.

Fragments are made by scapy's ``fragment()`` / ``fragment6()`` and by hand (:func:`cut4`), the way a
sender that exceeds the link MTU makes them (facts A.1 forbids it: DF on every datagram)."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st
from scapy.layers.inet import IP, fragment
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, fragment6
from scapy.utils import RawPcapWriter

from uet.capture import reassembly as R
from uet.capture.frame import LINKTYPE_ETHERNET, LINKTYPE_RAW, decode_frame
from uet.capture.refprov import check_frames
from uet.cli import main
from uet.wire import build

A, B = "10.0.0.1", "10.0.0.2"
PDS = {"type": 2, "next_hdr": 3, "ar": True, "syn": True, "psn": 70000, "psn_offset": 0, "spdcid": 7}
SES = {"opcode": 5, "som": True, "eom": True, "message_id": 1, "job_id": 42, "request_length": 3000}
UET = build.uet_bytes(PDS, SES, payload=bytes(range(256)) * 12)  # 3072 bytes: 3 fragments at 1500


def whole(*, src: str = A, dst: str = B, native: bool = False, ident: int = 0x1234) -> bytes:
    """The datagram as an IP packet (no link header), DF cleared so that it may be fragmented."""
    f = (build.native_ip_frame(UET, 0x55AA, src=src, dst=dst, ethernet=False) if native else
         build.udp_frame(UET, src=src, dst=dst, sport=50000, ethernet=False))
    if f[0] >> 4 == 6:
        return f
    h = bytearray(f[:20])
    h[4:6], h[6:8], h[10:12] = ident.to_bytes(2, "big"), b"\0\0", b"\0\0"
    h[10:12] = build.ipv4_checksum(bytes(h)).to_bytes(2, "big")
    return bytes(h) + f[20:]


def cut4(packet: bytes, cuts: list[int]) -> list[bytes]:
    """IPv4 fragments of ``packet`` (20-byte header) cut at the payload offsets ``cuts`` (each a
    multiple of 8), by hand: header copied, total length, MF and offset set, checksum redone."""
    data = packet[20:]
    edges = [0, *sorted(set(cuts)), len(data)]
    out = []
    for a, z in zip(edges, edges[1:]):
        h = bytearray(packet[:20])
        h[2:4] = (20 + z - a).to_bytes(2, "big")
        h[6:8] = ((0x2000 if z < len(data) else 0) | a // 8).to_bytes(2, "big")
        h[10:12] = b"\0\0"
        h[10:12] = build.ipv4_checksum(bytes(h)).to_bytes(2, "big")
        out.append(bytes(h) + data[a:z])
    return out


def write(path, packets, times=None, linktype: int = LINKTYPE_RAW) -> str:
    """A pcap file of ``packets`` at ``times`` (seconds; default a millisecond apart)."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, p in enumerate(packets):
            t = times[i] if times else i * 0.001
            fh.write(struct.pack("<IIII", int(t), round((t % 1) * 1e6), len(p), len(p)) + p)
    return str(path)


def decode_json(path, capsys) -> tuple[list[dict], str]:
    assert main(["decode", "--json", str(path)]) == 0
    cap = capsys.readouterr()
    return [json.loads(x) for x in cap.out.splitlines()], cap.err


def same_datagram(a: dict, b: dict) -> None:
    """PDS, SES, payload length and CRC verdict (A.3: the trailer covers the IP addresses, the UDP
    header and the UET bytes) are those of the whole datagram."""
    for key in ("pds", "ses", "payload_len", "crc", "entropy"):
        assert a["uet"].get(key) == b["uet"].get(key), key
    assert a.get("udp") == b.get("udp")


def test_a_datagram_in_3_fragments_decodes_as_the_whole_one(tmp_path, capsys):
    pkt = whole()
    frags = [bytes(f) for f in fragment(IP(pkt), fragsize=1480)]
    assert len(frags) == 3
    objs, err = decode_json(write(tmp_path / "f.pcap", [pkt, *frags]), capsys)
    assert len(objs) == 4 and err == ""
    ref, first, second, done = objs
    assert ref["uet"]["crc"]["ok"] is True and ref["problems"] == []
    same_datagram(done, ref)
    assert done["problems"] == [
        "reassembled from 3 fragments: the sender's datagram exceeded the link MTU",
        "ipv4: datagram id 0x1234 of 3140 bytes after its header rebuilt from frames 2, 3, 4"]
    assert first["problems"] == ["ipv4: fragment (id 0x1234, offset 0, 1480 bytes, more): the "
                                 "frame that completes its datagram carries the decode"]
    assert "uet" not in first and "udp" not in first and "error" not in first
    assert "offset 1480, 1480 bytes, more" in second["problems"][0]


def test_fragments_in_any_order_and_over_ethernet_and_native_ip(tmp_path, capsys):
    """Protocol 253 (A.1, entropy header) in fragments, last fragment first, on Ethernet."""
    pkt = whole(native=True)
    frags = cut4(pkt, [1000, 2000])[::-1]
    eth = b"\x02" * 12 + b"\x08\x00"
    path = write(tmp_path / "n.pcap", [eth + p for p in [pkt, *frags]], linktype=LINKTYPE_ETHERNET)
    objs, _ = decode_json(path, capsys)
    same_datagram(objs[3], objs[0])
    assert objs[3]["uet"]["entropy"]["entropy"] == 0x55AA
    assert objs[3]["problems"][0].startswith("reassembled from 3 fragments")
    assert "rebuilt from frames 4, 3, 2" in objs[3]["problems"][1]  # in offset order


def test_ipv6_fragments_reassemble(tmp_path, capsys):
    pkt = whole(src="fd00::1", dst="fd00::2")
    frags = [bytes(f) for f in fragment6(IPv6(pkt), 1280)]
    assert len(frags) == 3 and frags[0][6] == 44  # RFC 8200 Fragment header
    objs, err = decode_json(write(tmp_path / "6.pcap", [pkt, *frags]), capsys)
    assert err == ""
    same_datagram(objs[3], objs[0])
    assert objs[3]["uet"]["crc"]["ok"] is True
    assert objs[3]["problems"][0] == ("reassembled from 3 fragments: the sender's datagram "
                                      "exceeded the link MTU")
    assert objs[1]["problems"][0].startswith("ipv6: fragment (id 0x")


def test_ipv6_fragment_header_after_a_hop_by_hop_header(tmp_path, capsys):
    """RFC 8200 4.1 order: the unfragmentable part (hop-by-hop) comes before the Fragment header;
    RP2 (A.1) still sees every fragment."""
    pkt = whole(src="fd00::1", dst="fd00::2")
    ip = IPv6(pkt[:40])
    ip.remove_payload()
    del ip.nh, ip.plen  # scapy fills them in for the chain
    chained = ip / IPv6ExtHdrHopByHop() / IPv6ExtHdrFragment() / UDP(pkt[40:])
    frags = [bytes(f) for f in fragment6(chained, 1280)]
    assert len(frags) == 3 and frags[0][6] == 0 and frags[0][40] == 44
    objs, err = decode_json(write(tmp_path / "h.pcap", [pkt, *frags]), capsys)
    same_datagram(objs[3], objs[0])
    assert objs[3]["problems"][0].startswith("reassembled from 3 fragments") and err == ""
    rep = check_frames([(LINKTYPE_RAW, f, n) for n, f in enumerate(frags, 1)])
    assert rep.by_rule["RP2"] == 3 and rep.requests == 1


def test_without_a_reassembler_a_fragment_is_only_named():
    f = cut4(whole(), [1480])[0]
    res = decode_frame(LINKTYPE_RAW, f, 1)
    assert res.obj["problems"] == ["ipv4: fragment; transport not decoded"] and res.fragment


def test_the_tree_output_shows_the_reassembled_datagram(tmp_path, capsys):
    path = write(tmp_path / "t.pcap", cut4(whole(), [1480, 2960]))
    assert main(["decode", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("request_length: 3000") == 1
    assert "! reassembled from 3 fragments" in out and "CRC-32C trailer: 0x" in out


def test_analyze_counts_the_reassembled_request_in_its_pdc(tmp_path, capsys):
    ack = build.udp_frame(build.uet_bytes({"type": 7, "cack_psn": 70000, "ack_psn_offset": 0,
                                           "spdcid": 9, "dpdcid": 7}),
                          src=B, dst=A, sport=4793, dport=50000, dscp=46, ethernet=False)
    path = write(tmp_path / "a.pcap", [*cut4(whole(), [1480, 2960]), ack])
    assert main(["analyze", "--json", path]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["pdc_count"] == 1 and rep["uet_frames"] == 2
    pdc = rep["pdcs"][0]
    assert pdc["counts"]["requests"] == 1 and pdc["counts"]["acks"] == 1
    assert (pdc["initiator"], pdc["initiator_pdcid"], pdc["first_psn"]) == (A, 7, 70000)
    assert any("1 IP datagram(s) were reassembled" in n for n in rep["notes"])


def test_refprov_rp2_flags_each_fragment_and_judges_the_datagram_once():
    """A.1: the reference never reassembles: every fragment is RP2; the request is counted once."""
    frags = cut4(whole(), [1480, 2960])
    rep = check_frames([(LINKTYPE_RAW, f, n) for n, f in enumerate(frags, 1)])
    assert rep.by_rule["RP2"] == 3 and rep.requests == 1 and rep.frames == 1
    assert sorted(v.frame for v in rep.violations if v.rule == "RP2") == [1, 2, 3]
    six = [bytes(f) for f in fragment6(IPv6(whole(src="fd00::1", dst="fd00::2")), 1280)]
    rep6 = check_frames([(LINKTYPE_RAW, f, n) for n, f in enumerate(six, 1)])
    assert rep6.by_rule["RP2"] == 3 and rep6.requests == 1


# --- hostile fragments ----------------------------------------------------------------------------

def test_overlapping_fragments_drop_the_datagram(tmp_path, capsys):
    """RFC 5722 for IPv6; the same rule chosen for IPv4 (uet.capture.reassembly)."""
    a, b, c = cut4(whole(), [1480, 2960])
    b2 = cut4(whole(), [1472, 2960])[1]  # starts 8 bytes into a
    objs, err = decode_json(write(tmp_path / "o.pcap", [a, b2, b, c]), capsys)
    assert "overlaps another fragment of its datagram (RFC 5722): the datagram is dropped, " \
           "fragments in frames 1, 2" in objs[1]["problems"][0]
    assert all("uet" not in o for o in objs)
    assert "never completed (the capture ended first)" in err and "frames 3, 4" in err


def test_duplicate_huge_offset_and_odd_length_fragments(tmp_path, capsys):
    a, b, c = cut4(whole(), [1480, 2960])
    huge = bytearray(b)
    huge[6:8] = (0x2000 | 8180).to_bytes(2, "big")  # 65440 + 1480 bytes: beyond 65535
    odd = cut4(whole(ident=7), [1484])[0]  # 1484 bytes and more to come: not 8-aligned
    objs, err = decode_json(write(tmp_path / "d.pcap", [a, a, bytes(huge), odd, b, c]), capsys)
    assert objs[1]["problems"] == ["ipv4: fragment (id 0x1234, offset 0, 1480 bytes, more) repeats "
                                   "the one of frame 1: the first copy is kept"]
    assert "offset 65440, 1480 bytes, more) ends at byte 66940, beyond the 65535" \
           in objs[2]["problems"][0]
    assert "must carry a multiple of 8 bytes: dropped" in objs[3]["problems"][0]
    assert objs[5]["problems"][0].startswith("reassembled from 3 fragments")
    assert objs[5]["uet"]["crc"]["ok"] is True and err == ""


def test_a_datagram_not_complete_in_time_expires_in_capture_time(tmp_path, capsys):
    a, b, c = cut4(whole(), [1480, 2960])
    path = write(tmp_path / "x.pcap", [a, b, c], times=[0.0, 1.0, 1.0 + R.TIMEOUT_V4 + 0.5])
    objs, err = decode_json(path, capsys)
    assert all("uet" not in o for o in objs)
    assert (f"ipv4 datagram id 0x1234 from {A} to {B} never completed (expired: not complete 30 s "
            "of capture time after its first fragment): 2960 of ? bytes, fragments in frames 1, 2"
            in err)
    assert "frames 3\n" in err  # the last fragment alone, still open at the end


def test_the_queue_limits_hold_and_evict_the_oldest():
    r = R.Reassembler()
    data = bytes(1480)
    for i in range(R.QUEUES_MAX + 500):
        r.feed(R.Fragment(4, b"\1" * 4, b"\2" * 4, i, 17, 0, True, data, bytes(20)),
               frame=i + 1, ts=0.0)
        assert len(r.queues) <= R.QUEUES_MAX and r.held <= R.BYTES_MAX
    assert r.held == sum(q.cost for q in r.queues.values())
    lines = r.finish()
    assert r.lost_count == R.QUEUES_MAX + 500 and len(lines) == R.LOST_KEEP + 1
    assert "evicted: more than 1024 datagrams or 4194304 bytes" in lines[0]
    assert lines[-1] == f"and {R.QUEUES_MAX + 500 - R.LOST_KEEP} more datagram(s) never completed"
    assert not r.queues and r.held == 0


def hostile_capture(path, count: int = 10_000) -> str:
    """``count`` fragments: never-completed queues of 1480 bytes, overlaps, huge offsets,
    duplicates and 8-byte slivers, over a few thousand identifications."""
    rng = random.Random(27)
    base = bytearray(whole()[:20])
    w = RawPcapWriter(str(path), linktype=LINKTYPE_RAW)
    for n in range(count):
        kind = n % 4
        ident = rng.randrange(4000) if kind != 3 else 0x4242
        off = {0: rng.randrange(0, 8000), 1: rng.randrange(8180, 8192),
               2: rng.randrange(0, 200), 3: rng.randrange(0, 8000)}[kind]
        size = 8 if kind == 3 else 1480
        h = bytearray(base)
        h[2:4], h[4:6] = (20 + size).to_bytes(2, "big"), ident.to_bytes(2, "big")
        h[6:8] = (0x2000 | off).to_bytes(2, "big")
        w.write(bytes(h) + rng.randbytes(size))
    w.close()
    return str(path)


#: runs ``uet`` and writes its peak RSS (VmHWM: this process image's own, unlike ru_maxrss, which
#: keeps the high-water mark of the forked parent across exec) to the file named first
_PEAK_RSS = ("import atexit, sys\n"
             "def peak():\n"
             "    with open(sys.argv[1], 'w') as fh:\n"
             "        fh.write(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
             "atexit.register(peak)\n"
             "from uet.cli import main\n"
             "sys.exit(main(sys.argv[2:]))\n")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_10000_hostile_fragments_keep_uet_decode_under_100_mb(tmp_path):
    """Issue 27: bounded memory, measured as the decoding process's own peak RSS."""
    path = hostile_capture(tmp_path / "h.pcap")
    hwm = tmp_path / "hwm"
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(hwm), "decode", "--json", path],
                          capture_output=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 10_000 and all(json.loads(x)["problems"] for x in lines)
    errs = done.stderr.decode().splitlines()
    assert len(errs) == R.LOST_KEEP + 1 and "never completed" in errs[0]
    field, kib, unit = hwm.read_text().split()
    assert field == "VmHWM:" and unit == "kB" and int(kib) < 100 * 1024


# --- hypothesis: codec-like properties ------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=9, max_size=4000), st.lists(st.integers(1, 499), max_size=12),
       st.randoms(use_true_random=False))
def test_random_datagrams_cut_and_shuffled_reassemble_to_the_original(body, cuts, rnd):
    udp = struct.pack("!HHHH", 50000, 4793, 8 + len(body), 0) + body
    pkt = whole()[:20]
    pkt = bytearray(pkt[:2] + (20 + len(udp)).to_bytes(2, "big") + pkt[4:])
    pkt[10:12] = b"\0\0"
    pkt[10:12] = build.ipv4_checksum(bytes(pkt)).to_bytes(2, "big")
    pkt = bytes(pkt) + udp
    frags = cut4(pkt, [c * 8 for c in cuts if c * 8 < len(udp)])
    rnd.shuffle(frags)
    r = R.Reassembler()
    outs = [decode_frame(LINKTYPE_RAW, f, n, reasm=r) for n, f in enumerate(frags, 1)]
    done = [o for o in outs if any(p.startswith("reassembled from") for p in o.obj["problems"])]
    if len(frags) == 1:
        assert not done and outs[0].obj["udp"]["length"] == len(udp)  # not a fragment at all
        return
    assert len(done) == 1 and done[0] is outs[-1]
    assert r.queues == {} and r.held == 0
    # the packet decode_frame built is the original, byte for byte
    r2 = R.Reassembler()
    for n, f in enumerate(frags, 1):
        decode_frame(LINKTYPE_RAW, f, n, reasm=r2)
    assert r2._last is not None and r2._last[2].packet == pkt  # the last frame's outcome
    assert done[0].obj["udp"] == {"sport": 50000, "dport": 4793, "length": len(udp), "checksum": 0}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 8191), st.booleans(),
                          st.integers(0, 2000), st.floats(0, 200)), max_size=60))
def test_random_fragments_never_crash_and_stay_bounded(items):
    r = R.Reassembler()
    for n, (ident, off, more, size, ts) in enumerate(items, 1):
        out = r.feed(R.Fragment(4, b"\1" * 4, b"\2" * 4, ident, 17, off * 8, more, bytes(size),
                                whole()[:20]), frame=n, ts=ts)
        assert out.problems
        assert len(r.queues) <= R.QUEUES_MAX and 0 <= r.held <= R.BYTES_MAX
        assert r.held == sum(q.cost for q in r.queues.values())
        for q in r.queues.values():
            assert q.data <= R.DATAGRAM_LIMIT and q.data == sum(
                e - s for s, (e, _, _) in q.parts.items())
    r.finish()
    assert r.held == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=120), max_size=20))
def test_random_ip_frames_through_the_reassembler_never_raise(frames):
    r = R.Reassembler()
    for n, body in enumerate(frames, 1):
        for raw in (b"\x45" + body, b"\x60" + body, cut4(whole(), [8])[n % 2][:20] + body):
            decode_frame(LINKTYPE_RAW, raw, n, reasm=r)
