"""uet.wire.fast: the compiled readers and packers give exactly what the schema codecs give."""

from __future__ import annotations

import random

import pytest

from uet.wire.fast import chain_packer, chain_reader, fast

VARIANTS = [("pds.rud_rod_req", {"syn": 0}), ("pds.rud_rod_req", {"syn": 1}),
            ("pds.rud_rod_cc_req", {"syn": 0}), ("pds.ack_cc", {"p": 0, "cc_type": 0}),
            ("pds.ack_cc", {"p": 1, "cc_type": 1}), ("pds.ack", {"p": 0}), ("pds.nack", {"nt": 0}),
            ("pds.control", {"syn": 0}), ("ses.std", {"opcode": 5, "som": 0}),
            ("ses.std", {"opcode": 5, "som": 1}), ("ses.std", {"opcode": 9, "som": 0}),
            ("ses.small", {}), ("ses.rsp", {})]


def _random_header(rng: random.Random, key: str, sel: dict):
    """A header of the variant ``sel`` selects, with every other field random: (layout, fields,
    bytes)."""
    lay = fast(key).layout(**sel)
    fields = lay.variant.decode_int(int.from_bytes(rng.randbytes(lay.size), "big"))
    fields.update(sel)
    raw = lay.variant.encode_int(fields).to_bytes(lay.size, "big")
    return lay, lay.variant.decode_int(int.from_bytes(raw, "big")), raw


@pytest.mark.parametrize("seed", range(4))
def test_readers_match_the_codec(seed):
    rng = random.Random(seed)
    for _ in range(300):
        parts, want, raw = [], [], b""
        for key, sel in rng.sample(VARIANTS, rng.randint(1, 2)):
            lay, fields, hdr = _random_header(rng, key, sel)
            names = rng.sample(lay.variant.names, rng.randint(1, len(lay.variant.names)))
            parts.append((lay, names))
            want += [int(fields[n]) for n in names]
            raw += hdr
        off = rng.randint(0, 7)
        buf = rng.randbytes(off) + raw + rng.randbytes(rng.randint(0, 4))
        assert list(chain_reader(*parts)(buf, off)) == want


def test_single_reader_is_the_chain_of_one():
    lay = fast("pds.ack_cc").layout(p=0, cc_type=0)
    assert lay.reader("cack_psn", "sack_bitmap") is chain_reader(
        (lay, ("cack_psn", "sack_bitmap")))
    with pytest.raises(KeyError):
        lay.reader("no_such_field")


@pytest.mark.parametrize("seed", range(4))
def test_packers_match_the_codec(seed):
    rng = random.Random(100 + seed)
    for _ in range(300):
        parts, consts, values, want = [], [], [], b""
        for key, sel in rng.sample(VARIANTS, rng.randint(1, 2)):
            lay, fields, hdr = _random_header(rng, key, sel)
            free = [n for n in lay.variant.names if n not in sel]
            names = rng.sample(free, rng.randint(0, len(free)))
            parts.append((lay, names))
            consts.append(lay.variant.encode_int({k: v for k, v in fields.items() if k not in names}))
            values += [int(fields[n]) for n in names]
            want += hdr
        pk = chain_packer(*parts)
        assert pk.size == len(want)
        assert pk.pack(pk.consts(*consts), *values) == want


def test_packer_wraps_signed_fields():
    lay = fast("pds.rud_rod_req").layout(syn=0)
    pk = chain_packer((lay, ("clear_psn_offset", "psn")))
    raw = pk.pack(pk.consts(lay.const({"type": 2, "spdcid": 7, "dpdcid": 9})), -5, 123456)
    f = lay.variant.decode_int(int.from_bytes(raw, "big"))
    assert (f["type"], f["clear_psn_offset"], f["psn"], f["spdcid"], f["dpdcid"]) == (2, -5, 123456, 7, 9)
