"""Backend selection: C when built, the twin on UET_NATIVE=0 or a failed import."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys

import uet.native
from uet.native import _twin

PUBLIC = ["BACKEND", "crc32c", "crc32", "roce_icrc", "Reassembly", "PsnWindow", "NEW",
          "DUPLICATE", "OUT_OF_WINDOW", "psn_diff", "psn_lt", "randbytes"]


def _run(code, **env):
    e = dict(os.environ)
    e.pop("UET_NATIVE", None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=60)


def test_public_api_present():
    for name in PUBLIC:
        assert hasattr(uet.native, name), name
    assert set(PUBLIC) <= set(uet.native.__all__)
    assert uet.native.BACKEND in ("c", "python")


def test_backend_is_c_when_extension_built():
    disabled = os.environ.get("UET_NATIVE", "").strip().lower() in ("0", "false", "no", "off",
                                                                   "python")
    built = importlib.util.find_spec("uet.native._uet_native") is not None
    if disabled:
        assert uet.native.BACKEND == "python"
    elif built:
        assert uet.native.BACKEND == "c"


def test_uet_native_0_forces_twin_without_warning():
    r = _run("import uet.native as n; print(n.BACKEND, n.crc32c is n._twin.crc32c)",
             UET_NATIVE="0", PYTHONWARNINGS="error")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["python", "True"]
    assert "Warning" not in r.stderr


def test_failed_c_import_falls_back_with_one_warning():
    code = r"""
import sys, warnings
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "uet.native._uet_native":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import uet.native as n
    import uet.native  # a second import says nothing more
print(n.BACKEND, len(caught), caught[0].category.__name__ if caught else "-")
print(hex(n.crc32c(b"123456789")))
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0].split() == ["python", "1", "RuntimeWarning"]
    assert lines[1] == "0xe3069283"


def test_same_signatures_in_both_backends():
    if uet.native.BACKEND != "c":
        return
    from uet.native import _cbackend

    def public_params(f):
        return [p for p in inspect.signature(f).parameters if not p.startswith("_")]

    for name in ("crc32c", "crc32", "roce_icrc", "psn_diff", "psn_lt"):
        assert public_params(getattr(_cbackend, name)) == public_params(getattr(_twin, name))
    for cls in ("Reassembly", "PsnWindow"):
        c, t = getattr(_cbackend, cls), getattr(_twin, cls)
        pub = lambda k: {n for n in dir(k) if not n.startswith("_")}  # noqa: E731
        assert pub(c) == pub(t)
        for meth in pub(t):
            if callable(getattr(t, meth)):
                assert public_params(getattr(c, meth)) == public_params(getattr(t, meth)), meth
