"""``uet analyze`` (issue 17 items 1 and 2): a capture read as a conversation, and its ladder.

The central tests run the simulator and the live demo with loss and trimming and check that the
analysis of their captures accounts for what their summaries count. Where a count legitimately
differs, the exact relation is asserted with its reason:

* ``uet sim`` records every frame as sent (and again each frame the network changed): the
  analyzer's retransmissions, trims, NACKs by code and CE marks equal the summary's. Spurious:
  the simulator counts a resend that *arrived intact* when its PSN had already arrived; the
  analyzer judges from the ACKs the capture showed before the resend (facts C.2, C.4). So
  sim spurious == the analyzer's spurious resends that arrived (not trimmed, answered by an ACK
  with their ACK_PSN and RETX, B.7) in these runs; a spurious resend that was trimmed or dropped
  is one the simulator does not count.
* ``uet demo`` records what its fabric forwards (drops never show; the receiver reads every
  forwarded datagram in that order): retransmissions == ``retransmissions_received``, NACKs ==
  what the endpoints received (``nacks_rcvd``), spurious == ``retransmissions_after_intact_copy``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, RawPcapWriter

from uet.analyze.conversation import analyze as converse
from uet.analyze.intake import collect
from uet.analyze.ladder import svg_ladder, text_ladder
from uet.analyze.report import KEYS, PDC_KEYS, to_json, to_text
from uet.cli import main
from uet.wire import build

from tests.interop_paths import ABSENT, INTEROP


A, B = "10.0.0.1", "10.0.0.2"  # initiator, target
EV = 50000                      # the initiator's entropy (UDP source) port


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def analyze(capsys, path, *opts: str) -> dict:
    rc, out, err = run(capsys, "analyze", str(path), "--json", *opts)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 1  # exactly one JSON object
    return json.loads(lines[0])


# --- hand-made frames (uet.wire.build), B.5-B.12 -----------------------------------------------

def req(psn: int, *, syn: bool = False, ar: bool = False, retx: bool = False, start: int = 1000,
        sport: int = EV, dport: int = 4793, **ip) -> bytes:
    pds = {"type": 2, "next_hdr": 3, "psn": psn, "spdcid": 7, "ar": ar, "retx": retx, "syn": syn,
           "clear_psn_offset": -1}
    pds.update({"psn_offset": psn - start} if syn else {"dpdcid": 9})
    ses = {"opcode": 5, "som": True, "eom": True, "message_id": psn & 0xFFFF,
           "request_length": 512}
    return build.udp_frame(build.uet_bytes(pds, ses, payload=bytes(512)), sport=sport,
                           dport=dport, **ip)


def answer(pds: dict, *, sport: int = 4793, dport: int = EV) -> bytes:
    return build.udp_frame(build.uet_bytes({"spdcid": 9, "dpdcid": 7, **pds}), src=B, dst=A,
                           sport=sport, dport=dport, dscp=46, ecn=0)


def ack(cack: int, *, offset: int = 0, bitmap: int = 1, sack_offset: int = 0, mpr: int = 8,
        sport: int = 4793, **kw) -> bytes:
    return answer({"type": 8, "cack_psn": cack, "ack_psn_offset": offset, "cc_type": 0,
                   "mpr": mpr, "sack_psn_offset": sack_offset, "sack_bitmap": bitmap, **kw},
                  sport=sport)


def nack(psn: int, code: int = 1, **kw) -> bytes:
    return answer({"type": 10, "nack_code": code, "nack_psn": psn, **kw})


def close(psn: int) -> bytes:
    return build.udp_frame(build.uet_bytes({"type": 11, "ctl_type": 4, "ar": True, "psn": psn,
                                            "spdcid": 7, "dpdcid": 9}),
                           sport=EV, dscp=46, ecn=0)


def write(path: Path, frames: list[bytes], linktype: int = 1) -> Path:
    """A pcap with frame i at 1750000000 s + 10 (i - 1) us."""
    w = RawPcapWriter(str(path), linktype=linktype)
    w.write_header(None)
    for i, f in enumerate(frames):
        w.write_packet(f, sec=1750000000, usec=10 * i)
    w.close()
    return path


# --- the simulator's captures --------------------------------------------------------------------

# (uet sim options, its summary: retransmissions, trimmed, NACK TRIMMED, spurious, CE marks;
#  the analyzer's spurious verdicts)
SIM_RUNS = [
    ("--bytes 256k --loss 0.02 --trim 0.05 --seed 3", (3, 1, 1, 0, 0), 0),
    # a spurious resend (ACK frame covered it) that the network then trimmed: not in the sim's count
    ("--bytes 1m --loss 0.05 --trim 0.1 --seed 12", (42, 29, 29, 0, 10), 1),
    # three spurious resends, one of them dropped (no answer): the sim counts the two that arrived
    ("--bytes 1m --loss 0.05 --trim 0.1 --seed 36", (42, 24, 24, 2, 12), 3),
    ("--bytes 1m --loss 0.03 --trim 0.05 --messages 4 --mode rod --seed 1", (28, 17, 17, 1, 25), 1),
]


@pytest.mark.parametrize("opts, counts, spurious", SIM_RUNS, ids=[r[0] for r in SIM_RUNS])
def test_sim_capture_is_accounted_for(capsys, tmp_path, opts, counts, spurious):
    pcap = tmp_path / "sim.pcap"
    rc, out, err = run(capsys, "sim", *opts.split(), "--pcap", str(pcap), "--json")
    assert rc == 0, err
    s = json.loads(out)
    assert (s["retransmissions"], s["trimmed"], s["nacks"].get("TRIMMED", 0),
            s["spurious_retransmissions"], s["ecn_marked"]) == counts
    a = analyze(capsys, pcap)
    assert a["retransmissions"] == s["retransmissions"]
    assert a["trimmed"] == s["trimmed"]
    assert a["nacks"] == s["nacks"]
    assert a["ce_marked"] == s["ecn_marked"]
    assert a["spurious_retransmissions"] == spurious
    retx = [r for p in a["pdcs"] for r in p["retransmissions"]]
    arrived = [r for r in retx if r["verdict"] == "spurious" and not r["trimmed"]
               and r["answer_frame"] is not None]
    assert len(arrived) == s["spurious_retransmissions"]
    assert a["violations"] == 0 and a["broken"] == [] and a["pdc_count"] == 1
    (pdc,) = a["pdcs"]
    assert pdc["mode"] == ("ROD" if "rod" in opts else "RUD")
    assert pdc["coverage"] == 1.0 and pdc["close"]["ack_frame"] is not None
    # every trim is the sim's second record of a frame it also recorded as sent, and is NACKed
    assert all(t["copy_of"] is not None and t["nack_frame"] is not None for t in pdc["trims"])
    assert all(n["answers"] is not None for n in pdc["nacks"])


def test_sim_capture_report_and_json_keys(capsys, tmp_path):
    pcap = tmp_path / "sim.pcap"
    assert run(capsys, "sim", "--bytes", "256k", "--loss", "0.02", "--trim", "0.05", "--seed",
               "3", "--pcap", str(pcap), "--json")[0] == 0
    a = analyze(capsys, pcap)
    assert tuple(a) == KEYS and tuple(a["pdcs"][0]) == PDC_KEYS
    pdc = a["pdcs"][0]
    assert (a["frames"], a["uet_frames"], a["pdc_count"]) == (135, 135, 1)
    assert (pdc["initiator"], pdc["target"], pdc["target_pdcid_frame"]) == (A, B, 65)
    assert (pdc["first_psn"], pdc["psns_seen"], pdc["psn_range"]) == (pdc["start_psn"], 64, 64)
    assert pdc["counts"] == {"requests": 67, "copies": 1, "acks": 65, "nacks": 1, "control": 1}
    assert pdc["messages"] == {"ids": [1], "som": 1, "eom": 1}
    assert pdc["trims"] == [{"frame": 105, "psn": pdc["start_psn"] + 46, "copy_of": 47,
                             "nack_frame": 106}]
    assert [(r["frame"], r["verdict"]) for r in pdc["retransmissions"]] == [
        (128, "needed"), (130, "needed"), (131, "needed")]
    assert pdc["retransmissions"][0]["reason"] == "every earlier copy was trimmed (frame 47)"
    assert pdc["nacks"] == [{"frame": 106, "code": "TRIMMED", "psn": pdc["start_psn"] + 46,
                             "answers": 105, "retx": False}]
    rc, out, _ = run(capsys, "analyze", str(pcap))
    assert rc == 0
    assert out.splitlines()[:2] == [
        f"{pcap}: 135 frame(s), 135 UET, 1 PDC(s)",
        "totals: 3 retransmission(s) (0 spurious), 1 trimmed, 0 CE-marked, NACKs: TRIMMED 1, "
        "0 violation(s)"]
    assert "    frame 105  PSN %d (copy of frame 47)  NACK in frame 106" % (
        pdc["start_psn"] + 46) in out.splitlines()


# --- the live demo's capture ---------------------------------------------------------------------

def test_demo_capture_is_accounted_for(capsys, tmp_path):
    pcap = tmp_path / "demo.pcap"
    rc, out, err = run(capsys, "demo", "--loss", "0.01", "--trim", "0.05", "--bytes", "1m",
                       "--capture", str(pcap), "--json", "--timeout", "30")
    assert rc == 0, err[-2000:]
    d = json.loads(out)
    assert d["ok"] is True
    a = analyze(capsys, pcap)  # the demo's ports are not 4793: found by their CRC trailers
    assert a["trimmed"] == d["trimmed"] and a["ce_marked"] == d["ecn_marked"]
    # a dropped resend never reaches the capture: what the receiver got is what it shows
    assert a["retransmissions"] == d["retransmissions_received"] <= d["retransmissions"]
    received: dict[str, int] = {}
    for side in ("sender", "receiver"):
        for code, n in d[side]["nacks_rcvd"].items():
            received[code] = received.get(code, 0) + n
    assert a["nacks"] == received
    assert all(n <= d["nacks"][code] for code, n in a["nacks"].items())
    # the demo's spurious: RETX datagrams the receiver already had (an intact copy came before)
    assert a["retransmissions_after_intact_copy"] == d["spurious_retransmissions"]
    assert a["spurious_retransmissions"] <= d["spurious_retransmissions"]
    assert a["violations"] == 0 and a["pdc_count"] == 1 and a["broken"] == []
    pdc = a["pdcs"][0]
    assert pdc["coverage"] == 1.0 and len(pdc["trims"]) == d["trimmed"]


# --- hand-made captures ---------------------------------------------------------------------------

def test_phantom_ack_is_a_violation_with_its_frame(capsys, tmp_path):
    # the ACK's SACK base is 1002 (CACK 1001 + 1): bits 0 and 2 claim 1002 and 1004, never sent
    frames = [req(1000, syn=True), req(1001, syn=True), ack(1001, bitmap=0b101, sack_offset=1)]
    a = analyze(capsys, write(tmp_path / "p.pcap", frames))
    pdc = a["pdcs"][0]
    assert pdc["phantom_acks"] == [{"frame": 3, "psns": [1002, 1004], "why": "never sent"}]
    assert pdc["violations"] == [{
        "frame": 3, "rule": "C.2", "kind": "phantom_ack",
        "text": "ACK claims 2 PSN(s) with never sent in the capture: 1002, 1004"}]
    assert a["violations"] == 1


def test_one_sided_capture_claims_are_not_violations(capsys, tmp_path):
    a = analyze(capsys, write(tmp_path / "acks.pcap", [ack(1001), ack(1005, bitmap=0xFF)]))
    pdc = a["pdcs"][0]
    assert (a["violations"], pdc["phantom_acks"], pdc["counts"]["requests"]) == (0, [], 0)
    assert pdc["notes"] == ["one-sided: the capture shows no request of this PDC, so what its ACKs "
                            "claim cannot be checked"]


def test_every_violation_kind_with_frame_and_facts_row(capsys, tmp_path):
    frames = [
        req(100, syn=True, ar=True, start=100),            # 1
        req(101, syn=True, start=100, ecn=3),              # 2 CE
        ack(101, mpr=1, m=True),                           # 3: MPR 1 = 128 PSNs (B.8)
        build.trim(req(102)),                              # 4 trimmed
        nack(102),                                         # 5 answers 4
        req(102, ar=True, retx=True),                      # 6 needed: 4 was trimmed
        nack(101),                                         # 7 C.6: 101 was not trimmed
        ack(102, bitmap=0b10, sack_offset=1, mpr=1),       # 8 C.2: claims 104, never sent
        ack(100, mpr=1),                                   # 9 C.2: CACK backwards on one path
        req(300),                                          # 10 C.2: 198 beyond CACK 102
        req(101, syn=True, start=100, sport=EV + 1),       # 11 C.5: again without RETX
        req(100, retx=True),                               # 12 spurious: frame 3 covered it
        close(301),                                        # 13
        req(103),                                          # 14 C.7
    ]
    a = analyze(capsys, write(tmp_path / "v.pcap", frames))
    pdc = a["pdcs"][0]
    assert [(v["frame"], v["rule"], v["kind"]) for v in pdc["violations"]] == [
        (7, "C.6", "nack_trimmed_untrimmed"), (8, "C.2", "phantom_ack"),
        (9, "C.2", "cack_backwards"), (10, "C.2", "beyond_mpr"), (11, "C.5", "retx_flag_missing"),
        (14, "C.7", "data_after_close")]
    assert a["violations"] == 6
    assert [(r["frame"], r["verdict"], r["reason"]) for r in pdc["retransmissions"]] == [
        (6, "needed", "every earlier copy was trimmed (frame 4)"),
        (11, "spurious", "ACK in frame 3 had covered it"),
        (12, "spurious", "ACK in frame 3 had covered it")]
    assert pdc["trims"] == [{"frame": 4, "psn": 102, "copy_of": None, "nack_frame": 5}]
    assert [(n["frame"], n["code"], n["answers"]) for n in pdc["nacks"]] == [
        (5, "TRIMMED", 4), (7, "TRIMMED", 2)]
    assert pdc["ecn"] == {"ce_marked": 1, "first_ce_frame": 2, "acks_with_m": 1,
                          "first_m_frame": 3, "outstanding_before_m": None,
                          "outstanding_after_m": 66.67}  # new PSNs 102, 300, 103 less CACK
    assert pdc["close"] == {"frame": 13, "psn": 301, "ack_frame": None}
    assert (pdc["target_pdcid"], pdc["target_pdcid_frame"], pdc["start_psn"]) == (9, 3, 100)
    assert (a["trimmed"], a["ce_marked"], a["nacks"]) == (1, 1, {"TRIMMED": 2})


def test_broken_frames_are_listed_and_skipped(capsys, tmp_path):
    good = [req(1000, syn=True, ar=True), ack(1000)]
    runt = build.udp_frame(b"\x10\x00\x00", sport=EV, trailer=False)  # 3 bytes of PDS
    cut_ip = good[0][:30]                                                  # IPv4 header cut short
    flipped = bytearray(req(1001, syn=True))
    flipped[-10] ^= 1                                                      # its CRC fails
    arp = bytes(12) + b"\x08\x06" + bytes(28)                             # not IP: not listed
    a = analyze(capsys, write(tmp_path / "b.pcap", [good[0], runt, cut_ip, bytes(flipped), arp,
                                                    good[1]]))
    assert [b["frame"] for b in a["broken"]] == [2, 3, 4]
    assert a["broken"][1] == {"frame": 3, "reason": "ipv4: truncated: needs 20 bytes, 16 left"}
    assert a["broken"][2]["reason"].startswith("the CRC-32C trailer does not verify")
    assert (a["frames"], a["uet_frames"], a["violations"]) == (6, 2, 0)
    assert a["pdcs"][0]["counts"]["requests"] == 1


def test_no_uet_says_so_and_exits_0(capsys, tmp_path):
    roce = build.roce_frame({"opcode": 4, "dest_qp": 17, "psn": 5}, payload=b"x" * 8)
    path = write(tmp_path / "r.pcap", [roce, roce])
    rc, out, err = run(capsys, "analyze", str(path))
    assert (rc, err) == (0, "")
    assert "no UET found in 2 frame(s)" in out.splitlines()
    a = analyze(capsys, path)
    assert (a["uet_frames"], a["pdc_count"], a["pdcs"], a["notes"]) == (
        0, 0, [], ["no UET found in 2 frame(s)"])


@pytest.mark.parametrize("make", ["missing", "text"])
def test_unreadable_file_is_one_line_and_exit_2(capsys, tmp_path, make):
    path = tmp_path / "x.pcap"
    if make == "text":
        path.write_text("not a capture\n")
    rc, out, err = run(capsys, "analyze", str(path), "--json")
    assert (rc, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(f"uet analyze: {path}: ")


def test_any_port_by_crc_and_port_narrows(capsys, tmp_path):
    frames = [req(1000, syn=True, ar=True, dport=5000), build.trim(req(1001, dport=5000)),
              ack(1000, sport=5000), req(2000, syn=True, start=2000, dport=6000, trailer=False)]
    a = analyze(capsys, write(tmp_path / "p.pcap", frames))
    # frame 2 (trimmed: no trailer) belongs to the PDC of frame 1; frame 4 has no trailer and no PDC
    assert (a["uet_frames"], a["pdc_count"], a["trimmed"]) == (3, 1, 1)
    assert analyze(capsys, tmp_path / "p.pcap", "--port", "6000")["uet_frames"] == 1
    assert analyze(capsys, tmp_path / "p.pcap", "--port", "4793")["uet_frames"] == 0


@pytest.mark.parametrize("form", ["ethernet", "raw", "ipv4", "pcapng"])
def test_link_types_and_formats(capsys, tmp_path, form):
    """Every link type uet decode reads gives the same conversation (here: trim, NACK, resend)."""
    frames = [build.trim(req(1000, syn=True, ar=True)), nack(1000),
              req(1000, syn=True, ar=True, retx=True), ack(1000, retx=True)]
    path = tmp_path / "f.pcap"
    if form == "pcapng":
        w = PcapNgWriter(str(path))
        for f in frames:
            w.write(Ether(f))
        w.close()
    elif form == "ethernet":
        write(path, frames)
    else:  # the IP packet alone
        write(path, [f[14:] for f in frames], linktype={"raw": 101, "ipv4": 228}[form])
    a = analyze(capsys, path)
    (pdc,) = a["pdcs"]
    assert (a["uet_frames"], a["trimmed"], a["nacks"]) == (4, 1, {"TRIMMED": 1})
    assert [(r["frame"], r["verdict"], r["answer_frame"]) for r in pdc["retransmissions"]] == [
        (3, "needed", 4)]


def test_damaged_record_is_reported_and_the_rest_analysed(capsys, tmp_path):
    path = write(tmp_path / "d.pcap", [req(1000, syn=True, ar=True), ack(1000), close(1001)])
    path.write_bytes(path.read_bytes()[:-20])  # the last record (the CLOSE) ends early
    rc, out, err = run(capsys, "analyze", str(path), "--json")
    a = json.loads(out)
    assert rc == 0 and len(err.splitlines()) == 1 and "(frame 3)" in err
    assert a["stopped"] == err.removeprefix("uet analyze: ").strip()
    # the cut frame is decoded as far as it goes: its UET bytes are gone, so it is broken
    assert (a["frames"], a["uet_frames"], [b["frame"] for b in a["broken"]]) == (3, 2, [3])
    assert a["pdcs"][0]["close"] is None


def _everything(frames: list[bytes]) -> dict:
    intake = collect([(1, f, float(i)) for i, f in enumerate(frames)], "fuzz")
    conv = converse(intake.uet, intake.outside)
    report = to_json(intake, conv)
    json.dumps(report)
    to_text(report)
    for pdc in conv.pdcs:
        text_ladder(pdc, 0.0)
        ET.fromstring(svg_ladder(pdc, 0.0).encode())
    return report


PSNS = st.integers(995, 1010)
PACKETS = st.one_of(
    st.builds(lambda psn, syn, ar, retx, cut, ce: (build.trim if cut else bytes)(
        req(psn, syn=syn, ar=ar, retx=retx, start=995, ecn=3 if ce else 2)),
        PSNS, st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans()),
    st.builds(lambda cack, off, bm, so, m: ack(cack, offset=off, bitmap=bm, sack_offset=so, m=m),
              PSNS, st.integers(-4, 4), st.integers(0, (1 << 64) - 1), st.integers(-8, 8),
              st.booleans()),
    st.builds(lambda psn, code, retx: nack(psn, code, retx=retx), PSNS, st.integers(0, 255),
              st.booleans()),
    st.builds(close, PSNS),
    st.binary(max_size=120),
    st.binary(max_size=80).map(lambda b: build.udp_frame(b, sport=EV)),
    st.binary(max_size=80).map(lambda b: build.udp_frame(b, src=B, dst=A, sport=4793, dport=EV)),
)


@given(st.lists(PACKETS, max_size=25))
def test_arbitrary_frames_never_raise(frames):
    """Issue 17 "bad input": any bytes and any order of PDC packets are analysed, never a traceback;
    every frame is counted once: UET, broken or other."""
    r = _everything(frames)
    assert r["frames"] == len(frames)
    assert r["uet_frames"] + r["broken_count"] <= len(frames)
    assert len(r["broken"]) == r["broken_count"]  # fewer than BROKEN_KEEP: every one listed
    assert r["violations"] == sum(len(p["violations"]) for p in r["pdcs"])


# --- the ladder ------------------------------------------------------------------------------------

def test_ladder_text_of_a_three_packet_exchange(capsys, tmp_path):
    frames = [build.trim(req(1000, syn=True, ar=True)), nack(1000),
              req(1000, syn=True, ar=True, retx=True)]
    path = write(tmp_path / "l.pcap", frames)
    rc, out, err = run(capsys, "analyze", str(path), "--ladder", "1")
    assert (rc, err) == (0, "")
    assert out.splitlines() == [
        "PDC 1: initiator 10.0.0.1 (PDCID 7) <-> target 10.0.0.2 (PDCID ?), RUD",
        " frame     time (us)  10.0.0.1 (initiator)     10.0.0.2 (target)",
        "     1             0  |~~ RUD_REQ 1000 SYN AR ~~~~~~~~~~~~~~~~>|"
        "  trimmed (DSCP 11); NACK in frame 2",
        "     2            10  |<================== NACK TRIMMED 1000 ==|  answers frame 1",
        "     3            20  |-- RUD_REQ 1000 SYN AR RETX ----------->|"
        "  retransmission, needed: every earlier copy was trimmed (frame 1)",
    ]
    # ADDR:PDCID names the same PDC; --json carries the same lines
    a = analyze(capsys, path, "--ladder", "10.0.0.1:7")
    assert a["ladder"] == {"pdc": 1, "lines": out.splitlines()}


def test_ladder_svg_is_well_formed(capsys, tmp_path):
    frames = [req(1000, syn=True, ar=True), ack(1000), close(1001), ack(1001)]
    svg = tmp_path / "l.svg"
    rc, out, err = run(capsys, "analyze", str(write(tmp_path / "l.pcap", frames)), "--ladder",
                       "10.0.0.2:9", "--svg", str(svg))
    assert rc == 0 and err == f"uet analyze: wrote {svg}\n"
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert len(root.findall("s:line", ns)) == 2 + 4  # two lanes, one arrow per frame
    texts = [t.text for t in root.findall("s:text", ns)]
    assert "RUD_REQ 1000 SYN AR" in texts and "ACK_CC 1001 cack 1001" in texts
    assert "CLOSE 1001 AR" in texts
    assert len(out.splitlines()) == 2 + 4  # the text ladder on stdout as well


@pytest.mark.parametrize("argv, message", [
    (["--ladder", "foo"], "uet analyze: error: argument --ladder: foo: expected a PDC's index"),
    (["--ladder", "3"], "uet analyze: argument --ladder: 3: there is no PDC 3: the capture has 1"),
    (["--ladder", "10.0.0.9:7"], "uet analyze: argument --ladder: 10.0.0.9:7: no PDC has "
                                 "10.0.0.9 with PDCID 7"),
    (["--svg", "x.svg"], "uet analyze: error: argument --svg: draws the PDC that --ladder names"),
])
def test_bad_ladder_options_exit_2(capsys, tmp_path, argv, message):
    path = write(tmp_path / "l.pcap", [req(1000, syn=True, ar=True), ack(1000)])
    rc, out, err = run(capsys, "analyze", str(path), *argv)
    assert (rc, out) == (2, "")
    assert err.startswith(message)


# --- other captures ------------------------------------------------------------------------------

def test_golden_flows_capture(capsys):
    """captures/uet_flows.pcap: a hand-written PDC life (its README table). Its frame 8 SACKs two
    PSNs the file never shows, and frame 13 reuses the closed PDC's ids without SYN."""
    a = analyze(capsys, Path(__file__).resolve().parents[2] / "captures" / "uet_flows.pcap")
    assert (a["pdc_count"], a["trimmed"], a["ce_marked"], a["nacks"], a["other"]) == (
        2, 1, 1, {"TRIMMED": 1}, {"UUD_REQ": 1})
    pdc = a["pdcs"][0]
    assert [(v["frame"], v["kind"]) for v in pdc["violations"]] == [
        (8, "phantom_ack"), (13, "data_after_close")]
    assert pdc["close"] == {"frame": 11, "psn": 65543, "ack_frame": 12}
    assert pdc["ecn"]["first_ce_frame"] == 9 and pdc["ecn"]["first_m_frame"] == 10


INTEROP_PCAPS = sorted(INTEROP.glob("*/*.pcap")) if INTEROP.exists() else []


@pytest.mark.skipif(not INTEROP_PCAPS, reason=ABSENT)
@pytest.mark.parametrize("pcap", INTEROP_PCAPS, ids=[p.name for p in INTEROP_PCAPS])
def test_interop_pcaps(capsys, pcap):
    a = analyze(capsys, pcap)
    assert tuple(a) == KEYS and a["frames"] > 0
    assert all(tuple(p) == PDC_KEYS for p in a["pdcs"])


def test_a_protected_demo_capture_is_accounted_for_with_its_key(capsys, tmp_path):
    """Issue 18 item 3 for uet analyze: with --sd-key the TSS frames of a protected demo are read
    decrypted (a verified tag confirms a frame as a trailer does) and the capture tells the
    same story as the demo's own counters; without the key there is no PDC to see."""
    pcap = tmp_path / "tss.pcap"
    rc, out, err = run(capsys, "demo", "--tss", "--loss", "0.01", "--trim", "0.05", "--bytes",
                       "1m", "--capture", str(pcap), "--json", "--timeout", "30")
    assert rc == 0, err[-2000:]
    d = json.loads(out)
    assert d["ok"] is True
    # through the relay both ends send an SSI and the AAD leaves the addresses out (the relay
    # rewrites them: facts A.1, uet.demo.command.through_relay)
    a = analyze(capsys, pcap, "--sd-key", str(pcap) + ".key", "--tss-aad", "header")
    assert a["pdc_count"] == 1 and a["violations"] == 0 and a["broken"] == []
    assert a["trimmed"] == d["trimmed"] and a["ce_marked"] == d["ecn_marked"]
    assert a["retransmissions"] == d["retransmissions_received"] <= d["retransmissions"]
    assert analyze(capsys, pcap)["pdc_count"] == 0


def test_ladder_svg_has_a_colour_legend(tmp_path):
    """Under the rows, one sample line per colour the ladder uses and what it stands for."""
    from uet.analyze.ladder import COLOR, MEANING

    frames = [req(1000, syn=True, ar=True), ack(1000)]
    intake = collect([(1, f, float(i)) for i, f in enumerate(frames)], "legend")
    (pdc,) = converse(intake.uet, intake.outside).pdcs
    root = ET.fromstring(svg_ladder(pdc, 0.0).encode())
    ns = {"s": "http://www.w3.org/2000/svg"}
    (legend,) = [g for g in root.findall("s:g", ns) if g.get("id") == "legend"]
    samples = [ln.get("stroke") for ln in legend.findall("s:line", ns)]
    labels = {t.get("fill"): t.text for t in legend.findall("s:text", ns) if t.get("fill")}
    assert set(MEANING) == set(COLOR) and samples == [COLOR[s] for s in MEANING]
    assert labels == {COLOR[s]: MEANING[s] for s in MEANING}
    right = max(int(t.get("x")) + 8 * len(t.text) for t in legend.findall("s:text", ns))
    assert right <= int(root.get("width"))
