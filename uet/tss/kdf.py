"""The TSS key derivation function (docs/facts.md F: KDF, KDF context).

Owns the NIST SP 800-108 counter-mode KDF with AES-256-CMAC as its PRF, the two labels of the
derived modes and the two context layouts. Nothing here keeps state or knows about packets.

Rules:

1. F: KDF - block i (an 8-bit counter starting at 1) is ``CMAC(K, [i]_8 || label || 0x00 ||
   context || [L])``, L the output length in *bits*, big-endian; the blocks are concatenated
   and cut to the output length. The default output is 44 bytes: a 32-byte AES-256 key, then a
   12-byte IV mask (bytes 32..43).
2. H.1 #18 (conflict) - choice: [L] is written in 16 bits by default (``length_bits=16``), as
   the reference provider's 1.0-era user-space KDF does and as its 1.0-layout test vectors
   (labels U1/U2, 10- and 26-byte contexts) require; ``length_bits=32`` is what its older
   in-kernel copy and the pre-1.0 vectors (labels UE1/UE2) use. Both ends of a cluster- or
   server-mode domain must agree (``--tss-kdf-l``); direct mode derives nothing and is
   unaffected.
3. F: Modes - cluster mode uses the label ``"U1"``, server mode ``"U2"`` (no terminating NUL: the
   0x00 that follows is the SP 800-108 separator).
4. F: KDF context - a 4-byte source (SSI or IPv4 address) gives 10 bytes: epoch (2, BE), rekey
   (4, BE), source (4); a 16-byte source (IPv6 address) gives 26 bytes: 4 zero bytes, epoch (2),
   rekey (4), source (16).
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.cmac import CMAC

LABEL_CLUSTER: bytes = b"U1"  # F: Modes
LABEL_SERVER: bytes = b"U2"  # F: Modes
KDF_OUTPUT_LEN = 44  # F: KDF (32-byte key + 12-byte IV mask)
KEY_LEN = 32  # F: Cipher (AES-256)
_BLOCK = 16  # AES-CMAC output size
_MAX_BLOCKS = 255  # F: KDF - the counter is 8 bits wide
LENGTH_BITS_DEFAULT = 16  # rule 2: H.1 #18, the 1.0 reference provider
LENGTH_BITS_CHOICES = (16, 32)


def derive(key: bytes, label: bytes, context: bytes, nbytes: int = KDF_OUTPUT_LEN, *,
           length_bits: int = LENGTH_BITS_DEFAULT) -> bytes:
    """``nbytes`` bytes of SP 800-108 counter-mode output keyed by ``key`` (F: KDF), the output
    length [L] written in ``length_bits`` bits (rule 2: 16 or 32)."""
    if len(key) != KEY_LEN:
        raise ValueError(f"KDF key must be {KEY_LEN} bytes, got {len(key)}")
    if length_bits not in LENGTH_BITS_CHOICES:
        raise ValueError(f"KDF length field width must be 16 or 32 bits, got {length_bits}")
    blocks = -(-nbytes // _BLOCK)
    if nbytes < 1 or blocks > _MAX_BLOCKS:
        raise ValueError(f"KDF output length {nbytes} is outside 1..{_MAX_BLOCKS * _BLOCK}")
    # 255 blocks of 16 bytes are 32,640 bits: the length fits either width
    fixed = bytes(label) + b"\x00" + bytes(context) + (nbytes * 8).to_bytes(length_bits // 8, "big")
    out = bytearray()
    for i in range(1, blocks + 1):
        mac = CMAC(algorithms.AES(key))
        mac.update(bytes((i,)) + fixed)
        out += mac.finalize()
    return bytes(out[:nbytes])


def kdf_context(*, epoch: int, rekey: int, source: bytes) -> bytes:
    """The KDF context of F: KDF context (10 bytes for a 4-byte source, 26 for a 16-byte one)."""
    if not 0 <= epoch <= 0xFFFF:
        raise ValueError(f"epoch {epoch} does not fit 16 bits")
    if not 0 <= rekey <= 0xFFFFFFFF:
        raise ValueError(f"rekey value {rekey} does not fit 32 bits")
    head = epoch.to_bytes(2, "big") + rekey.to_bytes(4, "big")
    if len(source) == 4:
        return head + bytes(source)
    if len(source) == 16:
        return bytes(4) + head + bytes(source)
    raise ValueError(f"KDF source must be 4 or 16 bytes, got {len(source)}")


__all__ = ["KDF_OUTPUT_LEN", "KEY_LEN", "LABEL_CLUSTER", "LABEL_SERVER", "LENGTH_BITS_CHOICES",
           "LENGTH_BITS_DEFAULT", "derive", "kdf_context"]
