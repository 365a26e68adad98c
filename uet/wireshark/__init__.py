"""The Wireshark side of uet: a Lua dissector generated from the header schema.

* :func:`generate_lua` - the Lua source (``uet wireshark -o uet.lua``);
* :func:`abbreviation` / :func:`renamed_fields` - the filter names it gives each schema field
  (``uet.pds.psn``; see :mod:`uet.wireshark.lua` for the scheme);
* :func:`tshark_command` - the command line that runs tshark with the generated dissector over a
  capture (used by the decode benchmark).
"""

from __future__ import annotations

import shutil

from .lua import generate_lua
from .lua import abbreviation, json_path, renamed_fields


def tshark_command(pcap_path: str, lua_path: str, *, output: str = "json",
                   tshark: str | None = None) -> list[str]:
    """tshark reading ``pcap_path`` with the dissector in ``lua_path`` loaded.

    ``output`` is a tshark ``-T`` format; the default ``json`` dissects every field of every frame
    and prints it (the closest match to ``uet decode --json``); ``None`` prints only the summary
    lines. ``-n`` turns name resolution off so that only dissection is timed.
    """
    exe = tshark or shutil.which("tshark") or "tshark"
    cmd = [exe, "-n", "-r", str(pcap_path), "-X", f"lua_script:{lua_path}"]
    if output:
        cmd += ["-T", output]
    return cmd


__all__ = ["abbreviation", "generate_lua", "json_path", "renamed_fields", "tshark_command"]
