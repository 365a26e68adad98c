"""D.8: every refused request gets the return code the rules at the top of uet.ses.endpoint give,
never a crash; responses for unknown messages are dropped and counted (rule SES-I1)."""

from __future__ import annotations

import pytest

from uet.ses import MessageError, OperationComplete, OperationFailed, SesConfig, SesEndpoint
from uet.ses.common import NH_STD
from uet.ses.packets import SesPacket
from uet.wire.enums import RETURN_CODE

from .helpers import only, pair, run


def rc_of(evs):
    fails = only(evs, OperationFailed)
    assert len(fails) == 1, evs
    return RETURN_CODE.symbol(fails[0].return_code)


def test_d8_bad_mkey_write_and_read():
    a, b, lb = pair()
    b.register(1, bytearray(16))
    a.write("b", 2, 0, b"x")
    assert rc_of(run(lb)["a"]) == "BAD_MKEY"
    a.read("b", 2, 0, 4)
    assert rc_of(run(lb)["a"]) == "BAD_MKEY"


def test_d8_at_out_of_range_write_read_and_multi_packet():
    a, b, lb = pair(mtu=64)
    mem = bytearray(100)
    b.register(1, mem)
    a.write("b", 1, 90, b"y" * 11)
    assert rc_of(run(lb)["a"]) == "AT_OUT_OF_RANGE"
    a.read("b", 1, 0, 101)
    assert rc_of(run(lb)["a"]) == "AT_OUT_OF_RANGE"
    a.write("b", 1, 50, b"z" * 300)  # five packets, one error response (SES-T8)
    evs = run(lb)
    assert rc_of(evs["a"]) == "AT_OUT_OF_RANGE"
    assert len(only(evs["b"], MessageError)) == 1
    assert mem == bytearray(100)
    assert b.stats["malformed"] == 0 and a.stats["unknown_response"] == 0


def test_d8_at_out_of_range_huge_offset():
    a, b, lb = pair()
    b.register(1, bytearray(16))
    a.write("b", 1, (1 << 64) - 1, b"x")  # far beyond the region
    assert rc_of(run(lb)["a"]) == "AT_OUT_OF_RANGE"


def test_s6_negative_offset_or_oversized_length_is_refused_before_sending():
    import pytest
    from uet.ses import SesError

    a, b, lb = pair()
    for bad in (lambda: a.write("b", 1, -1, b"x"), lambda: a.read("b", 1, 0, 1 << 32),
                lambda: a.read("b", 1, 1 << 64, 1), lambda: a.atomic("b", 1, -8, 2, 7, 1)):
        with pytest.raises(SesError):
            bad()
    assert a.packets_to_send() == [] and a.outstanding == 0


def test_d8_perm_violation():
    a, b, lb = pair()
    b.register(1, bytearray(16), writable=False)
    b.register(2, bytearray(16), readable=False, atomic=False)
    a.write("b", 1, 0, b"x")
    assert rc_of(run(lb)["a"]) == "PERM_VIOLATION"
    a.read("b", 2, 0, 1)
    assert rc_of(run(lb)["a"]) == "PERM_VIOLATION"
    a.atomic("b", 2, 0, 2, 6, 1)
    assert rc_of(run(lb)["a"]) == "PERM_VIOLATION"


def test_d8_bad_addr_absolute_below_base():
    a, b, lb = pair()
    b.register(1, bytearray(16), base=0x1000)
    a.write("b", 1, 0x1004, b"ab")
    for p in a._out:  # absolute addressing (REL = 0)
        p.ses["rel"] = False
    evs = run(lb)
    assert only(evs["a"], OperationComplete) and bytes(b.regions[1].buffer[4:6]) == b"ab"
    a.write("b", 1, 0x10, b"ab")
    for p in a._out:
        p.ses["rel"] = False
    assert rc_of(run(lb)["a"]) == "BAD_ADDR"


def test_d8_no_match_when_unexpected_list_full():
    a = SesEndpoint()
    b = SesEndpoint(SesConfig(unexpected_limit=1))
    from uet.ses.loopback import Loopback
    lb = Loopback({"a": a, "b": b})
    a.send("b", b"one")
    a.send("b", b"two")
    evs = run(lb)
    assert rc_of(evs["a"]) == "NO_MATCH"
    assert len(only(evs["a"], OperationComplete)) == 1


def test_d8_too_long_for_posted_receive():
    a, b, lb = pair()
    b.post_recv(4)
    a.send("b", b"too long")
    evs = run(lb)
    assert rc_of(evs["a"]) == "TOO_LONG"


def test_d8_initiator_error_flag_echoed():
    a, b, lb = pair()
    b.register(1, bytearray(8))
    a.write("b", 1, 0, b"x")
    a._out[0].ses["ie"] = True
    assert rc_of(run(lb)["a"]) == "INITIATOR_ERR"


def test_d8_bad_job_id_when_checked():
    a = SesEndpoint(SesConfig(job_id=5))
    b = SesEndpoint(SesConfig(job_id=6, check_job=True))
    b.register(1, bytearray(8))
    from uet.ses.loopback import Loopback
    lb = Loopback({"a": a, "b": b})
    a.write("b", 1, 0, b"x")
    assert rc_of(run(lb)["a"]) == "BAD_JOB_ID"


@pytest.mark.parametrize("opcode", [0x0D, 0x0E, 0x10, 0x11, 0x2F, 0x30, 0x3E, 0x3F])
def test_d8_unsupported_op(opcode):
    b = SesEndpoint()
    f = {"opcode": opcode, "som": True, "eom": True, "request_length": 0, "message_id": 3}
    ext = {"atomic_opcode": 2, "atomic_datatype": 6} if opcode in (0x0D, 0x0E) else None
    rsp = b.receive(NH_STD, f, ext, b"", peer="a")
    assert rsp is not None and RETURN_CODE.symbol(rsp.ses["return_code"]) == "UNSUPPORTED_OP"
    assert rsp.ses["message_id"] == 3
    (err,) = only(b.events(), MessageError)
    assert err.opcode == opcode


def test_d8_unsupported_size_geometry():
    b = SesEndpoint()
    b.post_recv()
    f = {"opcode": 5, "som": False, "eom": True, "request_length": 10, "message_id": 1,
         "payload_length": 5, "message_offset": 2}
    rsp = b.receive(NH_STD, f, None, b"abc", peer="a")  # payload_length 5 but 3 bytes present
    assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "UNSUPPORTED_SIZE"
    f.update(payload_length=3, message_offset=9)  # beyond request_length
    rsp = b.receive(NH_STD, dict(f, message_id=2), None, b"abc", peer="a")
    assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "UNSUPPORTED_SIZE"
    rsp = b.receive(1, {"opcode": 5, "request_length": 4}, None, b"abc", peer="a")
    assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "UNSUPPORTED_SIZE"


def test_d8_too_long_message():
    b = SesEndpoint(SesConfig(max_message_bytes=1000))
    rsp = b.receive(NH_STD, {"opcode": 5, "som": True, "request_length": 1001, "message_id": 1},
                    None, b"x", peer="a")
    assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "TOO_LONG"


def test_d7_response_for_unknown_message_dropped_and_counted():
    a = SesEndpoint()
    for nh, f in ((4, {"message_id": 77, "return_code": 1}),
                  (5, {"read_request_message_id": 9, "payload_length": 1, "return_code": 1}),
                  (6, {"payload_length": 1, "return_code": 1})):
        assert a.receive(nh, f, None, b"x" if nh != 4 else b"", peer="b") is None
    assert a.stats["unknown_response"] == 3
    assert a.events() == []


def test_d7_response_from_wrong_peer_dropped():
    a, b, lb = pair()
    b.register(1, bytearray(8))
    a.write("b", 1, 0, b"x")
    (p,) = a.packets_to_send()
    rsp = b.receive(p.next_hdr, p.ses, p.ext, p.payload, peer="a")
    a.receive(rsp.next_hdr, rsp.ses, None, b"", peer="mallory", message_id=p.message_id)
    assert a.stats["unknown_response"] == 1 and a.outstanding == 1
    a.receive(rsp.next_hdr, rsp.ses, None, b"", peer="b", message_id=p.message_id)
    assert a.outstanding == 0


def test_d9_default_response_changes_nothing():
    a = SesEndpoint()
    a.write("b", 1, 0, b"x")
    (p,) = a.packets_to_send()
    a.receive(4, {"opcode": 0, "return_code": 0}, message_id=p.message_id, peer="b")
    assert a.outstanding == 1 and a.stats["default_response"] == 1


def test_c8_rudi_refuses_non_idempotent_with_op_violation():
    b = SesEndpoint()
    b.post_recv()
    for op in (5, 3, 4, 9):
        rsp = b.receive(NH_STD, {"opcode": op, "som": True, "eom": True, "request_length": 0},
                        {"atomic_opcode": 2, "atomic_datatype": 6}, b"", peer="a", mode="rudi")
        assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "OP_VIOLATION"


def test_c8_datagram_outside_uud_is_op_violation():
    b = SesEndpoint()
    rsp = b.receive(NH_STD, {"opcode": 7, "som": True, "eom": True, "request_length": 1}, None,
                    b"x", peer="a")
    assert RETURN_CODE.symbol(rsp.ses["return_code"]) == "OP_VIOLATION"
