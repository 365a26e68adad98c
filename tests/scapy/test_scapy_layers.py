"""Generated Scapy layers against the compiled codecs, header by header (docs/design-notes.md principle 1).

For every UET header key and every generated RoCEv2 extension header: random field values (within
the widths, signedness and switch selectors of the schema) encode to the same bytes with
``uet.wire.codec`` and with the Scapy class, and dissecting those bytes with the Scapy class gives
the codec's decode. Random bytes never make a generated class raise.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.fields import BitEnumField, ConditionalField
from scapy.packet import Packet, Raw

import uet.scapy as S
from uet.scapy import (
    UET, UET_PDS_ACK, UET_PDS_ACK_CCX, UET_PDS_CONTROL, UET_PDS_NACK, UET_PDS_RUD_ROD_REQ, UET_SES_AMO,
    UET_SES_ATOMIC, UET_SES_CSWAP, UET_SES_STD, UETPacket,
)
from uet.wire import codec
from uet.wire import roce_headers as R
from uet.wire import uet_headers as U
from uet.wire.schema import DEFAULT_OPTIONS, Options, Switch

GENERATED_KEYS = [h.key for h in U.UET_HEADERS] + [h.key for h in (R.RETH, R.IMMDT, R.IETH, R.ATOMICETH,
                                                                   R.ATOMICACKETH, R.DETH)] + ["csig"]
OTHER_OPTIONS = Options(ccx_layout="xdp2", rsv_pdc_bit=83, mswap_cswap_ext=True)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _value(f) -> st.SearchStrategy:
    if f.flag:
        return st.booleans()
    if f.signed:
        return st.integers(-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1)
    return st.integers(0, (1 << f.width) - 1)


def _selectors(items, out: dict) -> dict:
    """Field switches of a header: selector name -> set of case values."""
    for it in items:
        if isinstance(it, Switch):
            if not it.is_option:
                vals = out.setdefault(it.on, set())
                for case in it.cases:
                    vals.update(case.values)
            for i in range(len(it.cases) + 1):
                _selectors(it.arm_items(i), out)
    return out


def draw_fields(data, key: str, opts: Options) -> dict:
    """Random codec fields of one variant of ``key``; selector values favour the case values."""
    c = codec(key)
    sel = {}
    for name, values in sorted(_selectors(c.header.items, {}).items()):
        f = c.header.field_named(name)
        sel[name] = data.draw(st.one_of(st.sampled_from(sorted(values)), _value(f)), label=name)
        if f.flag:
            sel[name] = bool(sel[name])
    var = c.variant_for_fields(sel, opts)
    fields = {}
    for p in var.placed:
        fields[p.name] = sel[p.name] if p.name in sel else data.draw(_value(p.field), label=p.name)
    return fields


def scapy_kwargs(fields: dict) -> dict:
    return {S.scapy_name(k): v for k, v in fields.items()}


@pytest.mark.parametrize("opts", [DEFAULT_OPTIONS, OTHER_OPTIONS], ids=["default-options", "other-options"])
@pytest.mark.parametrize("key", GENERATED_KEYS)
@SETTINGS
@given(data=st.data())
def test_layer_matches_codec(uet_conf, key, opts, data):
    uet_conf["options"] = opts
    c = codec(key)
    cls = S.LAYERS[key]
    fields = draw_fields(data, key, opts)
    wire = c.encode(fields, opts)
    # build: the layer alone (no UDP below, so no trailer) gives the codec's bytes
    assert bytes(cls(**scapy_kwargs(fields))) == wire
    # dissect: the codec's decode, field for field, and nothing else on the wire
    decoded, size = c.decode(wire, 0, opts)
    assert size == len(wire)
    pkt = cls(wire)
    assert not pkt.uet_truncated
    got = {k: pkt.getfieldval(S.scapy_name(k)) for k in decoded}
    assert got == decoded
    on_wire = {S.codec_name(k) for k in pkt.fields if k not in ("crc", "icv")}
    assert on_wire == set(decoded)
    assert pkt.schema_values() == decoded
    # attribute access gives the value too (aliases included), signed fields negative
    for k, v in decoded.items():
        assert getattr(pkt, S.scapy_name(k)) == v
    # and the dissected packet builds back to the same bytes
    assert bytes(pkt) == wire


@pytest.mark.parametrize("key", GENERATED_KEYS)
@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=1, max_size=64))
def test_random_bytes_never_raise(key, data):
    cls = S.LAYERS[key]
    pkt = cls(data)  # must not raise
    assert bytes(pkt) == data
    pkt.summary()
    pkt.show(dump=True)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=1, max_size=96))
def test_random_bytes_through_the_dispatchers(data):
    for cls in (UET, UET_SES_AMO):
        pkt = cls(data)
        assert bytes(pkt) == data
        pkt.show(dump=True)


def test_truncated_header_keeps_whole_fields():
    wire = codec("pds.ack").encode({"type": 7, "cack_psn": 0x01020304, "ack_psn_offset": -3})
    pkt = UET_PDS_ACK(wire[:7])
    assert pkt.uet_truncated
    assert pkt.fields["ack_psn_offset"] == -3
    assert "cack_psn" not in pkt.fields  # bytes 4-7 are not all there
    assert bytes(pkt) == wire[:7]
    assert not UET_PDS_ACK(wire).uet_truncated


def test_dispatcher_picks_class_by_type():
    for ptype, cls in S.PDS_LAYERS.items():
        first = bytes([ptype << 3]) + bytes(40)
        assert type(UET(first)) is cls
    assert type(UET(bytes([0]) + bytes(20))) is Raw  # reserved type 0 (B.1)
    assert type(UET(bytes([15 << 3]) + bytes(20))) is Raw  # unassigned
    for amo in range(256):
        want = UET_SES_CSWAP if amo in U.CSWAP_AMO_OPCODES else UET_SES_ATOMIC
        assert type(UET_SES_AMO(bytes([amo]) + bytes(40))) is want


def test_mswap_option_selects_cswap(uet_conf):
    assert type(UET_SES_AMO(bytes([U.MSWAP_AMO_OPCODE]) + bytes(40))) is UET_SES_ATOMIC
    uet_conf["options"] = Options(mswap_cswap_ext=True)
    assert type(UET_SES_AMO(bytes([U.MSWAP_AMO_OPCODE]) + bytes(40))) is UET_SES_CSWAP


def test_signed_field_reads_back_negative():
    pkt = UET_PDS_RUD_ROD_REQ(bytes(UET_PDS_RUD_ROD_REQ(clear_psn_offset=-2, psn=10)))
    assert pkt.clear_psn_offset == -2
    assert bytes(UET_PDS_RUD_ROD_REQ(clear_psn_offset=-2))[2:4] == b"\xff\xfe"


def test_field_defaults_and_types():
    assert UET_PDS_RUD_ROD_REQ().type == 2  # lowest PDS type of the header (B.1)
    assert UET_PDS_ACK().type == 7 and UET_PDS_CONTROL().type == 11
    assert S.UET_TSS().type == 1
    f = UET_PDS_ACK.fields_desc[0]
    assert isinstance(f, BitEnumField) and f.i2s[7] == "ACK"
    assert UET_PDS_ACK(type="ACK_CC").type == 8  # symbols work as values
    assert UET_SES_STD(opcode="WRITE").opcode == 1
    # vendor ranges of the enum tables are named like Enum.symbol() names them
    assert UET_SES_STD.fields_desc[1].i2s[0x30] == "VENDOR_0x30"


def test_reserved_fields_named_like_the_codec():
    for key in GENERATED_KEYS:
        c = codec(key)
        cls = S.LAYERS[key]
        names = set(cls.schema_fields())
        for var in c.variants.values():
            for p in var.placed:
                assert S.scapy_name(p.name) in names, (key, p.name)
                if p.field.reserved:
                    assert p.name == f"rsvd_{p.offset}"


def test_payload_field_renamed():
    assert "payload" not in {f.name for f in UET_PDS_NACK.fields_desc}
    n = UET_PDS_NACK(nack_code="NEW_START_PSN", payload_word=0x1234)
    wire = codec("pds.nack").encode({"type": 10, "nack_code": 0x17, "payload": 0x1234})
    assert bytes(n) == wire
    assert UET_PDS_NACK(wire).payload_word == 0x1234
    assert UET_PDS_CONTROL(wire[:0] + codec("pds.control").encode({"type": 11, "payload": 7})).payload_word == 7
    assert S.scapy_name("payload") == "payload_word" and S.codec_name("payload_word") == "payload"


def test_restart_token_aliases():
    # DEFERRABLE_SEND: tokens at bytes 12-19; DEFERRABLE_RTR: at bytes 24-31 (ses.std, D.3)
    assert S.ALIASES["UET_SES_STD"] == {"initiator_restart_token_at192": "initiator_restart_token",
                                        "target_restart_token_at224": "target_restart_token"}
    for opcode in (0x08, 0x0C):
        fields = {"opcode": opcode, "initiator_restart_token": 0x11223344, "target_restart_token": 0x55667788,
                  "initiator": 9}
        wire = codec("ses.std").encode(fields)
        assert bytes(UET_SES_STD(**fields)) == wire
        pkt = UET_SES_STD(wire)
        assert pkt.initiator_restart_token == 0x11223344
        assert pkt.target_restart_token == 0x55667788
        assert "initiator_restart_token_at192" not in pkt.fields
        assert "initiator_restart_token" in pkt.show(dump=True)


def test_option_switch_read_at_run_time(uet_conf):
    ccx = {"type": 9, "ack_ccx_state": 0xAB}
    assert len(bytes(UET_PDS_ACK_CCX(**ccx))) == 40  # 1.0 layout (H.1 #2)
    uet_conf["options"] = Options(ccx_layout="xdp2")
    assert bytes(UET_PDS_ACK_CCX(**ccx)) == codec("pds.ack_ccx").encode(ccx, Options(ccx_layout="xdp2"))
    assert len(bytes(UET_PDS_ACK_CCX(**ccx))) == 32
    # use_rsv_pdc at bit 83 (reference provider) instead of 80
    syn = {"type": 2, "syn": 1, "use_rsv_pdc": 1, "psn_offset": 3}
    uet_conf["options"] = Options(rsv_pdc_bit=83)
    assert bytes(UET_PDS_RUD_ROD_REQ(**syn))[10:12] == b"\x10\x03"
    uet_conf["options"] = DEFAULT_OPTIONS
    assert bytes(UET_PDS_RUD_ROD_REQ(**syn))[10:12] == b"\x80\x03"


def test_switches_are_conditional_fields():
    conds = [f for f in UET_PDS_ACK.fields_desc if isinstance(f, ConditionalField)]
    assert {f.name for f in conds} == {"probe_opaque", "ack_psn_offset"}
    assert UET_PDS_ACK(p=1).ack_psn_offset is None
    assert UET_PDS_ACK(p=0, ack_psn_offset=-1).probe_opaque is None


def test_class_hierarchy():
    for t, cls in S.PDS_LAYERS.items():
        assert issubclass(cls, UET) and issubclass(cls, UETPacket)
    for key in GENERATED_KEYS:
        assert issubclass(S.LAYERS[key], Packet)
    assert S.SES_LAYERS[3] is UET_SES_STD


def test_import_is_clean():
    """Importing uet.scapy warns about nothing and leaves plain Scapy working."""
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from scapy.all import Ether, IP, UDP, DNS, raw\n"
        "import uet.scapy\n"
        "p = Ether(raw(Ether()/IP()/UDP(sport=1234, dport=53)/DNS()))\n"
        "assert p.haslayer(DNS), p.summary()\n"
        "from scapy.contrib.roce import BTH, AETH\n"
        "q = Ether(raw(Ether()/IP()/UDP(sport=1234)/BTH(opcode=0x11)/AETH(msn=3)))\n"
        "assert q[AETH].msn == 3\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
