"""`OpenAICompatAdapter`, the chat base on the official `openai` SDK, over loopback HTTP: the body
is the chat base's with the profile's fields the SDK does not type sent as top-level fields,
error statuses and in-band errors map exactly as `DeepSeekAdapter` maps them, and the SDK's blind
spot, EOF and `[DONE]` read alike, ends a stream as its capabilities say."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshkit.harness.llm import (
    BlockAssembler,
    ErrorCode,
    GenerateOptions,
    LlmFailure,
    ToolCallBlock,
    UserMessage,
)
from dshkit.harness.llm.messages import ReasoningBlock
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_chat.profile import DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.providers.openai_compat import OpenAICompatAdapter

from ..conftest import Handler, RawServer, body
from ..openai_chat.wire import USAGE, call, chunk, sse
from ..test_stream import finish_of, run

KEY = "sk-test-compat"
TOOL_TURN = sse(
    chunk({"role": "assistant", "content": None, "reasoning_content": "Read it first."}),
    chunk({"tool_calls": [call(0, "call_00_r", "read", '{"file_path":')]}),
    chunk({"tool_calls": [call(0, arguments='"README.md"}')]}),
    chunk({"content": ""}, "tool_calls", USAGE),
)


def options(**kw: Any) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),), system="Be brief.", **kw)


@pytest.mark.parametrize("config", [None, DeepSeekConfig(thinking="disabled", tool_only_content="empty")], ids=["default", "configured"])
async def test_the_request_is_the_chat_base_body_and_the_answer_its_blocks(raw_server: RawServer, config: DeepSeekConfig | None) -> None:
    url = await raw_server.serve(body(TOOL_TURN, headers={"x-request-id": "req-42"}))
    opts = options(session_id="sess-9", reasoning_effort="high" if config is None else None)
    chunks = await run(OpenAICompatAdapter(url + "/v1/", KEY, config=config), opts)
    finish = finish_of(chunks)
    assert finish.reason.kind == "tool-calls" and finish.meta is not None and finish.meta.request_id == "req-42"
    assert BlockAssembler().feed_all(chunks).blocks() == [
        ReasoningBlock(text="Read it first."), ToolCallBlock(id="call_00_r", name="read", arguments='{"file_path":"README.md"}'),
    ]
    [sent] = raw_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["x-deepseek-harness-session-id"] == "sess-9"
    assert json.loads(sent.body) == serialize(opts, config or DeepSeekConfig())


ENVELOPE = b'{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":"rate_limit"}}'
CONTEXT = b'{"error":{"message":"This model\'s maximum context length is 65536 tokens","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}'
IN_BAND = sse(chunk({"content": "partial"}), {"error": {"message": "Provider returned error", "code": 502, "type": "upstream_error"}})
FAILURES: dict[str, Handler] = {
    "429-retry-after": body(ENVELOPE, 429, {"retry-after": "7", "x-request-id": "req-1"}, "application/json"),
    "400-context": body(CONTEXT, 400, content_type="application/json"),
    "503-not-json": body(b"upstream down", 503, content_type="text/plain"),
    "in-band-error": body(IN_BAND),
    # an error that is a bare string: the SDK hands it over as the body, not as a dict
    "in-band-error-string": body(sse(chunk({"content": "partial"}), {"error": "plain words"})),
}


def _judged(failure: LlmFailure | None) -> tuple[Any, ...]:
    assert failure is not None
    return failure.code, failure.status, failure.message, failure.provider_error, failure.provider_retry_after_ms


@pytest.mark.parametrize("name", list(FAILURES))
async def test_errors_map_as_the_deepseek_adapter_maps_them(raw_server: RawServer, name: str) -> None:
    url = await raw_server.serve(FAILURES[name])
    ours = finish_of(await run(OpenAICompatAdapter(url, KEY))).reason.failure
    reference = finish_of(await run(DeepSeekAdapter(url, api_key=KEY))).reason.failure
    assert _judged(ours) == _judged(reference)


async def test_eof_and_done_end_a_stream_alike(raw_server: RawServer) -> None:
    answered = sse(chunk({"content": "x"}), chunk({}, "stop"), done=False)
    unfinished = sse(chunk({"content": "x"}), done=False)
    silent = sse(chunk({"content": ""}, "stop"))
    urls = [await raw_server.serve(body(b)) for b in (answered, unfinished, silent)]
    assert not OpenAICompatAdapter.capabilities.done_marker
    finish = finish_of(await run(OpenAICompatAdapter(urls[0], KEY)))
    assert finish.reason.kind == "stop" and finish.meta is not None and not finish.meta.done_missing
    cut = finish_of(await run(OpenAICompatAdapter(urls[1], KEY))).reason.failure
    assert cut is not None and cut.code == ErrorCode.STREAM_CLOSED
    empty = finish_of(await run(OpenAICompatAdapter(urls[2], KEY))).reason.failure
    assert empty is not None and (empty.code, empty.message) == (ErrorCode.EMPTY_RESPONSE, "completed response with no content")
