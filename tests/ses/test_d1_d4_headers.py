"""D.1-D.5: header choice by size, message cutting (SOM/EOM, message_offset, payload_length,
request_length), bytes round trips, and the D.1 opcode coverage list."""

from __future__ import annotations

from uet.ses import SUPPORTED_OPCODES, UNSUPPORTED_OPCODES, SesConfig, SesEndpoint, decode_ses
from uet.ses.common import NH_MEDIUM, NH_SMALL, NH_STD
from uet.wire.enums import SES_OPCODE


def packets(mtu=4096, **kw):
    return SesEndpoint(SesConfig(mtu=mtu, **kw))


def test_d4_small_header_for_single_packet_send():
    a = packets()
    a.send("b", b"hello")
    (p,) = a.packets_to_send()
    assert p.next_hdr == NH_SMALL and p.ses["som"] and p.ses["eom"] and p.ses["request_length"] == 5
    f, ext, payload = decode_ses(NH_SMALL, p.to_bytes())
    assert f["opcode"] == 5 and payload == b"hello" and ext is None


def test_d4_medium_header_for_tagged_write_atomic():
    a = packets()
    a.tsend("b", b"t", 0xABCDEF)
    a.write("b", 9, 16, b"w" * 100)
    a.atomic("b", 9, 8, 2, 6, 5)
    ps = a.packets_to_send()
    assert [p.next_hdr for p in ps] == [NH_MEDIUM] * 3
    f, _, _ = decode_ses(NH_MEDIUM, ps[0].to_bytes())
    assert f["match_bits"] == 0xABCDEF
    f, _, pl = decode_ses(NH_MEDIUM, ps[1].to_bytes())
    assert f["memory_key"] == 9 and f["buffer_offset"] == 16 and pl == b"w" * 100
    f, ext, pl = decode_ses(NH_MEDIUM, ps[2].to_bytes())
    assert ext["atomic_opcode"] == 2 and ext["atomic_datatype"] == 6 and pl == (5).to_bytes(8, "little")


def test_d3_standard_when_header_data_or_no_small_header():
    a = packets()
    a.send("b", b"x", header_data=0x1234)
    (p,) = a.packets_to_send()
    assert p.next_hdr == NH_STD and p.ses["hd"] and p.ses["header_data"] == 0x1234
    a = packets(small_header=False)
    a.send("b", b"x")
    assert a.packets_to_send()[0].next_hdr == NH_STD


def test_d3_read_uses_standard_header():
    a = packets()
    a.read("b", 1, 0, 4)
    (p,) = a.packets_to_send()
    assert p.next_hdr == NH_STD and p.ses["opcode"] == 2 and p.ses["request_length"] == 4


def test_d3_message_cut_into_packets():
    a = packets(mtu=1000)
    data = bytes(range(256)) * 10  # 2560 bytes -> 1000 + 1000 + 560
    a.send("b", data)
    ps = a.packets_to_send()
    assert [p.next_hdr for p in ps] == [NH_STD] * 3
    mids = {p.ses["message_id"] for p in ps}
    assert len(mids) == 1
    assert [(p.ses["som"], p.ses["eom"]) for p in ps] == [(True, False), (False, False), (False, True)]
    assert all(p.ses["request_length"] == 2560 for p in ps)
    decoded = [decode_ses(NH_STD, p.to_bytes()) for p in ps]
    assert decoded[1][0]["message_offset"] == 1000 and decoded[1][0]["payload_length"] == 1000
    assert decoded[2][0]["message_offset"] == 2000 and decoded[2][0]["payload_length"] == 560
    assert b"".join(d[2] for d in decoded) == data


def test_d3_exactly_mtu_is_one_packet_and_big_single_is_standard():
    a = packets(mtu=1000)
    a.send("b", b"q" * 1000)
    assert len(a.packets_to_send()) == 1
    a = packets(mtu=20000)
    a.send("b", b"q" * 0x4000)  # > 14-bit request_length: small header cannot say it
    (p,) = a.packets_to_send()
    assert p.next_hdr == NH_STD


def test_d6_cswap_extension_round_trip():
    a = packets()
    a.cswap("b", 3, 8, 0x07, 1, 2**64 - 1)
    (p,) = a.packets_to_send()
    f, ext, pl = decode_ses(p.next_hdr, p.to_bytes())
    assert ext["atomic_opcode"] == 0x0D and ext["compare_value"] == 1
    assert ext["swap_value"] == 2**64 - 1 and pl == b""


def test_d5_rendezvous_extension_round_trip():
    a = packets(mtu=1000)
    a.rendezvous_send("b", b"r" * 5000, eager=100)
    (p,) = a.packets_to_send()
    f, ext, pl = decode_ses(NH_STD, p.to_bytes())
    assert f["opcode"] == 6 and f["request_length"] == 5000 and len(pl) == 100
    assert ext["eager_length"] == 100 and ext["read_offset"] == 100
    assert ext["read_match_bits"] in a.regions


def test_d3_deferrable_tokens_on_the_wire():
    a = packets()
    a.deferrable_send("b", b"d", match_bits=5)
    (p,) = a.packets_to_send()
    f, _, _ = decode_ses(NH_STD, p.to_bytes())
    assert f["opcode"] == 0x0B and f["initiator_restart_token"] != 0 and f["match_bits"] == 5


def test_b14_datagram_uses_standard_header():
    a = packets()
    a.datagram("b", b"dgram")
    (p,) = a.packets_to_send()
    assert p.next_hdr == NH_STD and p.ses["opcode"] == 7


def test_d1_every_opcode_is_supported_or_listed_unsupported():
    defined = set(SES_OPCODE.table)
    assert defined == set(range(16))
    assert SUPPORTED_OPCODES | UNSUPPORTED_OPCODES == defined
    assert not SUPPORTED_OPCODES & UNSUPPORTED_OPCODES
    assert {SES_OPCODE.table[o] for o in UNSUPPORTED_OPCODES} == {"TSEND_ATOMIC", "TSEND_FETCH_ATOMIC"}


def test_s3_message_ids_are_not_reused_while_outstanding():
    a = packets()
    a._next_mid = 65535
    h1 = a.send("b", b"1")
    a.send("b", b"2")
    ids = [p.message_id for p in a.packets_to_send()]
    assert ids == [65535, 1] and h1 == 1


# --- the two forms of a cut message's headers (uet/ses/packets.py) -------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from uet.ses.packets import Message, cut  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 40_000), mtu=st.integers(64, 5000),
       opcode=st.sampled_from([0x01, 0x05, 0x08, 0x09, 0x0B]),
       ids=st.tuples(st.integers(0, (1 << 24) - 1), st.integers(0, 4095), st.integers(0, 4095),
                     st.integers(0, (1 << 32) - 1)),
       key=st.integers(0, (1 << 64) - 1), header_data=st.none() | st.integers(0, (1 << 64) - 1),
       mid=st.integers(1, 0xFFFF), flags=st.tuples(st.booleans(), st.booleans()))
def test_s1_packed_headers_equal_the_schema_encoded_ones(n, mtu, opcode, ids, key, header_data,
                                                          mid, flags):
    """SES-S1: Message.header(k), packed from per-message constants (what the PDS sends), equals
    the schema codec's encoding of Message.packet(k)'s fields (the readable form), for every k."""
    job, pid, ri, initiator = ids
    common = {"opcode": opcode, "job_id": job, "pid_on_fep": pid, "resource_index": ri,
              "initiator": initiator, "rel": flags[0], "dc": flags[1]}
    if opcode in (0x09, 0x0B):
        keys = {"match_bits": key}
    elif opcode == 0x08:
        keys = {"memory_key": key, "initiator_restart_token": key & 0xFFFFFFFF,
                "target_restart_token": key >> 32}
    else:
        keys = {"memory_key": key, "buffer_offset": key ^ 0x5555}
    m = cut("peer", mid, bytes(n), mtu=mtu, small_header=False, common=common, key=keys,
            header_data=header_data)
    if not isinstance(m, Message):
        return  # one packet: a single SesPacket, no packing to compare
    assert m.count == -(-n // mtu)
    for k in range(m.count):
        p = m.packet(k)
        assert m.header(k) == p.header_bytes(), k
        assert bytes(m.payload_of(k)) == p.payload


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 40_000), mtu=st.integers(1, 5000), small=st.booleans())
def test_size_of_is_the_length_of_payload_of(n, mtu, small):
    """uet.pds.upper.Outgoing.size_of: what the initiator's window asks of every request, equal
    to len(payload_of(k)) for every k of a cut message or a single packet (the last one short)."""
    common = {"opcode": 0x01, "job_id": 1, "pid_on_fep": 2, "resource_index": 0,
              "initiator": 3, "rel": False, "dc": False}
    m = cut("peer", 7, bytes(range(256)) * (n // 256) + bytes(n % 256), mtu=mtu,
            small_header=small, common=common, key={"memory_key": 0, "buffer_offset": 0},
            medium_ok=small)
    sizes = [m.size_of(k) for k in range(m.count)]
    assert sizes == [len(m.payload_of(k)) for k in range(m.count)]
    assert sum(sizes) == n and all(s == mtu for s in sizes[:-1])
