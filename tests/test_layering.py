"""Import rules of the package (issue 12 item 8), checked on the source: the layers reach only
what is below them, the protocol core is sans-IO, nothing imports in a circle, and no module grows
past what one reader can hold. Imports are read with ``ast`` (module level and inside functions),
so an import hidden in a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "uet"
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PKG.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


MODS = _modules()


def _imports(name: str) -> tuple[set[str], set[str]]:
    """(modules of uet this module imports, top-level names of other packages it imports)."""
    path = MODS[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            if t == "uet" or t.startswith("uet."):
                while t and t not in MODS:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    inside.add(t)
            elif t:
                outside.add(t.split(".")[0])
    # importing a module imports the packages above it
    for t in list(inside):
        parts = t.split(".")
        inside.update(".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in MODS)
    inside.discard(name)
    return {t for t in inside if not name.startswith(t + ".")}, outside


GRAPH = {m: _imports(m) for m in MODS}


def _reach(name: str) -> set[str]:
    seen, stack = set(), [name]
    while stack:
        for dep in GRAPH[stack.pop()][0]:
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def _under(name: str, pkg: str) -> bool:
    return name == pkg or name.startswith(pkg + ".")


CLI = ("uet.cli", "uet.cliargs", "uet.cliopts")
RULES = [  # (these modules, never reach these)
    ("uet.io", ("uet.sim",)),
    ("uet.fabric", ("uet.sim",)),
    ("uet.sim", ("uet.io",)),
    ("uet.pds", ("uet.io", "uet.sim", "uet.ses", "uet.host") + CLI),
    ("uet.ses", ("uet.io", "uet.sim", "uet.host") + CLI),
    ("uet.cms", ("uet.io", "uet.sim", "uet.pds", "uet.ses") + CLI),
    ("uet.host", ("uet.io", "uet.sim") + CLI),
    ("uet.net", ("uet.io", "uet.sim", "uet.pds", "uet.ses") + CLI),
    ("uet.wire", ("uet.pds", "uet.ses", "uet.io", "uet.sim") + CLI),
    # TSS sits below the PDS (H5 of uet/host.py puts it at the host's edge; issue 18)
    ("uet.tss", ("uet.pds", "uet.ses", "uet.host", "uet.io", "uet.sim")),
    # the conformance peer judges another implementation with nothing of this one's core (issue 16)
    ("uet.conformance", ("uet.pds", "uet.ses", "uet.host", "uet.io", "uet.sim")),
    ("uet.roce", ("uet.pds", "uet.ses", "uet.host", "uet.io") + CLI),
]


@pytest.mark.parametrize("src, banned", RULES, ids=[r[0] for r in RULES])
def test_layers_reach_only_what_is_below_them(src, banned):
    bad = {m: sorted(r for r in _reach(m) if any(_under(r, b) for b in banned))
           for m in MODS if _under(m, src)}
    assert not {m: r for m, r in bad.items() if r}


@pytest.mark.parametrize("src", ["uet.pds", "uet.ses", "uet.cms", "uet.host", "uet.net",
                                 "uet.wire", "uet.native", "uet.multipath", "uet.tss",
                                 "uet.roce"])
def test_the_protocol_core_is_sans_io(src):
    """principle 3: trio appears in uet.io (and the tools around it) only."""
    bad = sorted(m for m in MODS if _under(m, src)
                 for r in _reach(m) | {m} if "trio" in GRAPH[r][1])
    assert not bad


def test_native_is_a_leaf():
    bad = {m: sorted(r for r in _reach(m) if not _under(r, "uet.native") and r != "uet")
           for m in MODS if _under(m, "uet.native")}
    assert not {m: r for m, r in bad.items() if r}


def test_only_native_imports_its_private_module():
    bad = [m for m, (inside, _) in GRAPH.items()
           if "uet.native._uet_native" in inside and not _under(m, "uet.native")]
    assert not bad


def test_no_import_circles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v][0]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not circles


def test_no_module_over_800_lines():
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long


def test_the_rules_see_imports():
    """The checker itself: known edges are found (a checker that sees nothing passes anything)."""
    assert "uet.pds.endpoint" in _reach("uet.host")
    assert "uet.wire.enums" in GRAPH["uet.pds.endpoint"][0]
    assert "trio" in GRAPH["uet.io.engine"][1]
