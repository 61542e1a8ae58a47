"""`Translator`: Chat Completions wire chunks → StreamChunks (dsh-core.md §3.6–3.7, wire.md A1–A15,
DESIGN.md's decisions on EOF and in-band errors), fed through both decoders (`wire.decode`);
how the decoders frame the body (`[DONE]`, comments, splits) is `test_decoder.py`'s."""

from __future__ import annotations

import pytest

from dshkit.harness.llm import (
    Finish,
    FinishReason,
    LlmFailure,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
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
from dshkit.harness.llm.messages import ReasoningBlock
from dshkit.harness.providers.openai_chat.translate import Translator, map_finish_reason, map_usage

from .wire import FP, ID, MODEL, USAGE, assemble, call, chunk, decode, sse

META = FinishMeta(id=ID, model=MODEL, system_fingerprint=FP)


def finish_of(chunks: list) -> Finish:
    assert isinstance(chunks[-1], Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return chunks[-1]


def test_reasoning_then_text_full_stream() -> None:
    body = sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Think"}),
        chunk({"content": None, "reasoning_content": " more"}),
        chunk({"content": "Hi", "reasoning_content": None}),
        chunk({"content": " \n\n", "reasoning_content": None}),
        chunk({"content": "", "reasoning_content": None}, "stop", USAGE),
    )
    assert decode(body) == [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="Think"),
        ReasoningDelta(index=0, text=" more"),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="Hi"),
        TextDelta(index=1, text=" \n\n"),
        BlockEnd(index=0, block=ReasoningBlock(text="Think more")),
        BlockEnd(index=1, block=TextBlock(text="Hi \n\n")),
        Usage(usage=TokenUsage(input_tokens=27, output_tokens=69, cache_read_tokens=256, reasoning_tokens=24)),
        Finish(reason=FinishReason(kind="stop"), meta=META),
    ]


def test_empty_first_reasoning_content_opens_no_block() -> None:
    chunks = decode(sse(chunk({"role": "assistant", "content": None, "reasoning_content": ""}), chunk({"content": "x"}, "stop")))
    assert chunks[0] == BlockStart(index=0, block_type="text")
    assert not any(isinstance(c, BlockStart) and c.block_type == "reasoning" for c in chunks)


def test_delta_reasoning_field_accepted() -> None:
    chunks = decode(sse(chunk({"reasoning": "alt"}), chunk({"content": "x"}, "stop")))
    assert chunks[:2] == [BlockStart(index=0, block_type="reasoning"), ReasoningDelta(index=0, text="alt")]
    # reasoning_content wins when both are present
    both = decode(sse(chunk({"reasoning_content": "main", "reasoning": "alt"}), chunk({}, "stop")))
    assert both[1] == ReasoningDelta(index=0, text="main")


def test_reasoning_resuming_after_text_appends_to_same_block() -> None:
    chunks = decode(sse(chunk({"reasoning_content": "a"}), chunk({"content": "t"}), chunk({"reasoning_content": "b"}), chunk({}, "stop")))
    assert assemble(chunks).blocks() == [ReasoningBlock(text="ab"), TextBlock(text="t")]


def test_tool_calls_keyed_by_wire_index_after_reasoning() -> None:
    body = sse(
        chunk({"reasoning_content": "r"}),
        chunk({"tool_calls": [call(0, "call_00_a", "read", "")]}),
        chunk({"tool_calls": [call(0, arguments='{"file_')]}),
        chunk({"tool_calls": [call(0, arguments='path":"README.md"}')]}),
        chunk({"content": ""}, "tool_calls", USAGE),
    )
    chunks = decode(body)
    assert chunks[2:6] == [
        BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id="call_00_a", name="read", arguments_delta=""),
        ToolCallDelta(index=1, id="call_00_a", name="read", arguments_delta='{"file_'),
        ToolCallDelta(index=1, id="call_00_a", name="read", arguments_delta='path":"README.md"}'),
    ]
    assert BlockEnd(index=1, block=ToolCallBlock(id="call_00_a", name="read", arguments='{"file_path":"README.md"}')) in chunks
    assert finish_of(chunks).reason == FinishReason(kind="tool-calls")


def test_later_empty_id_and_repeated_type_never_start_a_new_call() -> None:
    body = sse(
        chunk({"tool_calls": [call(0, "call_1", "get", '{"a"')]}),
        chunk({"tool_calls": [{"index": 0, "id": "", "type": "function", "function": {"arguments": ":1"}}]}),
        chunk({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "", "arguments": "}"}}]}),
        chunk({}, "tool_calls"),
    )
    blocks = assemble(decode(body)).blocks()
    assert blocks == [ToolCallBlock(id="call_1", name="get", arguments='{"a":1}')]


def test_repeated_full_id_and_name_not_concatenated() -> None:
    body = sse(
        chunk({"tool_calls": [call(0, "call_1", "get", "{")]}),
        chunk({"tool_calls": [call(0, "call_1", "get", "}")]}),
        chunk({}, "tool_calls"),
    )
    assert assemble(decode(body)).blocks() == [ToolCallBlock(id="call_1", name="get", arguments="{}")]


def test_whole_call_in_one_delta() -> None:
    chunks = decode(sse(chunk({"tool_calls": [call(0, "tk85", "weather", '{"city":"SF"}')]}, "tool_calls")))
    assert chunks[:2] == [
        BlockStart(index=0, block_type="tool-call"),
        ToolCallDelta(index=0, id="tk85", name="weather", arguments_delta='{"city":"SF"}'),
    ]
    assert assemble(chunks).blocks() == [ToolCallBlock(id="tk85", name="weather", arguments='{"city":"SF"}')]


def test_parallel_calls_including_interleaved_and_two_in_one_delta() -> None:
    body = sse(
        chunk({"tool_calls": [call(0, "c0", "a", ""), call(1, "c1", "b", "")]}),
        chunk({"tool_calls": [call(1, arguments="{1")]}),
        chunk({"tool_calls": [call(0, arguments="{0")]}),
        chunk({"tool_calls": [call(0, arguments="}"), call(1, arguments="}")]}),
        chunk({}, "tool_calls"),
    )
    chunks = decode(body)
    assert [c for c in chunks if isinstance(c, BlockStart)] == [BlockStart(index=0, block_type="tool-call"), BlockStart(index=1, block_type="tool-call")]
    assert assemble(chunks).blocks() == [ToolCallBlock(id="c0", name="a", arguments="{0}"), ToolCallBlock(id="c1", name="b", arguments="{1}")]


def test_first_sight_without_id_then_id_later() -> None:
    body = sse(chunk({"tool_calls": [call(0, arguments="{")]}), chunk({"tool_calls": [call(0, "late", "n", "}")]}), chunk({}, "tool_calls"))
    chunks = decode(body)
    assert chunks[1] == ToolCallDelta(index=0, id="", arguments_delta="{")
    assert assemble(chunks).blocks() == [ToolCallBlock(id="late", name="n", arguments="{}")]


def test_tool_call_without_wire_index() -> None:
    body = sse(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "x", "arguments": "{"}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "y", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    assert assemble(decode(body)).blocks() == [ToolCallBlock(id="a", name="x", arguments="{}"), ToolCallBlock(id="b", name="y", arguments="{}")]


def test_arguments_as_object_kept_as_compact_json() -> None:
    chunks = decode(sse(chunk({"tool_calls": [call(0, "c", "n", arguments=None, function={"name": "n", "arguments": {"a": "é"}})]}, "tool_calls")))
    assert assemble(chunks).blocks() == [ToolCallBlock(id="c", name="n", arguments='{"a":"é"}')]


def test_choices_empty_and_explicit_nulls() -> None:
    body = sse(
        {"id": ID, "object": "chat.completion.chunk", "choices": [], "usage": None},
        chunk({"role": None, "content": None, "reasoning_content": None, "tool_calls": None}),
        chunk(None),
        {"id": ID, "choices": [{"index": 0, "delta": None, "finish_reason": None}]},
        {"id": ID, "choices": None},
        chunk({"content": "x"}),
        {"id": ID, "choices": [], "usage": USAGE},
        chunk({}, "stop"),
    )
    chunks = decode(body)
    assert assemble(chunks).blocks() == [TextBlock(text="x")]
    assert finish_of(chunks).reason.kind == "stop"
    assert Usage(usage=map_usage(USAGE)) in chunks


def test_unknown_fields_ignored() -> None:
    body = sse(
        chunk(
            {"content": "x", "annotations": [{"url": "u"}], "obfuscation": "abc", "audio": None},
            obfuscation="zz", x_groq={"id": "q"}, provider="OpenRouter", service_tier="default", moderation={},
        ),
        {**chunk({}, "stop"), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "native_finish_reason": "STOP", "matched_stop": 1}]},
    )
    chunks = decode(body)
    assert assemble(chunks).blocks() == [TextBlock(text="x")]
    assert finish_of(chunks).reason.kind == "stop"


def test_logprobs_ignored() -> None:
    lp = {"content": [{"token": "OK", "logprob": -0.1, "bytes": [79, 75], "top_logprobs": []}]}
    body = sse({**chunk({"content": "OK"}), "choices": [{"index": 0, "delta": {"content": "OK"}, "logprobs": lp, "finish_reason": None}]}, chunk({}, "stop"))
    assert assemble(decode(body)).blocks() == [TextBlock(text="OK")]


def test_other_choice_indices_ignored() -> None:
    body = sse({"id": ID, "choices": [{"index": 1, "delta": {"content": "other"}}, {"index": 0, "delta": {"content": "mine"}, "finish_reason": "stop"}]})
    assert assemble(decode(body)).blocks() == [TextBlock(text="mine")]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", FinishReason(kind="stop")),
        ("tool_calls", FinishReason(kind="tool-calls")),
        ("length", FinishReason(kind="max-tokens")),
        ("content_filter", FinishReason(kind="error", failure=LlmFailure(message="model stopped: content_filter", code="CONTENT_FILTER"))),
        (
            "insufficient_system_resource",
            FinishReason(kind="error", failure=LlmFailure(message="model stopped: insufficient_system_resource", code="INSUFFICIENT_SYSTEM_RESOURCE")),
        ),
        ("weird-new reason", FinishReason(kind="error", failure=LlmFailure(message="model stopped: weird-new reason", code="WEIRD_NEW_REASON"))),
    ],
)
def test_finish_reasons(wire: str, expected: FinishReason) -> None:
    assert map_finish_reason(wire) == expected
    chunks = decode(sse(chunk({"content": "partial"}), chunk({}, wire)))
    assert finish_of(chunks).reason == expected
    assert assemble(chunks).blocks() == [TextBlock(text="partial")]


def test_last_non_null_finish_reason_wins() -> None:
    chunks = decode(sse(chunk({"content": "x"}, "length"), chunk({}, "stop"), chunk({}, None)))
    assert finish_of(chunks).reason.kind == "stop"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (USAGE, TokenUsage(input_tokens=27, output_tokens=69, cache_read_tokens=256, reasoning_tokens=24)),
        ({"prompt_tokens": 12, "completion_tokens": 28, "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 12}, TokenUsage(input_tokens=12, output_tokens=28, cache_read_tokens=0)),
        ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 64}, TokenUsage(input_tokens=36, output_tokens=5, cache_read_tokens=64)),
        ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": None, "completion_tokens_details": None}, TokenUsage(input_tokens=10, output_tokens=2)),
        ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": None}, "prompt_cache_hit_tokens": 4}, TokenUsage(input_tokens=6, output_tokens=2, cache_read_tokens=4)),
        ({"prompt_tokens": 10, "completion_tokens": 2}, TokenUsage(input_tokens=10, output_tokens=2)),
        ({"total_tokens": 3}, TokenUsage(input_tokens=0, output_tokens=0)),
        ({"prompt_tokens": 9, "completion_tokens": 1, "queue_time": 0.04, "cost": 0.1}, TokenUsage(input_tokens=9, output_tokens=1)),
    ],
)
def test_usage_mapping(usage: dict, expected: TokenUsage) -> None:
    assert map_usage(usage) == expected


def test_last_non_null_usage_wins_and_null_does_not_clear() -> None:
    first = {"prompt_tokens": 1, "completion_tokens": 1}
    second = {"prompt_tokens": 13, "completion_tokens": 11}
    body = sse(chunk({"content": "Paris."}, usage=first), chunk({}, "stop"), {"id": ID, "choices": [], "usage": second}, {"id": ID, "choices": [], "usage": None})
    chunks = decode(body)
    usages = [c for c in chunks if isinstance(c, Usage)]
    assert usages == [Usage(usage=TokenUsage(input_tokens=13, output_tokens=11))]
    assert chunks.index(usages[0]) == len(chunks) - 2  # usage comes right before finish


def test_ids_from_first_chunk() -> None:
    body = sse(chunk({"content": "x"}), {**chunk({}, "stop"), "id": "other", "model": "other-model"})
    assert finish_of(decode(body)).meta == META
    assert finish_of(decode(sse({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}))).meta == FinishMeta()


# --- how a stream ends -------------------------------------------------------------------------


def test_eof_after_finish_reason_is_success_with_done_missing() -> None:
    body = sse(chunk({"content": "x"}), chunk({}, "stop", USAGE), done=False)
    chunks = decode(body)
    finish = finish_of(chunks)
    assert finish.reason == FinishReason(kind="stop")
    assert finish.meta is not None and finish.meta.done_missing
    assert BlockEnd(index=0, block=TextBlock(text="x")) in chunks


def test_done_without_finish_reason_is_stop() -> None:
    finish = finish_of(decode(sse(chunk({"content": "x"}))))
    assert finish.reason.kind == "stop"


def test_eof_before_finish_is_stream_closed_keeping_partial_blocks() -> None:
    body = sse(chunk({"reasoning_content": "r"}), chunk({"content": "par"}), chunk({"tool_calls": [call(0, "c", "n", '{"a')]}), done=False)
    for cut in (len(body), len(body) - 5):
        chunks = decode(body[:cut])
        finish = finish_of(chunks)
        assert finish.reason.kind == "error"
        assert finish.reason.failure is not None and finish.reason.failure.code == "STREAM_CLOSED"
        assert not any(isinstance(c, BlockEnd) for c in chunks)
        blocks = assemble(chunks).blocks()
        assert blocks[:2] == [ReasoningBlock(text="r"), TextBlock(text="par")]
    assert finish_of(decode(b"")).reason.failure.code == "STREAM_CLOSED"  # type: ignore[union-attr]


def test_in_band_error_object_keeps_partial_blocks() -> None:
    error = {"message": "Provider returned error", "code": 502, "type": "upstream_error", "param": None, "metadata": {"raw": "x"}}
    body = sse(chunk({"reasoning_content": "r"}), chunk({"content": "partial"}), {"id": ID, "object": "chat.completion.chunk", "error": error, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}, chunk({"content": "after"}))
    chunks = decode(body)
    finish = finish_of(chunks)
    assert finish.reason.kind == "error"
    failure = finish.reason.failure
    assert failure is not None
    assert failure.message == "Provider returned error"
    assert failure.provider_error == ProviderError(type="upstream_error", code="502", param=None)
    assert failure.status == 502 and failure.code == "SERVER"
    assert assemble(chunks).blocks() == [ReasoningBlock(text="r"), TextBlock(text="partial")]


def test_usage_on_the_error_chunk_is_kept() -> None:
    # OpenRouter (oc05-like) bills the failed call on the very chunk that carries the error.
    error = {"message": "Provider returned error", "code": 502, "type": "upstream_error"}
    body = sse(chunk({"content": "partial"}), {"id": ID, "object": "chat.completion.chunk", "error": error, "usage": USAGE,
                                               "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
    chunks = decode(body)
    assert finish_of(chunks).reason.kind == "error"
    assert isinstance(chunks[-2], Usage) and chunks[-2].usage == map_usage(USAGE)
    assert assemble(chunks).usage == map_usage(USAGE)
    earlier = sse(chunk({"content": "x"}, usage=USAGE), done=False) + b'event: error\ndata: {"error":{"message":"gone"}}\n\n'
    assert assemble(decode(earlier)).usage == map_usage(USAGE)


def test_in_band_error_without_status() -> None:
    body = sse(chunk({"content": "x"}), {"error": {"message": "Internal error", "type": "server_error", "code": "internal"}})
    failure = finish_of(decode(body)).reason.failure
    assert failure is not None
    assert (failure.code, failure.message, failure.status) == ("PROVIDER_ERROR", "Internal error", None)
    assert failure.provider_error == ProviderError(type="server_error", code="internal", param=None)
    quota = finish_of(decode(sse({"error": {"message": "You exceeded your current quota"}}))).reason.failure
    assert quota is not None and quota.code == "QUOTA"
    string = finish_of(decode(sse({"error": "plain text"}))).reason.failure
    assert string is not None and string.message == "plain text"


def test_event_error() -> None:
    body = sse(chunk({"content": "partial"}), done=False) + b'event: error\ndata: {"error":{"message":"overloaded","type":"overloaded_error","code":"overloaded"}}\n\n'
    chunks = decode(body)
    failure = finish_of(chunks).reason.failure
    assert failure is not None
    assert failure.message == "overloaded" and failure.provider_error == ProviderError(type="overloaded_error", code="overloaded")
    assert assemble(chunks).blocks() == [TextBlock(text="partial")]
    for data, message in ((b"not json", "not json"), (b"", None), (b'{"message":"bare"}', "bare")):
        failure = finish_of(decode(b"event: error\ndata: " + data + b"\n\n")).reason.failure
        assert failure is not None and failure.message and (message is None or failure.message == message)


def test_malformed_message_is_clipped() -> None:
    failure = finish_of(decode(sse("x" * 500))).reason.failure
    assert failure is not None and len(failure.message) < 160 and failure.message.endswith("…")


@pytest.mark.parametrize(
    "payload",
    [[1, 2], "\"string\"", {"choices": "nope"}, {"choices": [1]}, {"choices": [{"delta": "x"}]}, {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}, {"choices": [{"delta": {"tool_calls": ["x"]}}]}, {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}],
)
def test_wrong_shapes_are_malformed(payload: object) -> None:
    import json

    data = payload if isinstance(payload, str) else json.dumps(payload)
    failure = finish_of(decode(sse(data))).reason.failure  # type: ignore[arg-type]
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"


def test_no_content_and_stop_is_empty_response() -> None:
    for body in (sse(chunk({"role": "assistant", "content": ""}), chunk({"content": ""}, "stop")), sse(chunk({"reasoning_content": ""}), chunk({}, "stop"))):
        failure = finish_of(decode(body)).reason.failure
        assert failure is not None and failure.code == "EMPTY_RESPONSE"
    # reasoning only is a successful stop; an empty length / tool_calls finish is not converted
    assert finish_of(decode(sse(chunk({"reasoning_content": "r"}), chunk({}, "stop")))).reason.kind == "stop"
    assert finish_of(decode(sse(chunk({}, "length")))).reason.kind == "max-tokens"
    assert finish_of(decode(sse(chunk({}, "tool_calls")))).reason.kind == "tool-calls"


def test_max_tokens_mid_reasoning() -> None:
    chunks = decode(sse(chunk({"reasoning_content": "long"}), chunk({"tool_calls": [call(0, "c", "n", '{"cut')]}, "length")))
    a = assemble(chunks)
    assert a.finish_reason.kind == "max-tokens"
    assert a.blocks() == [ReasoningBlock(text="long")]


def test_translator_direct_use_and_terminal() -> None:
    t = Translator()
    assert t.feed(chunk({"content": "a"})) == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="a")]
    assert t.feed(chunk({}, "stop")) == []
    assert t.finish_reason == "stop"
    end = t.end(done=True)
    assert end[-1] == Finish(reason=FinishReason(kind="stop"), meta=META)
    assert t.finished
    assert t.feed(chunk({"content": "late"})) == [] and t.end(done=True) == [] and t.malformed("x") == [] and t.error_event("x") == []
