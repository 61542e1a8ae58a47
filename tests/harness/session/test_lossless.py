"""Lossless JSON: the gate every event's data passes on append, and the frozen copy it keeps.

The first tests go through `Session.append`, the gate's one caller; the rest check `freeze_json`
and `thaw_json` themselves.
"""

from __future__ import annotations

import copy
import enum
import json
import math
import pickle
from typing import Any

import pytest

from dshkit.harness.llm.errors import ErrorCode, SessionError
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.lossless import (
    FrozenDict,
    FrozenList,
    LosslessJsonError,
    freeze_json,
    thaw_json,
)


def new() -> Session:
    return Session(SessionHeader.new(id="s1", created_at=0), clock=lambda: 1000)


@pytest.mark.parametrize(
    "bad",
    [math.nan, math.inf, -math.inf, -0.0, (1, 2), {1: "x"}, object(), b"x", {"a": {1, 2}}],
)
def test_lossless_json_rejected_and_nothing_committed(bad: object) -> None:
    s = new()
    with pytest.raises(SessionError):
        s.append("todo/write", {"todos": [], "x": bad})
    assert len(s) == 0


def test_cycle_rejected() -> None:
    s = new()
    data: dict[str, object] = {"todos": []}
    data["self"] = data
    with pytest.raises(SessionError, match="cycle"):
        s.append("todo/write", data)


def test_data_is_copied_and_frozen() -> None:
    s = new()
    data = {"todos": [{"content": "a", "status": "pending"}]}
    event = s.append("todo/write", data)
    data["todos"].append({"content": "b", "status": "pending"})
    assert len(event.data["todos"]) == 1
    assert isinstance(event.data, FrozenDict)
    assert event.data == {"todos": [{"content": "a", "status": "pending"}]}
    with pytest.raises(TypeError):
        event.data["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        event.data["todos"].append(1)


def _cycle() -> list[Any]:
    loop: list[Any] = [1]
    loop.append({"back": loop})
    return loop


@pytest.mark.parametrize(
    ("value", "path", "problem"),
    [
        ({"a": [1, {"b": math.nan}]}, "data.a[1].b", "not a finite JSON number"),
        ({"a": [0.0, -0.0]}, "data.a[1]", "-0 does not survive"),
        ({"a": {"ok": 1, 2: "x"}}, "data.a", "object key 2 is not a string"),
        ({"a": _cycle()}, "data.a[1].back", "contains itself"),
        ({"a": [(1, 2)]}, "data.a[0]", "tuple is not plain JSON"),
    ],
    ids=["nan", "negative-zero", "int-key", "cycle", "tuple"],
)
def test_a_refused_value_names_the_path_of_its_first_fault(value: Any, path: str, problem: str) -> None:
    with pytest.raises(LosslessJsonError) as info:
        freeze_json(value)
    assert info.value.path == path and problem in info.value.problem


def test_a_value_nested_past_any_walk_is_refused_not_a_recursion_error() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(LosslessJsonError) as info:
        freeze_json({"a": deep})
    assert info.value.path == "data" and "nested too deep" in info.value.problem
    # and through the gate's one caller: a session error like any other refused value
    s = new()
    with pytest.raises(SessionError, match="nested too deep"):
        s.append("todo/write", {"todos": [], "x": deep})
    assert len(s) == 0


def test_enum_members_are_kept_as_their_plain_values() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    frozen = freeze_json({"code": ErrorCode.RATE_LIMIT, "level": Level.HIGH, "flag": True})
    assert [type(v) for v in frozen.values()] == [str, int, bool]
    assert json.dumps(frozen) == '{"code": "RATE_LIMIT", "level": 3, "flag": true}'


def test_frozen_values_stay_frozen_through_copies_and_pickle_and_thaw_to_plain_ones() -> None:
    frozen = freeze_json({"todos": [{"content": "a"}], "n": 1.5})
    assert freeze_json(frozen) is frozen and copy.copy(frozen) is frozen and copy.deepcopy(frozen) is frozen
    assert copy.copy(frozen["todos"]) is frozen["todos"]
    back = pickle.loads(pickle.dumps(frozen))
    assert type(back) is FrozenDict and type(back["todos"]) is FrozenList and back == frozen
    for mutate in (lambda: back.update(x=1), lambda: back["todos"].append(2), lambda: back["todos"].__iadd__([2])):
        with pytest.raises(TypeError, match="thaw_json"):
            mutate()
    plain = thaw_json(frozen)
    assert type(plain) is dict and type(plain["todos"]) is list and type(plain["todos"][0]) is dict
    plain["todos"][0]["content"] = "changed"
    assert frozen["todos"][0]["content"] == "a"
