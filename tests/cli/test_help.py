"""Every ``uet`` --help stands alone: plain text (no reST markup), no document outside the
repository named, no issue number, each option with its default, and example lines that parse."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from uet import cli, clihelp

# reST a reader of a terminal should never see: ``literal``, :role:`x`, `link`_
MARKUP = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`|`[^`\n]+`_")
OUTSIDE = ("design.md", "uet-facts", "/work/shared")
ISSUE = re.compile(r"\bissues? \d")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


PARSER = cli.build_parser()
COMMANDS = _subparsers(PARSER)


def _help(argv: list[str], capsys) -> str:
    assert cli.main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: uet")
    return out


def test_every_subcommand_is_walked():
    assert set(COMMANDS) == {"decode", "wireshark", "analyze", "sim", "recv", "send", "fabric",
                             "demo", "conformance", "compare", "sweep"}
    assert set(clihelp.EXAMPLES) == set(COMMANDS)


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_text_that_names_nothing_outside(command, capsys):
    text = _help([command] if command else [], capsys)
    assert not MARKUP.search(text), MARKUP.search(text).group(0)
    for name in OUTSIDE:
        assert name not in text
    assert not ISSUE.search(text), ISSUE.search(text).group(0)
    # the example lines close the help
    assert re.search(r"\nexamples?:\n(  uet .+\n)+$", text), text[-300:]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_says_its_default(command):
    """An option that takes a value says what it is when not given (flags are off, required
    options have none)."""
    for a in COMMANDS[command]._actions:
        if a.option_strings and a.nargs != 0 and not a.required and a.help != argparse.SUPPRESS:
            formatter = COMMANDS[command]._get_formatter()
            assert "default" in formatter._get_help_string(a).lower(), (command, a.option_strings)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_examples_parse(command):
    """Each example line is a command line ``uet`` accepts (parsed, not run)."""
    for line in clihelp.EXAMPLES[command]:
        words = shlex.split(line, comments=True)
        assert words[:2] == ["uet", command]
        args = cli.build_parser().parse_args(words[1:])
        assert args.command == command


def test_plain_turns_rest_into_what_a_reader_sees():
    assert clihelp.plain("``uet demo`` and :mod:`uet.io` (:func:`~uet.x.through_relay`), "
                         "`the manual <docs/index.md>`_ (issue 19)") == (
        "uet demo and uet.io (uet.x.through_relay), the manual")
    assert clihelp.plain("the spec (issues 27, 30), then") == "the spec, then"


def test_a_table_keeps_its_lines_and_prose_is_wrapped(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps to the terminal's width less 2
    text = _help(["compare"], capsys)
    assert "\n  roce      RC queue pairs" in text and "\n  uet       uet sim's fabric" in text
    assert max(len(line) for line in text.splitlines() if not line.startswith("  ")) <= 78


def test_recv_count_zero_is_documented(capsys):
    """--count 0 is the default and means no limit: the help says so."""
    text = " ".join(_help(["recv"], capsys).split())
    assert "--count N exit after N messages (default 0: no limit, serve until stopped)" in text


def test_prose_never_splits_an_option_at_its_hyphen(capsys):
    for command in COMMANDS:
        text = _help([command], capsys)
        assert not re.search(r"\w-\n", text), (command, re.search(r".*\w-\n.*", text).group(0))
