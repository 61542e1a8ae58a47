"""Fixtures of the view tests: a session log made by the real agent against the real mock server,
with the server's journal beside it, and a headless Chromium driven by Playwright.

The walk has the three things a view must show: a model call that fails (429, retried in the same
step), a tool call whose arguments arrive in six fragments, and a final answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import Session, SessionHeader, save_session
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.mock_server import MockServer, Script

ARGUMENTS = '{"file_path":"README.md"}'
FRAGMENT_POINTS = [2, 6, 11, 15, 22]
"""Where the script cuts `ARGUMENTS`: six fragments on the wire and in the log."""

CHROMIUM = Path(os.environ.get("DSHKIT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@dataclass(frozen=True, slots=True)
class Walk:
    log: Path
    journal: Path
    workspace: Path


def walk_script() -> Script:
    return Script.of(
        {"fault": "rate_limit", "retry_after": 1},
        {
            "reply": {"reasoning": "Read the README first.",
                      "tool_calls": [{"name": "read", "id": "call_00_view", "arguments": ARGUMENTS}]},
            "stream": {"arguments": {"mode": "points", "points": FRAGMENT_POINTS}},
        },
        {"reply": {"reasoning": "Now answer.", "content": "It forges <widgets> & tests them."}},
    )


async def _no_wait(_seconds: float) -> None:
    return None


async def make_walk(tmp: Path) -> Walk:
    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Widget Forge\n\nTurns YAML recipes into widgets.\n")
    journal = tmp / "journal.jsonl"
    async with MockServer(walk_script(), journal=journal) as server:
        session = Session(SessionHeader.new(cwd=str(workspace)))
        adapter = DeepSeekAdapter(server.base_url, "sk-view-test")
        try:
            agent = Agent(session, adapter, AgentOptions(model="deepseek-v4-flash"),
                          tools=ToolRuntime(builtin_tools(workspace)), sleep=_no_wait)
            outcome = await agent.run("What is this project?")
        finally:
            await adapter.aclose()
        assert outcome.kind == "completed"
        server.assert_consumed()
    log = save_session(session, tmp / "session.jsonl")
    return Walk(log=log, journal=journal, workspace=workspace)


@pytest.fixture
async def walk(tmp_path: Path) -> Walk:
    return await make_walk(tmp_path)


@pytest.fixture
def walk_in_thread(tmp_path: Path) -> Walk:
    """`walk` for browser tests: Playwright's sync API owns this thread's event loop, so the walk
    runs on a loop of its own in another thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, make_walk(tmp_path)).result()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Debian's, at /usr/bin/chromium) under Playwright, one per module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (`make test` installs the test extra)")
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium when run as root; "
                    "otherwise `apt-get install chromium` or set DSHKIT_CHROMIUM")
    profile = tempfile.mkdtemp(prefix="dshkit-chromium-")
    manager = sync_playwright().start()
    try:
        # A fresh profile each time: Playwright passes it as --user-data-dir itself.
        context = manager.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
        )
        yield context
        context.close()
    finally:
        manager.stop()
        shutil.rmtree(profile, ignore_errors=True)
