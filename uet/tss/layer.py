"""The TSS layer: protect outgoing UET packets, check and open incoming ones (sans-IO).

Owns the security header on the wire (docs/facts.md B.15), the per-packet key, IV and AAD (F), the
sender's TSC, and the order of the receive checks with their drop counters. It sits below the
PDS: ``protect`` takes the PDS bytes (PDS header, SES, payload; no trailer) and returns the
security header, the ciphertext and the 16-byte tag, which takes the CRC trailer's place (A.3);
``unprotect`` does the reverse. The datagram metadata is duck-typed: ``src``, ``dst`` (IP address
strings), ``sport``, ``dport``, ``dscp``, ``ecn``.

Rules:

1. choice (AAD in UDP mode; F: AAD gives the native-IP rule only, H.2): ``aad="addresses"``
   (default) authenticates the IP source and destination addresses (4 + 4 or 16 + 16 bytes) and
   then the security header up to the confidentiality offset. No UDP ports: the source port is
   only the entropy (an answer copies it, A.1; the live relay remaps it when two senders share
   one). The live relay rewrites the addresses, so ``uet demo --tss`` uses ``"header"`` with an
   SSI through it (uet.demo.command.through_relay). ``"header"`` covers the
   security header alone; it survives address rewriting only when the sender also sends an SSI,
   because without one F puts the source address into the IV (and cluster mode into the KDF).
   ``"entropy"`` puts a 4-byte entropy header built from the UDP source port (entropy(16),
   zero(16)) between the addresses and the security header, as F's native-IP rule does.
2. F: Confidentiality offset - encryption starts right after the security header (12 bytes, or
   16 with the SSI); B.15: SP is set exactly when the sending domain has an SSI.
3. F: IV, KDF, KDF context, Rekey - the 4 IV bytes are the SSI when SP is set, else the IPv4
   source address, else (IPv6) the SDI. Cluster mode derives (label U1) from the epoch, the rekey
   value ``(TSC & mask) >> shift`` and the sender (SSI or source IPv4; the source IPv6 address
   for IPv6); server mode (label U2) from the epoch, rekey 0 and the client (domain rule 3).
   Derived keys are cached (bounded), since a derivation holds for 256 packets by default.
4. F: Counter rules - the TSC starts at 0 for the layer's epoch (``SecurityConfig.epoch``, taken
   from keys.EpochStore by each sender process: keys rule 2) and rises by one per packet;
   a retransmission is a new packet here and takes a new TSC. At 2^48 - 1 (the reference
   provider's invoke limit) ``protect`` raises :class:`TscExhaustedError` rather than reuse one.
5. choice (IV uniqueness preconditions): one key never sees an IV twice when (a) every process
   sending under it from one source identity takes its epoch from one store (keys rule 3) and
   (b) in direct and server modes over IPv6 the domain has an SSI (F: SSI / SDI: otherwise every
   sender's IV starts with the same SDI), which ``protect`` enforces with ``ValueError``. (a)
   includes the two ends of one transfer on one host: the receiver sends too (ACKs, NACKs) and
   from the same address as the sender, so it must take its own epoch from the store. Distinct
   senders behind one SSI, or a server-mode SSI used by client and server in one epoch, are
   configuration errors this layer cannot see.
6. choice (trimmed packets: DSCP 11, docs/design-notes.md "Defaults", checked before the header is): the tag
   is gone, so nothing can be authenticated. ``trimmed="nack"`` (default) decrypts the bytes that
   survived (cipher rule 3) and returns them with ``trimmed=True`` so the PDS can read the PSN
   (untrusted) and answer NACK TRIMMED; the caller delivers nothing from it, and no state
   changes (no replay-window update, no failure count). A TSC the window already holds is still
   refused (read-only check): that packet arrived whole, so a NACK would only cause a spurious
   retransmission. ``trimmed="drop"`` drops it (``tss_trimmed_dropped``); the sender's timeout
   recovers.
7. choice (order of the receive checks, cheapest and stateless first; nothing changes before the
   tag verifies): limited datagram source (replay rule 4), trimmed, header length and type,
   (SDI, AN) lookup, epoch age and replay window (read-only; replay rules 1-3), decryption; then,
   only for a packet that authenticated, the replay window records it and the datagram
   source's failure count is cleared. A failed tag only counts a failure against the datagram
   source; a datagram skipped because its source is limited only moves that count on.

Counters (``TssLayer.stats``): tss_protected, tss_accepted, tss_truncated, tss_bad_header,
tss_unknown_sdi, tss_auth_failed, tss_replay, tss_too_old, tss_stale_epoch, tss_fail_limited,
tss_trimmed, tss_trimmed_dropped.
"""

from __future__ import annotations

import collections
import struct
from typing import Any, Mapping, NamedTuple, Sequence

from ..errors import UetError
from ..wire.build import DSCP_TRIMMED
from ..wire.codec import codec
from ..wire.trailer import address_bytes
from ..wire.uet_headers import TSS, TSS_ICV_LEN
from . import replay as R
from .cipher import TAG_LEN, decrypt_prefix, make_iv, open_sealed, seal
from .domain import SecureDomain, SecurityConfig
from .kdf import LABEL_CLUSTER, LABEL_SERVER, LENGTH_BITS_DEFAULT, derive, kdf_context

assert TAG_LEN == TSS_ICV_LEN  # F: Cipher and the schema agree on the ICV length

TSS_TYPE = 1  # B.15 / B.1
TSC_LIMIT = (1 << 48) - 1  # F: Counter rules (invoke limit)
HEADER_LEN, HEADER_LEN_SSI = 12, 16  # B.15
COUNTERS = ("tss_protected", "tss_accepted", "tss_truncated", "tss_bad_header", "tss_unknown_sdi",
            "tss_auth_failed", "tss_replay", "tss_too_old", "tss_stale_epoch", "tss_fail_limited",
            "tss_trimmed", "tss_trimmed_dropped")
_REPLAY_COUNTER = {R.REPLAY: "tss_replay", R.TOO_OLD: "tss_too_old",
                   R.STALE_EPOCH: "tss_stale_epoch"}
_H12 = struct.Struct(">IQ")
_H16 = struct.Struct(">IIQ")
_CACHE_LIMIT = 4096
_derived: dict[tuple[bytes, bytes, bytes, int], tuple[bytes, bytes]] = {}


class TscExhaustedError(UetError):
    """The sender's 48-bit TSC reached its invoke limit: sending more would reuse an IV."""


class Unprotected(NamedTuple):
    plaintext: bytes  # the PDS bytes (PDS header, SES, payload), no trailer
    trimmed: bool  # True: from a trimmed packet, decrypted but NOT authenticated
    sdi: int
    epoch: int
    tsc: int


# --- B.15 header: a struct twin of the schema declaration (tests check they agree) ------------

def pack_header(*, sdi: int, an: int, ssi: int | None, epoch: int, tsc: int) -> bytes:
    """The 12- or 16-byte security header (B.15)."""
    w0 = TSS_TYPE << 27 | (ssi is not None) << 26 | an << 24 | sdi
    word = epoch << 48 | tsc
    return _H12.pack(w0, word) if ssi is None else _H16.pack(w0, ssi, word)


def parse_header(data: bytes) -> tuple[int, bool, int, int, int, int | None, int, int, int] | None:
    """(type, sp, rsvd, an, sdi, ssi, epoch, tsc, header length), or None when too short."""
    if len(data) < HEADER_LEN:
        return None
    w0 = int.from_bytes(data[:4], "big")
    sp = bool(w0 >> 26 & 1)
    if sp:
        if len(data) < HEADER_LEN_SSI:
            return None
        _, ssi, word = _H16.unpack_from(data)
        hlen = HEADER_LEN_SSI
    else:
        ssi = None
        _, word = _H12.unpack_from(data)
        hlen = HEADER_LEN
    return (w0 >> 27, sp, w0 >> 25 & 1, w0 >> 24 & 1, w0 & 0xFFFFFF, ssi, word >> 48,
            word & TSC_LIMIT, hlen)


# --- key material (rule 3) ----------------------------------------------------------------------

def _derive_cached(key: bytes, label: bytes, context: bytes,
                   length_bits: int) -> tuple[bytes, bytes]:
    k = (key, label, context, length_bits)
    v = _derived.get(k)
    if v is None:
        if len(_derived) >= _CACHE_LIMIT:
            del _derived[next(iter(_derived))]
        out = derive(key, label, context, length_bits=length_bits)
        v = _derived[k] = (out[:32], out[32:44])
    return v


def key_and_iv(dom: SecureDomain, *, sdi: int, ssi: int | None, epoch: int, tsc: int,
               sender: bytes, client: bytes, rekey_mask: int, rekey_shift: int,
               kdf_length_bits: int = LENGTH_BITS_DEFAULT) -> tuple[bytes, bytes]:
    """The AES key and the IV of one packet (rule 3). ``sender`` and ``client`` are address
    bytes: the packet's source, and the client end's address (server mode only);
    ``kdf_length_bits`` the width of the KDF's [L] field (uet.tss.kdf rule 2, H.1 #18)."""
    ssi4 = None if ssi is None else ssi.to_bytes(4, "big")
    src4 = ssi4 or (sender if len(sender) == 4 else sdi.to_bytes(4, "big"))
    if dom.mode == "direct":
        return dom.key, make_iv(source4=src4, epoch=epoch, tsc=tsc, mask=None)
    if dom.mode == "cluster":
        ident = ssi4 if (ssi4 is not None and len(sender) == 4) else sender
        rekey = (tsc & rekey_mask) >> rekey_shift
        key, mask = _derive_cached(dom.key, LABEL_CLUSTER,
                                   kdf_context(epoch=epoch, rekey=rekey, source=ident),
                                   kdf_length_bits)
    else:
        ident = ssi4 if (ssi4 is not None and len(client) == 4) else client
        key, mask = _derive_cached(dom.key, LABEL_SERVER,
                                   kdf_context(epoch=epoch, rekey=0, source=ident),
                                   kdf_length_bits)
    return key, make_iv(source4=src4, epoch=epoch, tsc=tsc, mask=mask)


def make_aad(kind: str, header: bytes, *, src: bytes, dst: bytes, sport: int) -> bytes:
    """The associated data of rule 1."""
    if kind == "addresses":
        return src + dst + header
    if kind == "header":
        return header
    return src + dst + (sport & 0xFFFF).to_bytes(2, "big") + b"\x00\x00" + header


# --- the layer ----------------------------------------------------------------------------------

class TssLayer:
    """Protects and opens the UET packets of one endpoint (rules 1-7)."""

    def __init__(self, config: SecurityConfig, *, first_tsc: int = 0) -> None:
        # first_tsc exists for tests of the invoke limit; a sender never sets it (rule 4)
        self.config = config
        self.stats: collections.Counter[str] = collections.Counter({n: 0 for n in COUNTERS})
        self._table = config.table()
        self._send = config.send_domain
        self._next_tsc = first_tsc
        self._trim_drop = config.trimmed == "drop"
        self._replay = R.ReplayTracker(window=config.replay_window,
                                       max_epoch_age=config.max_epoch_age,
                                       max_old_epochs=config.max_old_epochs,
                                       max_sources=config.max_sources)
        self._limiter = R.FailureLimiter(threshold=config.auth_fail_threshold,
                                         probe=config.auth_fail_probe,
                                         max_sources=config.max_sources)

    @property
    def next_tsc(self) -> int:
        return self._next_tsc

    @property
    def replay(self) -> R.ReplayTracker:
        return self._replay

    @property
    def limiter(self) -> R.FailureLimiter:
        return self._limiter

    def protect(self, body: bytes, meta: Any) -> bytes:
        """Security header + ciphertext of ``body`` + tag, under ``send_sdi`` and the next TSC."""
        tsc = self._next_tsc
        if tsc >= TSC_LIMIT:
            raise TscExhaustedError(f"TSS: the 48-bit TSC of SDI {self._send.sdi} is exhausted in "
                                    f"epoch {self.config.epoch}; restart to take a new epoch")
        dom, cfg = self._send, self.config
        src, dst = address_bytes(meta.src), address_bytes(meta.dst)
        if dom.ssi is None and len(src) == 16 and dom.mode != "cluster":
            raise ValueError(f"TSS {dom.mode} mode over IPv6 needs an SSI (facts F: SSI / SDI)")
        header = pack_header(sdi=dom.sdi, an=dom.an, ssi=dom.ssi, epoch=cfg.epoch, tsc=tsc)
        client = src if dom.role == "client" else dst
        key, iv = key_and_iv(dom, sdi=dom.sdi, ssi=dom.ssi, epoch=cfg.epoch, tsc=tsc, sender=src,
                             client=client, rekey_mask=cfg.rekey_mask, rekey_shift=cfg.rekey_shift,
                             kdf_length_bits=cfg.kdf_length_bits)
        self._next_tsc = tsc + 1  # consumed even if sealing failed: never reuse (rule 4)
        out = header + seal(key, iv, make_aad(cfg.aad, header, src=src, dst=dst, sport=meta.sport),
                            body)
        self.stats["tss_protected"] += 1
        return out

    def unprotect(self, data: bytes, meta: Any) -> Unprotected | None:
        """The PDS bytes of an incoming packet, or None (dropped and counted). Never raises on
        any ``data``; ``meta`` must be well formed."""
        stats = self.stats
        dsource = (meta.src, meta.sport)
        if not self._limiter.allow(dsource):
            stats["tss_fail_limited"] += 1
            return None
        trimmed = getattr(meta, "dscp", 0) == DSCP_TRIMMED
        if trimmed and self._trim_drop:
            stats["tss_trimmed_dropped"] += 1
            return None
        if not isinstance(data, bytes):
            data = bytes(data)
        h = parse_header(data)
        if h is None:
            stats["tss_truncated"] += 1
            return None
        typ, sp, rsvd, an, sdi, ssi, epoch, tsc, hlen = h
        if typ != TSS_TYPE or rsvd:
            stats["tss_bad_header"] += 1
            return None
        if not trimmed and len(data) < hlen + TAG_LEN:
            stats["tss_truncated"] += 1
            return None
        dom = self._table.get((sdi, an))
        if dom is None:
            stats["tss_unknown_sdi"] += 1
            return None
        src, dst = address_bytes(meta.src), address_bytes(meta.dst)
        rkey = (sdi, an, ssi if sp else src)  # replay rule 3
        verdict = self._replay.check(rkey, epoch, tsc)
        if verdict != R.ACCEPT:
            stats[_REPLAY_COUNTER[verdict]] += 1
            return None
        cfg = self.config
        client = dst if dom.role == "client" else src
        key, iv = key_and_iv(dom, sdi=sdi, ssi=ssi, epoch=epoch, tsc=tsc, sender=src,
                             client=client, rekey_mask=cfg.rekey_mask, rekey_shift=cfg.rekey_shift,
                             kdf_length_bits=cfg.kdf_length_bits)
        if trimmed:
            stats["tss_trimmed"] += 1
            return Unprotected(decrypt_prefix(key, iv, data[hlen:]), True, sdi, epoch, tsc)
        aad = make_aad(cfg.aad, data[:hlen], src=src, dst=dst, sport=meta.sport)
        plain = open_sealed(key, iv, aad, data[hlen:])
        if plain is None:
            stats["tss_auth_failed"] += 1
            self._limiter.record_failure(dsource)
            return None
        self._replay.commit(rkey, epoch, tsc)
        self._limiter.record_success(dsource)
        stats["tss_accepted"] += 1
        return Unprotected(plain, False, sdi, epoch, tsc)


# --- stateless opening, for decoding captures ---------------------------------------------------

def _header_fields(data: bytes) -> dict[str, Any]:
    fields, _ = codec(TSS).decode_partial(data)
    out = {k: fields[k] for k in ("type", "sp", "an", "sdi", "ssi", "epoch", "tsc") if k in fields}
    if "sp" in out and not out["sp"]:
        out["ssi"] = None
    return out


def open_frame(data: bytes, *, src: str, dst: str, sport: int,
               domains: Mapping[int, SecureDomain] | Sequence[SecureDomain],
               aad: str = "addresses", rekey_mask: int = 0xFF00, rekey_shift: int = 8,
               trimmed: bool = False, kdf_length_bits: int = LENGTH_BITS_DEFAULT) -> tuple[dict[str, Any], bytes | None]:
    """(header fields, plaintext) of one captured TSS packet; the plaintext is None when the
    header is bad, the key unknown or the tag fails. Server-mode frames are tried with either end
    as the client, since a capture does not say which end is which (domain rule 3). With
    ``trimmed`` the surviving bytes are decrypted without authentication (rule 6). Never raises
    on any bytes."""
    try:
        data = bytes(data)
        fields = _header_fields(data)
        h = parse_header(data)
        if h is None:
            return fields, None
        typ, sp, rsvd, an, sdi, ssi, epoch, tsc, hlen = h
        if typ != TSS_TYPE or rsvd or (not trimmed and len(data) < hlen + TAG_LEN):
            return fields, None
        if isinstance(domains, Mapping):
            cands = [domains[sdi]] if sdi in domains else []
        else:
            cands = [d for d in domains if d.sdi == sdi]
        cands.sort(key=lambda d: d.an != an)  # the entry with the packet's AN first
        s, d = address_bytes(src), address_bytes(dst)
        ad = make_aad(aad, data[:hlen], src=s, dst=d, sport=sport)
        for dom in cands:
            for client in ((s, d) if dom.mode == "server" else (s,)):
                key, iv = key_and_iv(dom, sdi=sdi, ssi=ssi, epoch=epoch, tsc=tsc, sender=s,
                                     client=client, rekey_mask=rekey_mask, rekey_shift=rekey_shift,
                                     kdf_length_bits=kdf_length_bits)
                if trimmed:
                    return fields, decrypt_prefix(key, iv, data[hlen:])
                plain = open_sealed(key, iv, ad, data[hlen:])
                if plain is not None:
                    return fields, plain
        return fields, None
    except (ValueError, OSError, TypeError, KeyError):
        # a decoder shows what it could: bad address strings or odd options end here, not in a crash
        try:
            return _header_fields(bytes(data)), None
        except Exception:  # noqa: BLE001 - the promise is "never raises"
            return {}, None


__all__ = ["COUNTERS", "HEADER_LEN", "HEADER_LEN_SSI", "TSC_LIMIT", "TscExhaustedError",
           "TssLayer", "Unprotected", "key_and_iv", "make_aad", "open_frame", "pack_header",
           "parse_header"]
