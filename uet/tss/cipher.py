"""AES-256-GCM for TSS packets (docs/facts.md F: Cipher, IV) as pure functions.

Owns the IV construction, sealing and opening with the 16-byte tag, and the unauthenticated
decryption of a packet prefix (for trimmed packets, whose tag is gone). Keys are plain bytes; the
``AESGCM`` objects built from them are cached in a small bounded dict because building one costs
more than sealing a 4 KiB packet.

Rules:

1. F: Cipher - AES-256-GCM, 96-bit IV, 16-byte tag appended to the ciphertext.
2. F: IV - 4 bytes of source identity (SSI, IPv4 source address, or for IPv6 without SSI the SDI
   big-endian; the caller chooses), then the 64-bit word ``epoch << 48 | TSC`` big-endian; in
   cluster and server modes the 12 bytes are XORed with the KDF's IV mask; direct mode has no
   mask.
3. GCM (NIST SP 800-38D) with a 96-bit IV encrypts with counter blocks ``IV || inc32`` starting
   at ``IV || 0x00000002`` (``J0 = IV || 1`` is kept for the tag), so a prefix of the
   ciphertext is decrypted by AES-CTR from that block. The packet is far shorter than 2^32
   blocks, so CTR's 128-bit increment equals GCM's inc32 here.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

TAG_LEN = 16  # F: Cipher; equals uet.wire.uet_headers.TSS_ICV_LEN
IV_LEN = 12  # F: Cipher (96-bit IV)
_CACHE_LIMIT = 256
_aead: dict[bytes, AESGCM] = {}


def _gcm(key: bytes) -> AESGCM:
    g = _aead.get(key)
    if g is None:
        if len(_aead) >= _CACHE_LIMIT:
            # dicts keep insertion order: dropping the oldest bounds memory without an LRU's cost
            del _aead[next(iter(_aead))]
        g = _aead[key] = AESGCM(key)
    return g


def make_iv(*, source4: bytes, epoch: int, tsc: int, mask: bytes | None) -> bytes:
    """The 12-byte GCM IV of F: IV."""
    if len(source4) != 4:
        raise ValueError(f"IV source must be 4 bytes, got {len(source4)}")
    iv = bytes(source4) + ((epoch & 0xFFFF) << 48 | (tsc & 0xFFFF_FFFF_FFFF)).to_bytes(8, "big")
    if mask is None:
        return iv
    if len(mask) != IV_LEN:
        raise ValueError(f"IV mask must be {IV_LEN} bytes, got {len(mask)}")
    return (int.from_bytes(iv, "big") ^ int.from_bytes(mask, "big")).to_bytes(IV_LEN, "big")


def seal(key: bytes, iv: bytes, aad: bytes, plaintext: bytes) -> bytes:
    """Ciphertext followed by the 16-byte tag (F: Cipher)."""
    return _gcm(key).encrypt(iv, plaintext, aad)


def open_sealed(key: bytes, iv: bytes, aad: bytes, data: bytes) -> bytes | None:
    """The plaintext of ``ciphertext || tag``, or None when the tag does not verify."""
    if len(data) < TAG_LEN:
        return None
    try:
        return _gcm(key).decrypt(iv, data, aad)
    except InvalidTag:
        return None


def decrypt_prefix(key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """Decrypt the first bytes of a GCM ciphertext WITHOUT authenticating them (rule 3)."""
    if not ciphertext:
        return b""
    dec = Cipher(algorithms.AES(key), modes.CTR(bytes(iv) + b"\x00\x00\x00\x02")).decryptor()
    return dec.update(bytes(ciphertext)) + dec.finalize()


__all__ = ["IV_LEN", "TAG_LEN", "decrypt_prefix", "make_iv", "open_sealed", "seal"]
