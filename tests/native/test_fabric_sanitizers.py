"""native/fabric.c (the C fabric engine, uet.sim.cfabric) under AddressSanitizer and UBSan: the
driver (native/test_fabric_driver.c) runs a small seeded scenario with ECN, trims, ECMP and a
failed link, then malformed input (unknown hosts and ports, zero and negative lengths, NaN times,
NULL pointers, a full heap), and the engine must stay inside its memory and refuse each one."""

from __future__ import annotations

from tests.native.sanitize import run_sanitized


def test_fabric_engine_under_asan_ubsan(tmp_path):
    run_sanitized(tmp_path, ["test_fabric_driver.c", "fabric.c"], werror=True)
