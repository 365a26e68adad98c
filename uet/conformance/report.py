"""The report of a conformance run: readable text (stderr), one JSON object (stdout, ``--json``)
and JUnit XML (``--junit FILE``, standard library ``xml.etree``).

JSON shape: ``{"target": "ADDR:PORT", "ok": bool, "target_answered": bool, "checks": [{"name",
"facts", "level", "profile", "result", "detail"}, ...], "summary": {"total", "pass", "fail",
"skip", "must_failed", "should_failed"}}``.

JUnit: one ``<testsuite name="uet conformance">`` with one ``<testcase>`` per check
(``classname`` "uet.conformance.<profile>", ``name`` the check's name); a failed must is a
``<failure>``, a failed should is a ``<failure type="should">`` as well (CI systems show it; the
exit status ignores it), a skip is ``<skipped>``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import IO, Any

from .checks import Result, Run

_MARK = {"pass": "PASS", "fail": "FAIL", "skip": "skip"}


def progress_line(r: Result) -> str:
    return (f"  {_MARK[r.result]:4}  {r.name:<26} {r.facts:<5} {r.level:<6} {r.detail}")


def text_header(target: str, profiles: list[str], timeout: float) -> str:
    return (f"uet conformance: target {target}, profiles {', '.join(profiles)}, "
            f"timeout {timeout:g} s per wait")


def text_summary(run: Run) -> str:
    s = run.summary
    verdict = "conformant (every must passed)" if run.ok else "NOT conformant"
    if not run.target_answered:
        verdict = "NOT conformant: the target never answered"
    return (f"uet conformance: {s['pass']} passed, {s['fail']} failed "
            f"({s['must_failed']} must, {s['should_failed']} should), {s['skip']} skipped "
            f"of {s['total']}: {verdict}")


def to_json(run: Run) -> dict[str, Any]:
    return {"target": run.target, "ok": run.ok, "target_answered": run.target_answered,
            "checks": [r.to_json() for r in run.results], "summary": run.summary}


def write_json(run: Run, out: IO[str]) -> None:
    out.write(json.dumps(to_json(run), separators=(",", ":")) + "\n")
    out.flush()


def junit_tree(run: Run) -> ET.ElementTree:
    s = run.summary
    suite = ET.Element("testsuite", {
        "name": "uet conformance", "tests": str(s["total"]), "failures": str(s["fail"]),
        "errors": "0", "skipped": str(s["skip"]),
        "time": f"{sum(r.seconds for r in run.results):.3f}"})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "target", "value": run.target})
    for r in run.results:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"uet.conformance.{r.profile}", "name": r.name,
            "time": f"{r.seconds:.3f}"})
        label = f"[{r.level}, facts {r.facts}] {r.detail}"
        if r.result == "fail":
            f = ET.SubElement(case, "failure", {"type": r.level, "message": label})
            f.text = label
        elif r.result == "skip":
            ET.SubElement(case, "skipped", {"message": label})
        else:
            out = ET.SubElement(case, "system-out")
            out.text = label
    return ET.ElementTree(suite)


def write_junit(run: Run, fh: IO[bytes]) -> None:
    tree = junit_tree(run)
    ET.indent(tree)
    tree.write(fh, encoding="utf-8", xml_declaration=True)
