"""Server-wide state (`Runtime`): what it derives from the seed, how often each step answered,
its cache of made replies, and the telemetry hook that must never break serving."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from dshkit.mock_server.journal import Journal
from dshkit.mock_server.output import FastOutput, PlainOutput
from dshkit.mock_server.runtime import Runtime, ServerConfig, trace_prefix
from dshkit.mock_server.scripts import ReplySpec
from dshkit.mock_server.validation import ValidationCache


def _runtime(**config: Any) -> Runtime:
    return Runtime(ServerConfig(**config), Journal())


def test_what_a_runtime_derives_from_the_seed_is_the_same_for_the_same_seed() -> None:
    a, b, other = _runtime(seed=7), _runtime(seed=7), _runtime(seed=8)
    assert a.trace_prefix == b.trace_prefix == trace_prefix(7) != other.trace_prefix
    assert len(a.trace_prefix) == 8 and int(a.trace_prefix, 16) >= 0
    draws = [[rt.random.random() for _ in range(5)] for rt in (a, b, other)]
    assert draws[0] == draws[1] != draws[2]
    # Servers with different seeds hardly ever share a trace id.
    assert len({trace_prefix(seed) for seed in range(2000)}) == 2000


def test_the_fast_path_setting_chooses_the_output_and_the_validation_cache() -> None:
    fast, plain = _runtime(), _runtime(fast_path=False)
    assert isinstance(fast.output, FastOutput) and isinstance(fast.validation, ValidationCache)
    assert isinstance(plain.output, PlainOutput) and plain.validation is None


def test_repeats_are_counted_per_session_and_step() -> None:
    rt = _runtime()
    counts = [rt.repeat_of(session, step) for session, step in
              [("a", 0), ("a", 0), ("a", 1), ("b", 0), ("a", None), ("a", 0), ("a", None)]]
    assert counts == [0, 1, 0, 0, 0, 2, 1]


def test_a_reply_is_made_once_per_step_and_the_cache_stays_bounded() -> None:
    rt = _runtime()
    spec = ReplySpec(content="hi")
    made = rt.reply_of(spec)
    assert rt.reply_of(spec) is made and made.content == "hi"
    twin = ReplySpec(content="hi")  # an equal step of another script is its own entry
    assert rt.reply_of(twin) == made and rt.reply_of(twin) is not made
    others = [ReplySpec(content=str(i)) for i in range(1024)]
    assert [rt.reply_of(s).content for s in others] == [str(i) for i in range(1024)]
    again = rt.reply_of(spec)  # the oldest left the cache: made afresh, equal
    assert again == made and again is not made


def test_a_failing_observer_never_reaches_the_server(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[dict[str, Any]] = []

    def observer(event: dict[str, Any]) -> None:
        seen.append(event)
        raise RuntimeError("observer broke")

    with caplog.at_level(logging.DEBUG, logger="dshkit.mock_server"):
        _runtime(on_event=observer).emit({"type": "request", "seq": 1})
    _runtime().emit({"type": "request", "seq": 2})  # no observer: nothing to call
    assert seen == [{"type": "request", "seq": 1}]
    assert "on_event observer failed" in caplog.text
