"""Running tshark with the generated dissector on any Wireshark version, not only 4.0.

Three things differ between the Wireshark builds people have:

* how ``tshark -v`` names its Lua: "with Lua 5.2.4" (4.0, wrapped across a line break), "with Lua
  5.4.6" (4.4+), "Lua 5.4" - :func:`parse_version` reads them all;
* whether ``-X lua_script`` is honoured when tshark runs as root. Wireshark reads the Lua global
  ``run_user_scripts_when_superuser`` from the system ``init.lua`` (in the data directory in older
  versions, the global plugins directory in newer ones); Debian's sets it, builds without that file
  leave it unset and then silently skip every user script when run as root. It is no preference: ``-o
  run_user_scripts_when_superuser:TRUE`` (or ``gui.``...) is an unknown preference, which tshark
  rejects (exit status 1; tests/wireshark/test_wireshark_versions.py checks it), and ``WIRESHARK_PLUGIN_DIR`` is ignored under root.
  What works everywhere is to run tshark as an unprivileged user (:func:`run_as_for`,
  :func:`tshark_command`'s ``run_as``);
* development builds carry a built-in ``uet`` dissector; the plugin then registers as
  ``uetref`` (prelude.lua), and :func:`plugin_name` says which name it got.

The functions here are pure, except :func:`probe`, which runs tshark two or three times (well under
a second) to learn what they need.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Sequence

#: uid and gid tshark runs as when root would make it skip the script (nobody/nogroup on Debian)
UNPRIVILEGED = (65534, 65534)

_WS_VERSION = re.compile(r"\(Wireshark\)\s+(\d+)\.(\d+)\.(\d+)|\bWireshark\s+(\d+)\.(\d+)\.(\d+)")
# "with Lua 5.2.4", "with Lua\n5.4.6", "Lua 5.4", "Lua (5.4.6)"; not "without Lua", not "LuaJIT"
_LUA = re.compile(r"(?<![\w-])(without\s+)?Lua\s+\(?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class TsharkVersion:
    """What ``tshark -v`` says: Wireshark's version and its Lua's (None when not said / no Lua)."""

    wireshark: tuple[int, int, int] | None
    lua: tuple[int, ...] | None

    @property
    def development(self) -> bool:
        """An odd minor version (4.1, 4.3, 4.5): a development build."""
        return self.wireshark is not None and self.wireshark[1] % 2 == 1


def lua_version(text: str) -> tuple[int, ...] | None:
    """The Lua version in ``tshark -v`` output: (5, 2, 4) for "with Lua 5.2.4" (also when a line
    break falls after "Lua"), (5, 4) for "Lua 5.4"; None for "without Lua" or no mention."""
    for m in _LUA.finditer(text):
        if m.group(1):
            return None
        return tuple(int(g) for g in m.groups()[1:] if g is not None)
    return None


def parse_version(text: str) -> TsharkVersion:
    m = _WS_VERSION.search(text)
    ws = None
    if m:
        nums = [g for g in m.groups() if g is not None]
        ws = (int(nums[0]), int(nums[1]), int(nums[2]))
    return TsharkVersion(ws, lua_version(text))


def protocols(dump: str) -> set[str]:
    """Filter names in ``tshark -G protocols`` output (name, short name, filter name per line)."""
    out = set()
    for line in dump.splitlines():
        cols = line.split("\t")
        if len(cols) >= 3:
            out.add(cols[2].strip())
    return out


def plugin_name(known: Collection[str], name: str = "uet") -> str:
    """The name the plugin registers under when tshark already knows the protocols ``known``
    (mirrors new_proto() in prelude.lua): ``name``, or ``<name>ref`` when ``name`` is taken."""
    return f"{name}ref" if name in known else name


def run_as_for(euid: int, scripts_as_root: bool) -> tuple[int, int] | None:
    """Whom tshark must run as for ``-X lua_script`` to be honoured: None (as we are) unless we are
    root and this build skips user scripts for root; then :data:`UNPRIVILEGED`."""
    return UNPRIVILEGED if euid == 0 and not scripts_as_root else None


def tshark_command(pcap_path: str | Path, lua_path: str | Path | Sequence[str | Path], *,
                   output: str | None = "json", tshark: str | None = None,
                   prefs: Sequence[str] = (), run_as: tuple[int, int] | None = None) -> list[str]:
    """tshark reading ``pcap_path`` with the dissector(s) in ``lua_path`` loaded.

    ``output`` is a tshark ``-T`` format; the default ``json`` dissects every field of every frame
    and prints it (the closest match to ``uet decode --json``); ``None`` prints only the summary
    lines. ``-n`` turns name resolution off so that only dissection is timed. ``prefs`` are ``-o``
    settings. ``run_as`` (uid, gid) runs tshark through ``setpriv`` as that user with a clean
    environment (see :func:`run_as_for`; the files must be readable by that user). No ``-o`` is ever
    added for ``run_user_scripts_when_superuser``: no Wireshark version has such a preference.
    """
    exe = tshark or shutil.which("tshark") or "tshark"
    scripts = [lua_path] if isinstance(lua_path, (str, Path)) else list(lua_path)
    cmd: list[str] = []
    if run_as is not None:
        uid, gid = run_as
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--reset-env"]
    cmd += [exe, "-n", "-r", str(pcap_path)]
    for s in scripts:
        cmd += ["-X", f"lua_script:{s}"]
    for p in prefs:
        cmd += ["-o", p]
    if output:
        cmd += ["-T", output]
    return cmd


@dataclass(frozen=True)
class Tshark:
    """One tshark as :func:`probe` found it."""

    exe: str
    version: TsharkVersion
    builtin: frozenset[str] = field(repr=False)  # protocols it knows without any script
    euid: int
    scripts_as_root: bool  # honours -X lua_script as root (True when not root: not asked)

    @property
    def name(self) -> str:
        """The generated plugin's protocol name in this tshark: ``uet`` or ``uetref``."""
        return plugin_name(self.builtin)

    @property
    def run_as(self) -> tuple[int, int] | None:
        return run_as_for(self.euid, self.scripts_as_root)

    @property
    def usable(self) -> str | None:
        """None when the dissector can run in this tshark, else why not (and what to do)."""
        if self.version.lua is None:
            return "tshark has no Lua"
        if self.run_as is not None and shutil.which("setpriv") is None:
            return ("tshark ignores -X lua_script as root here and setpriv is missing: put "
                    "'run_user_scripts_when_superuser = true' into the init.lua of Wireshark's global "
                    "plugins folder (tshark -G folders), or run as a normal user")
        return None


_PROBE_LUA = 'Proto("uetprobe", "uet probe: user scripts run")\n'


def probe(exe: str | None = None, euid: int | None = None) -> Tshark:
    """Ask tshark its version, its built-in protocols and (as root) whether it runs user scripts."""
    exe = exe or shutil.which("tshark") or "tshark"
    euid = os.geteuid() if euid is None else euid
    ver = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=60).stdout
    builtin = protocols(subprocess.run([exe, "-G", "protocols"], capture_output=True, text=True,
                                       timeout=120).stdout)
    scripts_as_root = True
    if euid == 0:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "probe.lua"
            script.write_text(_PROBE_LUA, encoding="utf-8")
            # -G must come first (tshark reads it before any other option)
            out = subprocess.run([exe, "-G", "protocols", "-X", f"lua_script:{script}"],
                                 capture_output=True, text=True, timeout=120).stdout
            scripts_as_root = "uetprobe" in protocols(out)
    return Tshark(exe, parse_version(ver), frozenset(builtin), euid, scripts_as_root)
