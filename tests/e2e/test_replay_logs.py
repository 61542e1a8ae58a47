"""Chunk-level replay of session logs, into the loop and as SSE through the real adapter.

Our own logs (made here by the loop rig) and upstream DSH's (the shared corpus, packed rows and
sidecars included) replay to the same assistant messages; ours also to the same tool events.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from dshkit.harness.llm import Finish, GenerateOptions, TextBlock, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.messages import OpaqueSource, PluginSource
from dshkit.harness.llm.retry import is_retryable
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.replay import ReplayAdapter
from dshkit.harness.replay.entries import SessionScript
from dshkit.harness.replay.override import parse_override
from dshkit.harness.replay.scripts import load_log_session
from dshkit.harness.replay.session import turn_inputs
from dshkit.harness.session.events import event_to_json
from dshkit.harness.session.jsonl import save_session
from dshkit.mock_server import MockServerFactory, ReplayServerFactory, load_cassette
from dshkit.mock_server.replay import session_scripts_to_mock
from dshkit.replay import replay_session
from dshkit.run import run_command
from tests.normalize import Normalizer

from .conftest import RigFactory, call, reply

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
SKIP_LOOP = {"compaction-recovery--session.jsonl"}
"""Our loop does not compact, so the compaction call of that log has no live counterpart."""

TOOL_WALK = [
    reply(reasoning="Read both files.", calls=[
        call("read", '{"file_path":"README.md"}', "call_00_replayReadme00000000001"),
        call("read", '{"file_path":"src/main.py"}', "call_01_replayMain000000000002"),
    ], stream={"split": {"mode": "fixed", "size": 4}}),
    reply(reasoning="Now list.", calls=[call("list", '{"path":"."}', "call_00_replayList0000000000003")],
          match={"tool_result": "call_01_replayMain000000000002"}),
    reply("Widget Forge, with a main.py.", reasoning="Done.", match={"tool_result": "call_00_replayList0000000000003"}),
]


def _options(text: str = "hi", session: str | None = None) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text(text),), session_id=session)


async def test_own_log_replays_to_same_messages_and_tool_events(
    loop_rig: RigFactory, tmp_path: Path, snapshot: SnapshotAssertion
) -> None:
    """Replayed from its chunks and from its wire bytes, the log gives the same messages and tool
    events as the run that wrote it (one snapshot holds them: both ways must match it)."""
    rig = await loop_rig(*TOOL_WALK)
    assert (await rig.run("What is in this project?")).kind == "completed"
    path = save_session(rig.session, tmp_path / "own.jsonl")
    kept = ("assistant/message", "tool/call", "tool/result")

    def events(session_events: Any) -> list[Any]:
        norm = Normalizer.in_text(rig.workspace)
        out = [norm(event_to_json(e)["data"]) for e in session_events if e.type in kept]
        for item in out:
            item.pop("usage", None)
            item.get("message", {}).pop("id", None)  # fresh message ids in every session
        return out

    original = events(rig.session.events)
    for wire in (False, True):
        report, replayed = await replay_session(path, wire=wire, workspace=rig.workspace, tools="builtin")
        assert report.turn_ends == ["completed"], wire
        assert report.messages_equal and len(report.logged_messages) == 3, wire
        assert report.results_equal and len(report.logged_results) == 3, wire
        assert events(replayed.events) == original, wire
    assert original == snapshot.use_extension(JSONSnapshotExtension)(name="replayed-events")


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
async def test_turns_opened_by_goal_and_plugin_messages_replay(loop_rig: RigFactory, tmp_path: Path, wire: bool) -> None:
    """A turn is opened by whatever the inbox delivered: a goal round or a plugin's notice
    replays as its own turn, while a message a plugin added inside a step is not re-sent."""
    rig = await loop_rig(reply("Started."), reply("Goal round done."), reply("Noted."))
    assert (await rig.run("Start the goal.")).kind == "completed"
    goal = UserMessage(content=(TextBlock(text="Continue the goal: round 2."),), source=OpaqueSource(kind="goal", data={"kind": "goal"}))
    assert (await rig.run(goal)).kind == "completed"
    notice = UserMessage(content=(TextBlock(text="Background job finished."),), source=PluginSource(plugin="tool-jobs"))
    assert (await rig.run(notice)).kind == "completed"
    path = save_session(rig.session, tmp_path / "goal.jsonl")
    inputs = turn_inputs(load_log_session(path))
    assert [[m.content for m in turn] for turn in inputs] == [[m.content] for m in (UserMessage.text("Start the goal."), goal, notice)]
    report, _ = await replay_session(path, wire=wire, workspace=rig.workspace)
    assert report.turn_ends == ["completed"] * 3
    assert report.messages_equal and len(report.logged_messages) == 3


def _corpus_logs(dsh_sessions: Path) -> list[Path]:
    return sorted(p for p in dsh_sessions.glob("*--session.jsonl") if p.name not in SKIP_LOOP)


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
async def test_dsh_logs_replay_to_the_logged_messages(dsh_sessions: Path, tmp_path: Path, wire: bool) -> None:
    for path in _corpus_logs(dsh_sessions):
        report, _ = await replay_session(path, wire=wire, workspace=tmp_path)
        assert report.messages_equal, path.name
        assert report.outcomes_equal, (path.name, report.diff())  # error-finish, the cancels: as logged


async def test_packed_dsh_log_through_the_real_adapter(
    dshkit_replay: ReplayServerFactory, dsh_sessions: Path
) -> None:
    from dshkit.harness.llm import BlockAssembler
    from dshkit.harness.session import parse_session_log
    from dshkit.harness.session.lossless import thaw_json

    path = dsh_sessions / "packed-chunks--session.jsonl"
    assert '"text-chunks"' in path.read_text()
    server = await dshkit_replay(path)
    logged = [thaw_json(e.data)["message"]["content"] for e in parse_session_log(path.read_bytes()).session.events
              if e.type == "assistant/message"]
    adapter = DeepSeekAdapter(server.base_url, "sk-x")
    got = []
    try:
        for _ in logged:
            assembler = BlockAssembler()
            async for chunk in adapter.stream(_options()):
                assembler.feed(chunk)
            from dshkit.harness.llm.codec import message_to_json
            from dshkit.harness.llm.messages import ModelSource

            got.append(message_to_json(assembler.message(ModelSource(provider="p", model="m")))["content"])
    finally:
        await adapter.aclose()
    assert got == logged


async def test_sidecar_throw_replays_as_http_401(dshkit_replay: ReplayServerFactory, dsh_sessions: Path) -> None:
    server = await dshkit_replay(dsh_sessions / "error-finish--session.jsonl")
    adapter = DeepSeekAdapter(server.base_url, "sk-x")
    try:
        chunks = [c async for c in adapter.stream(_options())]
    finally:
        await adapter.aclose()
    assert server.journal.last.status == 401
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "AUTH"


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "sse"])
async def test_from_request_in_replayed_calls(dshkit_mock_server: MockServerFactory, wire: bool) -> None:
    entry_chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "goal {{fromRequest:goal=(\\w+)}}"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "goal {{fromRequest:goal=(\\w+)}}"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    script = SessionScript(session_id="s", created_at=0, source="inline",
                           entries=tuple(parse_override([{"kind": "chunks", "chunks": entry_chunks}], None)))
    if wire:
        server = await dshkit_mock_server(*session_scripts_to_mock([script]))
        adapter: Any = DeepSeekAdapter(server.base_url, "sk-x")
    else:
        adapter = ReplayAdapter([script])
    try:
        chunks = [c async for c in adapter.stream(_options("please echo goal=abc42"))]
    finally:
        await adapter.aclose()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "goal abc42"


async def test_from_request_with_no_match_is_a_named_non_retryable_mock_error(
    dshkit_mock_server: MockServerFactory,
) -> None:
    """Served over the wire, a placeholder the live request cannot fill is the mock's 418 naming
    the placeholder (as a script running dry is), not a 500 a harness would retry."""
    entry_chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "goal {{fromRequest:goal=(\\w+)}}"},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    script = SessionScript(session_id="s", created_at=0, source="inline",
                           entries=tuple(parse_override([{"kind": "chunks", "chunks": entry_chunks}], None)))
    server = await dshkit_mock_server(*session_scripts_to_mock([script]), assert_all_requests_served=False)
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.base_url}/chat/completions",
            json={"model": "deepseek-chat", "stream": True, "messages": [{"role": "user", "content": "no id here"}]},
            headers={"Authorization": "Bearer sk-x"},
        )
    assert response.status_code == 418
    error = response.json()["error"]
    assert error["code"] == "mock_replay_placeholder"
    assert "goal=(\\w+)" in error["message"] and "matched nothing" in error["message"]
    adapter = DeepSeekAdapter(server.base_url, "sk-x")
    try:
        chunks = [c async for c in adapter.stream(_options("still no id"))]
    finally:
        await adapter.aclose()
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert not is_retryable(finish.reason.failure)


EXPECTED_FINISHES = {
    "plain-text": ["stop"],
    "reasoning-text": ["stop"],
    "tool-call-split-args": ["tool-calls"],
    "parallel-tool-calls": ["tool-calls"],
    "tool-loop-reasoning": ["tool-calls", "tool-calls", "stop"],
    "rate-limit-then-success": ["RATE_LIMIT", "stop"],
    "bad-request-400": ["INVALID_REQUEST"],
    "readme-walk": ["tool-calls", "stop"],
}


def committed_recordings(folder: Path = RECORDINGS) -> set[str]:
    """Names of the cassettes committed in `folder`. A user's own recordings there (made with
    `dshkit record --out recordings/NAME`) are theirs, not ours to list or check."""
    try:
        out = subprocess.run(["git", "ls-files", "--", "*.cassette.jsonl"], cwd=folder,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set(EXPECTED_FINISHES)  # not a git checkout (an unpacked sdist): nothing to tell apart
    return {Path(line).name.removesuffix(".cassette.jsonl") for line in out.splitlines()}


def test_a_users_own_recording_is_not_checked(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "ours.cassette.jsonl").write_text("{}\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "ours.cassette.jsonl"], check=True)
    (tmp_path / "mine.cassette.jsonl").write_text("not even a cassette\n")
    assert committed_recordings(tmp_path) == {"ours"}


def test_every_committed_recording_is_listed() -> None:
    names = committed_recordings()
    assert names == set(EXPECTED_FINISHES)
    readme = (RECORDINGS / "README.md").read_text()
    assert all(f"`{n}`" in readme for n in names)


@pytest.mark.parametrize("name", sorted(EXPECTED_FINISHES))
async def test_committed_recordings_replay_through_the_adapter(dshkit_replay: ReplayServerFactory, name: str) -> None:
    server = await dshkit_replay(RECORDINGS / name)
    adapter = DeepSeekAdapter(server.base_url, "sk-x")
    finishes: list[str] = []
    try:
        for x in load_cassette(RECORDINGS / name).exchanges:
            chunks = [c async for c in adapter.stream(_options())]
            finish = chunks[-1]
            assert isinstance(finish, Finish)
            failure = finish.reason.failure
            finishes.append(failure.code if failure is not None else finish.reason.kind)
            assert [w.data for w in server.journal.last.writes] == [r.data for r in x.reads]
    finally:
        await adapter.aclose()
    assert finishes == EXPECTED_FINISHES[name]


async def test_dshkit_run_replays_the_readme_walk(workspace: Path) -> None:
    args = argparse.Namespace(
        prompt="Read README.md and tell me what the project does.", base_url=None, api_key=None,
        model="deepseek-v4-flash", workspace=str(workspace), session=str(workspace / "s.jsonl"),
        tools=None, yes=False, json=True, max_steps=None, idle_timeout=30.0,
        replay=str(RECORDINGS / "readme-walk"),
    )
    out = io.StringIO()
    assert await run_command(args, out) == 0
    done = json.loads(out.getvalue().splitlines()[-1])
    assert done["type"] == "done" and done["reason"] == {"kind": "completed"}
    assert "I read README.md" in out.getvalue()


def test_replay_of_a_log_without_model_calls_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshkit.cli import main

    log = tmp_path / "empty.jsonl"
    log.write_text('{"type":"session","version":0,"id":"e","createdAt":1,"delegationDepth":0}\n')
    assert main(["replay", str(log)]) == 2
    assert "records no model call to replay" in capsys.readouterr().err
