"""The plugin's CRC-32C preference and its filterable fields, in real tshark.

* ``check_crc`` (off by default, as Wireshark's own TCP and UDP "Validate the checksum if
  possible"): off, a trailer (facts A.3) that is not computed is shown with its value and the status
  Unverified (in auto mode, a source's first 8 packets are computed: test_wireshark_trailer_learned);
  on, it is verified and a corrupted frame is flagged.
* Every field stays usable by a display filter and by ``-T fields`` on every packet, whatever the
  preferences: ``-Y`` on a deep field (a PSN of the SACK bitmap, an SES field) selects exactly the
  frames ``uet decode`` says it should.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import (  # noqa: E402
    CAPTURES, NEEDS_TSHARK, compare, lua_file, plugin_name, run_tshark, tshark_proc, uet_decode_json,
)

pytestmark = [pytest.mark.tshark, NEEDS_TSHARK]

__all__ = ["lua_file"]  # the fixture, imported from wshelpers

#: Wireshark's checksum status values (proto_checksum_vals)
BAD, GOOD, UNVERIFIED = 0, 1, 2


def _good_and_corrupted(tmp_path: Path) -> Path:
    """Two frames: a request with its CRC-32C trailer, and the same frame with one payload bit
    flipped (the trailer no longer verifies)."""
    from uet.wire import build as B

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes

    body = B.uet_bytes({"type": 2, "next_hdr": 3, "psn": 7, "spdcid": 1, "dpdcid": 2},
                       {"opcode": 5, "som": True, "eom": True, "request_length": 8}, payload=b"abcdefgh")
    good = B.udp_frame(body, trailer=True)
    bad = bytearray(good)
    bad[-6] ^= 0x01  # a payload byte, before the 4-byte trailer
    pcap = tmp_path / "crc.pcap"
    pcap.write_bytes(pcap_bytes([good, bytes(bad)]))
    return pcap


def _crc_view(run, pn: str) -> list[tuple]:
    """(crc.value shown, crc.ok shown or None, crc.status, bad-CRC expert infos) per frame."""
    out = []
    for pkt in run.packets:
        ok = pkt.fields.get(f"{pn}.crc.ok")
        out.append((len(pkt.fields.get(f"{pn}.crc.value", [])),
                    None if ok is None else ok[0]["show"] in ("1", "True", "true"),
                    [int(a["show"]) for a in pkt.fields.get(f"{pn}.crc.status", [])],
                    [m for tag, m in pkt.experts if tag.endswith(".bad_crc")]))
    return out


def test_crc_is_unverified_without_check_crc_and_verified_with_it(tmp_path, lua_file):
    """A.3: check_crc off (the default), a trailer always expected (trailer:crc) is shown, unverified,
    also when it is wrong; with check_crc on the corrupted frame is flagged. At the defaults (auto),
    a source's first packets are verified to learn whether it sends trailers: as `uet decode`, the
    good frame has its trailer (Good) and the corrupted one none, and no frame is called bad."""
    pcap = _good_and_corrupted(tmp_path)
    pn = plugin_name()
    unchecked = run_tshark(pcap, [lua_file], prefs=(f"{pn}.trailer:crc",))
    assert _crc_view(unchecked, pn) == [(1, None, [UNVERIFIED], []), (1, None, [UNVERIFIED], [])]
    default = run_tshark(pcap, [lua_file])
    assert _crc_view(default, pn) == [(1, True, [GOOD], []), (0, None, [], [])]
    checked = run_tshark(pcap, [lua_file], prefs=(f"{pn}.check_crc:TRUE", f"{pn}.trailer:crc"))
    good, corrupted = _crc_view(checked, pn)
    assert good == (1, True, [GOOD], [])
    assert corrupted[:3] == (1, False, [BAD])
    assert len(corrupted[3]) == 1 and corrupted[3][0].startswith("crc: CRC-32C trailer mismatch: carries 0x")
    info = tshark_proc(pcap, [lua_file], output=None,
                       prefs=(f"{pn}.check_crc:TRUE", f"{pn}.trailer:crc")).stdout.splitlines()
    assert "[bad CRC]" not in info[0] and info[1].rstrip().endswith("[bad CRC]")
    plain = tshark_proc(pcap, [lua_file], output=None).stdout.splitlines()
    assert not any("[bad CRC]" in line for line in plain)


@pytest.mark.parametrize("name", ["uet_ses.pcap", "uet_control_nack.pcap"])
def test_unchecked_fields_equal_uet_decode_with_every_trailer_unverified(name, lua_file):
    """check_crc off and trailer:crc, a capture whose every frame carries its trailer decodes as
    `uet decode --trailer crc` does, minus the verdict (crc.ok), with every status Unverified.
    (At the defaults: test_wireshark_trailer_learned.py.)"""
    pcap = CAPTURES / name
    pn = plugin_name()
    run = run_tshark(pcap, [lua_file], prefs=(f"{pn}.trailer:crc",))
    objs = uet_decode_json(pcap, "--trailer", "crc")
    assert len(objs) == len(run.packets)
    for obj, pkt in zip(objs, run.packets):
        assert obj["uet"]["crc"].pop("ok") is True
        assert compare(obj, pkt, pn=pn) == [], obj["frame"]
        assert [a["show"] for a in pkt.fields[f"{pn}.crc.status"]] == [str(UNVERIFIED)]
        assert f"{pn}.crc.ok" not in pkt.fields


# --- display filters and -T fields on deep fields --------------------------------------------

@pytest.fixture(scope="module")
def sim_capture(tmp_path_factory) -> Path:
    """A seeded `uet sim` run: 131 frames of requests and their ACK_CCs with SACK bitmaps."""
    path = tmp_path_factory.mktemp("sim") / "sim.pcap"
    subprocess.run([sys.executable, "-m", "uet", "sim", "--bytes", "256k", "--seed", "1", "--pcap", str(path),
                    "--json"], check=True, stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2])
    path.chmod(0o644)
    return path


def _sack_psns(pds: dict) -> list[int]:
    """B.8: bit i of the SACK bitmap (bit 0 the least significant) is PSN sack_base_psn + i."""
    bitmap, base = pds.get("sack_bitmap"), pds.get("sack_base_psn")
    if bitmap is None or base is None:
        return []
    return [(base + i) % 2**32 for i in range(64) if bitmap >> i & 1]


def _filtered(pcap: Path, lua: Path, display_filter: str, *prefs: str) -> list[int]:
    proc = tshark_proc(pcap, [lua], output="fields", prefs=prefs,
                       extra=("-Y", display_filter, "-e", "frame.number"))
    assert proc.returncode == 0, proc.stderr
    return [int(x) for x in proc.stdout.split()]


@pytest.mark.parametrize("prefs", [(), ("check_crc:TRUE",)], ids=["default", "check_crc"])
def test_display_filter_on_deep_fields_selects_the_frames_uet_decode_names(sim_capture, lua_file, prefs):
    pn = plugin_name()
    prefs = tuple(f"{pn}.{p}" for p in prefs)
    objs = uet_decode_json(sim_capture)
    by_psn: dict[int, list[int]] = collections.defaultdict(list)
    by_offset: dict[int, list[int]] = collections.defaultdict(list)
    for o in objs:
        u = o.get("uet") or {}
        for psn in _sack_psns(u.get("pds") or {}):
            by_psn[psn].append(o["frame"])
        ses = u.get("ses") or {}
        if "message_offset" in ses:
            by_offset[ses["message_offset"]].append(o["frame"])
    psn, frames = max(by_psn.items(), key=lambda kv: (len(kv[1]), kv[0]))
    assert len(frames) >= 10  # a PSN many ACKs report
    assert _filtered(sim_capture, lua_file, f"{pn}.pds.sack_bitmap.psn == {psn}", *prefs) == frames
    offset, frames = max(by_offset.items(), key=lambda kv: (len(kv[1]), kv[0]))
    assert len(frames) >= 2  # a retransmitted request
    assert _filtered(sim_capture, lua_file, f"{pn}.ses.message_offset == {offset}", *prefs) == frames


def test_fields_output_of_deep_fields_equals_uet_decode(sim_capture, lua_file):
    """-T fields -e on fields below the PDS and SES headers, no filter, default preferences."""
    pn = plugin_name()
    proc = tshark_proc(sim_capture, [lua_file], output="fields",
                       extra=("-e", f"{pn}.ses.message_offset", "-e", f"{pn}.pds.sack_base_psn",
                              "-e", f"{pn}.pds.sack_bitmap.psn", "-e", f"{pn}.crc.status"))
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    objs = uet_decode_json(sim_capture)
    assert len(rows) == len(objs)
    sent: collections.Counter[str] = collections.Counter()
    for o, (offset, base, psns, status) in zip(objs, rows):
        sent[o["ip"]["src"]] += 1
        u = o["uet"]
        assert offset == str(u.get("ses", {}).get("message_offset", ""))
        assert base == str(u["pds"].get("sack_base_psn", ""))
        want = _sack_psns(u["pds"])
        # the first item is the count, then one item per PSN
        assert psns == (",".join(str(x) for x in [len(want), *want]) if base else "")
        # every frame has its trailer: the first 8 of each source verified, the later ones learned
        assert o["uet"]["crc"]["ok"] is True
        assert status == str(GOOD if sent[o["ip"]["src"]] <= 8 else UNVERIFIED)
