"""Issue 16 design: the conformance peer is independent of the protocol core. It builds and
reads packets with the header declarations (uet.wire) only; it never imports the PDS, SES, host
or live-endpoint code whose behaviour it judges (imports read with ``ast``, inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import uet.conformance

PKG = Path(uet.conformance.__file__).parent
BANNED = ("uet.pds", "uet.ses", "uet.host", "uet.io", "uet.sim", "uet.fabric", "trio")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: uet.conformance (level 1) or uet (level 2)
                pkg = ["uet", "conformance"][:3 - node.level]
                base = ".".join(pkg + ([base] if base else []))
            out.add(base)
    return out


def test_the_suite_imports_no_part_of_the_core_it_tests():
    found = {p.name: sorted(m for m in _imports(p) if m.startswith(BANNED))
             for p in PKG.glob("*.py")}
    assert not {k: v for k, v in found.items() if v}
    assert any("uet.wire.build" in _imports(p) for p in PKG.glob("*.py"))  # the checker sees


def test_modules_stay_small_and_say_what_they_own():
    for p in PKG.glob("*.py"):
        assert len(p.read_text().splitlines()) < 600, p.name
        assert ast.get_docstring(ast.parse(p.read_text())), p.name
