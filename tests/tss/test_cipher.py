"""F: Cipher, IV - GCM sealing, the IV layout and the unauthenticated prefix decryption."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings, strategies as st

from uet.tss.cipher import TAG_LEN, decrypt_prefix, make_iv, open_sealed, seal
from uet.wire.uet_headers import TSS_ICV_LEN

KEY = bytes(range(32, 64))


def test_tag_len_agrees_with_the_schema():
    assert TAG_LEN == TSS_ICV_LEN == 16


def test_iv_layout_direct_and_masked():
    iv = make_iv(source4=bytes.fromhex("0a000001"), epoch=0x1234, tsc=0x56789A, mask=None)
    assert iv == bytes.fromhex("0a000001" "1234" "00000056789a")
    mask = bytes(range(1, 13))
    masked = make_iv(source4=bytes.fromhex("0a000001"), epoch=0x1234, tsc=0x56789A, mask=mask)
    assert masked == bytes(a ^ b for a, b in zip(iv, mask))
    with pytest.raises(ValueError):
        make_iv(source4=b"abc", epoch=0, tsc=0, mask=None)


def test_seal_is_aes_gcm_and_open_checks_the_tag():
    iv, aad, pt = bytes(12), b"aad", b"hello world"
    ct = seal(KEY, iv, aad, pt)
    assert ct == AESGCM(KEY).encrypt(iv, pt, aad)
    assert len(ct) == len(pt) + TAG_LEN
    assert open_sealed(KEY, iv, aad, ct) == pt
    assert open_sealed(KEY, iv, b"aae", ct) is None
    assert open_sealed(KEY, iv, aad, ct[:-1] + bytes([ct[-1] ^ 1])) is None
    assert open_sealed(KEY, iv, aad, ct[:5]) is None
    assert open_sealed(bytes(32), iv, aad, ct) is None


@pytest.mark.parametrize("n", range(0, 65))
def test_decrypt_prefix_equals_the_gcm_plaintext_prefix(n):
    iv = bytes.fromhex("c0a80001" "0007" "0000000001ff")
    pt = bytes((i * 7 + 3) & 0xFF for i in range(64))
    ct = AESGCM(KEY).encrypt(iv, pt, b"any aad")[:-TAG_LEN]
    assert decrypt_prefix(KEY, iv, ct[:n]) == pt[:n]


@settings(max_examples=40)
@given(key=st.binary(min_size=32, max_size=32), iv=st.binary(min_size=12, max_size=12),
       pt=st.binary(max_size=300), cut=st.integers(0, 300))
def test_decrypt_prefix_random(key, iv, pt, cut):
    ct = AESGCM(key).encrypt(iv, pt, b"")
    assert decrypt_prefix(key, iv, ct[:min(cut, len(pt))]) == pt[:cut]
