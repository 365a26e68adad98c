"""What a user expects of the package: a LICENSE that is the licence pyproject.toml declares,
a description, and the project's URLs (placeholders until it has a public address)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_license_file_is_the_declared_bsd_2_clause():
    assert PROJECT["license"] == {"text": "BSD-2-Clause"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 2-Clause License\n\nCopyright (c) ")
    assert ", the uet authors\n" in text.splitlines(keepends=True)[2]
    # the two conditions of BSD-2-Clause, and no third (the no-endorsement clause of BSD-3)
    assert "1. Redistributions of source code must retain" in text
    assert "2. Redistributions in binary form must reproduce" in text
    assert "3." not in text and "endorse" not in text


def test_metadata_has_a_description_and_urls():
    assert len(PROJECT["description"]) > 40 and "UEC" in PROJECT["description"]
    urls = PROJECT["urls"]
    assert {"Homepage", "Documentation", "Source", "Changelog"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
