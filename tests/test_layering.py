"""Import rules of the package (issue 12 item 8), checked on the source: the layers reach only
what is below them, the protocol core is sans-IO, nothing imports in a circle, and no module grows
past what one reader can hold. Imports are read with ``ast`` (module level and inside functions),
so an import hidden in a function counts too."""

from __future__ import annotations

import ast
import re
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
    # TSS sits below the PDS (HOST-H5 of uet/host.py puts it at the host's edge; issue 18)
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


# --- no module reads another package's private names (issue 28 item 2) -----------------------
# A package is the first directory under uet/ (a top-level module such as uet/host.py is its own).
# Checked: ``from x import _name`` and ``module._name`` across packages; ``obj._name`` where obj's
# declared type (a parameter's or attribute's annotation) is a class of another package, or a
# Protocol (the seam's types have no private names); and, for an object of unknown type, a
# ``_name`` that only other packages define.


def _pkg(mod: str) -> str:
    return mod.split(".")[1] if "." in mod else mod


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


TREES = {m: ast.parse(p.read_text()) for m, p in MODS.items()}


def _defined(node: ast.AST) -> set[str]:
    """The private names a module or class body defines (defs, stores, __slots__ strings)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return {x for x in out if _private(x)}


PKG_DEFS: dict[str, set[str]] = {}
CLASSES: dict[str, list[tuple[str, ast.ClassDef]]] = {}  # class name -> (module, node)
for _m, _t in TREES.items():
    PKG_DEFS.setdefault(_pkg(_m), set()).update(_defined(_t))
    for _n in ast.walk(_t):
        if isinstance(_n, ast.ClassDef):
            CLASSES.setdefault(_n.name, []).append((_m, _n))


def _resolve(name: str, package: str, node: ast.ImportFrom) -> str:
    base = node.module or ""
    if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    return base


def _bindings(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(alias -> uet module it names, alias -> module a class/function was imported from)."""
    path = MODS[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules, symbols = {}, {}
    for n in ast.walk(TREES[name]):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith("uet.") and a.name in MODS:
                    modules[a.asname or a.name] = a.name
        elif isinstance(n, ast.ImportFrom):
            base = _resolve(name, package, n)
            for a in n.names:
                full = f"{base}.{a.name}"
                if full in MODS:
                    modules[a.asname or a.name] = full
                elif base in MODS:
                    symbols[a.asname or a.name] = base
    return modules, symbols


def _class_of(ann: ast.AST | None, mod: str,
              symbols: dict[str, str]) -> tuple[str, ast.ClassDef] | None:
    """The uet class an annotation names (``Upper | None`` -> Upper), if one."""
    if ann is None:
        return None
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    for n in ast.walk(ann):
        if isinstance(n, ast.Name) and n.id in CLASSES:
            home = symbols.get(n.id, mod)
            for m, c in CLASSES[n.id]:
                if m == home:
                    return m, c
    return None


def _class_defs(c: ast.ClassDef) -> set[str]:
    out = _defined(c)
    for b in c.bases:  # bases by name (enough for this package's shallow hierarchies)
        if isinstance(b, ast.Name):
            for _, bc in CLASSES.get(b.id, ()):
                out |= _defined(bc)
    return out


def _is_protocol(c: ast.ClassDef) -> bool:
    return any(isinstance(b, ast.Name) and b.id == "Protocol" for b in c.bases)


def _is_self_attr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _attr_types(c: ast.ClassDef) -> dict[str, ast.AST]:
    """attribute -> annotation: ``attr: T`` in the body, ``self.attr: T = ...``, or
    ``self.attr = param`` of an annotated parameter."""
    out: dict[str, ast.AST] = {}
    for n in c.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out[n.target.id] = n.annotation
    for f in c.body:
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg: a.annotation for a in f.args.args + f.args.kwonlyargs if a.annotation}
        for n in ast.walk(f):
            if isinstance(n, ast.AnnAssign) and _is_self_attr(n.target):
                out.setdefault(n.target.attr, n.annotation)
            elif (isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                  and n.value.id in params):
                for t in n.targets:
                    if _is_self_attr(t):
                        out.setdefault(t.attr, params[n.value.id])
    return out


def _private_reads(name: str) -> list[tuple[str, int, str, str]]:
    """(module, line, name, why) of each read of another package's private name."""
    modules, symbols = _bindings(name)
    here = _pkg(name)
    path = MODS[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    tree = TREES[name]
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            base = _resolve(name, package, n)
            if base.startswith("uet.") and _pkg(base) != here:
                found += [(name, n.lineno, a.name, f"imported from {base}")
                          for a in n.names if _private(a.name)]
    # methods first (they know their class's attribute types), then the rest of the module
    scopes = [(c, f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
              for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scopes += [(None, f) for f in tree.body
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scopes.append((None, tree))
    seen = set()
    for cls, scope in scopes:
        attrs = _attr_types(cls) if cls is not None else {}
        local: dict[str, ast.AST] = {}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = {a.arg: a.annotation for a in scope.args.args + scope.args.kwonlyargs
                     if a.annotation}
            for n in ast.walk(scope):  # x = self.attr: x has attr's declared type
                if (isinstance(n, ast.Assign) and len(n.targets) == 1
                        and isinstance(n.targets[0], ast.Name) and _is_self_attr(n.value)
                        and n.value.attr in attrs):
                    local.setdefault(n.targets[0].id, attrs[n.value.attr])
        for n in ast.walk(scope):
            if not (isinstance(n, ast.Attribute) and _private(n.attr)) or id(n) in seen:
                continue
            seen.add(id(n))
            v = n.value
            if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                continue
            if isinstance(v, ast.Name) and v.id in modules:
                if _pkg(modules[v.id]) != here:
                    found.append((name, n.lineno, n.attr, f"of module {modules[v.id]}"))
                continue
            ann = None
            if isinstance(v, ast.Name):
                ann = local.get(v.id)
            elif _is_self_attr(v):
                ann = attrs.get(v.attr)
            typ = _class_of(ann, name, symbols)
            if typ is not None:
                m, c = typ
                if _pkg(m) != here or (_is_protocol(c) and n.attr not in _class_defs(c)):
                    found.append((name, n.lineno, n.attr, f"of {c.name} ({m})"))
            elif (n.attr not in PKG_DEFS.get(here, ())
                  and any(n.attr in d for d in PKG_DEFS.values())):
                found.append((name, n.lineno, n.attr, "defined only in other packages"))
    return sorted(set(found))


PRIVATE_READS = [r for m in MODS for r in _private_reads(m)]


# Private reads allowed across packages: none. Add an entry only with the reason beside it; an
# entry that no longer matches fails the test, so the list can only shrink. (file, private name)
PRIVATE_ALLOWED: set[tuple[str, str]] = set()


def _private_found() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for mod, line, name, why in PRIVATE_READS:
        path = str(MODS[mod].relative_to(ROOT))
        found.setdefault((path, name), []).append(f"{path}:{line} {name} ({why})")
    return found


def test_no_module_reads_another_packages_private_names():
    found = _private_found()
    assert [w for k, v in found.items() if k not in PRIVATE_ALLOWED for w in v] == []
    assert sorted(PRIVATE_ALLOWED - set(found)) == [], "fixed: drop these from PRIVATE_ALLOWED"


FAKE = '''
from uet.pds.upper import Upper
from uet.wire.build import _eth
from .. import native

class Thing:
    def __init__(self, up: Upper):
        self.up = up
        self._mine = 0

    def run(self, other: "Thing"):
        ses = self.up
        return ses._now, native._uet_native, other._mine, self._mine, self.up._clock
'''


def test_the_private_name_check_sees_reads(monkeypatch):
    """The checker itself, on a module of a made-up package: a private import, a private module
    of another package, a private name read through a Protocol (directly and through a local)."""
    monkeypatch.setitem(MODS, "uet.zz.fake", PKG / "zz" / "fake.py")
    monkeypatch.setitem(TREES, "uet.zz.fake", ast.parse(FAKE))
    got = {(line, name) for _, line, name, _ in _private_reads("uet.zz.fake")}
    assert got == {(3, "_eth"), (13, "_now"), (13, "_uet_native"), (13, "_clock")}


ONE_DEFINITION = {  # constant -> the one module that defines it (issue 28 item 4)
    **dict.fromkeys(("M32", "H32", "pdiff"), "uet/wire/psn.py"),
    **dict.fromkeys(("TRIM_CODES", "REQUEST_TRIM_CODES", "NOT_ECT", "ECT0", "ECT1", "CE",
                     "DSCP_DATA", "DSCP_CONTROL", "DSCP_TRIMMED"), "uet/wire/enums.py"),
}
# the C twins keep their own mask (uet.native is a leaf); a
# link's verdict flags (uet/net/link.py: TRIMMED, CE, REORDERED bits) are not the ECN code point
ONE_DEFINITION_EXEMPT = {"uet/native/_cbackend.py", "uet/native/_twin.py", "uet/native/txbuild.py",
                         "uet/net/link.py"}


def test_constants_are_defined_once():
    """The trim codes (B.11), the DSCP/ECN code points (A.2) and the PSN arithmetic (C.2) are
    defined in one module each and imported everywhere else."""
    again = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in ONE_DEFINITION_EXEMPT:
            continue
        for node in ast.parse(path.read_text()).body:
            names = []
            if isinstance(node, ast.Assign):
                names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            elif isinstance(node, ast.FunctionDef):
                names = [node.name]
            again += [f"{rel}:{node.lineno} {n}" for n in names
                      if ONE_DEFINITION.get(n, rel) != rel]
    assert again == []


# --- rule labels name one rule each (issue 28 item 4) --------------------------------------------
# A rule is defined in a module docstring as a line "  <label>  <text>" (one to three spaces
# between). The scheme: the label is prefixed by its package in capitals (the first directory
# under uet/, or a top-level module: uet/host.py -> HOST), so that "PDS-T3" names rule T3 of
# uet/pds/ wherever it is quoted. The RPn labels of uet/capture/refprov.py are output (violation
# codes) and already unique: kept as is.
# /tmp/t28/relabel.py applies the scheme to a tree (issue 28; the lead runs it after the merge).
_LABEL = r"[A-Z]{1,2}\d{1,2}[a-z]?"
_RULE_DEF = re.compile(
    rf"^[ ]{{0,6}}((?:[A-Z]+-)?{_LABEL}(?:\s*/\s*(?:[A-Z]+-)?{_LABEL})*)[ ]{{1,3}}\S")
_PREFIXES = sorted({p.stem.upper() for p in PKG.iterdir()
                    if p.suffix == ".py" or (p / "__init__.py").exists()} - {"__INIT__"})
_RULE_REF = re.compile(rf"(?<![\w-])(?:{'|'.join(_PREFIXES)})-{_LABEL}(?![\w-])")


def _rule_definitions() -> dict[str, list[str]]:
    """label as written -> the modules whose docstring defines it."""
    defs: dict[str, list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
        for line in doc.splitlines():
            m = _RULE_DEF.match(line)
            if m:
                for label in re.split(r"\s*/\s*", m.group(1)):
                    defs.setdefault(label, []).append(str(path.relative_to(ROOT)))
    return defs


def _prefix(path: str) -> str:
    parts = Path(path).parts  # uet/pds/x.py -> PDS, uet/host.py -> HOST
    return (parts[1] if len(parts) > 2 else Path(parts[1]).stem).upper()


# strict: passes once relabel.py has run; the lead drops this marker then (issue 28 item 4)
def test_every_rule_label_is_defined_once_with_its_package_prefix():
    defs = _rule_definitions()
    assert {label: where for label, where in defs.items() if len(where) > 1} == {}
    unprefixed = [f"{where[0]}: {label}" for label, where in defs.items()
                  if not label.startswith(("RP", _prefix(where[0]) + "-"))]
    assert sorted(unprefixed) == []


def test_the_rule_definitions_are_seen():
    """The checker itself: known definitions are found (bare or prefixed)."""
    defs = _rule_definitions()
    assert {"PDS-W1", "PDS-W1"} & set(defs) and {"RP1"} <= set(defs)
    assert {"PDS-I14", "PDS-I14"} & set(defs)  # one space after a three-character label
    assert len(defs) > 100


def test_every_prefixed_rule_label_quoted_is_defined():
    """A prefixed label quoted anywhere (code, tests, tools, docs) names a rule that exists."""
    defined = set(_rule_definitions())
    files = [p for d in ("uet", "tests", "tools", "docs") for p in sorted((ROOT / d).rglob("*"))
             if p.suffix in (".py", ".md") and p != Path(__file__).resolve()] + [ROOT / "README.md"]
    dangling = sorted({f"{p.relative_to(ROOT)}: {ref}" for p in files if p.is_file()
                       for ref in _RULE_REF.findall(p.read_text()) if ref not in defined})
    assert dangling == []
