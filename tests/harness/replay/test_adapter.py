"""`ReplayAdapter`: each live session claims a script, walks it, and says what it ran past."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.llm import Finish, GenerateOptions, TextBlock, UserMessage
from dshkit.harness.llm.chunks import BlockEnd
from dshkit.harness.replay import ReplayAdapter
from dshkit.harness.replay.entries import ReplayEntry, SessionScript
from dshkit.harness.replay.scripts import load_session_scripts


def _options(session: str | None = None, signal: asyncio.Event | None = None) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),),
                           session_id=session, signal=signal)


async def test_replay_adapter_binds_sessions_and_reports_underruns(dsh_sessions: Path) -> None:
    scripts = load_session_scripts(dsh_sessions / "subagent-parallel--session.jsonl")
    calls: list[tuple[int, int]] = []
    adapter = ReplayAdapter(scripts, on_call=lambda script, index: calls.append((script, index)))

    async def blocks(session: str) -> list[Any]:
        return [c.block async for c in adapter.stream(_options(session=session)) if isinstance(c, BlockEnd)]

    parent = await blocks("live-parent")
    assert [b.type for b in parent] == ["tool-call", "tool-call"]  # the parent delegates first
    assert await blocks("live-child-1") == await blocks("live-child-2") == [TextBlock(text="ALPHA")]
    assert calls == [(0, 0), (1, 0), (2, 0)]
    chunks = [c async for c in adapter.stream(_options(session="live-child-1"))]
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.failure is not None
    assert chunks[-1].reason.failure.code == "REPLAY_EXHAUSTED"
    extra = [c async for c in adapter.stream(_options(session="fourth"))]
    assert extra[-1].reason.failure.code == "REPLAY_UNRECORDED_SESSION"  # type: ignore[union-attr]
    with pytest.raises(AssertionError, match="session 'live-parent' consumed 1/2"):
        adapter.assert_consumed()


async def test_a_hang_marks_its_ready_file_in_the_workspace_and_waits_for_the_cancel(tmp_path: Path) -> None:
    script = SessionScript(session_id="s", created_at=0, source="inline",
                           entries=(ReplayEntry(kind="hang", ready_file="marks/ready", where="sidecar[0]"),))
    signal = asyncio.Event()
    stream = ReplayAdapter([script], ready_dir=tmp_path).stream(_options(signal=signal))
    assert [type(await anext(stream)).__name__ for _ in range(2)] == ["BlockStart", "TextDelta"]
    waiting = asyncio.ensure_future(anext(stream))
    while not (tmp_path / "marks" / "ready").exists():
        await asyncio.sleep(0)  # the adapter runs up to its wait; no timing involved
    assert not waiting.done()
    signal.set()
    finish = await waiting
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"


async def test_a_ready_file_that_escapes_through_a_symlink_ends_the_call_with_a_located_error(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink(elsewhere, workspace / "out")
    script = SessionScript(session_id="s", created_at=0, source="inline",
                           entries=(ReplayEntry(kind="hang", ready_file="out/ready", where="side.json[0]"),))
    chunks = [c async for c in ReplayAdapter([script], ready_dir=workspace).stream(_options())]
    failure = chunks[-1].reason.failure  # type: ignore[union-attr]
    assert failure is not None and failure.code == "REPLAY_INVALID"
    assert "side.json[0].readyFile: 'out/ready' resolves to" in failure.message
    assert list(elsewhere.iterdir()) == []
