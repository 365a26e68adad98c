"""The generated dissector in real tshark: it loads without Lua errors and every field it shows
equals ``uet decode --json`` for the same frame (values, enum names, flags, signed and 64-bit values,
derived values, CRC/ICRC), and its expert infos are the decoder's problems.

One tshark run (PDML) per capture and preference set; every comparison of that file uses it. Any
Wireshark with Lua will do (wshelpers.tshark_env): the plugin's protocol is ``uetref`` where the
build has its own ``uet``, and tshark runs unprivileged where root would make it skip the script.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wshelpers import (  # noqa: E402
    CAPTURES, INTEROP, NEEDS_TSHARK, compare, lua_file, needs_interop, plugin_name, run_tshark,
    stderr_problems, tshark_env, tshark_proc, uet_decode_json,
)

from uet.wire.schema import Options  # noqa: E402
from uet.wireshark import generate_lua  # noqa: E402

pytestmark = [pytest.mark.tshark, NEEDS_TSHARK]

__all__ = ["lua_file"]  # the fixture, imported from wshelpers

FILES = sorted(CAPTURES.glob("*.pcap")) + sorted(INTEROP.glob("*/*.pcap"))

#: Frames tshark cannot show as UET however the dissector is written: Wireshark's UDP dissector does
#: not call a sub-dissector for an empty payload (bad.pcap frame 13, "pds: empty UET packet").
NOT_DISSECTED = {("bad.pcap", 13)}


def _prefs(*names: str) -> tuple[str, ...]:
    """Preferences of the plugin under the name it registered (``uet.trailer:crc``)."""
    return tuple(f"{plugin_name()}.{n}" for n in names)


def _check_file(pcap: Path, lua: Path, prefs: tuple[str, ...] = (), cli_args: tuple[str, ...] = (),
                opts: Options | None = None, pn: str | None = None, scripts: tuple[Path, ...] = ()) -> None:
    """Every frame of ``pcap`` shows what ``uet decode`` says, CRC-32C trailer status included: the
    trailer is verified (check_crc on; off by default, as Wireshark's own checksums)."""
    pn = pn or plugin_name()
    run = run_tshark(pcap, [*scripts, lua], (f"{pn}.check_crc:TRUE", *prefs), own=(pn, "uetroce"))
    assert run.returncode == 0, run.stderr
    assert stderr_problems(run.stderr) == [], run.stderr
    assert "Lua Error" not in run.pdml and "_ws.lua.error" not in run.pdml
    objs = uet_decode_json(pcap, *cli_args)
    assert len(objs) == len(run.packets)
    failures = []
    for obj, pkt in zip(objs, run.packets):
        layer = "uet" if "uet" in obj else "roce" if "roce" in obj else None
        if (pcap.name, obj["frame"]) in NOT_DISSECTED:
            assert pn not in pkt.protos
            continue
        if layer == "uet":
            assert pn in pkt.protos, f"frame {obj['frame']}: no {pn} tree"
        elif layer == "roce":
            assert "uetroce" in pkt.protos, f"frame {obj['frame']}: no uetroce tree"
        diffs = compare(obj, pkt, pn=pn, opts=opts)
        if diffs:
            failures.append(f"frame {obj['frame']}: " + "; ".join(diffs))
    assert not failures, "\n".join(failures)


def test_tshark_has_lua_and_runs_the_script(lua_file):
    """Whatever its version prints and whoever runs it: as root, tshark honours -X lua_script only
    when its init.lua sets run_user_scripts_when_superuser (Debian's does); else tshark_proc runs it
    unprivileged."""
    env = tshark_env()
    assert env.version.lua is not None and env.version.lua[0] == 5
    run = run_tshark(CAPTURES / "uet_pds.pcap", [lua_file])
    assert run.packets and all(plugin_name() in p.protos for p in run.packets)


@pytest.mark.parametrize("pcap", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fields_equal_uet_decode(pcap, lua_file):
    _check_file(pcap, lua_file)


def test_trailer_crc_mode(lua_file, tmp_path):
    for name in ("bad.pcap", "uet_pds.pcap"):
        _check_file(CAPTURES / name, lua_file, prefs=_prefs("trailer:crc"), cli_args=("--trailer", "crc"))


def test_trailer_none_mode(lua_file):
    _check_file(CAPTURES / "uet_flows.pcap", lua_file, prefs=_prefs("trailer:none"),
                cli_args=("--trailer", "none"))


@needs_interop
def test_decoder_options_as_preferences(lua_file):
    """XDP2's shorter ACK_CCX/NACK_CCX, use_rsv_pdc at bit 83 and MSWAP with the compare-swap
    extension, set as Wireshark preferences and as uet decode options."""
    prefs = _prefs("ccx_layout:xdp2", "rsv_pdc_bit:83", "mswap_cswap_ext:TRUE")
    args = ("--ccx-layout", "xdp2", "--rsv-pdc-bit", "83", "--mswap-cswap-ext")
    opts = Options(ccx_layout="xdp2", rsv_pdc_bit=83, mswap_cswap_ext=True)
    for pcap in (INTEROP / "xdp2" / "uet_pds.pcap", INTEROP / "xdp2" / "uet_ses.pcap",
                 CAPTURES / "uet_ses.pcap", CAPTURES / "uet_control_nack.pcap"):
        _check_file(pcap, lua_file, prefs=prefs, cli_args=args, opts=opts)


def test_coexists_with_a_builtin_uet_dissector(tmp_path, lua_file):
    """Newer Wireshark builds have a built-in "uet" protocol: the plugin registers as "uetref".
    Where this tshark has none, a stand-in script plays the built-in one."""
    scripts: tuple[Path, ...] = ()
    if plugin_name() == "uet":
        builtin = tmp_path / "builtin_uet.lua"
        builtin.write_text(
            'local p = Proto("uet", "Ultra Ethernet Transport")\n'
            'p.fields = { ProtoField.uint32("uet.pds.psn", "PSN") }\n'
            "function p.dissector(tvb, pinfo, tree) tree:add(p, tvb()) end\n"
            'DissectorTable.get("udp.port"):add(4793, p)\n', encoding="utf-8")
        scripts = (builtin,)
    _check_file(CAPTURES / "uet_pds.pcap", lua_file, pn="uetref", scripts=scripts,
                prefs=("uetref.trailer:auto",))
    run = run_tshark(CAPTURES / "uet_pds.pcap", [*scripts, lua_file], own=("uetref",))
    note = run.packets[0].fields["uetref.note"][0]["show"]
    assert "registered as 'uetref'" in note and "'uet' is taken" in note


def test_other_name_and_port(tmp_path):
    lua = tmp_path / "other.lua"
    lua.write_text(generate_lua(port=4793, proto_name="uetx"), encoding="utf-8")
    _check_file(CAPTURES / "uet_ses.pcap", lua, pn="uetx")
    # the port is a preference: move it away and the frames are no longer UET
    run = run_tshark(CAPTURES / "uet_ses.pcap", [lua], prefs=("uetx.udp_port:4000",), own=("uetx",))
    assert all("uetx" not in p.protos for p in run.packets)


def test_info_column_and_expert_summary(lua_file):
    out = tshark_proc(CAPTURES / "uet_flows.pcap", [lua_file], output=None).stdout.splitlines()
    assert "RUD_REQ PSN=65536 SYN SEND SOM EOM" in out[0]
    assert "ACK_CC CACK=65537 ACK=65537 SACK base=65539" in out[2]
    assert out[4].rstrip().endswith("[trimmed]")
    assert "NACK TRIMMED PSN=65539" in out[5]
    roce = tshark_proc(CAPTURES / "roce.pcap", [lua_file], output=None).stdout.splitlines()
    assert "RoCEv2 CNP QP=0x000011 BECN" in roce[29]


def test_sack_bitmap_as_psns(lua_file):
    run = run_tshark(CAPTURES / "uet_pds.pcap", [lua_file])
    psns = [int(a["show"]) for a in run.packets[9].fields[f"{plugin_name()}.pds.sack_bitmap.psn"]]
    # first item is the count; base = 4294967290 - 4 (mod 2**32), bits 0, 1, 5 and 63
    assert psns == [4, 4294967286, 4294967287, 4294967291, (4294967286 + 63) % 2**32]


def test_builtin_infiniband_agrees_with_the_schema(lua_file):
    """An independent check of the RoCEv2 side: Wireshark's own InfiniBand dissector."""
    run = run_tshark(CAPTURES / "roce.pcap", [lua_file], own=("infiniband",))
    pairs = {"bth.opcode": "bth.opcode", "bth.se": "bth.se", "bth.m": "bth.m", "bth.pad_cnt": "bth.padcnt",
             "bth.p_key": "bth.p_key", "bth.dest_qp": "bth.destqp", "bth.ack_req": "bth.a",
             "bth.psn": "bth.psn", "reth.virtual_address": "reth.va", "reth.r_key": "reth.r_key",
             "reth.dma_length": "reth.dmalen", "aeth.syndrome": "aeth.syndrome", "aeth.msn": "aeth.msn",
             "atomicacketh.original_value": "atomicacketh.origremdt"}
    checked = 0
    for obj, pkt in zip(uet_decode_json(CAPTURES / "roce.pcap"), run.packets):
        if obj["roce"]["bth"]["opcode"] == 0x81:
            continue  # Wireshark 4.0 does not know CNP; that is what uetroce adds
        for ours, theirs in pairs.items():
            hdr, name = ours.split(".")
            if hdr in obj["roce"] and f"infiniband.{theirs}" in pkt.fields:
                show = pkt.fields[f"infiniband.{theirs}"][0]["show"]
                value = obj["roce"][hdr][name]
                got = (show in ("1", "True")) if isinstance(value, bool) else int(show, 0)
                assert got == value, (obj["frame"], ours, show, value)
                checked += 1
    assert checked > 150


@pytest.mark.parametrize("cut", [12, 13, 14, 20])
def test_truncated_ack_cc_keeps_its_fields(tmp_path, lua_file, cut):
    """A header cut before a later selector (ACK_CC's cc_type at byte 12) keeps every whole field
    under its true layout, in the decoder and in the dissector alike."""
    from uet.wire import build as B

    body = B.uet_bytes({"type": 8, "ack_psn_offset": 5, "cack_psn": 100, "spdcid": 1, "dpdcid": 2,
                        "cc_type": 1, "mpr": 3})[:cut]
    frame = B.udp_frame(body, trailer=False)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes

    pcap = tmp_path / "trunc.pcap"
    pcap.write_bytes(pcap_bytes([frame]))
    objs = uet_decode_json(pcap)
    assert objs[0]["uet"]["pds"].get("ack_psn_offset") == 5
    _check_file(pcap, lua_file)


def test_response_with_a_request_opcode(tmp_path, lua_file):
    """D.7: a SES response header (RUDI response, ACK, NACK) whose opcode is a request opcode gets
    the same problem in tshark (an expert info) as in uet decode; response opcodes 0-3 (2 is
    RESPONSE_W_DATA) do not."""
    from uet.wire import build as B

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes

    rsp = {"return_code": 1, "job_id": 0xABCD}
    rudi = {"type": 5, "pkt_id": 0x1234}
    ack = {"type": 7, "cack_psn": 1000, "spdcid": 0x11, "dpdcid": 0x22}
    nack = {"type": 10, "nack_code": 1, "nack_psn": 1000, "spdcid": 0x11, "dpdcid": 0x22}
    cases = [
        (rudi, 4, 0x05, "ses.rsp: opcode = 5 (0x5) is the request opcode SEND (D.1), not a response opcode (D.7)"),
        (ack, 4, 0x0C, "ses.rsp: opcode = 12 (0xC) is the request opcode DEFERRABLE_RTR (D.1), "
                       "not a response opcode (D.7)"),
        (ack, 5, 0x04, "ses.rsp_data: opcode = 4 (0x4) is the request opcode FETCHING_ATOMIC (D.1), "
                       "not a response opcode (D.7)"),
        (nack, 6, 0x0F, "ses.rsp_data_small: opcode = 15 (0xF) is the request opcode MSG_ERROR (D.1), "
                        "not a response opcode (D.7)"),
        (rudi, 4, 0x02, None),
        (ack, 4, 0x01, None),
    ]
    pcap = tmp_path / "d7.pcap"
    pcap.write_bytes(pcap_bytes([B.udp_frame(B.uet_bytes(dict(pds, next_hdr=nh), dict(rsp, opcode=op)))
                                 for pds, nh, op, _ in cases]))
    _check_file(pcap, lua_file)  # fields equal, problems == expert infos
    run = run_tshark(pcap, [lua_file])
    for pkt, (_, _, _, want) in zip(run.packets, cases):
        assert [m for _, m in pkt.experts] == ([want] if want else [])
        if want:
            assert pkt.experts[0][0] == f"{plugin_name()}.expert.protocol"


def _random_frames(seed: int, count: int) -> list[bytes]:
    """Random UET (UDP, IPv6, native IP) and RoCEv2 frames: mostly plausible first bytes, random
    lengths and contents, half with a valid CRC trailer, some ICRCs broken."""
    import random

    from uet.wire import build as B

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.random()
        n = rng.choice([1, 2, 3, 4, 5, 8, 11, 12, 13, 15, 16, 20, 24, 31, 32, 33, 40, 44, 47, 48, 56,
                        60, 64, 80, 100, 120])
        body = bytearray(rng.randbytes(n))
        if rng.random() < 0.8:
            body[0] = (rng.randrange(0, 16) << 3) | (body[0] & 7)
        crc = rng.random() < 0.5
        if kind < 0.5:
            out.append(B.udp_frame(bytes(body), trailer=crc, sport=rng.randrange(1024, 65535)))
        elif kind < 0.7:
            out.append(B.native_ip_frame(bytes(body), rng.randrange(65536), trailer=crc))
        elif kind < 0.8:
            out.append(B.udp_frame(bytes(body), src="fd00::1", dst="fd00::2", trailer=crc,
                                   sport=rng.randrange(4794, 65535)))
        else:
            op = rng.choice([0, 4, 6, 0xA, 0xB, 0xC, 0xD, 0x10, 0x11, 0x12, 0x13, 0x16, 0x44, 0x64, 0x65,
                             0x81, 0xC5, rng.randrange(256)])
            f = B.roce_frame({"opcode": op, "p_key": 0xFFFF, "dest_qp": rng.randrange(2, 1 << 24),
                              "psn": rng.randrange(1 << 24)}, [], bytes(body), sport=rng.randrange(4794, 65535))
            if rng.random() < 0.3:
                f = f[:-1] + bytes([f[-1] ^ 1])
            out.append(f)
    return out


def test_random_frames_agree(tmp_path, lua_file):
    """Arbitrary bytes: no Lua error, and the dissector says what uet decode says, frame by frame.
    Random source ports may belong to other protocols (UDP tries the lower port first), so the UET
    heuristic is put first (udp.try_heuristic_first)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes

    pcap = tmp_path / "random.pcap"
    pcap.write_bytes(pcap_bytes(_random_frames(8, 600)))
    _check_file(pcap, lua_file, prefs=("udp.try_heuristic_first:TRUE",))


def test_low_entropy_port_owned_by_another_protocol(tmp_path, lua_file):
    """Entropy (source port) 4305 is BATMAN's port: Wireshark's lower-port-first rule gives the
    frame to BATMAN unless udp.try_heuristic_first lets the UET heuristic claim it."""
    from uet.wire import build as B

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_captures import pcap_bytes, rud, ses_std

    pcap = tmp_path / "lowport.pcap"
    pcap.write_bytes(pcap_bytes([B.udp_frame(B.uet_bytes(rud(1), ses_std(5, request_length=4), None,
                                                         b"abcd"), sport=4305)]))
    plain = run_tshark(pcap, [lua_file])
    assert plugin_name() not in plain.packets[0].protos
    _check_file(pcap, lua_file, prefs=("udp.try_heuristic_first:TRUE",))


def test_generated_lua_is_stable_across_runs(tmp_path):
    a, b = tmp_path / "a.lua", tmp_path / "b.lua"
    for path in (a, b):
        subprocess.run([sys.executable, "-m", "uet", "wireshark", "-o", str(path)], check=True,
                       capture_output=True, cwd=Path(__file__).resolve().parents[2])
    assert a.read_bytes() == b.read_bytes()
