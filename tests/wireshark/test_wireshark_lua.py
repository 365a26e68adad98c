"""The Lua generator without tshark: determinism, naming, completeness against the schema."""

from __future__ import annotations

import re

import pytest

from uet import cli
from uet.wire import roce_headers as R
from uet.wire import uet_headers as U
from uet.wire.codec import codec
from uet.wireshark import abbreviation, generate_lua, renamed_fields, tshark_command
from uet.wireshark import lua as L


def test_output_is_deterministic():
    assert generate_lua() == generate_lua()
    assert generate_lua(5000, "foo") == generate_lua(5000, "foo")


def test_port_and_name_are_parameters():
    text = generate_lua(port=5000, proto_name="uetx")
    assert 'local GEN_NAME = "uetx"' in text
    assert "local GEN_PORT = 5000" in text
    assert 'local GEN_NAME = "uet"' in generate_lua()


@pytest.mark.parametrize("bad", ["", "UET", "1uet", "u-et", "u et"])
def test_bad_protocol_names_are_refused(bad):
    with pytest.raises(ValueError):
        generate_lua(proto_name=bad)


def test_no_timestamps_or_paths_in_output():
    text = generate_lua()
    assert not re.search(r"20\d\d-\d\d-\d\d", text)
    assert "/work/" not in text and "/tmp/" not in text


def test_cli_writes_the_same_text(tmp_path, capsys):
    out = tmp_path / "uet.lua"
    assert cli.main(["wireshark", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == generate_lua()
    assert cli.main(["wireshark", "-o", str(out), "--port", "4000", "--name", "uetx"]) == 0
    assert out.read_text(encoding="utf-8") == generate_lua(4000, "uetx")


def test_plan_variants_match_the_codec():
    for h in L.SCHEMA_HEADERS:
        plan_keys = {v.key for v in L.variants(h)}
        assert plan_keys == set(codec(h).variants)


def test_every_schema_field_has_one_abbreviation():
    seen = {}
    for h in L.SCHEMA_HEADERS:
        for var in codec(h).variants.values():
            for p in var.placed:
                if p.field.reserved:
                    continue
                abbr = abbreviation(h.key, p)
                assert re.fullmatch(r"(uet|uetroce|uetcsig)(\.[a-z0-9_]+)+", abbr), abbr
                sig = L.spec_of(p).signature
                # one abbreviation = one Wireshark type
                assert seen.setdefault(abbr, sig) == sig, abbr


@pytest.mark.parametrize("key,name,abbr", [
    ("pds.rud_rod_req", "psn", "uet.pds.psn"),
    ("pds.control", "psn", "uet.pds.psn"),
    ("pds.ack_cc", "type", "uet.pds.type"),
    ("pds.nack", "pkt_id", "uet.pds.pkt_id"),
    ("pds.rudi", "pkt_id", "uet.pds.pkt_id"),
    ("ses.std", "opcode", "uet.ses.opcode"),
    ("ses.rsp", "opcode", "uet.ses.opcode_rsp"),
    ("ses.small", "request_length", "uet.ses.request_length_14"),
    ("ses.std", "request_length", "uet.ses.request_length"),
    ("tss", "sdi", "uet.tss.sdi"),
    ("entropy", "entropy", "uet.entropy.entropy"),
    ("ses.atomic", "atomic_opcode", "uet.ses.atomic.atomic_opcode"),
    ("ses.cswap", "swap_value", "uet.ses.cswap.swap_value"),
    ("ses.rendezvous", "eager_length", "uet.ses.rendezvous.eager_length"),
    ("roce.bth", "dest_qp", "uetroce.bth.dest_qp"),
    ("roce.reth", "r_key", "uetroce.reth.r_key"),
    ("csig", "t", "uetcsig.t"),
    ("csig", "ethertype", "uetcsig.ethertype"),
])
def test_abbreviations_follow_the_json_paths(key, name, abbr):
    c = codec(key)
    found = {abbreviation(key, p) for v in c.variants.values() for p in v.placed if p.name == name}
    assert abbr in found


def test_renamed_fields_are_exactly_the_documented_ones():
    assert [a for a, _ in renamed_fields()] == [
        "uet.pds.use_rsv_pdc_83", "uet.pds.ack_ccx_state_xdp2", "uet.pds.nack_ccx_state_xdp2",
        "uet.ses.opcode_rsp", "uet.ses.request_length_14"]
    text = generate_lua()
    for a, _ in renamed_fields():
        assert a in text  # listed in the generated header comment


def test_wide_and_signed_fields_get_the_right_types():
    spec = {}
    for h in U.UET_HEADERS + R.ROCE_HEADERS:
        for var in codec(h).variants.values():
            for p in var.placed:
                if not p.field.reserved:
                    spec[abbreviation(h.key, p)] = L.spec_of(p)
    assert spec["uet.pds.clear_psn_offset"].ctor == "int16"
    assert spec["uet.pds.sack_psn_offset"].ctor == "int16"
    assert spec["uet.pds.sack_bitmap"].ctor == "uint64"
    assert spec["uet.tss.tsc"].ctor == "uint64" and spec["uet.tss.tsc"].nbytes == 6
    assert spec["uet.pds.ack_ccx_state"].ctor == "bytes"
    assert spec["uet.pds.nack_ccx_state"].kind == L.K_BYTESX  # 124 bits, not byte aligned
    assert spec["uet.pds.nack_ccx_state_xdp2"].kind == L.K_U64X  # 60 bits
    assert spec["uet.ses.cswap.compare_value"].ctor == "bytes"
    assert spec["uet.pds.retx"].ctor == "bool" and spec["uet.pds.retx"].mask == 0x10
    assert spec["uet.pds.type"].enum == "pds_type" and spec["uet.pds.type"].mask == 0xF8


def test_every_header_and_enum_is_in_the_lua():
    text = generate_lua()
    for h in L.SCHEMA_HEADERS:
        assert f'H["{h.key}"] = ' in text
    for name in ("pds_type", "next_hdr", "nack_code", "ctl_type", "ses_opcode", "rsp_opcode",
                 "return_code", "amo_opcode", "amo_datatype", "roce_opcode", "aeth_nak", "csig_type"):
        assert f'VS["{name}"] = ' in text
    # vendor ranges are expanded into the value strings
    assert '[48] = "VENDOR_0x30"' in text


def test_packet_chain_tables_come_from_the_schema():
    text = generate_lua()
    assert "local ATOMIC_OPCODES = { [3] = true, [4] = true, [13] = true, [14] = true }" in text
    assert "local RENDEZVOUS_OPCODES = { [6] = true, [10] = true }" in text
    assert "[129] = { H[\"roce.cnp\"] }" in text  # CNP
    assert "[100] = { H[\"roce.deth\"] }" in text  # UD SEND_ONLY


def test_csig_tag_has_its_own_protocol_on_an_ethertype():
    """E.4: the tag is dissected by "<name>csig", registered on the EtherType uet.cms.csig names
    (a preference), its header item being the protocol's own."""
    from uet.cms.csig import CSIG_ETHERTYPE

    text = generate_lua(proto_name="uetx")
    assert f"local CSIG_ETHERTYPE = 0x{CSIG_ETHERTYPE:04X}" in text
    assert 'new_proto({ GEN_NAME .. "csig", GEN_NAME .. "refcsig" }' in text
    assert "proto_csig.prefs.ethertype = Pref.uint(" in text
    assert 'DissectorTable.get("ethertype")' in text
    assert 'H["csig"] = { key = "csig", title = "CSIG tag (after its TPID)", ref = "E.4", hf = proto_csig,' in text
    assert f'protocol "uetxcsig" on EtherType 0x{CSIG_ETHERTYPE:04x}' in text
    assert {fd.suffix for fd in L.plan().fields if fd.proto == "csig"} == {"t", "s", "lm", "d", "r", "ethertype"}


def test_tshark_command():
    cmd = tshark_command("a.pcap", "b.lua", tshark="/usr/bin/tshark")
    assert cmd == ["/usr/bin/tshark", "-n", "-r", "a.pcap", "-X", "lua_script:b.lua", "-T", "json"]
    assert "-T" not in tshark_command("a.pcap", "b.lua", output=None, tshark="tshark")
