"""Secure-domain and configuration validation (uet/tss/domain.py rules 1-6)."""

from __future__ import annotations

import pytest

from uet.tss.domain import MODES, SecureDomain, SecurityConfig

KEY = bytes(32)


def test_defaults_and_table():
    d = SecureDomain(sdi=1, key=KEY)
    assert (d.mode, d.an, d.ssi, d.role) == ("direct", 0, None, "client")
    assert "key" not in repr(d)
    cfg = SecurityConfig(domains=[d, SecureDomain(sdi=1, key=KEY, an=1)])
    assert isinstance(cfg.domains, tuple) and cfg.send_domain is d
    assert set(cfg.table()) == {(1, 0), (1, 1)}
    assert MODES == ("direct", "cluster", "server")


@pytest.mark.parametrize("kw", [dict(sdi=1 << 24), dict(sdi=-1), dict(sdi=True), dict(key=b"x"),
                                dict(mode="tunnel"), dict(an=2), dict(ssi=1 << 32),
                                dict(role="peer")])
def test_domain_refuses(kw):
    args = dict(sdi=1, key=KEY) | kw
    with pytest.raises(ValueError) as e:
        SecureDomain(**args)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kw", [dict(send_sdi=2), dict(epoch=1 << 16), dict(aad="ports"),
                                dict(trimmed="keep"), dict(replay_window=0),
                                dict(max_epoch_age=-1), dict(auth_fail_threshold=0),
                                dict(rekey_mask=1 << 48), dict(rekey_shift=48),
                                dict(rekey_mask=0xFFFF_FFFF_FFFF, rekey_shift=0),
                                dict(max_sources=0), dict(domains=())])
def test_config_refuses(kw):
    args = dict(domains=(SecureDomain(sdi=1, key=KEY),)) | kw
    with pytest.raises(ValueError) as e:
        SecurityConfig(**args)
    assert "\n" not in str(e.value)


def test_duplicate_sdi_an_refused():
    d = SecureDomain(sdi=1, key=KEY)
    with pytest.raises(ValueError, match="twice"):
        SecurityConfig(domains=(d, d))
