"""BlockAssembler exactly per dsh-core.md §2.3."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import (
    AssistantMessage,
    BlockAssembler,
    Finish,
    FinishReason,
    HarnessError,
    LlmFailure,
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
from dshkit.harness.llm.messages import ModelSource, OpaqueBlock, ReasoningBlock

SOURCE = ModelSource(provider="deepseek", model="deepseek-v4-flash")


def fold(*chunks: object) -> BlockAssembler:
    return BlockAssembler().feed_all(list(chunks))  # type: ignore[arg-type]


def test_index_keyed_first_seen_order() -> None:
    a = fold(
        BlockStart(index=5, block_type="reasoning"),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="b"),
        ReasoningDelta(index=5, text="a"),
        BlockStart(index=3, block_type="tool-call"),
        ToolCallDelta(index=3, id="c", name="n", arguments_delta="{}"),
    )
    assert a.blocks() == [ReasoningBlock(text="a"), TextBlock(text="b"), ToolCallBlock(id="c", name="n", arguments="{}")]


def test_interleaved_indices_join_fragments() -> None:
    a = fold(
        TextDelta(index=0, text="he"),
        ReasoningDelta(index=1, text="x"),
        TextDelta(index=0, text="llo"),
        ReasoningDelta(index=1, text="y"),
    )
    assert a.blocks() == [TextBlock(text="hello"), ReasoningBlock(text="xy")]


def test_duplicate_block_start_keeps_text() -> None:
    a = fold(
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="a"),
        BlockStart(index=0, block_type="text"),
        BlockStart(index=0, block_type="reasoning"),  # ignored: the index was seen
        TextDelta(index=0, text="b"),
    )
    assert a.blocks() == [TextBlock(text="ab")]


def test_deltas_without_block_start_create_blocks() -> None:
    a = fold(
        ReasoningDelta(index=0, text="r"),
        TextDelta(index=1, text="t"),
        ToolCallDelta(index=2, id="c", name="n", arguments_delta="{"),
        ToolCallDelta(index=2, id="c", arguments_delta="}"),
    )
    assert a.blocks() == [ReasoningBlock(text="r"), TextBlock(text="t"), ToolCallBlock(id="c", name="n", arguments="{}")]


def test_stragglers_after_block_end_ignored_and_block_authoritative() -> None:
    a = fold(
        TextDelta(index=0, text="partial"),
        BlockEnd(index=0, block=TextBlock(text="authoritative")),
        TextDelta(index=0, text="late"),
        ToolCallDelta(index=1, id="c", name="n", arguments_delta="{}"),
        BlockEnd(index=1, block=ToolCallBlock(id="c", name="n", arguments='{"x":1}')),
        ToolCallDelta(index=1, id="other", name="m", arguments_delta="zzz"),
    )
    assert a.blocks() == [TextBlock(text="authoritative"), ToolCallBlock(id="c", name="n", arguments='{"x":1}')]


def test_first_block_end_wins() -> None:
    a = fold(
        BlockEnd(index=0, block=TextBlock(text="first")),
        BlockEnd(index=0, block=TextBlock(text="second")),
    )
    assert a.blocks() == [TextBlock(text="first")]


def test_block_end_without_start_creates_block() -> None:
    opaque = OpaqueBlock(type="audio", data={"type": "audio"})
    a = fold(BlockEnd(index=4, block=opaque))
    assert a.blocks() == [opaque]


def test_last_id_wins_even_empty_and_last_name_nonempty_wins() -> None:
    a = fold(
        ToolCallDelta(index=0, id="a", name="first", arguments_delta="{"),
        ToolCallDelta(index=0, id="b", name="second", arguments_delta='"k"'),
        ToolCallDelta(index=0, id="c", name="", arguments_delta=":1"),
        ToolCallDelta(index=0, id="c", name=None, arguments_delta="}"),
    )
    assert a.blocks() == [ToolCallBlock(id="c", name="second", arguments='{"k":1}')]
    # An empty id on the last delta clears it; the block then falls back to call-<index>.
    b = fold(
        ToolCallDelta(index=7, id="a", name="n", arguments_delta=""),
        ToolCallDelta(index=7, id="", arguments_delta=""),
    )
    assert b.blocks() == [ToolCallBlock(id="call-7", name="n", arguments="")]


def test_missing_id_and_name_defaults() -> None:
    a = fold(BlockStart(index=2, block_type="tool-call"))
    assert a.blocks() == [ToolCallBlock(id="call-2", name="", arguments="")]


def test_max_tokens_drops_tool_calls() -> None:
    chunks = [
        TextDelta(index=0, text="t"),
        ToolCallDelta(index=1, id="c", name="n", arguments_delta='{"cut'),
        BlockEnd(index=2, block=ToolCallBlock(id="d", name="n", arguments="{}")),
        Finish(reason=FinishReason(kind="max-tokens")),
    ]
    assert fold(*chunks).blocks() == [TextBlock(text="t")]
    assert fold(*chunks[:-1], Finish(reason=FinishReason(kind="stop"))).blocks()[1:] == [
        ToolCallBlock(id="c", name="n", arguments='{"cut'),
        ToolCallBlock(id="d", name="n", arguments="{}"),
    ]


def test_unknown_never_closed_type_raises() -> None:
    a = fold(BlockStart(index=3, block_type="audio"))
    with pytest.raises(HarnessError, match='cannot assemble incomplete block of type "audio"') as info:
        a.blocks()
    assert "index 3" in str(info.value)
    # Closing it makes it assemble.
    a.feed(BlockEnd(index=3, block=OpaqueBlock(type="audio", data={"type": "audio"})))
    assert a.blocks() == [OpaqueBlock(type="audio", data={"type": "audio"})]


def test_blocks_idempotent_and_reads_do_not_mutate() -> None:
    a = fold(TextDelta(index=0, text="a"), ToolCallDelta(index=1, id="c", arguments_delta="{}"))
    first = a.blocks()
    assert a.blocks() == first == a.blocks()
    a.interrupted_blocks()
    a.message(SOURCE)
    a.feed(TextDelta(index=0, text="b"))
    assert a.blocks()[0] == TextBlock(text="ab")


def test_finish_defaults_to_stop_and_last_finish_wins() -> None:
    a = BlockAssembler()
    assert a.finish_reason == FinishReason(kind="stop")
    assert not a.finished
    failure = LlmFailure(message="x", code="SERVER")
    meta = FinishMeta(id="i")
    a.feed(Finish(reason=FinishReason(kind="tool-calls")))
    a.feed(Finish(reason=FinishReason(kind="error", failure=failure), meta=meta))
    assert a.finish_reason == FinishReason(kind="error", failure=failure)
    assert a.finished and a.meta == meta


def test_usage_last_wins() -> None:
    a = fold(Usage(usage=TokenUsage(input_tokens=1, output_tokens=1)), Usage(usage=TokenUsage(input_tokens=2, output_tokens=3)))
    assert a.usage == TokenUsage(input_tokens=2, output_tokens=3)


def test_interrupted_prefix() -> None:
    a = fold(
        ReasoningDelta(index=0, text="thinking"),
        TextDelta(index=1, text="  \n "),  # whitespace only: dropped
        ToolCallDelta(index=2, id="c", name="n", arguments_delta="{"),
        BlockStart(index=3, block_type="audio"),  # unknown open type: dropped, no raise
        TextDelta(index=4, text="answer"),
        BlockEnd(index=5, block=TextBlock(text="closed")),
    )
    assert a.interrupted_blocks() == [ReasoningBlock(text="thinking"), TextBlock(text="answer"), TextBlock(text="closed")]
    message = a.message(SOURCE, id="m1", interrupted=True)
    assert message == AssistantMessage(id="m1", content=tuple(a.interrupted_blocks()), source=SOURCE)


def test_message() -> None:
    a = fold(TextDelta(index=0, text="hi"))
    message = a.message(SOURCE, id="m")
    assert message == AssistantMessage(id="m", content=(TextBlock(text="hi"),), source=SOURCE)
    assert a.message(SOURCE).id != a.message(SOURCE).id  # minted when not given


def test_replay_state() -> None:
    env = {"response": {"r": 1}}
    assert fold(TextDelta(index=0, text="a"), Finish(reason=FinishReason(kind="stop"), replay_state=env)).replay_state == env
    aligned = {"response": 1, "blocks": ["t", "c"]}
    chunks = [TextDelta(index=0, text="a"), ToolCallDelta(index=1, id="c", arguments_delta="")]
    assert fold(*chunks, Finish(reason=FinishReason(kind="stop"), replay_state=aligned)).replay_state == aligned
    assert fold(*chunks, Finish(reason=FinishReason(kind="max-tokens"), replay_state=aligned)).replay_state == {"response": 1, "blocks": ["t"]}
    wrong = {"response": 1, "blocks": ["t"]}
    assert fold(*chunks, Finish(reason=FinishReason(kind="stop"), replay_state=wrong)).replay_state is None
    assert BlockAssembler().replay_state is None


# --- properties (§2.3: partial count ≤ distinct indices; blocks() idempotent; never throws) ----

_core_chunk = st.one_of(
    st.builds(BlockStart, index=st.integers(0, 4), block_type=st.sampled_from(["text", "reasoning", "tool-call"])),
    st.builds(TextDelta, index=st.integers(0, 4), text=st.text(max_size=3)),
    st.builds(ReasoningDelta, index=st.integers(0, 4), text=st.text(max_size=3)),
    st.builds(
        ToolCallDelta,
        index=st.integers(0, 4),
        id=st.sampled_from(["", "a", "b"]),
        name=st.sampled_from([None, "", "n", "m"]),
        arguments_delta=st.text(max_size=3),
    ),
    st.builds(BlockEnd, index=st.integers(0, 4), block=st.sampled_from([TextBlock(text="T"), ReasoningBlock(text="R"), ToolCallBlock(id="i", name="n", arguments="{}")])),
    st.builds(Finish, reason=st.sampled_from([FinishReason(kind=k) for k in ("stop", "tool-calls", "max-tokens")])),
)


@given(st.lists(_core_chunk, max_size=25))
def test_property_never_throws_and_idempotent(chunks: list[object]) -> None:
    a = fold(*chunks)
    blocks = a.blocks()
    assert a.blocks() == blocks
    indices = {c.index for c in chunks if hasattr(c, "index")}  # type: ignore[attr-defined]
    assert len(blocks) <= len(indices)
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert a.finish_reason == (finishes[-1].reason if finishes else FinishReason(kind="stop"))
    kept = a.interrupted_blocks()
    assert a.interrupted_blocks() == kept and len(kept) <= len(indices)
    assert all(isinstance(b, (TextBlock, ReasoningBlock)) and b.text.strip() for b in kept)
