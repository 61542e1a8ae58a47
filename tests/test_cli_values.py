"""Option values the commands cannot use are usage errors before any work starts: exit 2, one
message naming the option, the value and what is allowed, never a traceback. The same holds for
the pytest plugin's markers and factories (a TypeError/ValueError with a sentence).

The commands run in this process (`dshkit.cli.main`, as the console script does), where a refused
value also prints nothing on stdout; `serve` and `record` return as soon as they have started, so
a value they wrongly accept fails the test instead of serving. A few refusals also run as a real
`dshkit` process, for its exit status and the split between stdout and stderr."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main

SERVES = 99
"""What `serve` and `record` return here once they have started: their wait for a signal is a
finished future, so a value they accepted ends the call instead of serving forever."""


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            caplog: pytest.LogCaptureFixture) -> Any:
    """`main(argv)` in this process: its exit status (argparse's included) and its stderr."""
    from dshkit.mock_server import cli as serve_cli

    def started() -> asyncio.Future[int]:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        done.set_result(SERVES)
        return done

    monkeypatch.setattr(serve_cli, "exit_on_signals", started)
    caplog.set_level(logging.WARNING)

    def run(argv: list[str]) -> tuple[int, str]:
        capsys.readouterr()
        caplog.clear()
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        out, err = capsys.readouterr()
        assert out == "", out  # a refused value prints nothing on stdout
        said = err + caplog.text
        assert "Traceback" not in said, said
        return code, said

    return run


def _process(argv: list[str]) -> tuple[int, str, str]:
    """The command in a process of its own: a value that is not refused would start serving, and
    the bounded wait turns that into a failure instead of a hung test."""
    try:
        done = subprocess.run([sys.executable, "-m", "dshkit", *argv], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"dshkit {' '.join(argv)} accepted the value and kept running")
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def a_dir(tmp_path: Path) -> Path:
    (tmp_path / "a_file").write_text("x")
    return tmp_path


CASES: list[tuple[list[str], tuple[str, ...]]] = [
    (["serve", "--journal", "{dir}"], ("--journal", "is a directory")),
    (["serve", "--journal", "{dir}/a_file/j.jsonl"], ("--journal", "a_file", "not a directory")),
    (["serve", "--journal", "/proc/dshkit-no-such/j.jsonl"], ("--journal", "cannot create or open")),
    (["serve", "--backlog", "10000000000000"], ("--backlog", "10000000000000", "1-2147483647")),
    (["serve", "--max-body-bytes", "0"], ("--max-body-bytes", "at least 1", "got 0")),
    (["serve", "--max-body-bytes", "-1"], ("--max-body-bytes", "got -1")),
    (["serve", "--port", "99999"], ("--port", "99999", "0-65535")),
    (["record", "--port", "99999", "--upstream", "http://127.0.0.1:9", "--out", "{dir}/c"], ("--port", "99999", "0-65535")),
    (["record", "--out", "/proc/dshkit-x", "--upstream", "http://127.0.0.1:9"], ("--out", "/proc/dshkit-x", "cannot create")),
    (["record", "--scrub", "", "--upstream", "http://127.0.0.1:9", "--out", "{dir}/c"], ("--scrub ''", "empty string")),
    (["record", "--scrub", "LABEL=", "--upstream", "http://127.0.0.1:9", "--out", "{dir}/c"], ("--scrub 'LABEL='", "empty string")),
    (["replay", "{dir}/log.jsonl", "--out", "{dir}"], ("--out", "is a directory")),
    (["run", "hi", "--pace", "-1"], ("--pace", "got -1")),
    (["run", "hi", "--model", ""], ("--model", "must not be empty")),
    (["conformance", "--json", "{dir}"], ("--json", "is a directory")),
    (["conformance", "--junit", "{dir}/a_file/r.xml"], ("--junit", "not a directory")),
    (["conformance", "--scenarios", "{dir}/empty"], ("--scenarios", "no scenario found")),
    (["conformance", "--only", "sse-crlf", "--json", "/proc/dshkit-no-such/r.json"], ("--json", "cannot create its folder")),
    (["conformance", "--server", "http://127.0.0.1:9", "--timeout", "0"], ("--timeout", "above 0")),
    (["conformance", "--concurrency", "0"], ("--concurrency", "at least 1")),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_value_is_a_usage_error(argv: list[str], words: tuple[str, ...], a_dir: Path, run_cli: Any) -> None:
    (a_dir / "empty").mkdir()
    code, err = run_cli([a.replace("{dir}", str(a_dir)) for a in argv])
    assert code == 2, err
    for word in words:
        assert word in err, (word, err)


@pytest.mark.parametrize("argv", [
    ["serve", "--port", "99999"],
    ["record", "--scrub", "", "--upstream", "http://127.0.0.1:9", "--out", "{dir}/c"],
    ["conformance", "--concurrency", "0"],
], ids=["serve", "record", "conformance"])
def test_a_real_process_exits_2_with_the_message_on_stderr(argv: list[str], a_dir: Path) -> None:
    """The same refusals as the `dshkit` process a user runs: exit status 2, nothing on stdout."""
    words = dict((" ".join(a), w) for a, w in CASES)[" ".join(argv)]
    code, out, err = _process([a.replace("{dir}", str(a_dir)) for a in argv])
    assert (code, out) == (2, ""), err
    assert all(word in err for word in words), err


def test_conformance_report_over_a_directory_is_refused_before_the_run(
    a_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run programmatically (no argparse type in between): still refused before any scenario runs.
    import argparse

    from dshkit.conformance.cli import run_conformance

    args = argparse.Namespace(client=[], matrix_md=None, protocol="chat", server=None, adapter=None,
                              scenarios=None, only=["A1"], concurrency=None, json=str(a_dir), junit=None,
                              verbose=False)
    code, results = run_conformance(args)
    err = capsys.readouterr().err
    assert code == 2 and not results  # found before the run
    assert f"--json {a_dir}: is a directory" in err


def test_conformance_makes_the_report_folder_before_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "new" / "folder" / "r.json"
    code = main(["conformance", "--only", "sse-crlf", "--json", str(report)])
    assert code == 0, capsys.readouterr().err
    assert json.loads(report.read_text())["scenarios"]


PLUGIN_CASES = {
    "cassette name 123": (
        "@pytest.mark.dshkit_cassette(123)\ndef test_x(dshkit_cassette):\n    pass\n",
        "name must be a path (str), got int"),
    "script bogus option": (
        "@pytest.mark.dshkit_script(bogus_kw=1)\ndef test_x(mock_deepseek):\n    pass\n",
        "unknown option(s) bogus_kw"),
    "factory port": (
        "async def test_x(dshkit_mock_server):\n    await dshkit_mock_server(port=99999)\n",
        "port must be an integer 0-65535 (0: any free port), got 99999"),
    "sync factory port": (
        "def test_x(dshkit_mock_server_sync):\n    dshkit_mock_server_sync(port=99999)\n",
        "port must be an integer 0-65535 (0: any free port), got 99999"),
}


@pytest.mark.parametrize("name", PLUGIN_CASES)
def test_plugin_usage_errors_are_sentences(pytester: pytest.Pytester, name: str) -> None:
    body, message = PLUGIN_CASES[name]
    pytester.makepyfile(test_user="import pytest\n\n" + body)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-p", "no:xdist")
    text = "\n".join(result.outlines)
    assert result.ret == 1, text
    assert message in text, text
