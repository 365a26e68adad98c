"""Independent constructions for the TSS tests, written out with the ``cryptography`` primitives
so that no expected value comes from the code under test (docs/facts.md F), and the check of those
constructions against the reference provider's published KDF answers (RP-OLD test_uec_kdf.c)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.cmac import CMAC


@dataclass(frozen=True)
class Meta:
    src: str = "10.0.0.1"
    dst: str = "10.0.0.2"
    sport: int = 5000
    dport: int = 4793
    dscp: int = 0
    ecn: int = 0


def sp800_108(key: bytes, label: bytes, context: bytes, out_bits: int = 352,
              length_bits: int = 16) -> bytes:
    """NIST SP 800-108 counter mode, PRF AES-CMAC, 8-bit counter before the fixed input; the
    output length [L] in ``length_bits`` bits (F, H.1 #18: 16 in the 1.0 reference provider)."""
    fixed = label + b"\x00" + context + out_bits.to_bytes(length_bits // 8, "big")
    out = b""
    i = 1
    while len(out) * 8 < out_bits:
        c = CMAC(algorithms.AES(key))
        c.update(bytes([i]) + fixed)
        out += c.finalize()
        i += 1
    return out[: out_bits // 8]


def ip(addr: str) -> bytes:
    return ipaddress.ip_address(addr).packed


def header(*, sdi: int, epoch: int, tsc: int, an: int = 0, ssi: int | None = None) -> bytes:
    """B.15 by hand: type 1 in the top 5 bits, SP, rsvd, AN, SDI; SSI; epoch << 48 | TSC."""
    w0 = (1 << 27) | ((ssi is not None) << 26) | (an << 24) | sdi
    out = w0.to_bytes(4, "big")
    if ssi is not None:
        out += ssi.to_bytes(4, "big")
    return out + ((epoch << 48) | tsc).to_bytes(8, "big")


def reference_packet(*, mode: str, key: bytes, sdi: int, epoch: int, tsc: int, src: str, dst: str,
                     body: bytes, client: str | None = None, ssi: int | None = None,
                     rekey_mask: int = 0xFF00, rekey_shift: int = 8,
                     length_bits: int = 16) -> tuple[bytes, bytes, bytes]:
    """(protected packet, AES key, IV) per F for IPv4, AAD = addresses + security header."""
    hdr = header(sdi=sdi, epoch=epoch, tsc=tsc, ssi=ssi)
    ident = ssi.to_bytes(4, "big") if ssi is not None else ip(src)
    iv = ident + ((epoch << 48) | tsc).to_bytes(8, "big")
    if mode == "direct":
        k = key
    else:
        if mode == "cluster":
            label, rekey, who = b"U1", (tsc & rekey_mask) >> rekey_shift, ident
        else:
            label, rekey = b"U2", 0
            who = ssi.to_bytes(4, "big") if ssi is not None else ip(client or src)
        out = sp800_108(key, label, epoch.to_bytes(2, "big") + rekey.to_bytes(4, "big") + who,
                        length_bits=length_bits)
        k, mask = out[:32], out[32:]
        iv = bytes(a ^ b for a, b in zip(iv, mask))
    aad = ip(src) + ip(dst) + hdr
    return hdr + AESGCM(k).encrypt(iv, body, aad), k, iv


# Known answers published with the reference provider's KDF (HanXingling/uet-ref-prov
# crypto/test/test_uec_kdf.c at 53c2e617; docs/facts.md F "Older variants"): the pre-1.0 labels
# "UE1"/"UE2" and 7/23-byte contexts, the same SP 800-108 counter-mode AES-CMAC core, 256 bits
# out, and [L] in 32 bits (H.1 #18).
RP_KEY = bytes.fromhex("34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca")
RP_V4 = bytes.fromhex("482aa8c0")  # the bytes the file gives (its comment says 192.168.42.1)
RP_V6 = bytes.fromhex("20010cb0000000000fc0000000000abc")
RP_REKEY = bytes.fromhex("00e5")  # (0x1DC07480E5000000 & 0xFF000000) >> 24, big-endian
RP_VECTORS = [
    (b"UE1", b"\x00" + RP_REKEY + RP_V4,
     "2a0a3fe13702c8b4d6cd3d0b403f6d4f51483158b5ea59827afe1bcf9fc55654"),
    (b"UE1", bytes(5) + RP_REKEY + RP_V6,
     "36f61b13801bef83127e20fe1624c15082b28fa84379ea9fb7e36172050fdd55"),
    (b"UE2", bytes(3) + RP_V4,
     "8d052c8ddc214adedf4300fc1a76b9ee7bd035c177fa79641c1f9876843eb5f1"),
    (b"UE2", bytes(7) + RP_V6,
     "d8ec6c4bb0a8d5f9462da5ca7e257a43c4f4538c7bce6fac4401e9433a0d7a9f"),
]


# The 1.0-layout answers of the same file at 5a04ca49 (F: KDF, KDF context; H.1 #18): labels
# U1/U2, epoch 0x1DC0 and rekey 0x74E5 taken from its timestamp 0x1DC074E500000023 (mask
# 0x0000FFFF00000000, shift 32), source 192.168.42.1 or 2001:cb0::fc0:0:0:abc, server mode with
# rekey 0; 44 bytes out, of which the file publishes the 32-byte key. [L] in 16 bits.
RP10_EPOCH, RP10_REKEY = bytes.fromhex("1dc0"), bytes.fromhex("000074e5")
RP10_V4 = bytes.fromhex("c0a82a01")
RP10_VECTORS = [
    (b"U1", RP10_EPOCH + RP10_REKEY + RP10_V4,
     "151b4ddb30112971ddeff3213000ee74d8f18aac2135601f1e5215e505fed449"),
    (b"U1", bytes(4) + RP10_EPOCH + RP10_REKEY + RP_V6,
     "55d1ee8647bd53fad0e5325795af18e7559b7d42a895edf70f9c170341e8f767"),
    (b"U2", RP10_EPOCH + bytes(4) + RP10_V4,
     "245e67ab286218530edd53c26ea9ec33c96b35192d0a0eb54d08be281c5d304b"),
    (b"U2", bytes(4) + RP10_EPOCH + bytes(4) + RP_V6,
     "b59002ad3e6a9ae5864878730070f8916e43e5011acaa4be3504256185f24d97"),
]


def test_the_written_out_kdf_matches_the_reference_provider_answers():
    for label, ctx, expect in RP_VECTORS:
        assert sp800_108(RP_KEY, label, ctx, 256, length_bits=32).hex() == expect
    for label, ctx, expect in RP10_VECTORS:
        assert sp800_108(RP_KEY, label, ctx, 352, length_bits=16)[:32].hex() == expect


def test_reference_packet_opens_with_plain_aesgcm():
    pkt, k, iv = reference_packet(mode="cluster", key=bytes(32), sdi=1, epoch=0, tsc=0,
                                  src="10.0.0.1", dst="10.0.0.2", body=b"abc")
    assert AESGCM(k).decrypt(iv, pkt[12:], ip("10.0.0.1") + ip("10.0.0.2") + pkt[:12]) == b"abc"
