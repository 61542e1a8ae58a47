"""The per-step checks (`dshkit.conformance.checks`) on small hand-built streams and request
bodies: a correct input passes, and each kind of wrong one fails with a message or diff naming
the fault."""

from __future__ import annotations

from typing import Any

import pytest

from dshkit.conformance.checks import (
    ABSENT,
    check_assemble,
    check_finish,
    check_meta,
    check_request,
    check_requests,
    check_translate,
    check_usage,
    finish_summary,
    get_path,
)
from dshkit.conformance.scenario import BlockExpect, FinishExpect, MetaExpect, RequestExpect
from dshkit.harness.llm import BlockAssembler
from dshkit.harness.llm.chunks import (
    BlockEnd,
    Finish,
    FinishMeta,
    FinishReason,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.llm.messages import ReasoningBlock, TextBlock, ToolCallBlock

STOP = Finish(reason=FinishReason(kind="stop"), meta=FinishMeta(id="r-1", model="deepseek-v4-flash"))


def _stream() -> list[StreamChunk]:
    """A correct stream: reasoning, text in two deltas, a tool call, usage, one finish last."""
    return [
        ReasoningDelta(index=0, text="Think."),
        BlockEnd(index=0, block=ReasoningBlock(text="Think.")),
        TextDelta(index=1, text="Hel"),
        TextDelta(index=1, text="lo"),
        BlockEnd(index=1, block=TextBlock(text="Hello")),
        ToolCallDelta(index=2, id="call_1", name="get_weather", arguments_delta='{"city":'),
        ToolCallDelta(index=2, id="call_1", arguments_delta='"Paris"}'),
        BlockEnd(index=2, block=ToolCallBlock(id="call_1", name="get_weather", arguments='{"city":"Paris"}')),
        Usage(usage=TokenUsage(input_tokens=5, output_tokens=7)),
        STOP,
    ]


def _assembled(chunks: list[StreamChunk]) -> BlockAssembler:
    assembler = BlockAssembler()
    for c in chunks:
        assembler.feed(c)
    return assembler


# --- translate -----------------------------------------------------------------------------------


def test_a_correct_stream_passes_translate() -> None:
    assert check_translate(_stream(), None, cancelled=False).ok


WRONG_STREAMS: dict[str, tuple[list[StreamChunk], str]] = {
    "no finish": (_stream()[:-1], "! the stream has 0 finish chunks; it must end with exactly one\n"),
    "two finishes": ([*_stream(), STOP], "! the stream has 2 finish chunks; it must end with exactly one\n"),
    "a chunk after the finish": (
        [*_stream()[:-1], STOP, Usage(usage=TokenUsage(input_tokens=1, output_tokens=1))],
        "! 1 chunk(s) came after the finish\n"),
    "an empty text delta": (
        [*_stream()[:2], TextDelta(index=1, text=""), *_stream()[2:]],
        "! chunk 2: an empty text-delta (empty strings must not become events)\n"),
    "an index that changes type": (
        [*_stream()[:4], ToolCallDelta(index=1, id="call_0", arguments_delta=""), *_stream()[4:]],
        "! chunk 4: block index 1 carries tool-call-delta after text-delta\n"),
    "a block-end that is not its deltas": (
        [*_stream()[:4], BlockEnd(index=1, block=TextBlock(text="Help")), *_stream()[5:]],
        "! block 1: block-end text (4 chars) is not the 2 deltas joined (5 chars); first difference at char 3\n"),
    "tool arguments that are not their deltas": (
        [*_stream()[:7], BlockEnd(index=2, block=ToolCallBlock(id="call_1", name="get_weather", arguments="{}")),
         *_stream()[8:]],
        "! block 2: block-end arguments (2 chars) is not the 2 deltas joined (16 chars); first difference at char 1\n"),
}


@pytest.mark.parametrize("fault", WRONG_STREAMS)
def test_each_broken_stream_contract_is_named(fault: str) -> None:
    chunks, named = WRONG_STREAMS[fault]
    result = check_translate(chunks, None, cancelled=False)
    assert not result.ok and result.diff == named


def test_a_cancelled_stream_must_not_finish() -> None:
    assert check_translate(_stream()[:3], None, cancelled=True).ok
    result = check_translate(_stream(), None, cancelled=True)
    assert not result.ok
    assert result.diff == "! a cancelled stream yielded a finish instead of raising CancelledError\n"


def test_an_exact_sequence_compares_kind_and_code_but_not_free_text() -> None:
    expected = [{"type": "text-delta", "index": 0, "text": "Hi"},
                {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi"}},
                {"type": "finish", "reason": {"kind": "error", "failure": {"code": "SERVER", "status": 500}}}]

    def stream(text: str, message: str) -> list[StreamChunk]:
        return [TextDelta(index=0, text=text), BlockEnd(index=0, block=TextBlock(text=text)),
                Finish.error(message, "SERVER", status=500, request_id="req-9",
                             meta=FinishMeta(model="m"))]

    assert check_translate(stream("Hi", "any wording"), expected, cancelled=False).ok
    wrong = check_translate(stream("Ho", "any wording"), expected, cancelled=False)
    assert not wrong.ok and wrong.diff.startswith("--- expected/translate\n+++ actual/translate\n")
    assert '-    "text": "Hi",' in wrong.diff and '+    "text": "Ho",' in wrong.diff
    # A contract fault comes first, with the exact diff under it.
    broken = check_translate(stream("Hi", "x")[:2], expected, cancelled=False)
    assert broken.diff.startswith("! the stream has 0 finish chunks") and "--- expected/chunks\n" in broken.diff


# --- assemble, finish, usage, meta, requests -----------------------------------------------------


def test_assemble_compares_blocks_in_order_and_only_the_ids_and_names_given() -> None:
    assembler = _assembled(_stream())
    want = [BlockExpect(type="reasoning", text="Think."), BlockExpect(type="text", text="Hello"),
            BlockExpect(type="tool-call", arguments='{"city":"Paris"}')]
    assert check_assemble(assembler, want).ok
    named = [*want[:2], BlockExpect(type="tool-call", id="call_2", name="get_weather", arguments='{"city": "Paris"}')]
    wrong = check_assemble(assembler, named)
    assert not wrong.ok
    assert '-    "arguments": "{\\"city\\": \\"Paris\\"}",' in wrong.diff  # byte for byte
    assert '-    "id": "call_2",' in wrong.diff and '+    "id": "call_1",' in wrong.diff
    missing = check_assemble(assembler, want[1:])
    assert not missing.ok and '+    "text": "Think.",\n+    "type": "reasoning"\n' in missing.diff


def test_finish_compares_the_kind_and_each_failure_field_given() -> None:
    error = [Finish.error("slow down", "RATE_LIMIT", status=429, provider_retry_after_ms=2000.0,
                          request_id="req-1")]
    assert check_finish(error, FinishExpect(kind="error", code="RATE_LIMIT", status=429, retry_after_ms=2000,
                                            request_id="req-1", retryable=True)).ok
    wrong = check_finish(error, FinishExpect(kind="error", code="SERVER", no_retry_after=True))
    assert not wrong.ok
    assert '-  "code": "SERVER",' in wrong.diff and '+  "code": "RATE_LIMIT",' in wrong.diff
    assert '-  "providerRetryAfterMs": null' in wrong.diff and '+  "providerRetryAfterMs": 2000.0' in wrong.diff
    stop = check_finish([STOP], FinishExpect(kind="error", code="SERVER"))
    assert not stop.ok and '+  "code": null,' in stop.diff and '+  "kind": "stop"' in stop.diff
    none = check_finish(_stream()[:-1], FinishExpect(kind="stop"))
    assert not none.ok and none.diff == "! the stream ended without a finish chunk\n"


def test_the_finish_summary_says_how_the_stream_really_ended() -> None:
    assert finish_summary([STOP]) == "kind=stop"
    assert finish_summary([Finish.error('said "no"', "AUTH", status=401)]) == 'kind=error code=AUTH status=401 message="said \\"no\\""'
    assert finish_summary([]) == "no finish chunk"


def test_usage_and_meta_compare_what_the_scenario_states() -> None:
    assembler = _assembled(_stream())
    assert check_usage(assembler, {"inputTokens": 5, "outputTokens": 7}, none=False).ok
    assert not check_usage(assembler, None, none=True).ok  # usage where none may be
    assert check_usage(_assembled(_stream()[-1:]), None, none=True).ok
    assert check_meta(_stream(), MetaExpect(id="r-1", done_missing=False)).ok
    assert check_meta([Finish(reason=FinishReason(kind="stop"))], MetaExpect(done_missing=False)).ok  # no meta: not missing
    wrong = check_meta(_stream(), MetaExpect(model="deepseek-v4-pro", done_missing=True))
    assert not wrong.ok and '-  "doneMissing": true,' in wrong.diff and '+  "model": "deepseek-v4-flash"' in wrong.diff


def test_a_second_request_for_one_step_is_named_a_self_retry() -> None:
    assert check_requests(0).ok and check_requests(1).ok
    retried = check_requests(2)
    assert not retried.ok and retried.summary.startswith("the adapter sent 2 requests for one step: it retries")
    assert '+  "requests for this step": 2,' in retried.diff


# --- serialize -----------------------------------------------------------------------------------


def test_get_path_walks_keys_and_indices_and_says_absent() -> None:
    body = {"messages": [{"role": "user"}, {"tool_calls": [{"id": "c1"}]}]}
    assert get_path(body, "messages[1].tool_calls[0].id") == "c1"
    assert get_path(body, "messages[2].role") is ABSENT == get_path(body, "messages[0].role.x") == get_path(body, "x")


BODY: dict[str, Any] = {
    "model": "deepseek-v4-flash",
    "thinking": {"type": "disabled"},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Paris?"}]},
        {"role": "assistant", "content": None, "reasoning_content": "",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny", "name": "get_weather"},
    ],
}
WANT_MESSAGES = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1"},
]


def test_request_messages_pass_on_equivalent_forms_and_note_what_is_not_compared() -> None:
    # Text parts equal their joined string, a null assistant content equals "", and with
    # thinking off an empty reasoning_content counts as absent; the extra `name` is information.
    result = check_request(BODY, {}, RequestExpect(messages=WANT_MESSAGES), thinking_off=True)
    assert result.ok, result.diff
    assert result.info == ['messages[1].reasoning_content: sent "" (not in the expectation)',
                           'messages[2].name: sent "get_weather" (not in the expectation)']
    # With thinking on, a tool-call turn must carry its reasoning back.
    on = check_request(BODY, {}, RequestExpect(messages=WANT_MESSAGES), thinking_off=False)
    assert not on.ok and '-      "reasoning_content": "<absent>",' in on.diff and '+      "reasoning_content": "",' in on.diff


def test_request_messages_fail_on_changed_arguments_and_a_lost_call_id() -> None:
    sent = {**BODY, "messages": [BODY["messages"][0],
                                 {**BODY["messages"][1], "tool_calls": [{"id": "call_1", "function": {
                                     "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                                 {"role": "tool", "content": "sunny"}]}
    result = check_request(sent, {}, RequestExpect(messages=WANT_MESSAGES), thinking_off=True)
    assert not result.ok and result.diff.startswith("--- expected/serialize\n")
    assert '+          "arguments": "{\\"city\\": \\"Paris\\"}",' in result.diff
    assert '-      "tool_call_id": "call_1"' in result.diff and '+      "tool_call_id": "<absent>"' in result.diff


def test_request_fields_and_headers() -> None:
    want = RequestExpect.model_validate({
        "fields": [{"path": "thinking.type", "equals": "disabled"}, {"path": "model", "one_of": ["a", "deepseek-v4-flash"]},
                   {"path": "temperature", "absent": True}],
        "headers_absent": ["X-Stainless-Retry-Count"],
        "headers_present": ["x-api-key|Authorization"],
    })
    assert check_request(BODY, {"authorization": "Bearer k"}, want, thinking_off=True).ok
    sent = {**BODY, "model": "gpt-4o", "temperature": 0.2}
    wrong = check_request(sent, {"x-stainless-retry-count": "0"}, want, thinking_off=True)
    assert not wrong.ok
    for line in ('+  "header x-api-key|authorization": "<absent>",', '+  "header x-stainless-retry-count": "0",',
                 '+  "model": "gpt-4o",', '+  "temperature": 0.2,'):
        assert line in wrong.diff, wrong.diff
    assert '\n   "thinking.type": "disabled"\n' in wrong.diff  # unchanged: context, not a difference
