"""The TSS layer on the send side and on clean packets: B.15 header, F key/IV/AAD per mode, pinned
vectors re-derived independently, rekeying, the invoke limit and stateless capture opening."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings, strategies as st

from uet.tss import SecureDomain, SecurityConfig, TscExhaustedError, TssLayer, open_frame
from uet.tss.layer import pack_header, parse_header
from uet.wire.codec import codec
from uet.wire.uet_headers import TSS

from .test_reference import Meta, header, ip, reference_packet, sp800_108

K = bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
BODY = b"UET PDS+SES bytes, 32 in total!!"
A, B = "192.0.2.1", "192.0.2.2"


def layer(mode="direct", *, epoch=0, sdi=1, ssi=None, role="client", key=K, first_tsc=0,
          **kw) -> TssLayer:
    dom = SecureDomain(sdi=sdi, key=key, mode=mode, ssi=ssi, role=role)
    return TssLayer(SecurityConfig(domains=(dom,), send_sdi=sdi, epoch=epoch, **kw),
                    first_tsc=first_tsc)


# pinned once from tests/tss/test_reference.reference_packet; re-derived below so the pin is not
# self-referential (SDI 0xABCD, epoch 7, TSC 0x1234, 192.0.2.1 -> 192.0.2.2); the KDF's [L] in
# 16 bits (the default, H.1 #18)
PINNED = {
    "direct": "0800abcd0007000000001234f3ebd23fdad650e10d94ff7d8349f5ed79737f7ec1ca60469d1121014617"
              "7bd60ca95b45dcb5e3881ab8553118e45ff7",
    "cluster": "0800abcd00070000000012344215231389248850243eebbb582e66fdca25c44079e59e2c50781f3ed36"
               "2f8141cb4f2c32941f273e13ecf6ef573019d",
    "server": "0800abcd00070000000012341ce60f9aa5d1f46fc9d5a419aa1f8ce1ab31975f41bfc1e1db37aa07a330"
              "9d3c7e65f0387daa9087546363329b62e085",
}
# the same packets with [L] in 32 bits (``kdf_length_bits=32``), as pinned before the default
# became 16; direct mode derives nothing and does not change
PINNED_L32 = {
    "cluster": "0800abcd0007000000001234f989a76960bbee55472885d6138ba5b94039c4bfece26caec650bead4e"
               "e818fea40277a6702cd9eb479482c309cb122c",
    "server": "0800abcd0007000000001234cd8617ad150dfe60cf7b8cf95d2b4e515a491b3049c3d58f5eab9e366524"
              "1e3d33fca1f7b3c497f75f40600710f588a2",
}


@pytest.mark.parametrize("mode", ["cluster", "server"])
def test_fixed_vector_with_a_32_bit_kdf_length(mode):
    ref, _, _ = reference_packet(mode=mode, key=K, sdi=0xABCD, epoch=7, tsc=0x1234, src=A, dst=B,
                                 body=BODY, length_bits=32)
    assert ref.hex() == PINNED_L32[mode]
    lay = layer(mode, epoch=7, sdi=0xABCD, first_tsc=0x1234, kdf_length_bits=32)
    pkt = lay.protect(BODY, Meta(src=A, dst=B))
    assert pkt.hex() == PINNED_L32[mode]
    # a receiver with the other width cannot open it: the two ends must agree (--tss-kdf-l)
    rx16 = layer(mode, epoch=7, sdi=0xABCD, role="server" if mode == "server" else "client")
    assert rx16.unprotect(pkt, Meta(src=A, dst=B)) is None
    rx32 = layer(mode, epoch=7, sdi=0xABCD, role="server" if mode == "server" else "client",
                 kdf_length_bits=32)
    assert rx32.unprotect(pkt, Meta(src=A, dst=B)).plaintext == BODY


@pytest.mark.parametrize("mode", ["direct", "cluster", "server"])
def test_fixed_vector_per_mode(mode):
    ref, _, _ = reference_packet(mode=mode, key=K, sdi=0xABCD, epoch=7, tsc=0x1234, src=A, dst=B,
                                 body=BODY)
    assert ref.hex() == PINNED[mode]
    lay = layer(mode, epoch=7, sdi=0xABCD, first_tsc=0x1234)
    assert lay.protect(BODY, Meta(src=A, dst=B)).hex() == PINNED[mode]


def test_fixed_vector_cluster_with_ssi_written_out():
    hdr = bytes.fromhex("0c00abcd" "deadbeef" "0007000000001234")
    out = sp800_108(K, b"U1", bytes.fromhex("0007" "00000012" "deadbeef"))  # rekey 0x1234>>8&0xff
    iv = bytes(a ^ b for a, b in zip(bytes.fromhex("deadbeef" "0007000000001234"), out[32:]))
    expect = hdr + AESGCM(out[:32]).encrypt(iv, BODY, ip(A) + ip(B) + hdr)
    lay = layer("cluster", epoch=7, sdi=0xABCD, ssi=0xDEADBEEF, first_tsc=0x1234)
    assert lay.protect(BODY, Meta(src=A, dst=B)) == expect


@pytest.mark.parametrize("mode", ["direct", "cluster"])
@pytest.mark.parametrize("ssi", [None, 77])
def test_round_trip(mode, ssi):
    tx, rx = layer(mode, epoch=3, ssi=ssi), layer(mode)
    for i in range(300):
        body = bytes([i & 0xFF]) * (i % 50)
        got = rx.unprotect(tx.protect(body, Meta(src=A, dst=B, sport=1000 + i % 4)),
                           Meta(src=A, dst=B, sport=1000 + i % 4))
        assert got is not None and got.plaintext == body and not got.trimmed
        assert (got.sdi, got.epoch, got.tsc) == (1, 3, i)
    assert tx.stats["tss_protected"] == rx.stats["tss_accepted"] == 300


@pytest.mark.parametrize("ssi", [None, 0x01020304])
def test_server_mode_both_directions(ssi):
    client = layer("server", role="client", ssi=ssi, epoch=1)
    server = layer("server", role="server", ssi=ssi, epoch=2)
    c2s, s2c = Meta(src=A, dst=B), Meta(src=B, dst=A)
    assert server.unprotect(client.protect(b"request", c2s), c2s).plaintext == b"request"
    assert client.unprotect(server.protect(b"response", s2c), s2c).plaintext == b"response"
    # the key names the client: a receiver that takes the sender for the client fails (without an
    # SSI; with one, the SSI in the header names the client whichever end sends)
    wrong = layer("server", role="server", ssi=ssi)
    assert (wrong.unprotect(server.protect(b"x", s2c), s2c) is None) == (ssi is None)


def test_ipv6_cluster_and_ssi_rules():
    m = Meta(src="fd00::1", dst="fd00::2")
    tx, rx = layer("cluster"), layer("cluster")
    assert rx.unprotect(tx.protect(b"v6", m), m).plaintext == b"v6"
    with pytest.raises(ValueError, match="SSI"):
        layer("direct").protect(b"v6", m)
    tx, rx = layer("direct", ssi=9), layer("direct")
    assert rx.unprotect(tx.protect(b"v6", m), m).plaintext == b"v6"


def test_cluster_ipv6_independent_vector():
    m = Meta(src="fd00::1", dst="fd00::2")
    pkt = layer("cluster", epoch=2, sdi=5, first_tsc=300).protect(b"six", m)
    hdr = header(sdi=5, epoch=2, tsc=300)
    out = sp800_108(K, b"U1", bytes(4) + bytes.fromhex("0002" "00000001") + ip("fd00::1"))
    iv = bytes(a ^ b for a, b in zip((5).to_bytes(4, "big") + hdr[4:], out[32:]))
    assert pkt == hdr + AESGCM(out[:32]).encrypt(iv, b"six", ip("fd00::1") + ip("fd00::2") + hdr)


def test_rekey_every_256_packets_in_cluster_mode():
    tx = layer("cluster", epoch=4, first_tsc=255)
    p255, p256 = tx.protect(b"a", Meta(src=A, dst=B)), tx.protect(b"b", Meta(src=A, dst=B))
    keys = {}
    for tsc, pkt in ((255, p255), (256, p256)):
        out = sp800_108(K, b"U1", bytes.fromhex("0004") + (tsc >> 8).to_bytes(4, "big") + ip(A))
        iv = bytes(a ^ b for a, b in zip(ip(A) + ((4 << 48) | tsc).to_bytes(8, "big"), out[32:]))
        assert AESGCM(out[:32]).decrypt(iv, pkt[12:], ip(A) + ip(B) + pkt[:12]) in (b"a", b"b")
        keys[tsc] = out[:32]
    assert keys[255] != keys[256]


@pytest.mark.parametrize("mode", ["direct", "cluster"])
def test_aad_choices(mode):
    nat = Meta(src=A, dst=B, sport=40000)  # the relay rewrote the port
    moved = Meta(src="198.51.100.9", dst="198.51.100.10")  # an address rewrite
    for aad, port_ok, addr_ok in (("addresses", True, False), ("header", True, True),
                                  ("entropy", False, False)):
        # with an SSI the IV and the cluster KDF name the SSI, not the source address (F: IV)
        pkt = layer(mode, aad=aad, ssi=3).protect(b"x", Meta(src=A, dst=B))
        assert (layer(mode, aad=aad).unprotect(pkt, nat) is not None) == port_ok, aad
        assert (layer(mode, aad=aad).unprotect(pkt, moved) is not None) == addr_ok, aad
    # without an SSI the source address is in the IV, so even "header" needs it unchanged
    pkt = layer(mode, aad="header").protect(b"x", Meta(src=A, dst=B))
    assert layer(mode, aad="header").unprotect(pkt, Meta(src=A, dst="198.51.100.10")) is not None
    assert layer(mode, aad="header").unprotect(pkt, moved) is None


def test_invoke_limit():
    tx = layer(first_tsc=(1 << 48) - 2)
    pkt = tx.protect(b"last", Meta())
    assert parse_header(pkt)[7] == (1 << 48) - 2
    with pytest.raises(TscExhaustedError):
        tx.protect(b"one too many", Meta())
    assert tx.stats["tss_protected"] == 1


@settings(max_examples=60)
@given(sdi=st.integers(0, (1 << 24) - 1), an=st.integers(0, 1),
       ssi=st.none() | st.integers(0, (1 << 32) - 1), epoch=st.integers(0, 0xFFFF),
       tsc=st.integers(0, (1 << 48) - 1))
def test_struct_header_agrees_with_the_schema_codec(sdi, an, ssi, epoch, tsc):
    raw = pack_header(sdi=sdi, an=an, ssi=ssi, epoch=epoch, tsc=tsc)
    fields = {"type": 1, "sp": ssi is not None, "an": an, "sdi": sdi, "epoch": epoch, "tsc": tsc}
    if ssi is not None:
        fields["ssi"] = ssi
    assert raw == codec(TSS).encode(fields)
    dec, size = codec(TSS).decode(raw)
    assert parse_header(raw) == (1, ssi is not None, 0, an, sdi, ssi, epoch, tsc, size)


@pytest.mark.parametrize("mode", ["direct", "cluster", "server"])
def test_open_frame_decrypts_captures(mode):
    m = Meta(src=A, dst=B, sport=1234)
    pkt = layer(mode, epoch=9, ssi=5, role="server").protect(b"secret", m)
    doms = (SecureDomain(sdi=1, key=K, mode=mode),)
    fields, plain = open_frame(pkt, src=A, dst=B, sport=1234, domains=doms)
    assert fields == {"type": 1, "sp": True, "an": 0, "sdi": 1, "ssi": 5, "epoch": 9, "tsc": 0}
    assert plain == b"secret"
    assert open_frame(pkt, src=A, dst=B, sport=1, domains={1: doms[0]})[1] == b"secret"
    assert open_frame(pkt, src=A, dst=B, sport=1, domains={2: doms[0]})[1] is None
    other = (SecureDomain(sdi=1, key=bytes(32), mode=mode),)
    assert open_frame(pkt, src=A, dst=B, sport=1, domains=other) == (fields, None)
    _, prefix = open_frame(pkt[:20], src=A, dst=B, sport=1, domains=doms, trimmed=True)
    assert prefix == b"secret"[:4]  # 16-byte header with the SSI


def test_open_frame_header_without_ssi_and_short():
    pkt = layer().protect(b"", Meta(src=A, dst=B))
    fields, plain = open_frame(pkt, src=A, dst=B, sport=0, domains=())
    assert fields["ssi"] is None and fields["sdi"] == 1 and plain is None
    assert open_frame(pkt[:2], src=A, dst=B, sport=0, domains=()) == (
        {"type": 1, "sp": False, "an": 0, "ssi": None}, None)


def test_the_package_sits_below_the_pds():
    banned = ("trio", "socket", "uet.pds", "uet.io", "uet.sim", "uet.ses", "uet.host", "uet.cli")
    here = Path(__file__).resolve().parents[2] / "uet" / "tss"
    for name in ("__init__", "kdf", "cipher", "replay", "keys", "domain", "layer"):
        path = here / f"{name}.py"
        assert len(path.read_text().splitlines()) < 400, path.name
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                assert not any(n == b or n.startswith(b + ".") for b in banned), (path.name, n)
