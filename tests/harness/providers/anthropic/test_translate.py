"""The Anthropic translator on hand-made streams: DeepSeek's shapes (thinking start without a
signature, UUID signature), ordering of chunks, usage merging, stop-reason mapping, in-band
errors, truncation and broken grammar (anthropic.md §10–§15)."""

from __future__ import annotations

from typing import Any

import pytest

from dshkit.harness.llm import (
    BlockAssembler,
    ErrorCode,
    Finish,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import BlockEnd
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.llm.messages import ReasoningBlock
from dshkit.harness.providers.anthropic.decoder import StreamDecoder
from dshkit.harness.providers.anthropic.translate import map_stop_reason

from .wire import (
    MESSAGE_STOP,
    SIGNATURE,
    TEXT_TURN,
    TOOL_TURN,
    block_start,
    delta,
    message_delta,
    sse,
    start,
    stop,
)


def decode(data: bytes) -> list[StreamChunk]:
    decoder = StreamDecoder()
    return decoder.feed(data) + decoder.close()


def finish_of(chunks: list[StreamChunk]) -> Finish:
    assert isinstance(chunks[-1], Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return chunks[-1]


def test_tool_turn_chunks_in_dsh_shapes() -> None:
    chunks = decode(TOOL_TURN)
    shapes = [chunk_to_json(c) for c in chunks]
    assert [s["type"] for s in shapes] == [
        "block-start", "reasoning-delta", "reasoning-delta", "block-end",
        "block-start", "tool-call-delta", "tool-call-delta", "tool-call-delta", "block-end",
        "usage", "finish",
    ]
    assert shapes[5] == {"type": "tool-call-delta", "index": 1, "id": "toolu_01", "name": "read", "argumentsDelta": ""}
    message = BlockAssembler().feed_all(chunks)
    assert message.blocks() == [
        ReasoningBlock(text="Read the file first."),
        ToolCallBlock(id="toolu_01", name="read", arguments='{"file_path": "README.md"}'),
    ]
    finish = finish_of(chunks)
    assert finish.reason.kind == "tool-calls"
    # The signature rides on the finish, per block, for the next request's thinking passback.
    assert finish.replay_state["blocks"] == [{"signature": SIGNATURE}, None]
    assert message.replay_state == finish.replay_state
    assert message.usage == TokenUsage(input_tokens=20, output_tokens=31, cache_read_tokens=0)


def test_signature_in_start_is_kept_and_last_delta_wins() -> None:
    chunks = decode(sse(
        start(), block_start(0, {"type": "thinking", "thinking": "", "signature": "from-start"}),
        delta(0, "thinking_delta", thinking="hm"), stop(0),
        block_start(1, {"type": "text", "text": ""}), delta(1, "text_delta", text="ok"), stop(1),
        message_delta("end_turn"), MESSAGE_STOP,
    ))
    assert finish_of(chunks).replay_state["blocks"][0] == {"signature": "from-start"}
    chunks = decode(sse(
        start(), block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, "signature_delta", signature="first"), delta(0, "signature_delta", signature="second"), stop(0),
        message_delta("end_turn"), MESSAGE_STOP,
    ))
    assert finish_of(chunks).replay_state["blocks"][0] == {"signature": "second"}


def test_usage_later_values_replace_earlier_ones() -> None:
    """AN62 (corpus cp01): a larger input_tokens in message_delta wins; absent fields stay."""
    chunks = decode(sse(
        start(input_tokens=43, cache_read=7), block_start(0, {"type": "text", "text": ""}),
        delta(0, "text_delta", text="x"), stop(0),
        message_delta("end_turn", 5, input_tokens=61), MESSAGE_STOP,
    ))
    usage = BlockAssembler().feed_all(chunks).usage
    assert usage == TokenUsage(input_tokens=61, output_tokens=5, cache_read_tokens=7)


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("tool_use", "tool-calls", None),
        ("max_tokens", "max-tokens", None),
        ("model_context_window_exceeded", "max-tokens", None),
        ("refusal", "error", ErrorCode.CONTENT_FILTER),
        ("pause_turn", "error", "PAUSE_TURN"),
        ("something_new", "error", "SOMETHING_NEW"),
    ],
)
def test_stop_reason_mapping(reason: str, kind: str, code: str | None) -> None:
    mapped = map_stop_reason(reason)
    assert mapped.kind == kind
    assert (mapped.failure.code if mapped.failure else None) == code


def test_error_event_mid_stream_keeps_partial_and_reports_type() -> None:
    """AN69/AN70: terminal, carries error.type, no finish reason; extra members tolerated."""
    body = sse(start(), block_start(0, {"type": "text", "text": ""}), delta(0, "text_delta", text="Partial")) + (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded","details":null}}\n\n'
    )
    chunks = decode(body)
    finish = finish_of(chunks)
    assert finish.reason.kind == "error" and finish.reason.failure is not None
    assert finish.reason.failure.code == ErrorCode.SERVER
    assert finish.reason.failure.message == "Overloaded"
    assert finish.reason.failure.provider_error is not None
    assert finish.reason.failure.provider_error.type == "overloaded_error"
    assert finish.reason.failure.status is None  # the HTTP status was 200
    assert BlockAssembler().feed_all(chunks).interrupted_blocks() == [TextBlock(text="Partial")]


def test_openai_style_inband_error_object_is_terminal() -> None:
    """A gateway's `data: {"error": {...}}` without a type still ends the stream."""
    chunks = decode(sse(start()) + b'data: {"error":{"message":"Rate limit reached","type":"rate_limit_error"}}\n\n')
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code == ErrorCode.RATE_LIMIT and failure.message == "Rate limit reached"


def test_error_event_with_plain_text_data_is_terminal() -> None:
    chunks = decode(sse(start()) + b"event: error\ndata: upstream exploded\n\n")
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.message == "upstream exploded"


def test_eof_before_stop_reason_is_stream_closed_keeping_blocks() -> None:
    chunks = decode(sse(start(), block_start(0, {"type": "text", "text": ""}), delta(0, "text_delta", text="Hal")))
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code == ErrorCode.STREAM_CLOSED
    assert not any(isinstance(c, BlockEnd) for c in chunks)


def test_eof_after_stop_reason_is_success_flagged_and_closes_open_blocks() -> None:
    """AN51/AN71: no content_block_stop and no message_stop after message_delta."""
    chunks = decode(sse(start(), block_start(0, {"type": "text", "text": ""}), delta(0, "text_delta", text="Hi"), message_delta("end_turn")))
    finish = finish_of(chunks)
    assert finish.reason.kind == "stop" and finish.meta is not None and finish.meta.done_missing
    assert [c.block for c in chunks if isinstance(c, BlockEnd)] == [TextBlock(text="Hi")]


@pytest.mark.parametrize(
    "events",
    [
        [start(), delta(3, "text_delta", text="x")],
        [start(), block_start(0, {"type": "text", "text": ""}), block_start(0, {"type": "text", "text": ""})],
        [start(), stop(2)],
        [start(), {"type": "content_block_start", "index": "0", "content_block": {}}],
    ],
    ids=["delta-before-start", "started-twice", "stop-unknown", "bad-start"],
)
def test_broken_grammar_is_malformed(events: list[dict[str, Any]]) -> None:
    failure = finish_of(decode(sse(*events))).reason.failure
    assert failure is not None and failure.code == ErrorCode.MALFORMED_RESPONSE


def test_non_json_payload_is_malformed() -> None:
    failure = finish_of(decode(sse(start()) + b"event: content_block_delta\ndata: {nope\n\n")).reason.failure
    assert failure is not None and failure.code == ErrorCode.MALFORMED_RESPONSE


def test_pings_comments_and_unknown_events_are_ignored() -> None:
    noisy = TEXT_TURN.replace(b"event: content_block_delta", b": keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\nevent: content_block_delta", 1)
    noisy = noisy.replace(b"event: message_delta", b"event: fancy_new\ndata: {\"type\":\"fancy_new\"}\n\nevent: message_delta")
    assert decode(noisy) == decode(TEXT_TURN)


def test_data_only_framing_decodes_the_same() -> None:
    """We read events by their JSON type, so the `event:` line is not required (unlike the SDK)."""
    data_only = b"".join(line + b"\n" for line in TEXT_TURN.split(b"\n") if not line.startswith(b"event:"))
    assert decode(data_only) == decode(TEXT_TURN)


def test_empty_stop_is_empty_response() -> None:
    failure = finish_of(decode(sse(start(), message_delta("end_turn"), MESSAGE_STOP))).reason.failure
    assert failure is not None and failure.code == ErrorCode.EMPTY_RESPONSE
