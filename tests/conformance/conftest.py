"""Fixtures of the conformance tests: one ``uet recv`` subprocess for the module that needs it."""

from __future__ import annotations

import pytest

from .targets import RecvProcess


@pytest.fixture(scope="module")
def uet_recv():
    rp = RecvProcess()
    try:
        yield rp
    finally:
        rp.stop()
