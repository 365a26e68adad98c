"""Shared fixtures for the uet.native tests.

``impl`` runs a test against the selected backend (``uet.native``) and, when
that is the C backend, also against the pure-Python twin, so that both
implementations meet the same facts.  Tests that compare C against the twin
directly are skipped unless ``uet.native.BACKEND == "c"`` (each test module
defines its own ``requires_c`` mark: other test directories have their own
conftest.py, so importing from this one is not reliable).
"""

from __future__ import annotations

import pytest

import uet.native
from uet.native import _twin

IS_C = uet.native.BACKEND == "c"

# the backend module itself: uet.native.Reassembly is the chunked wrapper over its engine
_IMPLS = [pytest.param(uet.native._impl, id="backend-" + uet.native.BACKEND)]
if IS_C:
    _IMPLS.append(pytest.param(_twin, id="twin"))


@pytest.fixture(scope="session", params=_IMPLS)
def impl(request):
    """The module under test: uet.native and (with the C backend) the twin."""
    return request.param

