"""Hypothesis: operations interleaved over several SES endpoints, wired by the lossy loopback,
end in the memory state a simple model predicts; arbitrary input never raises (principle 6)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from uet.ses import MessageReceived, OperationComplete, OperationFailed, SesConfig, SesEndpoint, atomics as A
from uet.ses.loopback import Loopback

NAMES = ("a", "b", "c")
SIZE = 256

op_st = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.sampled_from(NAMES),
              st.integers(0, SIZE + 8), st.binary(min_size=0, max_size=300)),
    st.tuples(st.just("read"), st.sampled_from(NAMES), st.sampled_from(NAMES),
              st.integers(0, SIZE), st.integers(0, 300)),
    st.tuples(st.just("atomic"), st.sampled_from(NAMES), st.sampled_from(NAMES),
              st.integers(0, SIZE // 8 - 1).map(lambda s: s * 8),
              st.tuples(st.sampled_from([A.SUM, A.MIN, A.MAX, A.BOR, A.BAND, A.WRITE]),
                        st.sampled_from([0x04, 0x05, 0x06, 0x07]), st.integers(-2**40, 2**40),
                        st.booleans())),
    st.tuples(st.just("cswap"), st.sampled_from(NAMES), st.sampled_from(NAMES),
              st.integers(0, SIZE // 8 - 1).map(lambda s: s * 8),
              st.tuples(st.integers(0, 3), st.integers(0, 3))),
    st.tuples(st.just("send"), st.sampled_from(NAMES), st.sampled_from(NAMES), st.integers(0, 2**16),
              st.binary(min_size=0, max_size=400)),
    st.tuples(st.just("sums"), st.sampled_from(NAMES), st.sampled_from(NAMES),
              st.integers(0, SIZE // 8 - 1).map(lambda s: s * 8), st.integers(1, 6)),
)


def model_atomic(mem: bytearray, off: int, op: int, dt: int, v: int) -> bytes:
    n = A.datatype_size(dt)
    old = bytes(mem[off:off + n])
    rc, new = A.apply(op, dt, old, A.encode_value(dt, v))
    if new is not None:
        mem[off:off + n] = new
    return old


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=1, max_size=14), seed=st.integers(0, 2**16),
       loss=st.sampled_from([0.0, 0.1, 0.3]), mtu=st.sampled_from([64, 100, 4096]))
def test_interleaved_operations_match_model(ops, seed, loss, mtu):
    eps = {n: SesEndpoint(SesConfig(mtu=mtu, seed=seed + i)) for i, n in enumerate(NAMES)}
    mems = {n: bytearray(SIZE) for n in NAMES}
    model = {n: bytearray(SIZE) for n in NAMES}
    for n in NAMES:
        eps[n].register(1, mems[n])
    lb = Loopback(eps, loss=loss, trim=loss / 2, seed=seed)
    for kind, src, dst, x, y in ops:
        ep = eps[src]
        expect: list = []
        if kind == "write":
            ep.write(dst, 1, x, y)
            ok = x + len(y) <= SIZE
            if ok:
                model[dst][x:x + len(y)] = y
            expect = [("ok" if ok else 0x0C, None)]
        elif kind == "read":
            ep.read(dst, 1, x, y)
            ok = x + y <= SIZE
            expect = [("ok", bytes(model[dst][x:x + y])) if ok else (0x0C, None)]
        elif kind == "atomic":
            op, dt, v, fetch = y
            n = A.datatype_size(dt)
            ep.atomic(dst, 1, x, op, dt, v, fetch=fetch)
            old = model_atomic(model[dst], x, op, dt, v)
            expect = [("ok", old if fetch else None)]
        elif kind == "cswap":
            cmp_, swp = y
            ep.cswap(dst, 1, x, 0x07, cmp_, swp)
            old = bytes(model[dst][x:x + 8])
            if int.from_bytes(old, "little") == cmp_:
                model[dst][x:x + 8] = swp.to_bytes(8, "little")
            expect = [("ok", old)]
        elif kind == "send":
            eps[dst].post_recv(match_bits=x)
            ep.tsend(dst, y, x)
            expect = [("ok", None)]
        else:  # a batch of commutative SUMs from every endpoint, in flight together
            for n in NAMES:
                for _ in range(y):
                    eps[n].atomic(dst, 1, x, A.SUM, 0x06, 3)
                    model_atomic(model[dst], x, A.SUM, 0x06, 3)
        lb.run()
        evs = {n: eps[n].events() for n in NAMES}
        if kind == "sums":
            assert len(only(evs, OperationComplete)) == 3 * y
            continue
        done = [e for e in evs[src] if isinstance(e, (OperationComplete, OperationFailed))]
        assert len(done) == len(expect), (kind, done)
        for e, (want, data) in zip(done, expect):
            if want == "ok":
                assert isinstance(e, OperationComplete), e
                if data is not None:
                    assert e.data == data
            else:
                assert isinstance(e, OperationFailed) and e.return_code == want
        if kind == "send":
            (m,) = [e for e in evs[dst] if isinstance(e, MessageReceived)]
            assert m.data == y and m.tag == x
        for n in NAMES:
            assert mems[n] == model[n], (kind, n)
    for n in NAMES:
        assert eps[n].outstanding == 0
        assert eps[n].stats["malformed"] == 0 and eps[n].stats["unknown_response"] == 0
        assert_no_internal_errors(eps[n])


def assert_no_internal_errors(ep: SesEndpoint) -> None:
    """SES-E1: receive() never raises because it counts a bug as ``internal_errors`` and keeps it in
    ``last_error``; "never raises" holds only if that count stays 0."""
    assert ep.stats["internal_errors"] == 0, repr(ep.last_error)


def only(evs, cls):
    return [e for es in evs.values() for e in es if isinstance(e, cls)]


scalar = st.one_of(st.integers(-2**70, 2**70), st.booleans(), st.none(), st.text(max_size=3),
                   st.binary(max_size=4), st.floats(allow_nan=True))
fields_st = st.dictionaries(st.sampled_from([
    "opcode", "som", "eom", "hd", "ie", "rel", "message_id", "request_length", "payload_length",
    "message_offset", "memory_key", "match_bits", "buffer_offset", "header_data", "return_code",
    "read_request_message_id", "initiator_restart_token", "target_restart_token", "job_id",
    "atomic_opcode", "atomic_datatype", "compare_value", "swap_value", "eager_length",
    "read_offset", "read_match_bits", "modified_length", "list"]),
    st.one_of(scalar, st.integers(0, 0x3F)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(nh=st.integers(-1, 8), f=fields_st, ext=st.one_of(st.none(), fields_st),
       payload=st.binary(max_size=64), mode=st.sampled_from(["rud", "rudi", "uud"]),
       mid=st.one_of(st.none(), st.integers(0, 5)))
def test_e1_receive_arbitrary_dicts_never_raises(nh, f, ext, payload, mode, mid):
    ep = SesEndpoint(SesConfig(mtu=64, max_message_bytes=1 << 16))
    ep.register(0, bytearray(64))
    ep.register(1, bytearray(64))
    ep.post_recv()
    ep.post_recv(match_bits=0)
    ep.write("x", 1, 0, b"abc")
    ep.read("x", 1, 0, 40)
    ep.packets_to_send()
    rsp = ep.receive(nh, f, ext, payload, peer="x", mode=mode, message_id=mid)
    if rsp is not None:
        rsp.to_bytes()  # every response the target builds encodes
    for p in ep.packets_to_send():
        p.to_bytes()
    ep.events()
    assert_no_internal_errors(ep)


@settings(max_examples=300, deadline=None)
@given(nh=st.integers(0, 8),
       # long enough for a request's SES header too (short ones mostly end as decode errors)
       data=st.one_of(st.binary(max_size=120), st.binary(min_size=48, max_size=120)),
       mode=st.sampled_from(["rud", "rudi", "uud"]))
def test_e1_receive_arbitrary_bytes_never_raises(nh, data, mode):
    ep = SesEndpoint(SesConfig(mtu=64, max_message_bytes=1 << 16))
    ep.register(0, bytearray(64))
    ep.post_recv()
    rsp = ep.receive_bytes(nh, data, peer="x", mode=mode)
    if rsp is not None:
        rsp.to_bytes()
    for p in ep.packets_to_send():
        p.to_bytes()
    assert_no_internal_errors(ep)
