"""Every facts label the project cites resolves to a heading of docs/facts.md.

Comments, docstrings, ``--help`` texts, error messages and test names cite rows of the wire facts by
label: ``A.1``, ``(B.5)``, ``E.6:``, ``H.1 #19``, ``H.1 #2-3``, ``H.1 row 17``, ``uet-facts F``,
``docs/facts.md section 0``. This module finds those citations in ``uet/``, ``tests/``, ``tools/``
and ``docs/`` and fails, naming file and line, for any label docs/facts.md has no heading for.
Prose that merely looks similar is not taken for a citation: ``version 1.0`` and ``UEC 1.0.3`` have
no section letter, rule labels such as ``R1`` or ``PDS-A2`` have no dot, and a lone letter (``F``,
``H``) counts only right after a facts prefix (``facts``, ``uet-facts``, ``docs/facts.md``,
``section``).

The sections of docs/design-notes.md cited as ``design.md "Defaults"``, ``principle 2``,
``"Test beds" 2`` (the form before the rewrite) or ``docs/design-notes.md ...`` exist as well.

It also checks the labels carried as data (the ``ref`` of every header, field, derived value and
enumeration of ``uet.wire``; the facts row of every conformance check), that the generated field
tables of docs/facts.md match the declarations (``tools/facts_tables.py --check``), and, strict
xfail until the citation rewrite lands, that nothing under ``uet/`` still names the shared facts
file or design.md, which users do not have.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "docs" / "facts.md"
SCANNED = ("uet", "tests", "tools", "docs")
SUFFIXES = {".py", ".pyi", ".lua", ".c", ".h", ".md", ".txt", ".toml", ".cfg"}

# A heading of docs/facts.md: "## A.1 Transport options", "# F TSS ...", "#### H.1 #19 ...".
HEADING = re.compile(r"^#{1,4} (?P<label>0|[A-H](?:\.\d{1,2})?(?: #\d{1,2})?)(?= |$)", re.M)

# A dotted label standing alone: not part of a longer dotted name or number (3.5.8.2, A17.9.3).
DOTTED = re.compile(r"(?<![\w.])(?P<label>[A-H]\.\d{1,2})(?![\w]|\.\d)")
# The numbered conflicts: "H.1 #19", "H.1 #2, #3", "H.1 #2-3", "H.1 row 17".
H1_ITEMS = re.compile(r"(?<![\w.])H\.1\s*(?:#\s?|row\s+)(?P<first>\d{1,2})"
                      r"(?P<more>(?:\s*(?:,|/|and)\s*#\s?\d{1,2}|\s*-\s*#?\d{1,2}(?!\.))*)")
# After a facts prefix, a list of labels, single letters and section 0 included:
# "uet-facts.md A.1, B.1, D.5", "uet-facts B.15, F;", "facts F", "uet-facts.md section 0".
_LABEL = r"(?:[A-H](?:\.\d{1,2})?|0)(?!\w|\.\w)"
PREFIXED = re.compile(
    r"(?:(?<![\w/.-])uet-facts(?:\.md)?|docs/facts\.md|(?<![\w/.-])facts)\)?,?\s+"
    r"(?:(?:sections?|rows?)\s+)?(?P<list>" + _LABEL + r"(?:\s*(?:,|;|/|and|-)\s*" + _LABEL + r")*)")
LIST_ITEM = re.compile(_LABEL)


def headings() -> set[str]:
    return {m.group("label") for m in HEADING.finditer(FACTS.read_text(encoding="utf-8"))}


def _expand_h1(m: re.Match[str]) -> list[str]:
    nums = [int(m.group("first"))]
    for sep, n in re.findall(r"(-|#)\s?(\d{1,2})", m.group("more")):
        n = int(n)
        if sep == "-" and n > nums[-1]:
            nums.extend(range(nums[-1] + 1, n + 1))
        else:
            nums.append(n)
    return [f"H.1 #{n}" for n in nums]


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, label) of every facts citation in ``text``."""
    found: list[tuple[int, str]] = []

    def line(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    for m in DOTTED.finditer(text):
        found.append((line(m.start()), m.group("label")))
    for m in H1_ITEMS.finditer(text):
        found.extend((line(m.start()), label) for label in _expand_h1(m))
    for m in PREFIXED.finditer(text):
        for item in LIST_ITEM.finditer(m.group("list")):
            found.append((line(m.start("list") + item.start()), item.group()))
    return found


def _files() -> list[Path]:
    out = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts:
                out.append(p)
    return out


def test_the_facts_file_has_every_section():
    # The skeleton of docs/facts.md: sections 0 and A-H, each numbered section, the 19 conflicts.
    have = headings()
    want = {"0", "A", "B", "C", "D", "E", "F", "G", "H"}
    want |= {f"A.{i}" for i in range(1, 4)} | {f"B.{i}" for i in range(1, 17)}
    want |= {f"C.{i}" for i in range(1, 10)} | {f"D.{i}" for i in range(1, 10)}
    want |= {f"E.{i}" for i in range(1, 7)} | {f"G.{i}" for i in range(1, 8)}
    want |= {f"H.{i}" for i in range(1, 4)} | {f"H.1 #{i}" for i in range(1, 20)}
    assert sorted(want - have) == []


@pytest.mark.parametrize("text, labels", [
    ("see uet-facts A.1, H.1 #19: every datagram", {"A.1", "H.1", "H.1 #19"}),
    ("(uet-facts.md B.15), the per-packet key", {"B.15"}),
    ("E.6: the switch", {"E.6"}),
    ("length (uet-facts H.1 #2-3), xdp2", {"H.1", "H.1 #2", "H.1 #3"}),
    ("ccx_layout (H.1 #2, #3)", {"H.1", "H.1 #2", "H.1 #3"}),
    ("defaults (one source, H.1 row 17: all", {"H.1", "H.1 #17"}),
    ("uet-facts B.15, F; uet.tss.options", {"B.15", "F"}),
    ("uet-facts B.15, F; HOST-H5 of uet.host", {"B.15", "F"}),
    ("[facts G.6]", {"G.6"}),
    ("uet-facts.md section 0 conventions", {"0"}),
    ("version 1.0, UEC 1.0.3 section 3.5.10.1, rules R1 and PDS-A2, annex A17.9.3", set()),
    ("the facts tables, facts has no row", set()),
])
def test_citation_forms(text, labels):
    assert {label for _, label in citations(text)} == labels


def test_every_cited_label_resolves():
    have = headings()
    missing = []
    seen = 0
    for path in _files():
        for lineno, label in citations(path.read_text(encoding="utf-8", errors="replace")):
            seen += 1
            if label not in have:
                missing.append(f"{path.relative_to(ROOT)}:{lineno}: {label}")
    assert seen > 1000  # the scan does see the code's citations
    assert missing == [], f"labels without a heading in docs/facts.md: {missing}"


def _data_refs() -> list[tuple[str, str]]:
    from uet.conformance import all_checks
    from uet.wire import enums
    from uet.wire.registry import ALL_HEADERS
    from uet.wire.schema import Enum

    refs = []
    for h in ALL_HEADERS:
        refs.append((h.key, h.ref))
        refs += [(f"{h.key}.{f.name}", f.ref) for f in h.all_fields()]
        refs += [(f"{h.key}.{f.name}.enum", f.enum.ref) for f in h.all_fields() if f.enum is not None]
        refs += [(f"{h.key}.{d.name}", d.ref) for d in h.derived]
    refs += [(f"enums.{e.name}", e.ref) for e in vars(enums).values() if isinstance(e, Enum)]
    refs += [(f"conformance {c.name}", c.facts) for c in all_checks()]
    return [(where, ref) for where, ref in refs if ref]


# References to documents other than the facts (standards, capture formats) that headers carry.
EXTERNAL = re.compile(r"(RFC \d+|IEEE 802\.\w+|LINKTYPE_\w+)")


def test_every_label_carried_as_data_resolves():
    have = headings()
    bad = []
    for where, ref in _data_refs():
        if EXTERNAL.fullmatch(ref):
            continue
        labels = [m.group() for m in LIST_ITEM.finditer(ref)] + [
            label for m in H1_ITEMS.finditer(ref) for label in _expand_h1(m)]
        if not labels or any(label not in have for label in labels):
            bad.append(f"{where}: {ref!r}")
    assert bad == []


def _facts_tables():
    spec = importlib.util.spec_from_file_location("facts_tables", ROOT / "tools" / "facts_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_tables_match_the_declarations():
    tables = _facts_tables()
    text = FACTS.read_text(encoding="utf-8")
    assert len(list(tables.BLOCK.finditer(text))) >= 30
    assert tables.stale(text) == []


def test_a_changed_declaration_makes_its_table_stale():
    tables = _facts_tables()
    text = FACTS.read_text(encoding="utf-8")
    edited = text.replace("| 32 | 32 | `psn` | packet sequence number |  |",
                          "| 32 | 24 | `psn` | packet sequence number |  |", 1)
    assert edited != text
    assert tables.stale(edited) == ["pds.rud_rod_req"]
    assert tables.render(edited) == text


DESIGN = ROOT / "docs" / "design-notes.md"
# design-notes citations, before and after the rewrite: design.md "Defaults", design.md principle 2,
# docs/design-notes.md "Test beds" item 2, design.md Performance, design.md test bed 3.
DESIGN_CITE = re.compile(r"(?<![\w/-])(?:docs/design-notes|design)\.md\s+(?:"
                         r"\"(?P<quoted>[^\"]+)\"(?:\s+(?:item\s+)?(?P<item>\d))?"
                         r"|principle\s+(?P<principle>\d)"
                         r"|(?P<bare>Defaults|Performance|Contracts)\b"
                         r"|test bed\s+(?P<bed>\d))")


def _numbered_items(text: str, heading: str) -> set[int]:
    """Numbers of the numbered list items under ``## heading`` of design-notes.md."""
    part = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return {int(n) for n in re.findall(r"^(\d)\. ", part, re.M)}


def test_every_cited_design_note_resolves():
    text = DESIGN.read_text(encoding="utf-8")
    names = set(re.findall(r"^#{2,3} (.+)$", text, re.M))
    principles, beds = _numbered_items(text, "Principles"), _numbered_items(text, "Test beds")
    missing = []
    seen = 0
    for path in _files():
        body = path.read_text(encoding="utf-8", errors="replace")
        for m in DESIGN_CITE.finditer(body):
            seen += 1
            where = f"{path.relative_to(ROOT)}:{body.count(chr(10), 0, m.start()) + 1}"
            name = m.group("quoted") or m.group("bare")
            if name and name not in names:
                missing.append(f"{where}: section {name!r}")
            if m.group("principle") and int(m.group("principle")) not in principles:
                missing.append(f"{where}: principle {m.group('principle')}")
            bed = m.group("bed") or (m.group("item") if m.group("quoted") == "Test beds" else None)
            if bed and int(bed) not in beds:
                missing.append(f"{where}: test bed {bed}")
    assert seen > 50
    assert missing == []


def test_the_package_names_no_document_users_lack():
    offenders = []
    for path in sorted((ROOT / "uet").rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES:
            for n, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if "uet-facts" in text or "design.md" in text:
                    offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == []
