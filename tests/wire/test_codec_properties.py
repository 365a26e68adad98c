"""Properties every compiled codec must have, for every header of the schema (docs/design-notes.md principle 1
and 6): exact round trips, every variant reachable, arbitrary bytes never raise anything but the
project's DecodeError."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from uet import wire
from uet.errors import DecodeError, EncodeError, TruncatedError
from uet.wire.schema import Options

KEYS = sorted(wire.HEADERS)
OPTION_SETS = [Options(), Options(ccx_layout="xdp2"), Options(rsv_pdc_bit=83),
               Options(mswap_cswap_ext=True)]


@pytest.mark.parametrize("key", KEYS)
@given(data=st.binary(min_size=0, max_size=80), opt=st.sampled_from(OPTION_SETS))
def test_bytes_round_trip(key, data, opt):
    c = wire.codec(key)
    try:
        fields, size = c.decode(data, 0, opt)
    except TruncatedError as exc:
        assert len(data) < c.max_size
        assert exc.need > exc.have
        return
    assert c.encode(fields, opt) == data[:size]
    assert c.decode(c.encode(fields, opt), 0, opt) == (fields, size)


@pytest.mark.parametrize("key", KEYS)
@given(data=st.binary(max_size=60), off=st.integers(-3, 70))
def test_arbitrary_bytes_only_decode_error(key, data, off):
    c = wire.codec(key)
    try:
        c.decode(data, off)
    except DecodeError:
        pass
    fields, need = c.decode_partial(data, max(off, 0))
    assert need in {v.size for v in c.variants.values()}
    assert all(isinstance(v, (int, bool)) for v in fields.values())


@pytest.mark.parametrize("key", KEYS)
def test_every_variant_reachable_and_round_trips(key):
    """Each arm of every switch is hit by some bytes (seeded search) and round-trips exactly."""
    c = wire.codec(key)
    rng = random.Random(4793)
    for vkey, var in c.variants.items():
        for opt in OPTION_SETS:
            hit = None
            for _ in range(4000):
                data = rng.randbytes(var.size)
                if c.variant_for_bytes(data, 0, opt) is var:
                    hit = data
                    break
            if hit is not None:
                break
        assert hit is not None, f"{key}: variant {vkey} is unreachable"
        fields, size = c.decode(hit, 0, opt)
        assert size == var.size
        assert set(fields) == set(var.names)
        assert c.encode(fields, opt) == hit


@pytest.mark.parametrize("key", KEYS)
def test_encode_rejects_values_that_do_not_fit(key):
    c = wire.codec(key)
    var = next(iter(c.variants.values()))
    for p in var.placed:
        if p.field.reserved:
            continue
        too_big = 1 << p.field.width
        with pytest.raises(EncodeError, match=p.name):
            c.encode({p.name: too_big})
        if not p.field.signed:
            with pytest.raises(EncodeError, match=p.name):
                c.encode({p.name: -1})
        break


def test_encode_rejects_non_integers():
    with pytest.raises(EncodeError):
        wire.encode("pds.ack", {"cack_psn": "12"})


def test_missing_fields_encode_as_zero():
    assert wire.encode("pds.ack", {"type": 7}) == bytes.fromhex("3800") + bytes(10)


def test_signed_fields_accept_their_unsigned_spelling():
    # B.5: clear_psn_offset is 16-bit two's complement; 0xFFFE and -2 are the same bits.
    a = wire.encode("pds.rud_rod_req", {"type": 2, "clear_psn_offset": -2})
    b = wire.encode("pds.rud_rod_req", {"type": 2, "clear_psn_offset": 0xFFFE})
    assert a == b
    assert wire.decode("pds.rud_rod_req", a)["clear_psn_offset"] == -2


def test_schema_names_are_unique_per_variant_and_snake_case():
    import re

    for key in KEYS:
        for var in wire.codec(key).variants.values():
            assert len(set(var.names)) == len(var.names), key
            for n in var.names:
                assert re.fullmatch(r"[a-z][a-z0-9_]*", n), (key, n)


def test_every_field_cites_a_reference():
    """Transport fields name the docs/facts.md row they come from (the Lua and docs show it)."""
    for h in wire.ALL_HEADERS:
        if h.key in ("ipv4", "ipv6", "udp", "eth", "vlan", "sll", "sll2", "null"):
            continue
        assert h.ref, h.key
        for f in h.all_fields():
            assert f.reserved or f.ref, (h.key, f.name)
