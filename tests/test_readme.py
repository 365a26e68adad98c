"""Every code block of README.md runs as shown, on loopback.

Which blocks run, and how:

* ```` ```sh ```` blocks are scripts, run whole by bash;
* ```` ```console ```` blocks are a session: the lines that start with ``$ `` run in order in one
  bash (the others are output as the command prints it, and are not checked);
* ```` ```python ```` blocks run with python;
* anything else (```` ```text ````, a bare fence) is output and is not run.

Two blocks are not run here: the README's two set-up commands (``.ci/run`` runs the second, and the
first installs the package), which must be present byte for byte. A block right below the line
``<!-- not run: WHY -->`` is not run either (no such block today). Each block must exit 0.

Each block runs in a fresh directory (``captures/`` linked in), with ``uet`` meaning
``python -m uet`` of this checkout, and, where the machine allows it, in a network namespace of its
own (``unshare -n``): the README binds the UET port 4793 on 127.0.0.1, which other tests on a shared
machine may hold at the same time.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# The repository's rule: a fresh machine needs exactly these two commands (.ci/run runs the second).
SETUP = ("pip install . && uet demo", "pip install -e '.[dev,cluster]' && python -m pytest -q")
NOT_RUN = re.compile(r"^<!-- not run: \S.* -->$")
FENCE = re.compile(r"^```(\S*)\s*$")
RUNNABLE = ("sh", "console", "python")


@dataclass(frozen=True)
class Block:
    line: int            # 1-based line of the opening fence
    lang: str
    body: str
    skip: str | None     # why it is not run, or None

    def script(self) -> str:
        """The bash script (or python source) that runs this block."""
        if self.lang == "console":
            return "\n".join(ln[2:] for ln in self.body.splitlines() if ln.startswith("$ ")) + "\n"
        return self.body


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a markdown text, each with what the README says about running it."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        i += 1
        body = []
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        i += 1
        src = "\n".join(body) + "\n"
        skip = None
        if start > 0 and NOT_RUN.match(lines[start - 1]):
            skip = lines[start - 1][len("<!-- not run: "):-len(" -->")]
        elif lang == "sh" and src.strip() in SETUP:
            skip = "a set-up command: CI runs it"
        elif lang not in RUNNABLE:
            skip = "output"
        out.append(Block(start + 1, lang, src, skip))
    return out


README_BLOCKS = blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in README_BLOCKS if b.skip is None]


@cache
def isolation() -> list[str]:
    """The command prefix that gives a block its own network namespace with loopback up, or []."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return []
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        r = subprocess.run([*prefix, "ip", "link", "set", "lo", "up"], capture_output=True)
        if r.returncode == 0:
            return prefix
    return []


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess:
    bindir = cwd / ".bin"
    bindir.mkdir()
    shim = bindir / "uet"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m uet "$@"\n')
    shim.chmod(0o755)
    (cwd / "captures").symlink_to(ROOT / "captures")
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if block.lang == "python":
        (cwd / "block.py").write_text(block.body)
        body = f'"{sys.executable}" block.py\n'
    else:
        body = block.script()
    (cwd / "block.sh").write_text("set -e\n" + body)
    prefix = isolation()
    cmd = ["bash", "-c", "ip link set lo up && exec bash block.sh"] if prefix else ["bash", "block.sh"]
    # Output to a file, not a pipe: what the block leaves in the background (uet recv ... &) keeps
    # its stdout open after the block has ended.
    with open(cwd / "block.out", "wb") as log:
        p = subprocess.Popen([*prefix, *cmd], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            p.wait(timeout=300)  # a guard against a hang, not a time budget
        finally:
            try:  # the block's background processes
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    out = (cwd / "block.out").read_text(errors="replace")
    return subprocess.CompletedProcess(p.args, p.returncode, out, "")


@pytest.mark.parametrize("block", RUN, ids=[f"README.md:{b.line}:{b.lang}" for b in RUN])
def test_readme_block_runs(block: Block, tmp_path: Path) -> None:
    r = run_block(block, tmp_path)
    assert r.returncode == 0, f"README.md line {block.line} ({block.lang}) exited {r.returncode}:\n{r.stdout[-4000:]}"


def test_the_readme_runs_a_block_of_each_kind_and_holds_the_two_setup_commands() -> None:
    assert {b.lang for b in RUN} == set(RUNNABLE)
    setup = [b.body.strip() for b in README_BLOCKS if b.skip == "a set-up command: CI runs it"]
    assert setup == list(SETUP)
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"pip install -q -e '.[dev,cluster]' && python -m pytest -q\n" in ci


def test_the_readme_is_at_most_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_not_run_marker_skips_exactly_the_next_block_and_console_runs_only_prompt_lines() -> None:
    text = ("intro\n\n<!-- not run: needs root -->\n```sh\nip link add x\n```\n\n"
            "<!-- not run: -->\n```sh\necho a\n```\n"  # an empty reason is no marker
            "```console\n$ echo one\none\n$ echo two\ntwo\n```\n"
            "```text\nplain output\n```\n"
            "```sh\npip install . && uet demo\n```\n")
    got = blocks(text)
    assert [(b.line, b.lang, b.skip) for b in got] == [
        (4, "sh", "needs root"), (9, "sh", None), (12, "console", None), (18, "text", "output"),
        (21, "sh", "a set-up command: CI runs it")]
    assert got[2].script() == "echo one\necho two\n"


def test_a_failing_block_fails(tmp_path: Path) -> None:
    r = run_block(Block(1, "console", "$ uet decode no-such-file.pcap\n", None), tmp_path)
    assert r.returncode != 0 and "no-such-file.pcap" in r.stdout
