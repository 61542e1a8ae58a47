"""The CLI teaches: did-you-mean for commands, flags and `--only`; a subcommand's bad flag shows
that subcommand's usage; options are applied or refused, never ignored; the top-level help
imports no subcommand."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.cli import COMMANDS, SUMMARIES, build_parser, main
from dshkit.mock_server import MockServer

from .mock_server.cli_process import ServeProcess
from .mock_server.wire import chat


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


@pytest.mark.parametrize(("selector", "meant"), [
    ("tool-split-args", "tool-split-arguments"), ("area:tool", "area:tools"), ("A55", "A5")])
def test_only_suggests_the_closest_id_tag_or_area(selector: str, meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--only", selector]) == 2
    err = capsys.readouterr().err
    assert f"--only {selector!r} matches no scenario; did you mean {meant!r}" in err
    assert "areas: " in err and "tools" in err


def test_serve_repeat_last_applies_to_a_script(tmp_path: Path) -> None:
    script = tmp_path / "one.yaml"
    script.write_text("name: one\nsteps:\n  - fault: success\n")
    p = ServeProcess("--script", str(script), "--repeat-last")
    try:
        with httpx.Client(base_url=p.base_url, timeout=5, headers={"X-Mock-Session": "s"}) as c:
            codes = [c.post("/chat/completions", json=chat()).status_code for _ in range(3)]
        assert codes == [200, 200, 200]  # without --repeat-last the 2nd is a 418 "no step left"
    finally:
        p.kill()


def test_serve_repeat_last_without_steps_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--repeat-last"]) == 2
    assert "--repeat-last applies to the steps of --sequence or --script" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["serve", "--repeat-last"], ["serve", "--help"], ["serve", "--bogus"]])
def test_serve_run_in_a_host_process_leaves_its_collector_on(argv: list[str]) -> None:
    """`serve` starts with the cyclic collector off; run in a caller's process and ended before
    it serves (refused options, help, a usage error), it leaves the collector on as it found it."""
    assert gc.isenabled()
    with contextlib.suppress(SystemExit):
        main(argv)
    assert gc.isenabled()


def test_run_max_retries_limits_the_retries_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(sequence="rate_limit", repeat_last=True) as server:
        code = main(["run", "hi", "--base-url", server.base_url, "--api-key", "sk-retry", "--max-retries", "0",
                     "--workspace", str(tmp_path), "--session", str(tmp_path / "s.jsonl")])
        sent = len(server.journal.chat())
    out = capsys.readouterr().out
    assert code == 1
    assert sent == 1  # the default policy would have retried the 429
    assert "gave up on RATE_LIMIT after 0 retries: the retry limit is 0 (--max-retries 0)" in out
    assert "raise --max-retries" in out


def test_run_max_retries_rejects_a_negative_limit(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["run", "hi", "--max-retries", "-1"], capsys)
    assert err.startswith("usage: dshkit run ") and "--max-retries: must be 0 or more, got -1" in err


def test_decode_pretty_is_described_as_what_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["decode", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "indented JSON" not in text
    assert "--pretty print text for a reader instead of JSON" in text


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


def test_the_summaries_are_what_each_command_registers() -> None:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == SUMMARIES
    assert list(SUMMARIES) == list(COMMANDS)


@pytest.mark.parametrize(("argv", "meant"), [
    (["--only", "S411"], "'S41'"), (["--only", "area:server-strem"], "'area:server-stream'"),
    (["--protocol", "anthropic", "--only", "AN144"], "'AN14'")])
def test_server_only_suggests_the_closest_check(argv: list[str], meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--server", "http://127.0.0.1:9", *argv]) == 2  # refused before any connection
    err = capsys.readouterr().err
    assert f"names no {'Anthropic ' if 'anthropic' in argv else ''}server check; did you mean {meant}" in err


class _ProbeWhenReady(asyncio.Future[int]):
    """What `serve`'s wait for a signal becomes here: `serve` awaits it right after printing its
    ready line, and then one request without a key goes to the port that line names; the call
    ends with that request's status as its exit code."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        super().__init__()
        self._capsys = capsys
        self._probe: asyncio.Task[None] | None = None

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        super().add_done_callback(fn, context=context)
        if self._probe is None:
            self._probe = asyncio.get_running_loop().create_task(self._ask())

    async def _ask(self) -> None:
        ready = next(json.loads(line) for line in self._capsys.readouterr().out.splitlines()
                     if json.loads(line)["type"] == "ready")
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.get(ready["base_url"] + "/models")
        self.set_result(answer.status_code)


def test_serve_reads_its_key_from_the_environment_of_each_call_in_one_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`main` keeps each command's parser for the next call in the process, so nothing a call
    depends on may be fixed in it: `$DSHKIT_MOCK_API_KEY` set after a first `serve` still
    guards the second, and unset again it guards nothing."""
    from dshkit.mock_server import cli as serve_cli

    monkeypatch.setattr(serve_cli, "exit_on_signals", lambda: _ProbeWhenReady(capsys))
    monkeypatch.delenv("DSHKIT_MOCK_API_KEY", raising=False)
    assert main(["serve", "--port", "0"]) == 200
    monkeypatch.setenv("DSHKIT_MOCK_API_KEY", "sk-dshkit-from-env")
    assert main(["serve", "--port", "0"]) == 401
    assert main(["serve", "--port", "0", "--api-key", ""]) == 200  # an empty key still means none
    monkeypatch.delenv("DSHKIT_MOCK_API_KEY")
    assert main(["serve", "--port", "0"]) == 200


def test_a_kept_parser_gives_each_call_its_own_lists() -> None:
    """An `append` option's default is one list in the kept parser; a command that added to the
    list it was given must not hand that addition to the next call."""
    from dshkit.cli import _command_parser, _parse

    first = _parse(_command_parser("serve"), "serve", ["serve"])
    first.script.append("left-over.yaml")
    assert _parse(_command_parser("serve"), "serve", ["serve"]).script == []
