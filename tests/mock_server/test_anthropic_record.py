"""Record and replay on the Anthropic Messages surface: the recorder in front of the mock, the
official SDK through it, then the cassette replayed byte for byte (sequence and body matching)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx

from dshkit.mock_server import (
    MockServerFactory,
    Recorder,
    ReplayServerFactory,
    Script,
    load_cassette,
)

KEY = "sk-ant-live-SECRET-0123456789"
REQUEST: dict[str, Any] = {"model": "claude-opus-4-1", "max_tokens": 512,
                           "messages": [{"role": "user", "content": "weather in Zürich?"}]}
STEP = {"reply": {"reasoning": "Look it up — é.", "content": "Let me check.",
                  "tool_calls": [{"name": "weather", "id": "call_00_anthropicrec000000000001",
                                  "arguments": '{"city": "Zürich"}'}]},
        "stream": {"split": {"mode": "fixed", "size": 3},
                   "writes": {"events_per_write": 0, "random_max": 40, "inside_utf8": True}}}


def _final(base_url: str, **extra: Any) -> tuple[Any, list[str]]:
    with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0, timeout=5.0) as client, \
            client.messages.stream(**REQUEST, **extra) as stream:
        kinds = [e.type for e in stream]
        return stream.get_final_message(), kinds


async def test_record_then_replay_with_the_sdk(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    import asyncio

    upstream = await dshkit_mock_server(Script.of(STEP), api_key=KEY, seed=5)
    async with Recorder(upstream.base_url, tmp_path / "anth") as rec:
        live, live_kinds = await asyncio.to_thread(_final, rec.base_url + "/anthropic")
    assert live.model == "deepseek-v4-pro" and live.stop_reason == "tool_use"
    (x,) = load_cassette(tmp_path / "anth").exchanges
    assert x.request.path == "/anthropic/v1/messages" and x.is_chat
    # the reads hold what the upstream sent, however it was cut into reads (one read under
    # load, several when idle); replay writes those very reads back below
    assert x.body == upstream.journal.last.data
    text = (tmp_path / "anth.cassette.jsonl").read_text("utf-8")
    assert KEY not in text  # the SDK's Bearer header is scrubbed

    for match in ("sequence", "body"):
        replay = await dshkit_replay(tmp_path / "anth", speed=0, match=match)
        again, kinds = await asyncio.to_thread(_final, replay.anthropic_base_url)
        assert again.model_dump() == live.model_dump() and kinds == live_kinds
        assert [w.data for w in replay.journal.last.writes] == [r.data for r in x.reads]


async def test_x_api_key_is_scrubbed_and_a_changed_body_is_refused(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.of({"reply": {"content": "hi"}}))
    body = {**REQUEST, "stream": True}
    async with Recorder(upstream.base_url, tmp_path / "key") as rec, httpx.AsyncClient(timeout=5) as c:
        first = await c.post(rec.base_url + "/anthropic/messages", json=body, headers={"x-api-key": KEY})
    (x,) = load_cassette(tmp_path / "key").exchanges
    assert x.request.headers["x-api-key"] == "{{scrubbed:x-api-key}}"
    assert KEY not in (tmp_path / "key.cassette.jsonl").read_text("utf-8")
    replay = await dshkit_replay(tmp_path / "key", match="body", check_consumed=False,
                                assert_all_requests_served=False)
    async with httpx.AsyncClient(timeout=5) as c:
        h = {"x-api-key": "another-key"}  # any key: the recorded one was scrubbed
        other = await c.post(replay.make_url("/anthropic/messages"), json={**body, "max_tokens": 7}, headers=h)
        assert other.status_code == 418 and "max_tokens" in other.json()["error"]["message"]
        same = await c.post(replay.make_url("/anthropic/messages"), json=body, headers=h)
    assert same.status_code == 200 and same.content == first.content
