"""F: KDF and KDF context - known answers computed independently (test_reference.sp800_108) and
the answers published with the reference provider."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from uet.tss.kdf import KDF_OUTPUT_LEN, LABEL_CLUSTER, LABEL_SERVER, derive, kdf_context

from .test_reference import RP10_VECTORS, RP_KEY, RP_VECTORS, sp800_108

KEY = bytes(range(32))
CTX10 = bytes.fromhex("0003" "00000001" "0a000001")  # epoch 3, rekey 1, 10.0.0.1
CTX26 = bytes(4) + bytes.fromhex("0003" "00000000") + bytes.fromhex("fd00" + "00" * 13 + "01")


def test_labels_and_length_are_f_kdf():
    assert LABEL_CLUSTER == b"U1" and LABEL_SERVER == b"U2" and KDF_OUTPUT_LEN == 44


@pytest.mark.parametrize("label", [b"U1", b"U2"])
@pytest.mark.parametrize("ctx", [CTX10, CTX26], ids=["ctx10", "ctx26"])
def test_known_answer_every_mode_and_layout(label, ctx):
    expect = sp800_108(KEY, label, ctx)
    assert len(expect) == 44
    assert derive(KEY, label, ctx) == expect


def test_pinned_first_block_matches_the_written_out_construction():
    # one block by hand: CMAC(K, 0x01 || "U1" || 0x00 || ctx || [352]), [L] in 16 bits by
    # default and 32 as the choice (H.1 #18)
    from cryptography.hazmat.primitives.ciphers import algorithms
    from cryptography.hazmat.primitives.cmac import CMAC

    for length_field, kw in ((bytes.fromhex("0160"), {}),
                             (bytes.fromhex("0160"), {"length_bits": 16}),
                             (bytes.fromhex("00000160"), {"length_bits": 32})):
        c = CMAC(algorithms.AES(KEY))
        c.update(b"\x01U1\x00" + CTX10 + length_field)
        assert derive(KEY, b"U1", CTX10, **kw)[:16] == c.finalize()


def test_output_differs_per_label_and_context():
    outs = {derive(KEY, lab, ctx) for lab in (b"U1", b"U2") for ctx in (CTX10, CTX26)}
    assert len(outs) == 4
    # the length is part of the fixed input: a shorter output is not a prefix of the longer
    assert derive(KEY, b"U1", CTX10, 32) != derive(KEY, b"U1", CTX10)[:32]
    assert len(derive(KEY, b"U1", CTX10, 32)) == 32


@settings(max_examples=30)
@given(key=st.binary(min_size=32, max_size=32), label=st.sampled_from([b"U1", b"U2"]),
       ctx=st.binary(min_size=0, max_size=40), n=st.integers(1, 80))
def test_random_known_answers(key, label, ctx, n):
    assert derive(key, label, ctx, n) == sp800_108(key, label, ctx, n * 8)
    assert (derive(key, label, ctx, n, length_bits=32)
            == sp800_108(key, label, ctx, n * 8, length_bits=32))


def test_context_layouts():
    assert kdf_context(epoch=3, rekey=1, source=bytes.fromhex("0a000001")) == CTX10
    v6 = bytes.fromhex("fd00" + "00" * 13 + "01")
    assert kdf_context(epoch=3, rekey=0, source=v6) == CTX26
    assert len(kdf_context(epoch=0xFFFF, rekey=0xFFFFFFFF, source=b"abcd")) == 10
    assert len(CTX26) == 26


@pytest.mark.parametrize("kw", [dict(epoch=1 << 16, rekey=0, source=b"abcd"),
                                dict(epoch=0, rekey=1 << 32, source=b"abcd"),
                                dict(epoch=0, rekey=0, source=b"abc")])
def test_context_refuses_what_does_not_fit(kw):
    with pytest.raises(ValueError):
        kdf_context(**kw)


def test_derive_refuses_bad_key_and_length():
    with pytest.raises(ValueError):
        derive(b"short", b"U1", CTX10)
    with pytest.raises(ValueError):
        derive(KEY, b"U1", CTX10, 0)
    with pytest.raises(ValueError):
        derive(KEY, b"U1", CTX10, length_bits=24)


@pytest.mark.parametrize("label,ctx,expect", RP10_VECTORS,
                         ids=["v4-U1", "v6-U1", "v4-U2", "v6-U2"])
def test_reference_provider_1_0_answers_with_the_default_16_bit_length(label, ctx, expect):
    """F, H.1 #18: the 1.0-layout vectors (44 bytes out, the 32-byte key published) with the
    default width, and not with 32 bits."""
    assert derive(RP_KEY, label, ctx).hex()[:64] == expect
    assert derive(RP_KEY, label, ctx, length_bits=16).hex()[:64] == expect
    assert derive(RP_KEY, label, ctx, length_bits=32).hex()[:64] != expect


@pytest.mark.parametrize("label,ctx,expect", RP_VECTORS,
                         ids=["old-v4-UE1", "old-v6-UE1", "old-v4-UE2", "old-v6-UE2"])
def test_reference_provider_pre_1_0_answers_with_a_32_bit_length(label, ctx, expect):
    """F "Older variants": the pre-1.0 vectors (256 bits out) need the 32-bit width."""
    assert derive(RP_KEY, label, ctx, 32, length_bits=32).hex() == expect
    assert derive(RP_KEY, label, ctx, 32).hex() != expect
