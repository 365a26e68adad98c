"""Shared fixtures for the Scapy layer tests: every test starts from the default configuration."""

from __future__ import annotations

import copy

import pytest
from scapy.config import conf

import uet.scapy as S


@pytest.fixture(autouse=True)
def uet_conf():
    """Restore conf.contribs["uet"] (trailer mode, options, UDP port) after each test."""
    saved = dict(S._cfg())
    saved["options"] = copy.deepcopy(saved["options"])
    yield S._cfg()
    if S._cfg().get("port") != saved["port"] or S._bound_ports != [saved["port"]]:
        S.bind_uet_port(saved["port"])
    conf.contribs["uet"] = saved
