"""The official `anthropic` SDK against the mock's Anthropic surface: the streaming helper and
`get_final_message()` (sync and async), `messages.create`, errors and retries, and the real
corpus bodies served through raw steps (AN75)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.anthropic.validation import PASSBACK_MESSAGE
from tests.conftest import SHARED, corpus_missing

KEY = "sk-ant-sdk-test"
ARGS = '{"city": "Paris", "note": "say \\"hi\\" – 你好"}'
SHAPES: dict[str, dict[str, Any]] = {
    "text": {"content": "Hello, 世界! 🎉"},
    "thinking": {"reasoning": "Let me think about it.", "content": "Done."},
    "tool_use": {"reasoning": "Need the weather.", "tool_calls": [{"name": "get_weather", "arguments": ARGS}]},
    "parallel_tools": {"reasoning": "two calls", "tool_calls": [
        {"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "{}"}]},
}
REQUEST: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 1024,
                           "messages": [{"role": "user", "content": "hi"}]}
REAL_ANTHROPIC = SHARED / "corpus" / "real-anthropic"


def _kwargs(server: MockServer, **extra: Any) -> dict[str, Any]:
    return {"base_url": server.anthropic_base_url, "api_key": KEY, "max_retries": 0,
            "timeout": 2.0, **extra}


def _check(shape: str, msg: Any) -> None:
    spec = Script.of({"reply": SHAPES[shape]}).steps[0].reply.to_reply()  # type: ignore[union-attr]
    types = [b.type for b in msg.content]
    want = (["thinking"] if spec.reasoning else []) + (["text"] if spec.content else []) \
        + ["tool_use"] * len(spec.tool_calls)
    assert types == want
    for block in msg.content:
        if block.type == "thinking":
            assert block.thinking == spec.reasoning and block.signature == msg.id
        elif block.type == "text":
            assert block.text == spec.content
    calls = [(b.name, b.input) for b in msg.content if b.type == "tool_use"]
    assert calls == [(c.name, json.loads(c.arguments)) for c in spec.tool_calls]
    assert msg.stop_reason == ("tool_use" if spec.tool_calls else "end_turn")
    assert msg.model == "deepseek-flash"
    assert msg.usage.output_tokens > 1 and msg.usage.input_tokens > 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sync_stream_helper_and_create(dshkit_mock_server_sync: Any, shape: str) -> None:
    server = dshkit_mock_server_sync(Script.of({"reply": SHAPES[shape]}, {"reply": SHAPES[shape]}), api_key=KEY)
    with anthropic.Anthropic(**_kwargs(server)) as client:
        with client.messages.stream(**REQUEST) as stream:
            deltas = [e for e in stream if e.type == "content_block_delta"]
            final = stream.get_final_message()
        _check(shape, final)
        assert deltas  # the helper yielded the deltas it accumulated
        _check(shape, client.messages.create(**REQUEST))
    server.assert_consumed()


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_async_stream_helper_and_create(dshkit_mock_server: MockServerFactory, shape: str) -> None:
    server = await dshkit_mock_server(Script.of({"reply": SHAPES[shape]}, {"reply": SHAPES[shape]}), api_key=KEY)
    async with anthropic.AsyncAnthropic(**_kwargs(server)) as client:
        async with client.messages.stream(**REQUEST) as stream:
            text = "".join([t async for t in stream.text_stream])
            final = await stream.get_final_message()
        _check(shape, final)
        assert text == (SHAPES[shape].get("content") or "")
        _check(shape, await client.messages.create(**REQUEST))
    server.assert_consumed()


async def test_tool_round_trip_with_thinking_passback(dshkit_mock_server: MockServerFactory) -> None:
    # The SDK's own content blocks, sent back as they came, satisfy the passback rule (AN27).
    server = await dshkit_mock_server(Script.of(
        {"reply": SHAPES["tool_use"]}, {"match": {"user": "weather"}, "reply": {"content": "Sunny."}}))
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    async with anthropic.AsyncAnthropic(**_kwargs(server)) as client:
        messages: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
        async with client.messages.stream(**{**REQUEST, "messages": messages}, tools=tools) as s:  # type: ignore[arg-type]
            first = await s.get_final_message()
        call = next(b for b in first.content if b.type == "tool_use")
        without_thinking = [b for b in first.content if b.type != "thinking"]
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "22C"}]}
        with pytest.raises(anthropic.BadRequestError) as bad:
            await client.messages.create(**{**REQUEST, "messages": [
                *messages, {"role": "assistant", "content": without_thinking}, result]}, tools=tools)  # type: ignore[arg-type]
        assert bad.value.status_code == 400 and PASSBACK_MESSAGE in str(bad.value)
        assert bad.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        second = await client.messages.create(**{**REQUEST, "messages": [
            *messages, {"role": "assistant", "content": first.content}, result]}, tools=tools)  # type: ignore[arg-type]
    assert second.content[0].type == "text" and second.content[0].text == "Sunny."
    sent = server.journal.messages()[-1].body["messages"][1]["content"]
    assert sent[0]["type"] == "thinking" and sent[0]["signature"] == first.id
    server.assert_consumed()


def test_errors_map_to_sdk_exceptions_and_529_is_retried(dshkit_mock_server_sync: Any) -> None:
    server = dshkit_mock_server_sync(sequence="overloaded,success,rate_limit,event_error", api_key=KEY)
    with anthropic.Anthropic(**_kwargs(server, max_retries=1)) as client:
        # 529 is retried by the SDK (once here), and the retry gets the next step.
        got = client.messages.create(**REQUEST)
        assert got.content[-1].text == "mock response recovered"  # type: ignore[union-attr]
    with anthropic.Anthropic(**_kwargs(server)) as client:
        with pytest.raises(anthropic.RateLimitError) as limited:
            client.messages.create(**REQUEST)
        assert limited.value.status_code == 429
        # A mid-stream `error` event: APIStatusError with status 200, not retried (AN70).
        with pytest.raises(anthropic.APIStatusError) as mid, client.messages.stream(**REQUEST) as stream:
            stream.get_final_message()
        assert "Overloaded" in str(mid.value)
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(**_kwargs(server, api_key="wrong")).messages.create(**REQUEST)
    assert [e.status for e in server.journal.messages()] == [529, 200, 429, 200, 401]


def test_bad_model_is_bad_request(mock_deepseek: MockServer) -> None:
    with anthropic.Anthropic(**_kwargs(mock_deepseek)) as client, pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(**{**REQUEST, "model": "gpt-4o"})
    assert "Model Not Exist" in str(e.value)


# -- the corpus, through the mock (AN75) ------------------------------------------------------


def _corpus_cases() -> list[Path]:
    if not REAL_ANTHROPIC.is_dir():
        return []
    return [p for p in sorted(REAL_ANTHROPIC.glob("*.expected.json"))
            if json.loads(p.read_text("utf-8"))["format"] in ("sse", "jsonl")]


def _served_bytes(meta: dict[str, Any]) -> bytes:
    data = (REAL_ANTHROPIC / meta["file"]).read_bytes()
    if meta["format"] == "jsonl":  # vercel/ai's records dropped the event lines: reframe (AN43)
        data = b"".join(b"event: " + json.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
                        for line in data.splitlines() if line.strip())
    return data


@pytest.mark.parametrize("sidecar", _corpus_cases() or [pytest.param(None, marks=pytest.mark.skip(
    reason=corpus_missing(REAL_ANTHROPIC)))],
    ids=lambda p: p.name.removesuffix(".expected.json") if p else "absent")
def test_corpus_streams_through_raw_steps(dshkit_mock_server_sync: Any, sidecar: Path) -> None:
    meta = json.loads(sidecar.read_text("utf-8"))
    raw = {"raw": {"status": 200, "headers": {"Content-Type": "text/event-stream; charset=utf-8"},
                   "writes": [{"b64": base64.b64encode(_served_bytes(meta)).decode()}]}}
    server = dshkit_mock_server_sync(Script.of(raw))
    want = meta["expected"]
    with anthropic.Anthropic(**_kwargs(server)) as client, client.messages.stream(**REQUEST) as stream:
        msg = stream.get_final_message()
    assert msg.id == want["message"]["id"] and msg.model == want["message"]["model"]
    assert msg.stop_reason == want["stop_reason"] and msg.stop_sequence == want["stop_sequence"]
    assert [b.type for b in msg.content] == [b["type"] for b in want["content"]]
    for got, exp in zip(msg.content, want["content"], strict=True):
        if exp["type"] == "text":
            assert got.text == exp["text"]  # type: ignore[union-attr]
        elif exp["type"] == "thinking":
            assert got.thinking == exp["thinking"] and got.signature == exp["signature"]  # type: ignore[union-attr]
        elif exp["type"] == "tool_use":
            assert got.id == exp["id"] and got.name == exp["name"]  # type: ignore[union-attr]
    assert msg.usage.output_tokens == want["usage"]["output_tokens"]
    assert msg.usage.input_tokens == want["usage"]["input_tokens"]
