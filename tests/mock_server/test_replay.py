"""Replaying recordings, `dshkit.mock_server.replay`: a cassette served read for read (re-split,
matched by body, through `serve --replay`, a torn last line warned about), each recorded exchange
served as recorded whatever the mock's own validation thinks of it, and the real recorded streams
of the shared corpus (S35: `.sse` byte for byte, `.jsonl` framed plus `[DONE]`; read in place,
never copied, skipped when absent).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import pytest
from aiohttp import web

from dshkit.harness.llm import Finish, GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import (
    MockServerFactory,
    Recorder,
    ReplayServerFactory,
    Script,
    load_cassette,
)
from dshkit.mock_server.generate.encode import frame_jsonl
from dshkit.mock_server.record_mode import start_cassette_run
from dshkit.mock_server.replay import replay_scripts

from ..conftest import corpus_missing
from ..upstream import upstream
from .cli_process import ServeProcess
from .test_record import BODY, KEY, _post, _walk_script
from .wire import chat, parse_sse, reassemble

RECORDINGS = Path(__file__).parents[2] / "recordings"


def _corpus_files(real_corpus: Path) -> list[Path]:
    files = sorted(p for p in real_corpus.iterdir() if p.suffix in (".sse", ".jsonl"))
    if not files:
        pytest.skip("no .sse/.jsonl files in the corpus")
    return files


async def test_every_corpus_stream_replays_exactly(dshkit_mock_server: MockServerFactory, real_corpus: Path) -> None:
    files = _corpus_files(real_corpus)
    scripts = [Script.of({"raw": {"file": str(f)}}, session=f.stem) for f in files]
    server = await dshkit_mock_server(*scripts)
    async with httpx.AsyncClient(timeout=2) as c:
        for f in files:
            r = await c.post(server.url, json=chat(), headers={"X-Mock-Session": f.stem})
            data = f.read_bytes()
            assert r.content == (data if f.suffix == ".sse" else frame_jsonl(data)), f.name
            expected = json.loads(f.with_name(f.stem + ".expected.json").read_text())["expected"]
            if f.stem.startswith("ds"):  # DeepSeek's own recordings fold with the plain rules
                got = reassemble(parse_sse(r.content).chunks)
                assert got["content"] == expected["content"], f.name
                assert got["reasoning"] == expected["reasoning_content"], f.name
                assert [(t["id"], t["name"], t["arguments"]) for t in got["tool_calls"]] == [
                    (t["id"], t["name"], t["arguments"]) for t in expected["tool_calls"]], f.name
    server.assert_consumed()


async def test_replayed_tool_call_through_openai(dshkit_mock_server: MockServerFactory, real_corpus: Path) -> None:
    f = real_corpus / "ds06-deepseek-v4-flash-thinking-tool-call.jsonl"
    if not f.exists():
        pytest.skip(corpus_missing(f))
    server = await dshkit_mock_server(Script.of({"raw": {"file": str(f), "write_plan": {"events_per_write": 0, "size": 7}}}))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=0.9) as client:
        args = ""
        reasoning = ""
        async for ch in await client.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "w"}], stream=True):
            d = ch.choices[0].delta
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                args += tc.function.arguments or ""
    assert args == '{"location": "San Francisco"}'
    assert reasoning.startswith("The user asks about the weather")
    assert len(server.journal.last.writes) > 1000 // 7



# --- cassettes, read for read ----------------------------------------------------------------


async def test_speed_zero_and_resplit_keep_bytes(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(_walk_script(), seed=3)
    async with Recorder(upstream.base_url, tmp_path / "w") as rec, httpx.AsyncClient(timeout=5) as c:
        _, live = await _post(c, rec.base_url)
    replay = await dshkit_replay(tmp_path / "w", resplit=11)
    adapter = DeepSeekAdapter(replay.base_url, KEY)
    try:
        options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
        chunks: list[StreamChunk] = [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()
    writes = [w.data for w in replay.journal.last.writes]
    assert b"".join(writes) == live
    recorded = [r.data for r in load_cassette(tmp_path / "w").exchanges[0].reads]
    assert writes != recorded  # other boundaries, same bytes
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "tool-calls"


async def test_body_mismatch_answers_418_with_a_diff(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("a", "b"), seed=2)
    async with Recorder(upstream.base_url, tmp_path / "m") as rec, httpx.AsyncClient(timeout=5) as c:
        await _post(c, rec.base_url)
        await _post(c, rec.base_url, {**BODY, "messages": [{"role": "user", "content": "second"}]})
    replay = await dshkit_replay(tmp_path / "m", match="body", check_consumed=False,
                                assert_all_requests_served=False)
    async with httpx.AsyncClient(timeout=5) as c:
        # by body, the second recorded exchange answers first
        status, data = await _post(c, replay.base_url, {**BODY, "messages": [{"role": "user", "content": "second"}]})
        assert status == 200 and b"[DONE]" in data
        r = await c.post(replay.url, json={**BODY, "messages": [{"role": "user", "content": "drifted"}]},
                         headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 418
    message = r.json()["error"]["message"]
    assert "--- recorded request" in message and "+++ live request" in message
    assert '-      "content": "hi"' in message and '+      "content": "drifted"' in message
    with pytest.raises(AssertionError, match=r"exchange 1: POST /chat/completions"):
        replay.assert_consumed()


async def test_replay_through_the_serve_cli(tmp_path: Path) -> None:
    """`serve --replay` serves the recorded bytes; a cassette whose last line a killed recorder
    left torn still serves its complete exchanges, and stderr says which line was dropped."""
    rec = RECORDINGS / "plain-text.cassette.jsonl"
    torn = tmp_path / "torn.cassette.jsonl"
    torn.write_bytes(rec.read_bytes() + rec.read_bytes().splitlines(keepends=True)[1][:50])
    proc = await asyncio.to_thread(ServeProcess, "--replay", str(torn), "--speed", "0")
    try:
        async with httpx.AsyncClient(timeout=5) as c:
            status, data = await _post(c, proc.base_url)
        assert status == 200
        assert data == load_cassette(rec).exchanges[0].body
    finally:
        code, _ = await asyncio.to_thread(proc.stop)
    assert code == 130
    lines = len(rec.read_bytes().splitlines()) + 1
    assert f"warning: {torn}:{lines}: the last line is torn" in proc.stderr


def test_replaying_a_torn_cassette_warns_by_default(tmp_path: Path) -> None:
    rec = RECORDINGS / "plain-text.cassette.jsonl"
    torn = tmp_path / "torn.cassette.jsonl"
    torn.write_bytes(rec.read_bytes() + b'{"type": "exch')
    with pytest.warns(UserWarning, match=r"torn\.cassette\.jsonl:\d+: the last line is torn"):
        scripts = replay_scripts(torn)
    assert sum(len(s.steps) for s in scripts) == len(load_cassette(rec).exchanges)
    seen: list[str] = []
    replay_scripts(rec, warn=seen.append)
    assert seen == []



# --- a recorded exchange is served as recorded ---------------------------------------------------
# The upstream here is a tiny aiohttp server that accepts any body (a newer DeepSeek that knows
# `deepseek-v5-pro`, a larger `max_tokens` ceiling). The recorder in between writes a real
# cassette; replaying it (the pytest fixture, the record-mode path and `serve --replay`) must hand
# back the recorded bytes, never the mock's `400 Model Not Exist`.

SSE = (
    b'data: {"id":"x1","object":"chat.completion.chunk","created":1,"model":"deepseek-v5-pro",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"from the future"},"finish_reason":null}]}\n\n'
    b'data: {"id":"x1","object":"chat.completion.chunk","created":1,"model":"deepseek-v5-pro",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)

ANTHROPIC = json.dumps({
    "id": "msg_1", "type": "message", "role": "assistant", "model": "deepseek-v5-pro",
    "content": [{"type": "text", "text": "from the future"}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 3},
}).encode()

NEW_MODEL = {"model": "deepseek-v5-pro", "stream": True, "max_tokens": 999999,
             "messages": [{"role": "user", "content": "hi"}]}

NEW_ANTHROPIC = {"model": "deepseek-v5-pro", "max_tokens": 999999, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def lenient_upstream() -> AsyncIterator[str]:
    """An upstream that accepts every body: SSE on the chat path, a message on the Anthropic one."""

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        if request.path == "/anthropic/v1/messages":
            return web.Response(body=ANTHROPIC, content_type="application/json")
        assert request.path == "/chat/completions", request.path
        return web.Response(body=SSE, content_type="text/event-stream")

    async with upstream(answer) as base:
        yield base


async def _record(upstream: str, path: Path) -> None:
    async with Recorder(upstream, path) as rec, httpx.AsyncClient(timeout=5) as c:
        r = await c.post(rec.base_url + "/chat/completions", json=NEW_MODEL)
        assert (r.status_code, r.content) == (200, SSE)
        r = await c.post(rec.base_url + "/anthropic/v1/messages", json=NEW_ANTHROPIC)
        assert (r.status_code, r.content) == (200, ANTHROPIC)


async def test_the_mock_itself_rejects_these_requests(dshkit_mock_server: MockServerFactory) -> None:
    # The premise: a scripted (not recorded) step still gets the mock's DeepSeek rules.
    server = await dshkit_mock_server(Script.replies("a", "b"))
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json=NEW_MODEL)
        assert r.status_code == 400 and r.json()["error"]["message"] == "Model Not Exist"
        r = await c.post(server.anthropic_base_url + "/v1/messages", json=NEW_ANTHROPIC)
        assert r.status_code == 400


@pytest.mark.parametrize("match", ["sequence", "body"])
async def test_replay_serves_what_the_upstream_accepted(
    lenient_upstream: str, dshkit_replay: ReplayServerFactory, tmp_path: Path, match: str
) -> None:
    await _record(lenient_upstream, tmp_path / "future")
    replay = await dshkit_replay(tmp_path / "future", match=match)
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=NEW_MODEL)
        assert (r.status_code, r.content) == (200, SSE)
        r = await c.post(replay.base_url + "/anthropic/v1/messages", json=NEW_ANTHROPIC)
        assert (r.status_code, r.content) == (200, ANTHROPIC)
    assert [e.outcome for e in replay.journal.entries] == ["completed", "completed"]


async def test_body_matching_still_tells_requests_apart(
    lenient_upstream: str, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    # Serving as recorded does not mean serving anything: with match=body, a request the
    # cassette does not hold still gets the non-retryable 418.
    await _record(lenient_upstream, tmp_path / "future")
    replay = await dshkit_replay(tmp_path / "future", match="body", check_consumed=False,
                                 assert_all_requests_served=False)  # the 418 is the point
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(replay.base_url + "/chat/completions", json={**NEW_MODEL, "max_tokens": 5})
    assert r.status_code == 418 and r.json()["error"]["code"] == "mock_no_match"


async def test_record_mode_replay_serves_what_the_upstream_accepted(lenient_upstream: str, tmp_path: Path) -> None:
    await _record(lenient_upstream, tmp_path / "future")
    # Record mode runs its servers on a thread of their own, as under a sync test.
    run = await asyncio.to_thread(start_cassette_run, tmp_path / "future.cassette.jsonl", "none", upstream=None)
    try:
        assert run.action == "replay"
        async with httpx.AsyncClient(timeout=5) as c:
            r = await c.post(run.base_url + "/chat/completions", json=NEW_MODEL)
        assert (r.status_code, r.content) == (200, SSE), r.text
    finally:
        await asyncio.to_thread(run.close)


async def test_serve_replay_serves_what_the_upstream_accepted(lenient_upstream: str, tmp_path: Path) -> None:
    await _record(lenient_upstream, tmp_path / "future")
    proc = ServeProcess("--replay", str(tmp_path / "future"), "--speed", "0")
    try:
        async with httpx.AsyncClient(timeout=5) as c:
            r = await c.post(proc.base_url + "/chat/completions", json=NEW_MODEL)
            assert (r.status_code, r.content) == (200, SSE)
            r = await c.post(proc.base_url + "/anthropic/v1/messages", json=NEW_ANTHROPIC)
            assert (r.status_code, r.content) == (200, ANTHROPIC)
    finally:
        code, _ = proc.stop()
    assert code == 130

