"""Model calls recovered from a log: a step's chunk events, split per attempt and folded again."""

from __future__ import annotations

from dshkit.harness.llm import Finish, FinishReason, TextBlock
from dshkit.harness.llm.chunks import BlockEnd, BlockStart, StreamChunk, TextDelta
from dshkit.harness.llm.errors import ErrorCode
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.session import Session
from dshkit.harness.session.calls import (
    assemble_chunk_events,
    split_model_calls,
    step_chunk_events,
    stream_chunks,
)

SRC = ModelSource(provider="deepseek", model="deepseek-chat")
FAILED: list[StreamChunk] = [
    BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel"),
    Finish.error("overloaded", ErrorCode.SERVER, status=503),
]
RETRIED: list[StreamChunk] = [
    BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel"), TextDelta(index=0, text="lo"),
    BlockEnd(index=0, block=TextBlock(text="Hello")), Finish(reason=FinishReason(kind="stop")),
]


def test_a_retried_step_splits_into_its_attempts_and_the_last_folds_to_its_message() -> None:
    s = Session(clock=lambda: 0)
    s.append("turn/start", {"turn": 1})
    for chunk in FAILED + RETRIED:
        s.append_chunk(1, 1, chunk)
    crashed = s.append_chunk(1, 2, TextDelta(index=0, text="cut"))
    s.append_chunk(2, 1, TextDelta(index=0, text="other turn"))
    events = step_chunk_events(s.events, 1, 1)
    assert events == list(s.chunk_events(1, 1)) and len(events) == len(FAILED) + len(RETRIED)
    attempts = split_model_calls(events)
    assert [stream_chunks(a) for a in attempts] == [FAILED, RETRIED]
    assert split_model_calls(step_chunk_events(s.events, 1, 2)) == [[crashed]]  # no finish: still a call
    folded = assemble_chunk_events(attempts[-1])
    assert folded.finished and folded.message(SRC, id="m").content == (TextBlock(text="Hello"),)
    failed = assemble_chunk_events(attempts[0])
    assert failed.finish_reason.kind == "error" and failed.message(SRC, interrupted=True).content == (TextBlock(text="Hel"),)
