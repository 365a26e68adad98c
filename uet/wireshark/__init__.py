"""The Wireshark side of uet: a Lua dissector generated from the header schema.

* :func:`generate_lua` - the Lua source (``uet wireshark -o uet.lua``);
* :func:`abbreviation` / :func:`renamed_fields` - the filter names it gives each schema field
  (``uet.pds.psn``; see :mod:`uet.wireshark.lua` for the scheme);
* :func:`tshark_command` - the command line that runs tshark with the generated dissector over a
  capture (used by the decode benchmark and the Wireshark tests); :mod:`uet.wireshark.tshark` reads
  what differs between Wireshark versions (``tshark -v``, scripts as root, a built-in ``uet``).
"""

from __future__ import annotations

from .lua import generate_lua
from .lua import abbreviation, json_path, renamed_fields
from .tshark import tshark_command

__all__ = ["abbreviation", "generate_lua", "json_path", "renamed_fields", "tshark_command"]
