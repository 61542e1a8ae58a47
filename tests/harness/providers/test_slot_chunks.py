"""`SlotChunks`, the fast decoders' way of building the per-delta chunks, against the plain
`StreamState`: any sequence of deltas gives the very same chunks (equal, same type, hash, repr and
JSON, still frozen), and a chunk class whose fields changed is refused when the writers are made."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import ErrorCode, FinishReason, LlmFailure, StreamChunk
from dshkit.harness.llm.chunks import ReasoningDelta, TextDelta, ToolCallDelta
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.llm.stream_state import StreamState
from dshkit.harness.providers import slot_chunks
from dshkit.harness.providers.slot_chunks import SlotChunks


class _Fast(SlotChunks, StreamState):
    __slots__ = ()


CLOSED = LlmFailure(message="cut", code=ErrorCode.STREAM_CLOSED)


_texts = st.text(max_size=5)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("reasoning"), _texts),
        st.tuples(st.just("text"), _texts),
        st.tuples(st.just("tool"), st.integers(0, 2), st.one_of(st.none(), st.just(""), st.just("call_1")),
                  st.one_of(st.none(), st.just("read")), _texts),
        st.tuples(st.just("arguments"), st.integers(0, 2), _texts),
    ),
    max_size=30,
)


def _run(state: StreamState, steps: list[tuple[Any, ...]]) -> list[StreamChunk]:
    out: list[StreamChunk] = []
    for step in steps:
        if step[0] == "reasoning":
            state.add_reasoning(step[1], out)
        elif step[0] == "text":
            state.add_text(step[1], out)
        elif step[0] == "tool":
            _, key, id_, name, fragment = step
            state.add_tool_delta(state.tool_call(key, out), id_, name, fragment, out)
        else:
            state.append_arguments(state.tool_call(step[1], out), step[2], out)
    return out + state.finish(FinishReason(kind="stop"), unfinished=CLOSED)


@given(_steps)
def test_slot_written_chunks_are_the_plain_ones(steps: list[tuple[Any, ...]]) -> None:
    fast, plain = _run(_Fast(), steps), _run(StreamState(), steps)
    assert fast == plain
    for f, p in zip(fast, plain, strict=True):
        assert type(f) is type(p) and hash(f) == hash(p) and repr(f) == repr(p)
        assert chunk_to_json(f) == chunk_to_json(p)
        if isinstance(f, (ReasoningDelta, TextDelta, ToolCallDelta)):
            with pytest.raises(dataclasses.FrozenInstanceError):
                f.index = 9  # type: ignore[misc]


def test_writers_refuse_a_class_whose_fields_changed() -> None:
    with pytest.raises(TypeError, match="TextDelta has the fields"):
        slot_chunks._setters(TextDelta, ("index", "text"))


@given(st.integers(0, 3), st.lists(_texts, max_size=8), st.sampled_from(["call_1", ""]), st.one_of(st.none(), st.just("read")))
def test_runs_built_at_once_are_the_plain_chunks(index: int, texts: list[str], id_: str, name: str | None) -> None:
    runs = [
        (slot_chunks.reasoning_deltas(index, texts), [ReasoningDelta(index=index, text=t) for t in texts]),
        (slot_chunks.text_deltas(index, texts), [TextDelta(index=index, text=t) for t in texts]),
        (slot_chunks.tool_call_deltas(index, id_, name, texts),
         [ToolCallDelta(index=index, id=id_, name=name, arguments_delta=t) for t in texts]),
    ]
    for fast, plain in runs:
        assert fast == plain
        for f, p in zip(fast, plain, strict=True):
            assert type(f) is type(p) and hash(f) == hash(p) and repr(f) == repr(p)
            assert chunk_to_json(f) == chunk_to_json(p)
