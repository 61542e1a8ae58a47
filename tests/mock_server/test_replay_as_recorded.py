"""A recorded exchange is served as recorded, whatever the mock's own validation thinks of it.

The upstream here is a tiny aiohttp server that accepts any body (a newer DeepSeek that knows
`deepseek-v5-pro`, a larger `max_tokens` ceiling). The recorder in between writes a real
cassette; replaying it (the pytest fixture, the record-mode path and `serve --replay`) must hand
back the recorded bytes, never the mock's `400 Model Not Exist`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from dshkit.mock_server import MockServerFactory, Recorder, ReplayServerFactory, Script
from dshkit.mock_server.record_mode import start_cassette_run

from .cli_process import ServeProcess

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

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=SSE, content_type="text/event-stream")

    async def messages(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=ANTHROPIC, content_type="application/json")

    app = web.Application()
    app.router.add_post("/chat/completions", chat)
    app.router.add_post("/anthropic/v1/messages", messages)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


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
