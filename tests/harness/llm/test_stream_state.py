"""`StreamState`, the block bookkeeping and end rules every adapter shares."""

from __future__ import annotations

from dshkit.harness.llm import (
    ErrorCode,
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
    FinishMeta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.llm.messages import OpaqueBlock, ReasoningBlock
from dshkit.harness.llm.stream_state import BlockState, StreamState

CLOSED = LlmFailure(message="ended before a reason", code=ErrorCode.STREAM_CLOSED)


def _interleaved() -> tuple[StreamState, list[StreamChunk]]:
    state = StreamState()
    out: list[StreamChunk] = []
    state.add_reasoning("think", out)
    state.add_text("He", out)
    first = state.tool_call(0, out)
    state.add_tool_delta(first, "call_a", "read", '{"p":', out)
    state.add_reasoning("more", out)
    second = state.tool_call(1, out)
    state.add_tool_delta(second, "call_b", "ls", "{}", out)
    state.add_tool_delta(state.tool_call(0, out), "call_other", "write", '"x"}', out)
    state.add_text("llo", out)
    return state, out


def test_blocks_get_indices_in_opening_order_and_deltas_name_them() -> None:
    _, out = _interleaved()
    assert out == [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="think"),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="He"),
        BlockStart(index=2, block_type="tool-call"),
        ToolCallDelta(index=2, id="call_a", name="read", arguments_delta='{"p":'),
        ReasoningDelta(index=0, text="more"),
        BlockStart(index=3, block_type="tool-call"),
        ToolCallDelta(index=3, id="call_b", name="ls", arguments_delta="{}"),
        # the first id and name stay: a later one neither replaces nor concatenates
        ToolCallDelta(index=2, id="call_a", name="read", arguments_delta='"x"}'),
        TextDelta(index=1, text="llo"),
    ]


def test_none_is_a_tool_call_key_like_any_other() -> None:
    """An SDK gives a tool-call fragment without an index as `index=None`: all such fragments
    are one call, not one call each."""
    state = StreamState()
    out: list[StreamChunk] = []
    assert state.tool_call(None, out) is state.tool_call(None, out)
    assert state.tool_call(0, out) is not state.keyed[None]
    assert [c for c in out if isinstance(c, BlockStart)] == [
        BlockStart(index=0, block_type="tool-call"), BlockStart(index=1, block_type="tool-call")
    ]


def test_a_reason_closes_every_block_in_order_then_usage_then_finish() -> None:
    state, _ = _interleaved()
    state.token_usage = TokenUsage(input_tokens=3, output_tokens=5)
    state.id, state.model = "r1", "m"
    end = state.finish(FinishReason(kind="tool-calls"), unfinished=CLOSED, done_missing=True)
    assert end == [
        BlockEnd(index=0, block=ReasoningBlock(text="thinkmore")),
        BlockEnd(index=1, block=TextBlock(text="Hello")),
        BlockEnd(index=2, block=ToolCallBlock(id="call_a", name="read", arguments='{"p":"x"}')),
        BlockEnd(index=3, block=ToolCallBlock(id="call_b", name="ls", arguments="{}")),
        Usage(usage=TokenUsage(input_tokens=3, output_tokens=5)),
        Finish(reason=FinishReason(kind="tool-calls"), meta=FinishMeta(id="r1", model="m", done_missing=True)),
    ]
    assert state.finished
    assert state.finish(FinishReason(kind="stop"), unfinished=CLOSED) == []  # one finish only


def test_no_reason_is_the_unfinished_failure_and_leaves_blocks_open() -> None:
    state, _ = _interleaved()
    state.token_usage = TokenUsage(input_tokens=1, output_tokens=1)
    end = state.finish(None, unfinished=CLOSED, done_missing=True)
    assert end == [Finish.failed(CLOSED, meta=FinishMeta(done_missing=True))]
    assert not any(block.closed for block in state.blocks)


def test_a_stop_without_any_block_is_an_empty_response() -> None:
    state = StreamState()
    [finish] = state.finish(FinishReason(kind="stop"), unfinished=CLOSED, empty_message="nothing came")
    assert finish == Finish.error("nothing came", ErrorCode.EMPTY_RESPONSE, meta=FinishMeta())
    # max-tokens with no content is not an empty *completed* response
    [finish] = StreamState().finish(FinishReason(kind="max-tokens"), unfinished=CLOSED)
    assert isinstance(finish, Finish) and finish.reason == FinishReason(kind="max-tokens")


def test_replay_state_rides_only_on_a_successful_finish() -> None:
    state = StreamState()
    state.add_text("x", [])
    assert state.finish(FinishReason(kind="stop"), unfinished=CLOSED, replay_state=lambda: {"r": 1})[-1] == Finish(
        reason=FinishReason(kind="stop"), meta=FinishMeta(), replay_state={"r": 1}
    )
    failed = FinishReason(kind="error", failure=CLOSED)
    [finish] = StreamState().finish(failed, unfinished=CLOSED, replay_state=lambda: {"r": 1})
    assert isinstance(finish, Finish) and finish.replay_state is None


def test_fail_keeps_billed_usage_only_when_asked() -> None:
    state = StreamState()
    state.token_usage = TokenUsage(input_tokens=2, output_tokens=0)
    failure = LlmFailure(message="boom", code=ErrorCode.SERVER)
    assert state.fail(failure) == [Finish.failed(failure, meta=FinishMeta())]
    assert StreamState().fail(failure, keep_usage=True) == [Finish.failed(failure, meta=FinishMeta())]
    state = StreamState()
    state.token_usage = TokenUsage(input_tokens=2, output_tokens=0)
    assert state.fail(failure, keep_usage=True) == [Usage(usage=state.token_usage), Finish.failed(failure, meta=FinishMeta())]


def test_a_closed_block_ends_once_and_a_subclass_builds_its_own_block() -> None:
    class Opaque(BlockState):
        __slots__ = ()

        def block(self) -> OpaqueBlock:
            return OpaqueBlock(type=self.kind, data={"n": len(self.parts)})

    state = StreamState()
    out: list[StreamChunk] = []
    block = state.open_block(Opaque("server_tool_use"), out, key=7)
    assert state.keyed[7] is block and block.index == 0
    state.close_block(block, out)
    state.close_block(block, out)
    end = state.finish(FinishReason(kind="stop"), unfinished=CLOSED)
    assert out == [
        BlockStart(index=0, block_type="server_tool_use"),
        BlockEnd(index=0, block=OpaqueBlock(type="server_tool_use", data={"n": 0})),
    ]
    assert end == [Finish(reason=FinishReason(kind="stop"), meta=FinishMeta())]
