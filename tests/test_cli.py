"""`dshkit.cli`, the entry point: `dshkit --help` and every command's `--help` carry examples, and
every example parses; a mistyped command or flag gets a did-you-mean and the usage of the command
it was given to; the summaries are what each command registers; the top-level help imports no
subcommand; a parser kept for the next call in the process hands it nothing of this one's."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys

import pytest

from dshkit.cli import COMMANDS, SUMMARIES, build_parser, main

WITH_EXAMPLES = ["run", "decode", "serve", "record", "replay", "conformance", "view"]


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
    assert set(WITH_EXAMPLES) <= set(subs)
    assert all("examples:" in sub.format_help() for sub in subs.values())
    top = parser.format_help()
    assert "examples:" in top and all(f"dshkit {c} " in top for c in WITH_EXAMPLES)


@pytest.mark.parametrize("command", WITH_EXAMPLES)
def test_each_example_parses(command: str) -> None:
    parser = build_parser()
    text = _subparsers(parser)[command].format_help()
    assert "examples:" in text
    examples = _example_commands(text.split("examples:", 1)[1])
    assert examples, f"`dshkit {command} --help` shows no example"
    for argv in examples:
        parser.parse_args(argv)  # SystemExit (a usage error) fails the test


# --- did you mean, and whose usage ---------------------------------------------------------------


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(("word", "meant"), [("rn", "run"), ("serv", "serve"), ("conformence", "conformance")])
def test_a_mistyped_command_gets_a_suggestion(word: str, meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error([word, "--help"], capsys)
    assert f"unknown command {word!r}; did you mean {meant!r}?" in err
    assert err.startswith("usage: dshkit [-h]")


@pytest.mark.parametrize(("argv", "usage", "meant"), [
    (["run", "hi", "--max-stpes", "3"], "usage: dshkit run ", "--max-steps"),
    (["conformance", "--adaptr", "x:y"], "usage: dshkit conformance ", "--adapter"),
    (["serve", "--sequense", "success"], "usage: dshkit serve ", "--sequence"),
    (["decode", "f.sse", "--prety"], "usage: dshkit decode ", "--pretty"),
])
def test_a_bad_flag_prints_its_subcommands_usage(argv: list[str], usage: str, meant: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(argv, capsys)
    assert err.startswith(usage), err
    bad = next(a for a in argv if a.startswith("--"))
    assert f"unrecognized arguments: {bad}" in err
    assert f"did you mean {meant!r}" in err


def test_an_unrelated_flag_gets_no_wild_guess(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["conformance", "--bogus"], capsys)
    assert "unrecognized arguments: --bogus" in err and "did you mean" not in err


def test_the_summaries_are_what_each_command_registers() -> None:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == SUMMARIES
    assert list(SUMMARIES) == list(COMMANDS)


def test_a_kept_parser_gives_each_call_its_own_lists() -> None:
    """An `append` option's default is one list in the kept parser; a command that added to the
    list it was given must not hand that addition to the next call."""
    from dshkit.cli import _command_parser, _parse

    first = _parse(_command_parser("serve"), "serve", ["serve"])
    first.script.append("left-over.yaml")
    assert _parse(_command_parser("serve"), "serve", ["serve"]).script == []


# --- the top-level help imports no subcommand ---------------------------------------------------

_HEAVY = [*COMMANDS.values(), "dshkit.harness", "dshkit.mock_server", "dshkit.conformance", "dshkit.view",
          "aiohttp", "httpx", "pydantic", "jsonschema"]


TOP_LEVEL_ARGVS = [["--help"], ["--version"], ["nosuchcommand"], []]

EACH_TOP_LEVEL = """
import contextlib, io, json, sys
from dshkit.cli import main
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    print(json.dumps([code, out.getvalue(), sorted(sys.modules)]), flush=True)
"""
"""`main` on each argv of a JSON list, one after the other in one fresh interpreter: a line
`[exit code, stdout, sys.modules so far]` for each. The modules so far hold those of the argvs
before, so none being heavy after all of them is none being heavy after each alone."""


@pytest.fixture(scope="module")
def top_level_runs() -> list[tuple[int, str, list[str]]]:
    r = subprocess.run([sys.executable, "-c", EACH_TOP_LEVEL, json.dumps(TOP_LEVEL_ARGVS)],
                       capture_output=True, text=True, timeout=60, check=True)
    return [tuple(json.loads(line)) for line in r.stdout.splitlines()[-len(TOP_LEVEL_ARGVS):]]  # type: ignore[misc]


@pytest.mark.xdist_group("cli-top-level-runs")
@pytest.mark.parametrize("argv", TOP_LEVEL_ARGVS)
def test_top_level_help_imports_no_subcommand(argv: list[str], top_level_runs: list[tuple[int, str, list[str]]]) -> None:
    exit_code, stdout, modules = top_level_runs[TOP_LEVEL_ARGVS.index(argv)]
    assert exit_code == (0 if argv in (["--help"], ["--version"]) else 2)
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in _HEAVY)]
    assert loaded == []
    if argv == ["--help"]:
        assert all(name in stdout for name in COMMANDS)
