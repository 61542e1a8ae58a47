"""Packed chunk rows: runs of deltas packed with their time gaps, unpacked to the same events."""

import json

import pytest

from dshkit.harness.llm.errors import SessionError
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.chunk_rows import pack_events, unpack_row, unpack_rows
from dshkit.harness.session.jsonl import dump_session


def chunk(seq: int, time: int, kind: str, index: int = 0, **fields: object) -> dict[str, object]:
    body: dict[str, object] = {"type": kind, "index": index, **fields}
    return {"type": "assistant/chunk", "seq": seq, "time": time, "data": {"turn": 1, "step": 1, "chunk": body}}


def texts(seq0: int, parts: list[str], times: list[int], kind: str = "text-delta") -> list[dict[str, object]]:
    return [chunk(seq0 + i, t, kind, text=p) for i, (p, t) in enumerate(zip(parts, times, strict=True))]


def test_run_of_three_packs_with_gaps_and_round_trips() -> None:
    events = texts(5, [" HE", "LL", "O"], [100, 103, 101])
    rows = pack_events(events)
    assert rows == [
        {"type": "text-chunks", "seq0": 5, "time0": 100,
         "data": {"turn": 1, "step": 1, "index": 0, "dt": [3, -2], "texts": [" HE", "LL", "O"]}}
    ]
    assert list(unpack_rows(rows, first_seq=5)) == events


def test_shorter_runs_stay_verbatim() -> None:
    events = texts(0, ["a", "b"], [1, 2])
    assert pack_events(events) == events


def test_tool_call_runs_keep_fragments_and_break_on_id_or_name_change() -> None:
    frags = ["", "{", '"', "command", '"', ": "]
    events = [chunk(i, i, "tool-call-delta", id="call_1", argumentsDelta=f) for i, f in enumerate(frags)]
    rows = pack_events(events)
    assert len(rows) == 1 and rows[0]["type"] == "tool-call-chunks"
    assert rows[0]["data"]["args"] == frags and "name" not in rows[0]["data"]
    assert unpack_row(rows[0]) == events
    named = [chunk(0, 0, "tool-call-delta", id="c", name="bash", argumentsDelta="{")] + [
        chunk(i, i, "tool-call-delta", id="c", argumentsDelta="x") for i in range(1, 4)
    ]
    rows = pack_events(named)
    assert rows[0] == named[0] and rows[1]["type"] == "tool-call-chunks"
    assert [e for r in rows for e in (unpack_row(r) if "seq0" in r else [r])] == named


def test_mixed_kinds_and_non_whitelisted_shapes() -> None:
    events = texts(0, ["a", "b", "c"], [0, 0, 0], "reasoning-delta") + texts(3, ["x", "y", "z"], [1, 1, 1])
    odd = dict(events[-1])
    odd["ignorable"] = True  # not the exact envelope: stays verbatim
    rows = pack_events([*events[:-1], odd])
    assert [r["type"] for r in rows] == ["reasoning-chunks", "assistant/chunk", "assistant/chunk", "assistant/chunk"]


def test_projected_row_gets_synthesized_envelope() -> None:
    row = {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}}
    out = list(unpack_rows([{"type": "turn/start", "data": {"turn": 1}}, row, {"type": "step/end", "data": {}}]))
    assert [e["seq"] for e in out] == [0, 1, 2, 3, 4]
    assert [e["time"] for e in out] == [0, 0, 1, 2, 0]
    assert [e["type"] for e in out] == ["turn/start", *["assistant/chunk"] * 3, "step/end"]
    # an enveloped event keeps its seq, and the next projected line continues after it
    kept = list(unpack_rows([{"type": "turn/start", "seq": 7, "data": {"turn": 1}}, {"type": "x", "data": {}}]))
    assert [(e["seq"], e["time"]) for e in kept] == [(7, 0), (8, 0)]


@pytest.mark.parametrize(
    "row",
    [
        {"type": "text-chunks", "seq0": 0, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b", "c"]}},
        {"type": "text-chunks", "seq0": 0, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"], "x": 1}},
        {"type": "text-chunks", "seq0": 0, "time0": 0.5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]}},
        {"type": "tool-call-chunks", "seq0": 0, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]}},
        {"type": "text-chunks", "seq0": 0, "time0": 0, "extra": 1, "data": {}},
    ],
)
def test_malformed_rows_fail_loud(row: dict[str, object]) -> None:
    with pytest.raises(SessionError, match="malformed packed chunk row"):
        unpack_row(row)


def test_projected_packed_row_with_negative_gaps_loads_and_repacks() -> None:
    """A projected row has no time0, so its members start at 0; a clock that stepped back
    makes the first gap (and so the rebuilt times) negative. The gaps survive a rewrite."""
    header = '{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"{{cwd}}","delegationDepth":0}'
    start = {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}}
    row = {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [-960585284, 3], "texts": ["a", "b", "c"]}}
    loaded = parse_session_log("\n".join([header, json.dumps(start), json.dumps(row)]) + "\n")
    times = [e.time for e in loaded.session.events]
    assert times == [0, 0, -960585284, -960585281]
    again = parse_session_log(dump_session(loaded.session))
    assert list(again.session.events) == list(loaded.session.events)
    assert json.loads(dump_session(loaded.session).splitlines()[2])["data"]["dt"] == [-960585284, 3]
