"""Replay scripts derived from a log: calls split at each finish, sidecars, placeholders."""

import pytest

from dshkit.harness.llm import TextDelta
from dshkit.harness.session import (
    ReplayEntry,
    ReplayError,
    Session,
    derive_replay_script,
    parse_override,
)

FINISH = {"type": "finish", "reason": {"kind": "stop"}}


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


def test_patches_replace_a_call_or_append_one() -> None:
    base = derive_replay_script(chunk_log([text("a"), FINISH]).events)
    hang = {"kind": "hang"}
    assert [e.kind for e in parse_override({"patches": [{"at": 0, "entry": hang}]}, base)] == ["hang"]
    assert [e.kind for e in parse_override({"patches": [{"at": 1, "entry": hang}]}, base)] == ["chunks", "hang"]
    with pytest.raises(ReplayError, match="out of range"):
        parse_override({"patches": [{"at": 2, "entry": hang}]}, base)


@pytest.mark.parametrize("kind", [[], {}, None, "chunk"])
def test_a_bad_kind_is_a_replay_error(kind: object) -> None:
    with pytest.raises(ReplayError, match=r"side\.json\[0\]\.kind: expected chunks, throw or hang"):
        parse_override([{"kind": kind}], None, source="side.json")


def test_the_request_is_read_only_for_a_placeholder() -> None:
    asked: list[int] = []

    def request() -> str:
        asked.append(1)
        return "call id: call_42"

    plain = ReplayEntry(chunks=(text("hi"), FINISH))
    assert plain.stream_chunks(request)[0] == TextDelta(index=0, text="hi")
    assert asked == []
    filled = ReplayEntry(chunks=(text(r"id={{fromRequest:call_(\d+)}}"), FINISH))
    assert filled.stream_chunks(request)[0] == TextDelta(index=0, text="id=42")
    assert asked == [1]
