"""`plan_call`: what a logged call held, in arrival order, and the ending each failure stands for."""

from __future__ import annotations

import pytest

from dshkit.harness.llm import (
    Finish,
    FinishReason,
    LlmFailure,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import (
    BlockEnd,
    BlockStart,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.replay.plan import Piece, plan_call


def stop(kind: str = "stop") -> Finish:
    return Finish(reason=FinishReason(kind=kind))  # type: ignore[arg-type]


TEXT = [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel"), TextDelta(index=0, text="lo")]
CALL = [BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id="call_1", name="read", arguments_delta=""),
        ToolCallDelta(index=1, id="call_1", name=None, arguments_delta='{"path":')]


def test_pieces_keep_arrival_order_and_name_a_call_on_its_first_piece() -> None:
    chunks: list[StreamChunk] = [BlockStart(index=0, block_type="reasoning"), ReasoningDelta(index=0, text="think"),
                                 *TEXT, *CALL, Usage(usage=TokenUsage(input_tokens=3, output_tokens=2)),
                                 stop("tool-calls")]
    plan = plan_call(chunks)
    assert [(p.kind, p.text, p.first) for p in plan.pieces] == [
        ("reasoning", "think", False), ("text", "Hel", False), ("text", "lo", False),
        ("tool-call", "", True), ("tool-call", '{"path":', False),
    ]
    assert {(p.call_id, p.name) for p in plan.pieces if p.kind == "tool-call"} == {("call_1", "read")}
    assert plan.end == "finished" and plan.finish == "tool-calls" and plan.usage == TokenUsage(input_tokens=3, output_tokens=2)
    assert plan.fragments("text") == ["Hel", "lo"] and plan.tool_calls() == [("call_1", "read", ["", '{"path":'])]


def test_a_block_end_beyond_its_deltas_sends_the_rest() -> None:
    """A compaction call logs no deltas at all; a block-end whose text runs on sends the rest."""
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel"),
        BlockEnd(index=0, block=TextBlock(text="Hello")),
        BlockStart(index=1, block_type="tool-call"),
        BlockEnd(index=1, block=ToolCallBlock(id="c", name="list", arguments="{}")), stop(),
    ]
    assert plan_call(chunks).pieces == (
        Piece(kind="text", index=0, text="Hel"), Piece(kind="text", index=0, text="lo"),
        Piece(kind="tool-call", index=1, text="{}", call_id="c", name="list", first=True),
    )


def _failed(code: str, *, status: int | None = None) -> Finish:
    return Finish.failed(LlmFailure(message=f"{code} happened", code=code, status=status))


@pytest.mark.parametrize(("code", "status", "content", "end", "finish", "wire_status"), [
    ("AUTH", None, False, "http-error", "stop", 401),
    ("QUOTA", None, False, "http-error", "stop", 402),
    ("RATE_LIMIT", None, False, "http-error", "stop", 429),
    ("INVALID_REQUEST", None, False, "http-error", "stop", 400),
    ("CONTEXT_WINDOW_EXCEEDED", None, False, "http-error", "stop", 400),
    ("SERVER", None, False, "http-error", "stop", 500),
    ("SERVER", 503, False, "http-error", "stop", 503),
    ("SERVER", None, True, "in-band-error", "stop", 500),
    ("PROVIDER_ERROR", None, False, "in-band-error", "stop", None),
    ("STREAM_CLOSED", None, True, "eof", "stop", None),
    ("STREAM_CLOSED", None, False, "eof", "stop", None),
    ("TRANSPORT", None, True, "reset", "stop", None),
    ("TIMEOUT", None, False, "reset", "stop", None),
    ("EMPTY_RESPONSE", None, False, "finished", "stop", None),
    ("EMPTY_RESPONSE", None, True, "in-band-error", "stop", None),
    ("CONTENT_FILTER", None, True, "finished", "content-filter", None),
    ("INSUFFICIENT_SYSTEM_RESOURCE", None, False, "finished", "insufficient-system-resource", None),
])
def test_each_failure_ends_the_way_its_client_reports_it_again(
    code: str, status: int | None, content: bool, end: str, finish: str, wire_status: int | None
) -> None:
    chunks: list[StreamChunk] = [*(TEXT if content else []), _failed(code, status=status)]
    plan = plan_call(chunks)
    assert (plan.end, plan.finish, plan.status, plan.content) == (end, finish, wire_status, content)
    assert plan.failure is not None and plan.failure.code == code


def test_a_throw_entry_or_a_hang_overrides_the_logged_finish() -> None:
    throw = LlmFailure(message="simulated provider error (HTTP 401)", code="AUTH")
    assert plan_call([], throw).end == "http-error"
    assert plan_call([*TEXT, stop()], hang=True).end == "hold"
    assert plan_call([*TEXT, Finish.aborted()]).end == "hold"
