"""Build C sources of native/ with AddressSanitizer and UBSan into a test driver and run it: the
one way every sanitizer test here does it (a driver prints "ok" when all its checks held)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NATIVE = os.path.join(ROOT, "native")


def run_sanitized(tmp_path: Path, sources: list[str], args: list[str] = (), *,
                  werror: bool = False, timeout: float = 300) -> None:
    """Compile ``sources`` (file names in native/, the driver first) and run the driver with
    ``args``; fails the test on a build error, a sanitizer report or a driver that did not say
    "ok". Skips where gcc is missing."""
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    exe = tmp_path / (os.path.splitext(sources[0])[0] + "_sanitized")
    cmd = [cc, "-std=c11", "-O1", "-g", "-Wall", "-Wextra", *(["-Werror"] if werror else []),
           "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           "-fno-omit-frame-pointer", "-I", NATIVE]
    cmd += [os.path.join(NATIVE, s) for s in sources] + ["-o", str(exe), "-lm"]  # fabric.c: exp
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=23",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    run = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env,
                         timeout=timeout)
    if "LeakSanitizer has encountered a fatal error" in run.stderr:
        # LSan needs ptrace, which some containers forbid; keep ASan + UBSan
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:exitcode=23"
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env,
                             timeout=timeout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "ok" and "runtime error" not in run.stderr
