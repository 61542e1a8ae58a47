"""The official openai SDK (sync and async, streaming and not) against the server, per reply shape."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script

ARGS = '{"city": "Paris", "note": "say \\"hi\\" – 你好"}'
SHAPES: dict[str, dict[str, Any]] = {
    "content": {"content": "Hello, 世界! 🎉"},
    "reasoning": {"reasoning": "Let me think about it.", "content": "Done."},
    "tool_call": {"tool_calls": [{"name": "get_weather", "arguments": ARGS}]},
    "parallel_tools": {"reasoning": "two calls", "tool_calls": [
        {"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "{}"}]},
}


def _client_kwargs(server: MockServer) -> dict[str, Any]:
    return {"base_url": server.base_url, "api_key": "sk-test", "max_retries": 0, "timeout": 30.0}


def _check_usage(usage: Any, *, reasoning: bool) -> None:
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    extra = usage.model_extra or {}
    assert extra["prompt_cache_hit_tokens"] + extra["prompt_cache_miss_tokens"] == usage.prompt_tokens
    details = usage.completion_tokens_details
    assert (details is not None and details.reasoning_tokens is not None) is reasoning


def _expected(shape: str) -> dict[str, Any]:
    spec = SHAPES[shape]
    script = Script.of({"reply": spec})
    reply = script.steps[0].reply.to_reply()  # type: ignore[union-attr]
    return {"content": reply.content, "reasoning": reply.reasoning,
            "calls": [(c.name, c.arguments) for c in reply.tool_calls]}


def _fold_stream(chunks: list[Any]) -> dict[str, Any]:
    content, reasoning = "", ""
    calls: dict[int, list[str]] = {}
    usage = None
    finish = None
    for ch in chunks:
        if ch.usage is not None:
            usage = ch.usage
        for choice in ch.choices:
            d = choice.delta
            content += d.content or ""
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                slot = calls.setdefault(tc.index, ["", ""])
                slot[0] += tc.function.name or ""
                slot[1] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    return {"content": content, "reasoning": reasoning, "calls": [tuple(calls[i]) for i in sorted(calls)],
            "usage": usage, "finish": finish}


def _fold_message(resp: Any) -> dict[str, Any]:
    msg = resp.choices[0].message
    return {
        "content": msg.content or "",
        "reasoning": (msg.model_extra or {}).get("reasoning_content") or "",
        "calls": [(c.function.name, c.function.arguments) for c in msg.tool_calls or []],
        "usage": resp.usage,
        "finish": resp.choices[0].finish_reason,
    }


def _check(shape: str, got: dict[str, Any]) -> None:
    want = _expected(shape)
    assert got["content"] == want["content"]
    assert got["reasoning"] == want["reasoning"]
    assert got["calls"] == want["calls"]  # arguments byte for byte
    assert got["finish"] == ("tool_calls" if want["calls"] else "stop")
    _check_usage(got["usage"], reasoning=bool(want["reasoning"]))


REQUEST = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_async_client(dshkit_mock_server: MockServerFactory, shape: str, stream: bool) -> None:
    server = await dshkit_mock_server(Script.of({"reply": SHAPES[shape]}))
    async with openai.AsyncOpenAI(**_client_kwargs(server)) as client:
        if stream:
            chunks = [c async for c in await client.chat.completions.create(**REQUEST, stream=True)]
            _check(shape, _fold_stream(chunks))
        else:
            _check(shape, _fold_message(await client.chat.completions.create(**REQUEST)))
    server.assert_consumed()


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sync_client(dshkit_mock_server_sync: Any, shape: str, stream: bool) -> None:
    server = dshkit_mock_server_sync(Script.of({"reply": SHAPES[shape]}))
    with openai.OpenAI(**_client_kwargs(server)) as client:
        if stream:
            _check(shape, _fold_stream(list(client.chat.completions.create(**REQUEST, stream=True))))
        else:
            _check(shape, _fold_message(client.chat.completions.create(**REQUEST)))


def test_sync_stream_helper_accumulates_tool_calls(mock_deepseek: MockServer) -> None:
    # The SDK's stream() helper concatenates repeated id/name strings (wire.md §12), so this
    # also checks that id and name are sent once per call (S26).
    mock_deepseek.add_script(Script.of({"reply": SHAPES["parallel_tools"]}))
    with (
        openai.OpenAI(**_client_kwargs(mock_deepseek)) as client,
        client.chat.completions.stream(**REQUEST) as s,
    ):
        for _ in s:
            pass
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in calls] == [("a", '{"x": 1}'), ("b", "{}")]
    assert all(c.id.startswith(f"call_0{i}_") and len(c.id) == 32 for i, c in enumerate(calls))


def test_default_reply_without_script(mock_deepseek: MockServer) -> None:
    with openai.OpenAI(**_client_kwargs(mock_deepseek)) as client:
        resp = client.chat.completions.create(
            model="deepseek-chat", messages=[{"role": "user", "content": "ping 🏓"}])
        assert resp.choices[0].message.content == 'You said: "ping 🏓"'
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 3},
                                             "mode": {"enum": ["fast", "slow"]}},
            "required": ["q", "n", "mode"]}}}]
        resp = client.chat.completions.create(
            model="deepseek-chat", messages=[{"role": "user", "content": "go"}], tools=tools,  # type: ignore[arg-type]
            tool_choice="required")
        call = resp.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert call.function.name == "lookup"
        assert call.function.arguments == '{"q": "example", "n": 3, "mode": "fast"}'


async def test_sdk_maps_errors(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(sequence="rate_limit,insufficient_balance,inband_error")
    async with openai.AsyncOpenAI(**_client_kwargs(server)) as client:
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(**REQUEST)
        with pytest.raises(openai.APIStatusError) as info:
            await client.chat.completions.create(**REQUEST)
        assert info.value.status_code == 402
        with pytest.raises(openai.APIError, match="mock in-band error"):
            async for _ in await client.chat.completions.create(**REQUEST, stream=True):
                pass
