"""A logged call rendered on DeepSeek's Chat Completions wire, `dshkit.mock_server.chunk_wire`:
the deltas, tool-call fragments, usage and finish a DeepSeek server sends, read back by the real
decoder as the logged chunks; each ending (an HTTP error with its retry headers, an in-band error
event, a body without `[DONE]`, a reset, a held stream); and every logged failure coming back
from the mock server as the same code through the real adapter of each wire (the Anthropic wire
rendered by `dshkit.mock_server.anthropic.replay`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from dshkit.harness.llm import (
    Finish,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
    TokenUsage,
    UserMessage,
)
from dshkit.harness.llm.chunks import (
    BlockStart,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import MockServerFactory, Script
from dshkit.mock_server.chunk_wire import WirePlan, wire_plan, wire_usage
from dshkit.mock_server.generate.reply import StreamMeta

from ..harness.providers.openai_chat.wire import decode

META = StreamMeta(id="chatcmpl-replay-1", created=1_700_000_000, model="deepseek-v4-flash",
                  system_fingerprint="fp_replay")
USAGE = TokenUsage(input_tokens=12, output_tokens=40, cache_read_tokens=30, reasoning_tokens=9)
CALL: list[StreamChunk] = [
    BlockStart(index=0, block_type="reasoning"),
    ReasoningDelta(index=0, text="Read "), ReasoningDelta(index=0, text="both."),
    BlockStart(index=1, block_type="text"),
    TextDelta(index=1, text="Reading"), TextDelta(index=1, text=" — é."),
    BlockStart(index=2, block_type="tool-call"),
    ToolCallDelta(index=2, id="call_a", name="read", arguments_delta='{"path":'),
    ToolCallDelta(index=2, id="call_a", arguments_delta=' "a.md"}'),
    BlockStart(index=5, block_type="tool-call"),
    ToolCallDelta(index=5, id="call_b", name="grep", arguments_delta='{"q": "x"}'),
    Usage(usage=USAGE),
    Finish(reason=FinishReason(kind="tool-calls")),
]


def _payloads(plan: WirePlan) -> list[Any]:
    out = []
    for event in plan.events:
        assert event.startswith(b"data: ") and event.endswith(b"\n\n"), event
        data = event[len(b"data: "):-2]
        out.append(data.decode() if data == b"[DONE]" else json.loads(data))
    return out


def test_a_logged_call_goes_out_as_deepseek_deltas_and_decodes_back() -> None:
    plan = wire_plan(CALL, META)
    assert (plan.status, plan.body, plan.end) == (200, None, "close")
    *chunks, done = _payloads(plan)
    assert done == "[DONE]"
    for c in chunks:  # the envelope from the meta on every chunk
        assert (c["id"], c["created"], c["model"], c["system_fingerprint"], c["object"]) == (
            META.id, META.created, META.model, META.system_fingerprint, "chat.completion.chunk")
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Read "}, {"reasoning_content": "both."},
        {"content": "Reading"}, {"content": " — é."},
        # id, type and name on a call's first fragment only; the wire index counts calls, not blocks
        {"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                         "function": {"name": "read", "arguments": '{"path":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ' "a.md"}'}}]},
        {"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                         "function": {"name": "grep", "arguments": '{"q": "x"}'}}]},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 8 + ["tool_calls"]
    assert [c["usage"] for c in chunks] == [None] * 8 + [wire_usage(USAGE)]  # on the finish chunk

    # The real decoders (plain and fast) read the logged call back: same pieces, calls, usage and finish.
    back = decode(b"".join(plan.events))
    assert "".join(c.text for c in back if isinstance(c, ReasoningDelta)) == "Read both."
    assert [c.text for c in back if isinstance(c, TextDelta)] == ["Reading", " — é."]
    calls: dict[str, tuple[str | None, str]] = {}
    for c in back:
        if isinstance(c, ToolCallDelta):
            name, args = calls.get(c.id, (c.name, ""))
            calls[c.id] = (name, args + c.arguments_delta)
    assert calls == {"call_a": ("read", '{"path": "a.md"}'), "call_b": ("grep", '{"q": "x"}')}
    assert [c.usage for c in back if isinstance(c, Usage)] == [USAGE]
    finish = back[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "tool-calls"


def test_usage_puts_cached_tokens_back_into_the_prompt() -> None:
    assert wire_usage(USAGE) == {
        "prompt_tokens": 42, "completion_tokens": 40, "total_tokens": 82,
        "prompt_tokens_details": {"cached_tokens": 30},
        "prompt_cache_hit_tokens": 30, "prompt_cache_miss_tokens": 12,
        "completion_tokens_details": {"reasoning_tokens": 9},
    }
    # no cache, no reasoning: none of their fields, cache writes count as prompt
    assert wire_usage(TokenUsage(input_tokens=3, output_tokens=4, cache_write_tokens=5)) == {
        "prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12}


def test_an_error_before_any_content_is_an_http_error_with_its_retry_headers() -> None:
    slow = LlmFailure(message="slow down", code="RATE_LIMIT", provider_retry_after_ms=1500, request_id="req-9")
    plan = wire_plan([], META, failure=slow)
    assert (plan.status, plan.events) == (429, ())
    assert dict(plan.headers) == {"Content-Type": "application/json", "Retry-After": "1.5", "x-request-id": "req-9"}
    assert plan.body is not None and json.loads(plan.body) == {"error": {
        "message": "slow down", "type": "rate_limit_error", "param": None, "code": "rate_limit"}}
    # the logged provider error's own type, code and param win; no retry facts, no retry headers
    logged = LlmFailure(message="bad field", code="INVALID_REQUEST", status=422,
                        provider_error=ProviderError(type="invalid_request_error", code="bad_messages", param="messages"))
    plan = wire_plan([], META, failure=logged)
    assert (plan.status, dict(plan.headers)) == (422, {"Content-Type": "application/json"})
    assert plan.body is not None and json.loads(plan.body)["error"] == {
        "message": "bad field", "type": "invalid_request_error", "param": "messages", "code": "bad_messages"}


TEXT_SO_FAR: Sequence[StreamChunk] = [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hal")]


@pytest.mark.parametrize(("code", "hang", "end", "done"), [
    ("SERVER", False, "close", False),  # an error after content: DeepSeek's in-band error event
    ("STREAM_CLOSED", False, "eof", False),
    ("TRANSPORT", False, "reset", False),
    (None, True, "hold", False),
    (None, False, "close", True),
])
def test_each_ending_after_content(code: str | None, hang: bool, end: str, done: bool) -> None:
    failure = None if code is None else LlmFailure(message=f"{code} as logged", code=code)
    plan = wire_plan(TEXT_SO_FAR, META, failure=failure, hang=hang)
    assert (plan.status, plan.body, plan.end) == (200, None, end)
    payloads = _payloads(plan)
    assert (payloads[-1] == "[DONE]") == done
    assert payloads[1]["choices"][0]["delta"] == {"content": "Hal"}
    if code == "SERVER":
        assert payloads[-1] == {"error": {"message": "SERVER as logged", "type": "api_error", "param": None,
                                          "code": "server"}}
    else:  # only a finished call sends a finish chunk
        finishes = [p["choices"][0]["finish_reason"] for p in payloads if isinstance(p, dict)]
        assert finishes == [None, None] + (["stop"] if done else [])


# --- through the mock server, on both wires ----------------------------------------------------

TEXT = [{"type": "block-start", "index": 0, "blockType": "text"}, {"type": "text-delta", "index": 0, "text": "Hel"}]

ARGS = [{"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "call_1", "name": "bash", "argumentsDelta": '{"command":"ec'}]

FAILURES = [
    ("AUTH", []), ("QUOTA", []), ("RATE_LIMIT", []), ("INVALID_REQUEST", []), ("CONTEXT_WINDOW_EXCEEDED", []),
    ("SERVER", []), ("STREAM_CLOSED", ARGS), ("STREAM_CLOSED", TEXT), ("TRANSPORT", TEXT), ("EMPTY_RESPONSE", []),
    ("CONTENT_FILTER", TEXT), ("INSUFFICIENT_SYSTEM_RESOURCE", []), ("SERVER", TEXT), ("TIMEOUT", []),
]

DEPARTURES = {
    # (wire, logged code, content before it): what the client reports instead, and why
    ("chat", "SERVER", True): "PROVIDER_ERROR",  # an in-band error event is PROVIDER_ERROR (the adapter's decision)
    ("anthropic", "INSUFFICIENT_SYSTEM_RESOURCE", False): "SERVER",  # no such stop reason: the overloaded 529
    ("chat", "TIMEOUT", False): "TRANSPORT",  # replayed as a reset; a real stall would wait for the idle timeout
    ("anthropic", "TIMEOUT", False): "TRANSPORT",
}


@pytest.mark.parametrize("wire", ["chat", "anthropic"])
async def test_a_logged_failure_comes_back_as_the_same_code_on_each_wire(
    dshkit_mock_server: MockServerFactory, wire: str
) -> None:
    """Each `throw` entry, rendered from `plan_call` by `chunk_wire` or `anthropic.replay`, is
    read by the real adapter of that wire as the logged failure again."""
    steps = [{"chunks": {"kind": "throw", "chunks": chunks, "message": f"{code} as logged", "code": code}}
             for code, chunks in FAILURES]
    server = await dshkit_mock_server(Script.of(*steps))
    adapter = (DeepSeekAdapter(server.base_url, "sk-x") if wire == "chat"
               else AnthropicAdapter(server.base_url + "/anthropic", "sk-x"))
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=[UserMessage.text("hi")])
    got, want = [], []
    try:
        for code, chunks in FAILURES:
            finish = [c async for c in adapter.stream(options)][-1]
            assert isinstance(finish, Finish) and finish.reason.failure is not None
            got.append(finish.reason.failure.code)
            want.append(DEPARTURES.get((wire, code, bool(chunks)), code))
    finally:
        await adapter.aclose()
    assert got == want

