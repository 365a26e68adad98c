"""uet.native.txbuild (issue 15 item 1): the request datagrams of a run of packets, one C call per
run, are byte for byte the reference's (RequestHeader.pack, Message.header, seal_udp: B.5, D.3,
A.3), and the twin's; bad arguments are ValueErrors, never a crash; the C code, built with
AddressSanitizer and UBSan into native/test_txbuild_driver.c, stays inside its buffers."""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from uet.native import crc32c, txbuild
from uet.native.txbuild import build_requests, build_requests_py
from uet.pds.packets import REQUEST_SIZE, RequestHeader, read_request_fields
from uet.ses.packets import Message, cut, read_std
from uet.wire import trailer
from uet.wire.enums import ROD_REQ, RUD_REQ
from uet.wire.fast import fast
from uet.wire.trailer import seal_udp, udp_seed

from tests.native.sanitize import run_sanitized

M32 = 0xFFFFFFFF
IS_C = txbuild.TX_BACKEND == "c"
requires_c = pytest.mark.skipif(not IS_C, reason="the C txbuild is not in use")
BUILDERS = [pytest.param(build_requests_py, id="twin")]
if IS_C:
    BUILDERS.append(pytest.param(build_requests, id="c"))
A4, B4 = "10.0.0.1", "10.0.0.2"


def reference(header: RequestHeader, item, first: int, psn: int, clear_psn: int, ar, entropy,
              src: str, dst: str, port: int) -> list[bytes]:
    """Per packet, as Initiator._request packs and seals: B.5 header, SES header, payload, A.3
    trailer."""
    out = []
    for i, ev in enumerate(entropy):
        p = (psn + i) & M32
        d = (clear_psn - p) & M32
        head = header.pack(item.next_hdr, p, d - (1 << 32) if d >> 31 else d, ar=ar[i],
                           retx=False, psn_offset=None)
        out.append(seal_udp([head, item.header(first + i), bytes(item.payload_of(first + i))],
                            src, dst, ev, port))
    return out


def build_all(item, *, header: RequestHeader, first: int, psn: int, clear_psn: int, ar, entropy,
              src: str = A4, dst: str = B4, port: int = 4793, seed=udp_seed) -> list[list[bytes]]:
    """The run from every builder in use (twin, and C when built)."""
    kw = dict(header=header, item=item, first=first, psn=psn, clear_psn=clear_psn, ar=ar,
              entropy=entropy, src=src, dst=dst, port=port, udp_seed=seed)
    return [build_requests_py(**kw), build_requests(**kw)]


def message(n: int, mtu: int, *, opcode: int = 0x05, rendezvous: bool = False,
            header_data: int | None = None, seed: int = 0, data: bytes | None = None):
    """A message of ``n`` bytes cut at ``mtu`` (a Message when it takes more than one packet)."""
    common = {"opcode": opcode, "job_id": 0xABCDE, "pid_on_fep": 0x123, "resource_index": 0x45,
              "initiator": 0x89ABCDEF, "rel": True, "dc": False}
    if opcode in (0x09, 0x0A, 0x0B):
        keys = {"match_bits": 0x1122334455667788}
    else:
        keys = {"memory_key": 0x0102030405060708, "buffer_offset": 0x55}
    ext = ({"eager_length": n, "ri_generation": 7, "pid_on_fep": 0x321, "resource_index": 0x54,
            "read_offset": 0xDEADBEEF, "read_match_bits": 0xFEEDFACE} if rendezvous else None)
    payload = data if data is not None else random.Random(seed).randbytes(n)
    return cut("peer", 0x4242, payload, mtu=mtu, small_header=False, common=common, key=keys,
               header_data=header_data, ext=ext)


class Chunks:
    """An Outgoing that is not a Message: SES headers of varying length, payloads as views."""

    token = 1

    def __init__(self, heads: list[bytes], payloads: list[bytes], next_hdr: int = 3):
        self.heads, self.payloads, self.next_hdr = heads, payloads, next_hdr
        self.count = len(heads)

    def header(self, k: int) -> bytes:
        return self.heads[k]

    def payload_of(self, k: int) -> memoryview:
        return memoryview(self.payloads[k])


class Recut(Message):
    """A Message subclass that keeps Message's cutting (and so its request template)."""


# --- the constants come from the schema ----------------------------------------------------------

def test_sizes_are_the_schemas():
    assert txbuild.REQUEST_SIZE == REQUEST_SIZE == fast("pds.rud_rod_req").layout(syn=0).size
    assert txbuild.TRAILER_LEN == trailer.TRAILER_LEN == 4  # A.3
    assert txbuild.UDP_HEADER_LEN == trailer.UDP_HEADER_LEN


def test_request_header_positions_are_the_schemas():
    """The C code takes the field positions from RequestHeader.SHIFTS: they are the schema's
    (B.5); ``const`` is what pack starts from."""
    shift = fast("pds.rud_rod_req").layout(syn=0).shift
    assert RequestHeader.SHIFTS == tuple(shift[n] for n in ("psn", "clear_psn_offset", "ar",
                                                            "next_hdr"))
    h = RequestHeader(RUD_REQ, 0x1234, 0x5678)
    assert h.const.to_bytes(12, "big") == h.pack(0, 0, 0, ar=False, retx=False, psn_offset=None)


@requires_c
def test_the_c_constants_are_the_pythons():
    from uet.native._uet_native import lib

    assert lib.UET_TXBUILD_REQUEST_SIZE == REQUEST_SIZE
    assert lib.UET_TXBUILD_TRAILER_LEN == trailer.TRAILER_LEN


# --- exact bytes ---------------------------------------------------------------------------------

def test_one_datagram_byte_by_byte():
    """B.5 by hand: RUD (type 2), next_hdr 3, AR, CLEAR_PSN one before the PSN (offset -1),
    PSN 0x01020304, SPDCID 0x1234, DPDCID 0x5678; then the SES header, the payload and the A.3
    trailer over the addresses, the UDP header (checksum 0) and the UET bytes."""
    m = message(100, 64, seed=1)
    assert isinstance(m, Message)
    header = RequestHeader(RUD_REQ, 0x1234, 0x5678)
    for got in build_all(m, header=header, first=1, psn=0x01020304, clear_psn=0x01020303,
                         ar=[True], entropy=[0xC001], port=4793):
        (d,) = got
        assert d[:12] == bytes.fromhex("1188ffff0102030412345678")
        assert d[12:12 + 44] == m.header(1)
        assert d[56:-4] == m.data[64:100]
        udp = bytes.fromhex("c00112b9") + (8 + len(d)).to_bytes(2, "big") + b"\0\0"
        crc = crc32c(bytes([10, 0, 0, 1, 10, 0, 0, 2]) + udp + d[:-4])
        assert d[-4:] == crc.to_bytes(4, "big")


def test_the_fields_read_back():
    """Each datagram's header reads back as the run says: consecutive PSNs across the wrap, the
    CLEAR_PSN offset clamped to 16 signed bits (I3), AR as given, SOM/EOM and offsets (D.3)."""
    m = message(10_000, 1000, seed=2)
    header = RequestHeader(ROD_REQ, 7, 9)
    psn, clear = M32 - 1, (M32 - 1 - 40000) & M32
    ar = [False, True, False, True]
    for got in build_all(m, header=header, first=6, psn=psn, clear_psn=clear, ar=ar,
                         entropy=[1, 2, 3, 4]):
        for i, d in enumerate(got):
            nh, retx, a, syn, off, p, spdcid, dpdcid = read_request_fields(d)
            assert (nh, retx, a, syn, p, spdcid, dpdcid) == (3, 0, ar[i], 0, (psn + i) & M32, 7, 9)
            assert off == -32768
            f = read_std(d[12:])
            k = 6 + i
            assert (f[2], f[7], f[8]) == (k == 9, 1000, k * 1000)  # eom, length, offset
            assert d[12 + 44:-4] == m.data[k * 1000:(k + 1) * 1000]
        assert len(got) == 4 and len(set(got)) == 4


# --- every builder is the reference --------------------------------------------------------------

addresses = st.one_of(
    st.tuples(st.integers(0, M32), st.integers(0, M32)).map(
        lambda t: tuple(".".join(str(b) for b in v.to_bytes(4, "big")) for v in t)),
    st.just(("fd00::1", "fd00::2")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(0, 30_000), mtu=st.integers(1, 4096),
       ptype=st.integers(0, 31), ids=st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF)),
       psn=st.one_of(st.integers(0, M32), st.integers(M32 - 8, M32), st.integers(0, 8)),
       clear_delta=st.one_of(st.integers(-70_000, 70_000), st.integers(0, M32)),
       kind=st.sampled_from(["plain", "rendezvous", "header_data", "tagged"]),
       where=st.sampled_from(["start", "middle", "end", "all"]), addr=addresses,
       port=st.integers(0, 0xFFFF))
def test_c_twin_and_reference_agree(data, n, mtu, ptype, ids, psn, clear_delta, kind, where,
                                    addr, port):
    if n // mtu > 400:
        mtu = n // 400 + 1  # keep a run's packet count reasonable
    item = message(n, mtu, opcode={"rendezvous": 0x06, "tagged": 0x09}.get(kind, 0x05),
                   rendezvous=kind == "rendezvous",
                   header_data=0x1234567890ABCDEF if kind == "header_data" else None, seed=n)
    count_all = item.count
    if where == "start":
        first, count = 0, data.draw(st.integers(1, count_all))
    elif where == "end":
        count = data.draw(st.integers(1, count_all))
        first = count_all - count
    elif where == "middle":
        first = data.draw(st.integers(0, count_all - 1))
        count = data.draw(st.integers(1, count_all - first))
    else:
        first, count = 0, count_all
    ar = data.draw(st.lists(st.booleans(), min_size=count, max_size=count))
    entropy = data.draw(st.lists(st.integers(0, 0xFFFF), min_size=count, max_size=count))
    header = RequestHeader(ptype, *ids)
    clear = (psn + clear_delta) & M32
    src, dst = addr
    want = reference(header, item, first, psn, clear, ar, entropy, src, dst, port)
    for got in build_all(item, header=header, first=first, psn=psn, clear_psn=clear, ar=ar,
                         entropy=entropy, src=src, dst=dst, port=port):
        assert got == want
        assert all(type(d) is bytes for d in got)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 5000), mtu=st.integers(1, 700), first=st.integers(0, 10),
       salt=st.integers(0, M32))
def test_random_seeds_reach_every_packet(n, mtu, first, salt):
    """Seeds that are not udp_seed's (any 32-bit values): the builders agree, and each trailer is
    the CRC-32C of its datagram chained from the seed of its own UDP length and entropy."""
    item = message(n, mtu, seed=salt & 0xFF)
    first = min(first, item.count - 1)
    count = item.count - first

    def seed(src: str, dst: str, sport: int, dport: int, udp_len: int) -> int:
        return hash((sport, udp_len, salt)) & M32

    entropy = [(salt + i) & 0xFFFF for i in range(count)]
    twin, c = build_all(item, header=RequestHeader(RUD_REQ, 1, 2), first=first, psn=salt,
                        clear_psn=salt, ar=[False] * count, entropy=entropy, seed=seed)
    assert twin == c
    for d, ev in zip(c, entropy):
        crc = crc32c(d[:-4], seed(A4, B4, ev, 4793, 8 + len(d)))
        assert d[-4:] == crc.to_bytes(4, "big")


@settings(max_examples=100, deadline=None)
@given(heads=st.lists(st.binary(max_size=60), min_size=1, max_size=6),
       data=st.data(), psn=st.integers(0, M32), next_hdr=st.integers(0, 15))
def test_items_that_are_not_messages(heads, data, psn, next_hdr):
    """Any other Outgoing (here SES headers of varying length and payloads as views) goes by its
    header(k) and payload_of(k), whole or from the middle."""
    payloads = data.draw(st.lists(st.binary(max_size=300), min_size=len(heads),
                                  max_size=len(heads)))
    item = Chunks(heads, payloads, next_hdr)
    first = data.draw(st.integers(0, item.count - 1))
    count = item.count - first
    kw = dict(header=RequestHeader(RUD_REQ, 3, 4), first=first, psn=psn, clear_psn=psn ^ 0x8000,
              ar=[True] * count, entropy=list(range(count)))
    want = reference(kw["header"], item, first, psn, psn ^ 0x8000, kw["ar"], kw["entropy"], A4,
                     B4, 4793)
    for got in build_all(item, **kw):
        assert got == want


def test_single_packet_messages_and_subclasses_and_views():
    """A one-packet SesPacket, a Message subclass (the generic path), Messages over a view that
    is not a whole bytes object (the C code takes the buffer, not the bytes) or over a
    bytearray, and payloads as views whose items are not bytes (lengths are counted in bytes)."""
    header = RequestHeader(RUD_REQ, 5, 6)
    single = message(50, 4096)
    assert not isinstance(single, Message)
    raw = random.Random(3).randbytes(9000)
    base = message(9000, 1000, data=raw)
    sub = Recut(base.peer, base.message_id, raw, 1000, base.fields, base.first, base.ext)
    view = Message(base.peer, base.message_id, memoryview(b"xx" + raw)[2:], 1000, base.fields,
                   base.first, base.ext)
    mutable = Message(base.peer, base.message_id, bytearray(raw), 1000, base.fields, base.first,
                      base.ext)
    words = Chunks([b"h1", b"h22"], [array("H", [1, 2, 3]), array("H", [0xFFFF])])  # 2-byte items
    for item in (single, sub, view, mutable, base, words):
        want = reference(header, item, 0, 100, 90, [False] * item.count,
                         list(range(item.count)), A4, B4, 4793)
        for got in build_all(item, header=header, first=0, psn=100, clear_psn=90,
                             ar=[False] * item.count, entropy=list(range(item.count))):
            assert got == want
    assert reference(header, sub, 0, 100, 90, [False] * 9, list(range(9)), A4, B4, 4793) == \
        reference(header, base, 0, 100, 90, [False] * 9, list(range(9)), A4, B4, 4793)


@requires_c
def test_the_c_path_cuts_a_message_itself():
    """A Message's SES headers come from its constants in C, not from header(k) per packet."""
    m = message(9000, 1000, seed=4)
    want = reference(RequestHeader(RUD_REQ, 1, 1), m, 2, 5, 5, [False] * 7, list(range(7)), A4,
                     B4, 4793)

    def no_header(k: int) -> bytes:
        raise AssertionError("header(%d) asked for" % k)

    m.header = no_header  # an instance attribute: only a per-packet call would reach it
    assert build_requests(header=RequestHeader(RUD_REQ, 1, 1), item=m, first=2, psn=5,
                          clear_psn=5, ar=[False] * 7, entropy=list(range(7)), src=A4, dst=B4,
                          port=4793, udp_seed=udp_seed) == want


@requires_c
def test_any_item_with_a_request_template_is_cut_in_c():
    """The C path takes an item by the Outgoing protocol's template() (uet.pds.upper
    .RequestTemplate), not by its class: a wrapper that is no Message, with the Message's
    template, is cut in C (its header(k) is never asked) into the Message's datagrams."""
    m = message(9000, 1000, seed=5, rendezvous=True, opcode=0x06)

    class Wrapped:
        token, next_hdr, count = 1, m.next_hdr, m.count

        def header(self, k: int) -> bytes:
            raise AssertionError("header(%d) asked for" % k)

        def payload_of(self, k: int) -> memoryview:
            return m.payload_of(k)

        def template(self):
            return m.template()

    h = RequestHeader(RUD_REQ, 1, 1)
    want = reference(h, m, 3, M32 - 2, 5, [True, False] * 3, list(range(6)), A4, B4, 4793)
    assert build_requests(header=h, item=Wrapped(), first=3, psn=M32 - 2, clear_psn=5,
                          ar=[True, False] * 3, entropy=list(range(6)), src=A4, dst=B4,
                          port=4793, udp_seed=udp_seed) == want



@requires_c
def test_interleaved_messages_keep_their_constants():
    """The many-host simulator interleaves the runs of many messages: each one's constants (its
    request template read, its C message made) are worked out once, not again whenever another
    message's run went out in between (a one-entry cache did that), and the datagrams are the
    reference's."""
    msgs = [message(9000, 1000, seed=s) for s in range(3)]
    asked = []
    for m in msgs:
        def template(m=m, real=m.template):
            asked.append(m)
            return real()
        m.template = template
    h = RequestHeader(RUD_REQ, 1, 1)
    for k in range(4):
        for m in msgs:
            want = reference(h, m, k, 5 + k, 4, [False], [7], A4, B4, 4793)
            assert build_requests(header=h, item=m, first=k, psn=5 + k, clear_psn=4, ar=[False],
                                  entropy=[7], src=A4, dst=B4, port=4793,
                                  udp_seed=udp_seed) == want
    # one template() per run for its bytes, and one more per message for its constants
    assert len(asked) == 4 * len(msgs) + len(msgs)

def test_an_empty_run_is_no_datagram():
    for got in build_all(message(5000, 1000), header=RequestHeader(RUD_REQ, 1, 1), first=5,
                         psn=0, clear_psn=0, ar=[], entropy=[]):
        assert got == []


# --- bad arguments -------------------------------------------------------------------------------

def _bad_cases() -> list:
    m = message(5000, 1000)
    h = RequestHeader(RUD_REQ, 1, 2)
    big = RequestHeader(RUD_REQ, 1, 2)
    big._const = 1 << (8 * REQUEST_SIZE)
    ok = dict(header=h, item=m, first=0, psn=0, clear_psn=0, ar=[False, True],
              entropy=[1, 2], src=A4, dst=B4, port=4793, udp_seed=udp_seed)
    return [
        dict(ok, ar=[False]),                        # fewer AR flags than entropies
        dict(ok, first=-1),
        dict(ok, first=4),                           # packets 4 and 5 of a 5-packet message
        dict(ok, psn=1 << 32),
        dict(ok, psn=-1),
        dict(ok, clear_psn=1 << 32),
        dict(ok, clear_psn=-5),
        dict(ok, header=big),                        # constant fields beyond 12 bytes
        dict(ok, item=Chunks([b"a", b"b"], [b"", b""], next_hdr=1 << 10)),  # past bit 95
        dict(ok, item=Chunks([b"a", b"b"], [b"", b""], next_hdr=-1)),
    ]


@pytest.mark.parametrize("build", BUILDERS)
@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_arguments_are_value_errors(build, case):
    with pytest.raises(ValueError):
        build(**_bad_cases()[case])


# --- the C function's own checks (capacity, lengths) ----------------------------------------------

@requires_c
def test_the_output_capacity_is_never_exceeded():
    """Exactly the run's bytes: written; one byte fewer: an error and nothing written."""
    from uet.native._uet_native import ffi, lib

    m = message(2500, 1000, rendezvous=True, opcode=0x06)
    h = RequestHeader(RUD_REQ, 1, 2)
    want = b"".join(reference(h, m, 0, 7, 7, [True] * 3, [1, 2, 3], A4, B4, 4793))
    seeds = [udp_seed(A4, B4, ev, 4793, 8 + len(d))
             for ev, d in zip([1, 2, 3], reference(h, m, 0, 7, 7, [True] * 3, [1, 2, 3], A4, B4,
                                                   4793))]
    shifts = ffi.new("int32_t[]", [0] * lib.UET_TXBUILD_SHIFTS)
    for slot, v in zip((lib.UET_TXBUILD_SHIFT_PSN, lib.UET_TXBUILD_SHIFT_CLEAR,
                        lib.UET_TXBUILD_SHIFT_AR, lib.UET_TXBUILD_SHIFT_NEXT_HDR), h.SHIFTS):
        shifts[slot] = v
    t = m.template()
    ses = t.som + t.mid.to_bytes(t.mid_size, "big") + t.ext
    data = bytes(m.data)

    def call(out, cap: int, *, ses_len: int = len(ses), data_len: int = len(data)) -> int:
        msg = ffi.new("uet_txbuild_message_t *", {
            "ses_len": ses_len, "som_len": len(t.som), "mid_len": t.mid_size,
            "ext_len": len(t.ext), "len_shift": t.len_shift, "off_shift": t.off_shift,
            "eom_shift": t.eom_shift, "data_len": data_len, "mtu": 1000})
        return lib.uet_txbuild_message(out, cap, h.const.to_bytes(12, "big"), shifts, 3, 7, 7,
                                       b"\1\1\1", seeds, 3, msg, ses, data, 0)

    out = ffi.new("char[]", len(want))
    assert call(out, len(want)) == len(want)
    assert ffi.buffer(out)[:] == want
    short = ffi.new("char[]", len(want))
    ffi.memmove(short, b"\xa5" * len(want), len(want))
    assert call(short, len(want) - 1) == lib.UET_TXBUILD_NO_ROOM
    assert ffi.buffer(short)[:] == b"\xa5" * len(want)
    assert call(short, len(want), ses_len=len(ses) - 1) == lib.UET_TXBUILD_BAD_ARG
    assert call(short, len(want), data_len=1999) == lib.UET_TXBUILD_BAD_ARG  # 2 packets, not 3
    assert call(short, -1) == lib.UET_TXBUILD_BAD_ARG
    assert ffi.buffer(short)[:] == b"\xa5" * len(want)

    payload = bytes(m.data[:2500])
    heads = b"".join(m.header(k) for k in range(3))
    ends = [len(m.header(0)), len(m.header(0)) + len(m.header(1)), len(heads)]
    args = (h.const.to_bytes(12, "big"), shifts, 3, 7, 7, b"\1\1\1", seeds, 3, heads, len(heads),
            ends, payload, len(payload), [1000, 2000, 2500])
    assert lib.uet_txbuild(out, len(want), *args) == len(want)
    assert ffi.buffer(out)[:] == want
    assert lib.uet_txbuild(short, len(want) - 1, *args) == lib.UET_TXBUILD_NO_ROOM
    bad_ends = args[:-1] + ([1000, 900, 2500],)
    assert lib.uet_txbuild(short, len(want), *bad_ends) == lib.UET_TXBUILD_BAD_ARG
    past = args[:-1] + ([1000, 2000, 2501],)
    assert lib.uet_txbuild(short, len(want), *past) == lib.UET_TXBUILD_BAD_ARG
    assert ffi.buffer(short)[:] == b"\xa5" * len(want)


# --- the C source under AddressSanitizer and UBSan ----------------------------------------------

def test_txbuild_under_asan_ubsan(tmp_path):
    """As tests/native/test_native_sanitizers.py does for the other sources."""
    run_sanitized(tmp_path, ["test_txbuild_driver.c", "txbuild.c", "crc32c.c"], werror=True,
                  timeout=120)
