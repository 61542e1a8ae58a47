"""The local file-system and shell providers: workspace confinement (`..`, absolute paths,
symlinks and hard links leading out), regular files only (a FIFO is refused, never waited on),
and a shell that hides named variables and stops on its cancel signal. Most cases go through
the built-in tools, which is how the model reaches the providers."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.policy import auto_approver
from dshkit.harness.tools.providers import LocalFileSystem, LocalShell


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# Title\nhello world\n")
    return tmp_path


def runtime(root: Path, **kw: object) -> ToolRuntime:
    return ToolRuntime(builtin_tools(root, **kw), approver=auto_approver)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x"])
async def test_workspace_escape_refused(workspace: Path, path: str) -> None:
    result = await runtime(workspace).execute("c", "read", f'{{"file_path": "{path}"}}')
    assert result.is_error and "outside the workspace" in result.text


async def test_symlink_out_refused(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, workspace / "link.txt")
    result = await runtime(workspace).execute("c", "read", '{"file_path": "link.txt"}')
    assert result.is_error and "outside the workspace" in result.text


def test_walk_files_lists_a_tree_in_order_without_tool_folders_or_links_out(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    for rel in ("b/z.txt", "b/a.txt", ".git/config", "node_modules/m.js", "src/__pycache__/x.pyc", "src/x.py"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text("x")
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, workspace / "b" / "out.txt")
    os.symlink(workspace / "src" / "x.py", workspace / "b" / "in.txt")
    files = LocalFileSystem(workspace)
    # sorted, top down, each file once; a link inside the workspace is listed under its own name
    assert list(files.walk_files(".")) == ["README.md", "b/a.txt", "b/in.txt", "b/z.txt", "src/x.py"]
    assert list(files.walk_files("b/z.txt")) == ["b/z.txt"]


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


async def test_the_shell_hides_named_variables(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-hidden")
    monkeypatch.setenv("VISIBLE_ONE", "yes")
    shell = LocalShell(workspace, hide_env=("DEEPSEEK_API_KEY",))
    result = await shell.run("env", timeout=30, output_limit=100_000)
    assert "VISIBLE_ONE=yes" in result.output and "DEEPSEEK_API_KEY" not in result.output


async def test_bash_cancelled_by_signal(workspace: Path) -> None:
    signal = asyncio.Event()
    shell = LocalShell(workspace)
    task = asyncio.create_task(shell.run("echo started; sleep 30", timeout=60, output_limit=1000, signal=signal))
    signal.set()
    result = await task
    assert result.aborted and result.exit_code is None
