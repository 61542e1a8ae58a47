"""Codec round trips: every type ⇄ DSH's camelCase JSON, losslessly (DESIGN.md, Contracts)."""

from __future__ import annotations

import json

import pytest

from dshkit.harness.llm import (
    AssistantMessage,
    Finish,
    FinishReason,
    LlmFailure,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.chunks import (
    BlockEnd,
    BlockStart,
    FinishMeta,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.llm.codec import (
    CodecError,
    block_from_json,
    block_to_json,
    chunk_from_json,
    chunk_to_json,
    failure_from_json,
    failure_to_json,
    finish_reason_from_json,
    finish_reason_to_json,
    message_from_json,
    message_to_json,
    source_from_json,
    source_to_json,
    tool_schema_from_json,
    tool_schema_to_json,
    usage_from_json,
    usage_to_json,
)
from dshkit.harness.llm.messages import (
    ImageAttachment,
    ImageBlock,
    ModelSource,
    OpaqueBlock,
    OpaqueSource,
    PluginSource,
    ReasoningBlock,
    SystemMessage,
    ToolResultBlock,
    ToolResultMessage,
    ToolSource,
    UserSource,
)

FAILURE = LlmFailure(
    message="Rate limited",
    code="RATE_LIMIT",
    status=429,
    provider_retry_after_ms=2000.0,
    request_id="req-1",
    provider_error=ProviderError(type="rate_limit_error", code="rate_limited", param=None),
)

BLOCKS = [
    (TextBlock(text="hi ✓"), {"type": "text", "text": "hi ✓"}),
    (ReasoningBlock(text=" think \n"), {"type": "reasoning", "text": " think \n"}),
    (
        ToolCallBlock(id="call_0", name="read", arguments='{ "a" :1, "b":"é"'),
        {"type": "tool-call", "id": "call_0", "name": "read", "arguments": '{ "a" :1, "b":"é"'},
    ),
    (
        ToolResultBlock(tool_call_id="call_0", content=(TextBlock(text="ok"),), is_error=False),
        {"type": "tool-result", "toolCallId": "call_0", "content": [{"type": "text", "text": "ok"}], "isError": False},
    ),
    (
        ToolResultBlock(tool_call_id="c", content=()),
        {"type": "tool-result", "toolCallId": "c", "content": []},
    ),
    (
        ImageBlock(
            attachment=ImageAttachment(
                attachment_id="sha256:ab", media_type="image/png", bytes=10, width=2, height=3, name="x.png"
            )
        ),
        {
            "type": "image",
            "attachment": {"attachmentId": "sha256:ab", "mediaType": "image/png", "bytes": 10, "width": 2, "height": 3, "name": "x.png"},
        },
    ),
    (
        ImageBlock(attachment=ImageAttachment(attachment_id="sha256:cd", media_type="image/jpeg", bytes=1)),
        {"type": "image", "attachment": {"attachmentId": "sha256:cd", "mediaType": "image/jpeg", "bytes": 1}},
    ),
    (
        OpaqueBlock(type="audio", data={"type": "audio", "ref": [1, 2]}),
        {"type": "audio", "ref": [1, 2]},
    ),
]


def _through_text(value: object) -> object:
    """Make sure the JSON survives real serialization, not only dict identity."""
    return json.loads(json.dumps(value, ensure_ascii=False))


@pytest.mark.parametrize(("block", "expected"), BLOCKS, ids=lambda v: getattr(v, "type", None) or "")
def test_block_round_trip(block: object, expected: dict) -> None:
    assert block_to_json(block) == expected  # type: ignore[arg-type]
    assert block_from_json(_through_text(expected)) == block


SOURCES = [
    (UserSource(), {"kind": "user"}),
    (ModelSource(provider="deepseek", model="deepseek-v4-flash"), {"kind": "model", "provider": "deepseek", "model": "deepseek-v4-flash"}),
    (
        ModelSource(provider="p", model="m", replay_state={"response": {"a": 1}, "blocks": [None]}),
        {"kind": "model", "provider": "p", "model": "m", "replayState": {"response": {"a": 1}, "blocks": [None]}},
    ),
    (ToolSource(call_id="call_1"), {"kind": "tool", "callId": "call_1"}),
    (PluginSource(plugin="runtime-context"), {"kind": "plugin", "plugin": "runtime-context"}),
    (
        PluginSource(plugin="ctx", form={"form": "snapshot", "sections": [{"name": "a", "text": "b"}]}),
        {"kind": "plugin", "plugin": "ctx", "form": "snapshot", "sections": [{"name": "a", "text": "b"}]},
    ),
    (OpaqueSource(kind="future", data={"kind": "future", "x": 1}), {"kind": "future", "x": 1}),
]


@pytest.mark.parametrize(("source", "expected"), SOURCES)
def test_source_round_trip(source: object, expected: dict) -> None:
    assert source_to_json(source) == expected  # type: ignore[arg-type]
    assert source_from_json(_through_text(expected)) == source


MESSAGES = [
    UserMessage(id="u1", content=(TextBlock(text="hello"), ImageBlock(attachment=ImageAttachment(attachment_id="sha256:1", media_type="image/png", bytes=3)))),
    UserMessage(id="u2", content=(TextBlock(text="snap"),), source=PluginSource(plugin="ctx", form={"form": "snapshot"})),
    SystemMessage(id="s1", content=(TextBlock(text="rules"),)),
    AssistantMessage(
        id="a1",
        content=(ReasoningBlock(text="r"), TextBlock(text="t"), ToolCallBlock(id="c0", name="read", arguments="{}")),
        source=ModelSource(provider="deepseek", model="m"),
    ),
    AssistantMessage(id="a2", content=(), source=OpaqueSource(kind="other", data={"kind": "other"})),
    ToolResultMessage.create("c0", "file body", is_error=False, id="t1"),
    ToolResultMessage.create("c1", [TextBlock(text="a"), TextBlock(text="b")], is_error=True, id="t2"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_message_round_trip(message: object) -> None:
    data = message_to_json(message)  # type: ignore[arg-type]
    assert set(data) == {"id", "role", "content", "source"}
    back = message_from_json(_through_text(data))
    assert back == message
    assert type(back) is type(message)


def test_tool_result_message_json_shape() -> None:
    data = message_to_json(ToolResultMessage.create("c9", "", id="t9"))
    assert data == {
        "id": "t9",
        "role": "user",
        "content": [{"type": "tool-result", "toolCallId": "c9", "content": [{"type": "text", "text": ""}], "isError": False}],
        "source": {"kind": "tool", "callId": "c9"},
    }


USAGES = [
    (TokenUsage(input_tokens=27, output_tokens=69), {"inputTokens": 27, "outputTokens": 69}),
    (
        TokenUsage(input_tokens=27, output_tokens=69, cache_read_tokens=256, cache_write_tokens=1, reasoning_tokens=24),
        {"inputTokens": 27, "outputTokens": 69, "cacheReadTokens": 256, "cacheWriteTokens": 1, "reasoningTokens": 24},
    ),
]


@pytest.mark.parametrize(("usage", "expected"), USAGES)
def test_usage_round_trip(usage: TokenUsage, expected: dict) -> None:
    assert usage_to_json(usage) == expected
    assert usage_from_json(expected) == usage


def test_failure_round_trip() -> None:
    data = failure_to_json(FAILURE)
    assert data == {
        "message": "Rate limited",
        "code": "RATE_LIMIT",
        "status": 429,
        "providerRetryAfterMs": 2000.0,
        "requestId": "req-1",
        "providerError": {"type": "rate_limit_error", "code": "rate_limited", "param": None},
    }
    assert failure_from_json(_through_text(data)) == FAILURE
    minimal = LlmFailure(message="m", code="C")
    assert failure_to_json(minimal) == {"message": "m", "code": "C"}
    assert failure_from_json({"message": "m", "code": "C"}) == minimal


def test_finish_reason_round_trip() -> None:
    for reason in (FinishReason(kind="stop"), FinishReason(kind="error", failure=FAILURE)):
        assert finish_reason_from_json(_through_text(finish_reason_to_json(reason))) == reason
    assert finish_reason_to_json(FinishReason(kind="tool-calls")) == {"kind": "tool-calls"}


CHUNKS = [
    (BlockStart(index=0, block_type="reasoning"), {"type": "block-start", "index": 0, "blockType": "reasoning"}),
    (TextDelta(index=1, text="a"), {"type": "text-delta", "index": 1, "text": "a"}),
    (ReasoningDelta(index=0, text=""), {"type": "reasoning-delta", "index": 0, "text": ""}),
    (
        ToolCallDelta(index=2, id="c", name="read", arguments_delta='{"a'),
        {"type": "tool-call-delta", "index": 2, "id": "c", "name": "read", "argumentsDelta": '{"a'},
    ),
    (ToolCallDelta(index=2, id="c", arguments_delta=""), {"type": "tool-call-delta", "index": 2, "id": "c", "argumentsDelta": ""}),
    (
        BlockEnd(index=2, block=ToolCallBlock(id="c", name="read", arguments='{"a":1}')),
        {"type": "block-end", "index": 2, "block": {"type": "tool-call", "id": "c", "name": "read", "arguments": '{"a":1}'}},
    ),
    (Usage(usage=TokenUsage(input_tokens=1, output_tokens=2)), {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}),
    (Finish(reason=FinishReason(kind="stop")), {"type": "finish", "reason": {"kind": "stop"}}),
    (
        Finish(
            reason=FinishReason(kind="error", failure=FAILURE),
            replay_state={"response": 1},
            meta=FinishMeta(id="x", model="m", system_fingerprint="fp", done_missing=True, request_id="r"),
        ),
        {
            "type": "finish",
            "reason": {"kind": "error", "failure": failure_to_json(FAILURE)},
            "replayState": {"response": 1},
            "meta": {"id": "x", "model": "m", "systemFingerprint": "fp", "doneMissing": True, "requestId": "r"},
        },
    ),
    (
        Finish(reason=FinishReason(kind="tool-calls"), meta=FinishMeta()),
        {"type": "finish", "reason": {"kind": "tool-calls"}, "meta": {"id": None, "model": None, "systemFingerprint": None, "doneMissing": False}},
    ),
]


@pytest.mark.parametrize(("chunk", "expected"), CHUNKS, ids=lambda v: getattr(v, "type", None) or "")
def test_chunk_round_trip(chunk: object, expected: dict) -> None:
    assert chunk_to_json(chunk) == expected  # type: ignore[arg-type]
    assert chunk_from_json(_through_text(expected)) == chunk


def test_dsh_tool_call_delta_without_id_becomes_empty() -> None:
    # DSH writes `id: undefined` by leaving the key out.
    chunk = chunk_from_json({"type": "tool-call-delta", "index": 0, "argumentsDelta": "{}"})
    assert chunk == ToolCallDelta(index=0, id="", arguments_delta="{}")


def test_tool_schema_round_trip() -> None:
    schema = ToolSchema(name="read", description="Read a file", parameters={"type": "object", "properties": {"p": {"type": "string"}}})
    data = tool_schema_to_json(schema)
    assert data == {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"p": {"type": "string"}}}}
    assert tool_schema_from_json(data) == schema
    for strict in (True, False):  # `False` is a choice too: it must survive the log
        with_strict = ToolSchema(name="read", description="", parameters={"type": "object"}, strict=strict)
        assert tool_schema_to_json(with_strict)["strict"] is strict
        assert tool_schema_from_json(tool_schema_to_json(with_strict)) == with_strict


@pytest.mark.parametrize(
    ("fn", "value", "path"),
    [
        (block_from_json, {"type": "text"}, "block.text"),
        (block_from_json, [], "block"),
        (block_from_json, {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": 1}]}, "block.content[0].text"),
        (block_from_json, {"type": "tool-result", "toolCallId": "c", "content": [], "isError": "no"}, "block.isError"),
        (message_from_json, {"id": "", "role": "user", "content": [], "source": {"kind": "user"}}, "message.id"),
        (message_from_json, {"id": "m", "role": "bot", "content": [], "source": {"kind": "user"}}, "message.role"),
        (message_from_json, {"id": "m", "role": "assistant", "content": [], "source": {"kind": "user"}}, "message.source"),
        (
            message_from_json,
            {"id": "m", "role": "user", "content": [{"type": "text", "text": "x"}], "source": {"kind": "tool", "callId": "c"}},
            "message.content",
        ),
        (chunk_from_json, {"type": "nope"}, "chunk.type"),
        (chunk_from_json, {"type": "text-delta", "index": True, "text": ""}, "chunk.index"),
        (usage_from_json, {"inputTokens": 1}, "usage.outputTokens"),
    ],
)
def test_decode_errors_name_the_path(fn: object, value: object, path: str) -> None:
    with pytest.raises(CodecError) as info:
        fn(value)  # type: ignore[operator]
    assert info.value.path == path
    assert str(info.value).startswith(path + ":")


def test_codec_error_pickles() -> None:
    import pickle

    err = CodecError("a.b", "bad")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.problem, str(back)) == ("a.b", "bad", "a.b: bad")
