"""Build native/*.c with AddressSanitizer + UBSan into a C test driver and run it."""

from __future__ import annotations

from tests.native.sanitize import run_sanitized

SOURCES = ["test_driver.c", "crc32c.c", "icrc.c", "reasm.c", "mmsg.c"]


def test_c_sources_under_asan_ubsan(tmp_path):
    run_sanitized(tmp_path, SOURCES, timeout=120)
