"""The `grep` matcher process, driven as the `grep` tool drives it (one worker per call): it
answers with the matching line numbers up to the tool's cap, reports any pattern it cannot
compile, and a catastrophic pattern neither freezes the event loop nor outlives the call's
deadline or its cancel signal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.builtin import MAX_GREP_MATCHES
from dshkit.harness.tools.policy import auto_approver

CATASTROPHIC = '{"pattern": "(a+)+$"}'
"""Nested quantifiers against a line of `a`s ending in `!`: 2^40 backtracking paths."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# Title\nhello world\n")
    (tmp_path / "trap.txt").write_text("a" * 40 + "!\n")
    return tmp_path


def runtime(root: Path, **kw: object) -> ToolRuntime:
    return ToolRuntime(builtin_tools(root, **kw), approver=auto_approver)  # type: ignore[arg-type]


async def test_catastrophic_grep_times_out_as_an_error_result(workspace: Path) -> None:
    result = await runtime(workspace, tool_timeout=0.5).execute("c", "grep", CATASTROPHIC)
    assert result.is_error
    assert result.error is not None and result.error.code == "TIMEOUT"
    assert "took longer than 0.5s" in result.text and "--tool-timeout" in result.text


async def test_the_loop_keeps_running_while_grep_backtracks(workspace: Path) -> None:
    """The matcher runs in a child process: the loop serves other tasks meanwhile, and a
    cancel (the turn's signal, as Ctrl-C sets it) ends the call at once as ABORTED."""
    signal = asyncio.Event()
    grep = asyncio.create_task(runtime(workspace, tool_timeout=600).execute("c", "grep", CATASTROPHIC, signal=signal))
    other = asyncio.create_task(runtime(workspace).execute("d", "read", '{"file_path": "README.md"}'))
    read = await asyncio.wait_for(other, 30)  # would never run if grep held the loop
    assert "\n1: # Title\n2: hello world\n" in read.text
    assert not grep.done()
    signal.set()
    result = await asyncio.wait_for(grep, 30)
    assert result.is_error and result.error is not None and result.error.code == "ABORTED"


async def test_grep_still_finds_matches_and_reports_bad_patterns(workspace: Path) -> None:
    rt = runtime(workspace)
    assert (await rt.execute("c", "grep", '{"pattern": "hel+o"}')).text == "README.md:2:hello world"
    bad = await rt.execute("c", "grep", '{"pattern": "(unclosed"}')
    assert bad.is_error and bad.error is not None and bad.error.code == "INVALID_ARGS"
    assert "invalid regular expression: missing )" in bad.text


async def test_a_pattern_that_overflows_the_compiler_is_reported_not_a_crash(workspace: Path) -> None:
    # `re` raises OverflowError here, not re.error: the worker must still answer.
    result = await runtime(workspace).execute("c", "grep", '{"pattern": "a{4294967296}"}')
    assert result.error is not None and result.error.code == "INVALID_ARGS"
    assert result.text == "Error: invalid regular expression: the repetition number is too large"


async def test_matches_stop_at_the_cap_counted_over_every_file(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hit\nmiss\n" * (MAX_GREP_MATCHES - 2))
    (workspace / "b.txt").write_text("miss\nhit\nhit\nhit\n")
    result = await runtime(workspace).execute("c", "grep", '{"pattern": "^hit$"}')
    lines = result.text.splitlines()
    assert lines[-3:] == [
        "b.txt:2:hit", "b.txt:3:hit",  # the worker was asked for the two matches left
        f"[stopped after {MAX_GREP_MATCHES} matches; narrow the pattern or path]",
    ]
    assert lines[:2] == ["a.txt:1:hit", "a.txt:3:hit"] and len(lines) == MAX_GREP_MATCHES + 1
