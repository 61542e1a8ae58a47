"""The event envelope: what a JSONL line holds, read back exactly, and every malformed envelope refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshkit.harness.llm.errors import SessionError
from dshkit.harness.session.events import (
    SessionEvent,
    SurfaceReplace,
    event_from_json,
    event_to_json,
    surface_op_from_json,
)


def test_an_envelope_round_trips_and_writes_only_what_is_set() -> None:
    plain = SessionEvent(type="turn/start", seq=0, time=-5, data={"turn": 1})
    assert event_to_json(plain) == {"type": "turn/start", "seq": 0, "time": -5, "data": {"turn": 1}}
    full = SessionEvent(
        type="user/message", seq=7, time=2**53 - 1, data={"x": [1]}, ignorable=True,
        surface_op=SurfaceReplace(2, 5), source_event_seqs=(2, 5),
    )
    line = json.dumps(event_to_json(full))
    assert json.loads(line)["surfaceOp"] == {"op": "replace", "start": 2, "end": 5}
    for event in (plain, full):
        assert event_from_json(json.loads(json.dumps(event_to_json(event)))) == event
    assert surface_op_from_json("append") == "append"


GOOD: dict[str, Any] = {"type": "turn/start", "seq": 3, "time": 0, "data": {"turn": 1}}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"turn": 1}, "unexpected top-level keys ['turn']"),
        ({"type": ""}, "event.type: expected a non-empty string"),
        ({"seq": -1}, "event.seq: expected a non-negative integer"),
        ({"seq": True}, "event.seq: expected a non-negative integer"),
        ({"time": 2**53}, "event.time: expected epoch milliseconds"),
        ({"time": 1.0}, "event.time: expected epoch milliseconds"),
        ({"ignorable": 0}, "event.ignorable: only `true` is allowed"),
        ({"sourceEventSeqs": [1, "2"]}, "event.sourceEventSeqs: expected a list of integers"),
        ({"surfaceOp": "prepend"}, "event.surfaceOp: expected 'append' or a replace"),
        ({"surfaceOp": {"op": "replace", "start": 0}}, "a replace must be exactly"),
        ({"surfaceOp": {"op": "replace", "start": 0, "end": -1}}, "non-negative integers"),
    ],
    ids=["extra-key", "empty-type", "negative-seq", "bool-seq", "unsafe-time", "float-time",
         "falsy-ignorable", "string-seq", "unknown-op", "half-replace", "negative-end"],
)
def test_a_malformed_envelope_is_an_invalid_event_naming_its_field(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(SessionError) as info:
        event_from_json({**GOOD, **change})
    assert info.value.code == "INVALID_EVENT" and problem in str(info.value)


def test_an_envelope_without_data_or_not_an_object_is_refused() -> None:
    for value, problem in (({k: v for k, v in GOOD.items() if k != "data"}, "missing data"), ([GOOD], "JSON object")):
        with pytest.raises(SessionError, match=problem):
            event_from_json(value, "line 4")
