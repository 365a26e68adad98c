"""Secure domains and the TSS configuration, validated on construction.

Owns the description of what a TSS endpoint is configured with: its secure-domain table (SDI,
key, mode, AN, SSI, role; docs/facts.md B.15 and F: Modes, SSI / SDI) and the receive-check and
rekey parameters (F: Rekey, Receive checks). Every invalid value raises ``ValueError`` with a
message a CLI can print as it is.

Rules:

1. B.15: the SDI is 24 bits, the SSI 32 bits, the AN one bit; F: Cipher: the key is 32 bytes.
2. F: Modes - ``direct`` uses the key as is; ``cluster`` derives a per-sender key (label U1);
   ``server`` derives a per-client key (label U2).
3. choice (server mode, confirmed in the reference provider's uet_sec.c / uet_sec_sd.c): the key
   context names the client: a client derives from its own identity (the packet source when it
   sends, the destination when it receives); a server from the peer's (the destination when it
   sends, the source when it receives). With an SSI, the SSI in the header is the client's on both
   directions, so a server-role domain's ``ssi`` is the SSI of the client it talks to. Both ends
   hold the master SD key here; the reference provider's client instead receives the derived key.
4. choice: the domain table is keyed by (SDI, AN), so two entries with one SDI and different ANs
   hold the two keys of a key change; a packet whose (SDI, AN) has no entry is an unknown SDI.
   The sender uses the first entry whose SDI is ``send_sdi``.
5. F: Rekey - ``rekey_mask`` lies within the 48-bit TSC and ``(mask >> shift)`` fits the 32-bit
   rekey field of the KDF context; a mask of 0 disables rekeying. Rekeying applies to cluster
   mode only (server mode leaves rekey zero, F: KDF context; direct mode has no KDF).
6. choice: ``aad`` is ``addresses`` (default), ``header`` or ``entropy`` (layer rule 1);
   ``trimmed`` is ``nack`` (default) or ``drop`` (layer rule 5).
7. F: Receive checks - ``max_epoch_age`` (RP 16) and ``auth_fail_threshold`` (RP 1000) as the
   reference provider has them; ``auth_fail_probe`` (one datagram in it is still tried from a
   source over the threshold) and ``max_old_epochs`` (windows kept for epochs older than the
   age) are this project's (replay rules 2 and 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MODES = ("direct", "cluster", "server")
ROLES = ("client", "server")
AAD_MODES = ("addresses", "header", "entropy")
TRIMMED_MODES = ("nack", "drop")
TSC_MASK = (1 << 48) - 1  # B.15


def _int(name: str, v: object, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {v} is outside {lo}..{hi}")
    return v


def _choice(name: str, v: object, allowed: tuple[str, ...]) -> str:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {v!r}")
    return v  # type: ignore[return-value]


@dataclass(frozen=True)
class SecureDomain:
    """One secure domain: SDI, key and mode (rules 1-4). The key stays out of ``repr``."""

    sdi: int
    key: bytes = field(repr=False)
    mode: str = "direct"
    an: int = 0
    ssi: int | None = None  # send the SSI (SP = 1) with this value
    role: str = "client"  # server mode only (rule 3)

    def __post_init__(self) -> None:
        _int("SDI", self.sdi, 0, (1 << 24) - 1)
        if not isinstance(self.key, (bytes, bytearray)) or len(self.key) != 32:
            raise ValueError("a secure-domain key must be 32 bytes (64 hex digits)")
        object.__setattr__(self, "key", bytes(self.key))
        _choice("TSS mode", self.mode, MODES)
        _int("AN", self.an, 0, 1)
        if self.ssi is not None:
            _int("SSI", self.ssi, 0, (1 << 32) - 1)
        _choice("TSS role", self.role, ROLES)


@dataclass(frozen=True)
class SecurityConfig:
    """The TSS configuration of one endpoint (rules 4-6)."""

    domains: tuple[SecureDomain, ...]
    send_sdi: int = 1
    epoch: int = 0
    aad: str = "addresses"
    trimmed: str = "nack"
    replay_window: int = 4096
    max_epoch_age: int = 16
    max_old_epochs: int = 16
    auth_fail_threshold: int = 1000
    auth_fail_probe: int = 16
    rekey_mask: int = 0xFF00
    rekey_shift: int = 8
    max_sources: int = 4096
    kdf_length_bits: int = 16  # uet.tss.kdf rule 2 (H.1 #18): the 1.0 reference provider's width

    def __post_init__(self) -> None:
        if isinstance(self.domains, SecureDomain):
            object.__setattr__(self, "domains", (self.domains,))
        doms = tuple(self.domains)
        object.__setattr__(self, "domains", doms)
        if not doms:
            raise ValueError("TSS needs at least one secure domain")
        seen: set[tuple[int, int]] = set()
        for d in doms:
            if not isinstance(d, SecureDomain):
                raise ValueError(f"not a SecureDomain: {d!r}")
            if (d.sdi, d.an) in seen:
                raise ValueError(f"secure domain SDI {d.sdi} AN {d.an} is listed twice")
            seen.add((d.sdi, d.an))
        _int("send SDI", self.send_sdi, 0, (1 << 24) - 1)
        if not any(d.sdi == self.send_sdi for d in doms):
            raise ValueError(f"send SDI {self.send_sdi} is not in the secure-domain table")
        _int("epoch", self.epoch, 0, 0xFFFF)
        _choice("TSS AAD", self.aad, AAD_MODES)
        _choice("TSS trimmed-packet handling", self.trimmed, TRIMMED_MODES)
        _int("replay window", self.replay_window, 1, 1 << 20)
        _int("max epoch age", self.max_epoch_age, 0, 0x7FFF)
        _int("max old epochs", self.max_old_epochs, 0, 0x7FFF)
        _int("auth-failure threshold", self.auth_fail_threshold, 1, 1 << 62)
        _int("auth-failure probe", self.auth_fail_probe, 1, 1 << 30)
        _int("rekey mask", self.rekey_mask, 0, TSC_MASK)
        _int("rekey shift", self.rekey_shift, 0, 47)
        if self.rekey_mask >> self.rekey_shift > 0xFFFFFFFF:
            raise ValueError("rekey mask >> shift must fit the 32-bit rekey field")
        _int("max sources", self.max_sources, 1, 1 << 24)
        if self.kdf_length_bits not in (16, 32):
            raise ValueError(f"KDF length field width must be 16 or 32 bits, got "
                             f"{self.kdf_length_bits}")

    @property
    def send_domain(self) -> SecureDomain:
        return next(d for d in self.domains if d.sdi == self.send_sdi)

    def table(self) -> dict[tuple[int, int], SecureDomain]:
        """The domains by (SDI, AN) (rule 4)."""
        return {(d.sdi, d.an): d for d in self.domains}


__all__ = ["AAD_MODES", "MODES", "ROLES", "TRIMMED_MODES", "SecureDomain", "SecurityConfig"]
