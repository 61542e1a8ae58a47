"""Fixtures of the view tests: session logs made by the real agent against the real mock server,
with the server's journal beside them, a journal with a stream the server broke off, conformance
reports written by the real report writer, and a headless Chromium driven by Playwright.

The walk has the three things a view must show: a model call that fails (429, retried in the same
step), a tool call whose arguments arrive in six fragments, and a final answer. The long walk
repeats a turn (read a file, answer) to show how a page grows with the log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.conformance import load_catalogue
from dshkit.conformance.checks import unified
from dshkit.conformance.report import to_json
from dshkit.conformance.runner import ScenarioResult
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.jsonl import save_session
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.mock_server import MockServer, Script

ARGUMENTS = '{"file_path":"README.md"}'
FRAGMENT_POINTS = [2, 6, 11, 15, 22]
"""Where the script cuts `ARGUMENTS`: six fragments on the wire and in the log."""


def argument_fragments() -> list[str]:
    """`ARGUMENTS` cut at `FRAGMENT_POINTS`: the fragments as the wire delivered them."""
    cuts = [0, *FRAGMENT_POINTS, len(ARGUMENTS)]
    return [ARGUMENTS[a:b] for a, b in itertools.pairwise(cuts)]

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


NOTES = "".join(f"note {i}: the forge turns YAML recipes into widgets, then tests every widget it made.\n"
                for i in range(3))
"""The file the long walk reads every turn: each line longer than a page links instead of repeating."""


async def make_long_walk(tmp: Path, turns: int) -> Walk:
    """`turns` turns of two steps each: a `read` of NOTES.md, then an answer with reasoning."""
    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "NOTES.md").write_text(NOTES)
    steps: list[Any] = []
    for i in range(turns):
        steps.append({"reply": {"reasoning": f"Turn {i}: read the notes.",
                                "tool_calls": [{"name": "read", "arguments": '{"file_path":"NOTES.md"}'}]}})
        steps.append({"reply": {"reasoning": f"Answer turn {i} briefly.", "content": f"Answer {i}: it forges widgets."}})
    journal = tmp / "journal.jsonl"
    async with MockServer(Script.of(*steps), journal=journal) as server:
        session = Session(SessionHeader.new(cwd=str(workspace)))
        adapter = DeepSeekAdapter(server.base_url, "sk-view-test")
        try:
            agent = Agent(session, adapter, AgentOptions(model="deepseek-v4-flash"),
                          tools=ToolRuntime(builtin_tools(workspace)), sleep=_no_wait)
            for turn in range(turns):
                assert (await agent.run(f"Question {turn}: what does the forge do?")).kind == "completed"
        finally:
            await adapter.aclose()
    return Walk(log=save_session(session, tmp / "session.jsonl"), journal=journal, workspace=workspace)


async def make_reset_journal(tmp: Path) -> Path:
    """A journal of two exchanges sent by a real client: one the server broke off with a TCP
    reset mid-answer, then a complete one."""
    journal = tmp / "reset-journal.jsonl"
    script = Script.of({"fault": "partial_disconnect", "text": "Half an ans"}, {"reply": {"content": "A whole answer."}})
    body = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    async with MockServer(script, journal=journal) as server, httpx.AsyncClient(timeout=10) as client:
        with pytest.raises(httpx.HTTPError):
            async with client.stream("POST", server.base_url + "/chat/completions", json=body) as response:
                async for _ in response.aiter_bytes():
                    pass
        (await client.post(server.base_url + "/chat/completions", json=body)).raise_for_status()
    return journal


_catalogue = functools.cache(load_catalogue)


def write_report(path: Path, adapter: str, failing: Sequence[int] = (), na: Sequence[int] = (),
                 only: int | None = None) -> Path:
    """A conformance report of the bundled catalogue as the real report writer writes it: the
    scenarios at positions `failing` failed (with a diff), those at `na` were n/a, the rest passed."""
    results = []
    for i, sc in enumerate(_catalogue()[:only]):
        if i in failing:
            results.append(ScenarioResult(id=sc.id, tags=list(sc.tags), status="fail", reason="chunks differ",
                                          failed=["step0.translate"],
                                          diff=unified({"text": ["a", "b", "c"]}, {"text": ["a", "B", "c"]}, "translate")))
        elif i in na:
            results.append(ScenarioResult(id=sc.id, tags=list(sc.tags), status="n/a",
                                          reason="the adapter declares no reasoning capability"))
        else:
            results.append(ScenarioResult(id=sc.id, tags=list(sc.tags), status="pass"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(results, adapter=adapter), indent=2))
    return path


def in_thread(make: Any, *args: Any) -> Any:
    """Run the coroutine `make(*args)` on a loop of its own in another thread: Playwright's sync
    API owns the browser tests' event loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, make(*args)).result()


@pytest.fixture
async def walk(tmp_path: Path) -> Walk:
    return await make_walk(tmp_path)


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
