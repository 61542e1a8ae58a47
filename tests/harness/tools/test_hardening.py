"""Built-in tools under hostile input: a catastrophic regex, a FIFO, a hard link out of the
workspace, a command that prints the API key. Each ends as an error result (or a scrubbed
one) instead of a hang, a write outside the workspace or a leaked secret."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.blocking import ToolTimeoutError, run_blocking
from dshkit.harness.tools.policy import auto_approver
from dshkit.harness.tools.providers import LocalShell
from dshkit.harness.tools.results import ToolErrorInfo, ToolResult, scrub_result

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


@pytest.fixture
def fifo(workspace: Path) -> Path:
    path = workspace / "pipe"
    os.mkfifo(path)
    return path


async def test_read_of_a_fifo_is_refused_not_blocked(workspace: Path, fifo: Path) -> None:
    result = await asyncio.wait_for(runtime(workspace).execute("c", "read", '{"file_path": "pipe"}'), 30)
    assert result.is_error and result.error is not None and result.error.code == "NOT_A_FILE"
    assert '"pipe" is not a regular file (a FIFO)' in result.text


async def test_write_to_a_fifo_is_refused_not_blocked(workspace: Path, fifo: Path) -> None:
    result = await asyncio.wait_for(runtime(workspace).execute("c", "write", '{"file_path": "pipe", "content": "x"}'), 30)
    assert result.is_error and result.error is not None and result.error.code == "NOT_A_FILE"


async def test_grep_skips_a_fifo(workspace: Path, fifo: Path) -> None:
    result = await asyncio.wait_for(runtime(workspace).execute("c", "grep", '{"pattern": "world"}'), 30)
    assert result.text == "README.md:2:hello world"


async def test_write_through_a_hard_link_is_refused(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "victim.txt"
    outside.write_text("precious\n")
    os.link(outside, workspace / "innocent.txt")
    result = await runtime(workspace).execute("c", "write", '{"file_path": "innocent.txt", "content": "pwned"}')
    assert result.is_error and result.error is not None and result.error.code == "HARD_LINKED_FILE"
    assert "other hard links" in result.text
    assert outside.read_text() == "precious\n"  # neither written nor truncated


@pytest.fixture
def hard_link(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`workspace/innocent.txt`, a hard link to a file outside the workspace."""
    outside = tmp_path_factory.mktemp("outside") / "victim.txt"
    outside.write_text("the secret plan\n")
    try:
        os.link(outside, workspace / "innocent.txt")
    except OSError as exc:  # a file system without hard links
        pytest.skip(f"cannot make a hard link here: {exc}")
    return outside


async def test_read_through_a_hard_link_is_refused(workspace: Path, hard_link: Path) -> None:
    result = await runtime(workspace).execute("c", "read", '{"file_path": "innocent.txt"}')
    assert result.is_error and result.error is not None and result.error.code == "HARD_LINKED_FILE"
    assert "other hard links" in result.text and "refusing to read" in result.text
    assert "secret plan" not in result.text


async def test_grep_of_a_hard_linked_file_is_refused_and_a_tree_skips_it(workspace: Path, hard_link: Path) -> None:
    named = await runtime(workspace).execute("c", "grep", '{"pattern": "secret", "path": "innocent.txt"}')
    assert named.is_error and named.error is not None and named.error.code == "HARD_LINKED_FILE"
    assert "secret plan" not in named.text
    tree = await runtime(workspace).execute("c", "grep", '{"pattern": "secret|world"}')
    assert not tree.is_error and tree.text == "README.md:2:hello world"


async def test_write_still_replaces_an_ordinary_file(workspace: Path) -> None:
    result = await runtime(workspace).execute("c", "write", '{"file_path": "README.md", "content": "new"}')
    assert not result.is_error and (workspace / "README.md").read_text() == "new"


async def test_secrets_are_scrubbed_from_tool_results(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_TOKEN", "sk-very-secret-42")
    rt = ToolRuntime(builtin_tools(workspace), approver=auto_approver, secrets=["sk-very-secret-42"])
    result = await rt.execute("c", "bash", '{"command": "env | grep SOME_TOKEN"}')
    assert result.text == "SOME_TOKEN={{scrubbed:secret}}\n"
    failed = await rt.execute("c", "bash", '{"command": "echo sk-very-secret-42; exit 3"}')
    assert "sk-very-secret" not in failed.text and "{{scrubbed:secret}}" in failed.text


def test_scrub_result_covers_every_text_of_a_result_and_its_meta() -> None:
    result = ToolResult(
        is_error=True, content=(TextBlock(text="key sk-very-secret-42"),),
        error=ToolErrorInfo(message="failed with sk-very-secret-42", code="X", name="E"),
        meta={"shown": ["sk-very-secret-42", 3], "path": "sk-very-secret-42.txt"},
        additional_contexts=(UserMessage.text("ctx sk-very-secret-42"),),
    )
    scrubbed = scrub_result(result, ["sk-very-secret-42", "k"])
    assert "sk-very-secret-42" not in repr(scrubbed)
    assert scrubbed.meta == {"shown": ["{{scrubbed:secret}}", 3], "path": "{{scrubbed:secret}}.txt"}
    assert scrubbed.text == "key {{scrubbed:secret}}" and scrubbed.error is not None
    assert scrubbed.error.message == "failed with {{scrubbed:secret}}"


@pytest.mark.parametrize("key", ["k", "the", "test"])
async def test_a_short_key_rewrites_no_text(workspace: Path, key: str) -> None:
    """A key shorter than the policy's minimum is never matched: scrubbing it would rewrite
    every word holding those letters (`un{{scrubbed:secret}}nown tool`)."""
    (workspace / "notes.txt").write_text("the test took too long; unknown tool k\n")
    rt = ToolRuntime(builtin_tools(workspace), approver=auto_approver, secrets=[key])
    result = await rt.execute("c", "read", '{"file_path": "notes.txt"}')
    assert "\n1: the test took too long; unknown tool k\n" in result.text and "scrubbed" not in result.text
    unknown = await rt.execute("c", "nope", "{}")
    assert "unknown" in unknown.text.lower() and "scrubbed" not in unknown.text


async def test_the_shell_hides_named_variables(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-hidden")
    monkeypatch.setenv("VISIBLE_ONE", "yes")
    shell = LocalShell(workspace, hide_env=("DEEPSEEK_API_KEY",))
    result = await shell.run("env", timeout=30, output_limit=100_000)
    assert "VISIBLE_ONE=yes" in result.output and "DEEPSEEK_API_KEY" not in result.output


async def test_run_blocking_abandons_a_stuck_call_and_tells_on_abandon() -> None:
    release = threading.Event()
    abandoned: list[bool] = []
    with pytest.raises(ToolTimeoutError, match=r"took longer than 0\.2s"):
        await run_blocking(release.wait, timeout=0.2, what="wait", on_abandon=lambda: abandoned.append(True))
    release.set()
    assert abandoned == [True]
