"""Model calls recovered from the log: each step's `assistant/chunk` events, split per attempt.

In the seed's walk every chunk of a model call is logged before `BlockAssembler` turns the stream
into the `assistant/message`. Replaying a log (a mock server serving it again, or a test proving
the log is self-consistent) walks that path backwards: take a step's chunk events, split them at
each `finish` (a retried step holds several attempts), decode them and fold them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dshkit.harness.llm import BlockAssembler, StreamChunk
from dshkit.harness.llm.codec import chunk_from_json

from .events import SessionEvent

__all__ = ["assemble_chunk_events", "split_model_calls", "step_chunk_events", "stream_chunks"]


def step_chunk_events(events: Iterable[SessionEvent], turn: int, step: int) -> list[SessionEvent]:
    """The `assistant/chunk` events of one step, in log order (`Session.chunk_events` is O(1))."""
    return [
        e for e in events
        if e.type == "assistant/chunk" and e.data["turn"] == turn and e.data["step"] == step
    ]


def split_model_calls(chunk_events: Sequence[SessionEvent]) -> list[list[SessionEvent]]:
    """Group chunk events into calls: each call ends at its `finish` chunk.

    A trailing group without a finish (a cancelled or crashed call) is returned last.
    """
    calls: list[list[SessionEvent]] = []
    current: list[SessionEvent] = []
    for event in chunk_events:
        current.append(event)
        if event.data["chunk"].get("type") == "finish":
            calls.append(current)
            current = []
    if current:
        calls.append(current)
    return calls


def stream_chunks(chunk_events: Iterable[SessionEvent]) -> list[StreamChunk]:
    """Decode logged chunks back into `StreamChunk`s."""
    return [chunk_from_json(e.data["chunk"], f"seq {e.seq}.chunk") for e in chunk_events]


def assemble_chunk_events(chunk_events: Iterable[SessionEvent]) -> BlockAssembler:
    """Fold logged chunks with the same assembler the live loop uses."""
    assembler = BlockAssembler()
    for chunk in stream_chunks(chunk_events):
        assembler.feed(chunk)
    return assembler
