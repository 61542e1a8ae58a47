"""`AnthropicSDKAdapter`, the Anthropic Messages wire on the official `anthropic` SDK, over
loopback HTTP: the request is the Anthropic serializer's body (fields the SDK does not type sent
as top-level fields), the answer the same blocks and replay state as `AnthropicAdapter` makes of
the same bytes, and error statuses and in-band `error` events map as that adapter maps them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshkit.harness.llm import GenerateOptions, LlmFailure, UserMessage
from dshkit.harness.providers.anthropic import AnthropicAdapter, AnthropicConfig
from dshkit.harness.providers.anthropic.serialize import serialize
from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter

from ..anthropic.wire import TOOL_TURN, block_start, delta, sse, start
from ..conftest import Handler, RawServer, body
from ..test_stream import finish_of, run

KEY = "sk-test-anthropic"


def options(**kw: Any) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),), system="Be brief.", **kw)


async def test_the_request_is_the_serializers_body_and_the_answer_the_httpx_adapters(raw_server: RawServer) -> None:
    # Anthropic names its request id `request-id`: read on success as the httpx adapter reads it
    url = await raw_server.serve(body(TOOL_TURN, headers={"request-id": "req-an"}))
    config = AnthropicConfig(reasoning_effort="high")
    opts = options(session_id="s-1")
    ours = await run(AnthropicSDKAdapter(url + "/anthropic/", KEY, config=config), opts)
    reference = await run(AnthropicAdapter(url + "/anthropic", api_key=KEY, config=config), opts)
    assert ours == reference and finish_of(ours).reason.kind == "tool-calls"
    assert finish_of(ours).meta is not None and finish_of(ours).meta.request_id == "req-an"  # type: ignore[union-attr]
    sent, sent_by_httpx = raw_server.requests
    assert sent.path == "/anthropic/v1/messages"
    # the key as the SDK sends it (`x-api-key`, or `Bearer` in recent versions)
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    assert sent.headers["x-deepseek-harness-session-id"] == "s-1"
    expected = serialize(opts, config)
    assert {"thinking", "output_config"} & expected.keys()  # the untyped fields are in play
    assert json.loads(sent.body) == expected == json.loads(sent_by_httpx.body)


ANTHROPIC_429 = b'{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"},"request_id":"req_body"}'
DEEPSEEK_400 = b'{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}'
OPENING = sse(start(), block_start(0, {"type": "text", "text": ""}), delta(0, "text_delta", text="partial"))
FAILURES: dict[str, Handler] = {
    "429-anthropic-envelope": body(ANTHROPIC_429, 429, {"retry-after": "4"}, "application/json"),
    "529-overloaded": body(b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 529,
                           content_type="application/json"),
    "400-deepseek-envelope": body(DEEPSEEK_400, 400, content_type="application/json"),
    "error-event": body(OPENING + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'),
    "error-event-rate-limit": body(OPENING + b'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"later"}}\n\n'),
}


def _judged(failure: LlmFailure | None) -> tuple[Any, ...]:
    assert failure is not None
    return failure.code, failure.status, failure.message, failure.provider_error, failure.provider_retry_after_ms, failure.request_id


@pytest.mark.parametrize("name", list(FAILURES))
async def test_errors_map_as_the_httpx_adapter_maps_them(raw_server: RawServer, name: str) -> None:
    url = await raw_server.serve(FAILURES[name])
    ours = finish_of(await run(AnthropicSDKAdapter(url, KEY))).reason.failure
    reference = finish_of(await run(AnthropicAdapter(url, api_key=KEY))).reason.failure
    assert _judged(ours) == _judged(reference)
