"""`dshkit --help` and every command's `--help` carry examples, and every example parses."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from dshkit.cli import build_parser

COMMANDS = ["run", "decode", "serve", "record", "replay", "conformance", "view"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _example_commands(text: str) -> list[list[str]]:
    """`dshkit ...` lines of an epilog, without their trailing comment (2+ spaces) and pipes."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("dshkit "):
            command = re.split(r"\s{2,}", line)[0]
            for first in re.split(r" \| | && ", command):
                if first.startswith("dshkit "):
                    out.append(shlex.split(first)[1:])
    return out


def test_every_command_is_listed_and_has_examples() -> None:
    parser = build_parser()
    subs = _subparsers(parser)
    assert set(COMMANDS) <= set(subs)
    assert all("examples:" in sub.format_help() for sub in subs.values())
    top = parser.format_help()
    assert "examples:" in top and all(f"dshkit {c} " in top for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_example_parses(command: str) -> None:
    parser = build_parser()
    text = _subparsers(parser)[command].format_help()
    assert "examples:" in text
    examples = _example_commands(text.split("examples:", 1)[1])
    assert examples, f"`dshkit {command} --help` shows no example"
    for argv in examples:
        parser.parse_args(argv)  # SystemExit (a usage error) fails the test
