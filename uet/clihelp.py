"""What ``uet X --help`` prints: plain text a user reads in a terminal, whatever the source.

Several subcommands take their description from their module docstring, written for a reader of
the code (reST roles, ``literals``, module names); this module turns that into plain text at the
point of display (:func:`plain`), keeps each paragraph and indented table of a description while
wrapping it to the terminal (:class:`PlainFormatter`), adds the default to an option's help when
its text gives none, and holds the example lines every subcommand ends with (:data:`EXAMPLES`).
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import Any

# :mod:`uet.io`, :func:`~uet.x.y`, :class:`Name <target>`: the name a reader sees
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)\s*(?:<[^>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``", re.S)
_LINK = re.compile(r"`([^`<]+?)\s*(?:<[^>]*>)?`_{1,2}")
# issue numbers are the project's history, not something a user can look up
_ISSUE = re.compile(r"\s*\((?:see |since )?issues? \d+(?:(?:, | and )\d+)*\)|,? issues? \d+(?:(?:, | and )\d+)*")


def plain(text: str) -> str:
    """``text`` without reST markup or issue numbers: ``x`` and :mod:`x` read as x."""
    text = _ROLE.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    return _ISSUE.sub("", text)


#: how to get matplotlib for --plot and the sweep's plots: uet is not on a package index, so
#: "pip install 'uet[plot]'" cannot work; in a clone the extra installs it
MATPLOTLIB_HINT = "pip install matplotlib, or pip install -e '.[plot]' in the uet clone"


def _default_words(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) if value else "none"
    return "none" if value is None else str(value)


class PlainFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs: plain text, each paragraph wrapped to the terminal, a paragraph
    with an indented line (a table, command lines) kept as written. Option help: plain text,
    with ``(default X)`` added when it says no default (flags and required options excepted)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in re.split(r"\n\s*\n", textwrap.dedent(plain(text)).strip("\n")):
            if any(line[:1].isspace() for line in para.splitlines()):
                out.append(textwrap.indent(para, indent))
            else:
                # never split an option (--no-fabric) or a path at its hyphen
                out.append(textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                                         subsequent_indent=indent, break_on_hyphens=False,
                                         break_long_words=False))
        return "\n\n".join(out)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False,
                             break_long_words=False)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = plain(action.help or "")
        if (action.option_strings and action.nargs != 0 and not action.required
                and action.default is not argparse.SUPPRESS and "default" not in text.lower()):
            text += f" (default {_default_words(action.default)})"
        return text


def _example_epilog(lines: list[str]) -> str:
    return "example" + ("s" if len(lines) > 1 else "") + ":\n" + "\n".join(f"  {c}" for c in lines)


#: two or three command lines per subcommand that run as shown (captures/ is the repository's)
EXAMPLES: dict[str, list[str]] = {
    "decode": ["uet decode captures/uet_pds.pcap",
               "uet decode --json --port 40001 demo.pcap   # the UET port a demo capture used"],
    "wireshark": ["uet wireshark -o uet.lua   # then: tshark -X lua_script:uet.lua -r captures/uet_pds.pcap"],
    "analyze": ["uet analyze captures/uet_flows.pcap",
                "uet analyze captures/uet_flows.pcap --ladder 1 --svg pdc1.svg"],
    "sim": ["uet sim --bytes 16MiB --paths 4 --loss 0.01 --json",
            "uet sim --topology leafspine:4,4,2 --traffic incast:8 --bytes 1MiB"],
    "recv": ["uet recv --bind 127.0.0.1:4793 --out received.bin --count 1"],
    "send": ["uet send --to 127.0.0.1:4793 --bytes 4MiB"],
    "fabric": ["uet fabric --to 127.0.0.1:4793 --paths 4 --loss 0.01   # then: uet send --to 127.0.0.2:4793 ..."],
    "demo": ["uet demo",
             "uet demo --bytes 64MiB --loss 0 --trim 0 --capture demo.pcap"],
    "conformance": ["uet conformance --list",
                    "uet conformance 127.0.0.1:4793 --profile pds"],
    "compare": ["uet compare incast --plot incast.png",
                "uet compare degraded-link --designs roce,uet --json"],
    "sweep": ["uet sweep tools/bench_cc.toml --out runs/cc --dry-run"],
}

TOP_EPILOG = _example_epilog(["uet demo", "uet decode captures/uet_pds.pcap",
                              "uet COMMAND --help   # what COMMAND takes, with examples"])


def add_examples(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Give each subcommand whose module set none its example lines (:data:`EXAMPLES`)."""
    for name, parser in subparsers.choices.items():
        if not parser.epilog and name in EXAMPLES:
            parser.epilog = _example_epilog(EXAMPLES[name])
