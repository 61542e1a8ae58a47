"""Entries derived from a log: one per call, split at each finish; a cut call asks for a sidecar."""

import pytest

from dshkit.harness.replay.entries import ReplayEntry, ReplayError, derive_replay_script
from dshkit.harness.session import Session

FINISH = {"type": "finish", "reason": {"kind": "stop"}}
ABORTED = {"type": "finish", "reason": {"kind": "aborted", "failure": {"message": "user", "code": "ABORTED"}}}


def chunk_log(*calls: list[dict[str, object]]) -> Session:
    s = Session(clock=lambda: 0)
    for step, chunks in enumerate(calls, start=1):
        for c in chunks:
            s.append("assistant/chunk", {"turn": 1, "step": step, "chunk": c})
    return s


def text(t: str) -> dict[str, object]:
    return {"type": "text-delta", "index": 0, "text": t}


def test_one_entry_per_call_split_at_each_finish() -> None:
    s = chunk_log([text("a"), FINISH], [text("b"), text("c"), FINISH])
    entries = derive_replay_script(s.events, source="log")
    assert [e.chunks for e in entries] == [(text("a"), FINISH), (text("b"), text("c"), FINISH)]
    assert [e.where for e in entries] == ["log turn 1 step 1", "log turn 1 step 2"]


def test_a_call_without_finish_asks_for_an_override() -> None:
    s = chunk_log([text("a")], [text("b"), FINISH])
    with pytest.raises(ReplayError, match=r"turn 1 step 1 has chunks but no finish .* replay\.override\.json"):
        derive_replay_script(s.events, source="log")


def test_a_compaction_call_is_one_synthetic_call_at_its_place() -> None:
    s = chunk_log([text("a"), FINISH])
    s.append("compaction/summary", {"llmStreamCall": True, "rawOutput": [{"type": "text", "text": "sum"}],
                                    "usage": {"inputTokens": 3, "outputTokens": 1}})
    entries = derive_replay_script(s.events, source="log")
    assert [c["type"] for c in entries[1].chunks] == ["block-start", "block-end", "usage", "finish"]


def test_a_hang_or_an_aborted_finish_is_a_call_the_client_gave_up_on() -> None:
    assert ReplayEntry(kind="hang").aborted and ReplayEntry(chunks=(text("x"), ABORTED)).aborted
    assert not ReplayEntry(chunks=(text("x"), FINISH)).aborted
    assert [c["type"] for c in ReplayEntry(kind="hang").played_chunks] == ["block-start", "text-delta"]
