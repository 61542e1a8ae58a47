"""Per-session routing: session keys, claims, matchers, 418 decisions, pending steps.

The router's used-step skipping is held to the plain scan: `Router(skip_used=True)` (the
default) jumps over consumed steps; `skip_used=False` walks every step from the first, as the
router always did. Over random scripts (steps that match a user text or anything, `repeat_last`
on or off) and random request orders across sessions, both must answer every request with the
same kind, step and message, and report the same pending steps.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.mock_server import Script
from dshkit.mock_server.routing import Decision, RequestView, Router, session_of


def test_session_key_order_and_no_key_leak() -> None:
    assert session_of({"X-Mock-Session": "a", "x-deepseek-harness-session-id": "b"}) == "a"
    assert session_of({"x-deepseek-harness-session-id": "b", "Authorization": "Bearer k"}) == "b"
    key = session_of({"Authorization": "Bearer sk-secret"})
    assert key.startswith("key-") and "secret" not in key
    assert session_of({}) == "anonymous"


def test_one_key_is_one_session_whichever_header_carries_it() -> None:
    """An Anthropic-SDK client sends `x-api-key`, an OpenAI one `Authorization: Bearer`: the same
    key must claim the same script, not two."""
    bearer = session_of({"Authorization": "Bearer sk-same"})
    assert session_of({"x-api-key": "sk-same"}) == bearer
    assert session_of({"Authorization": "bearer  sk-same "}) == bearer
    assert session_of({"x-api-key": "sk-other"}) != bearer


def test_each_new_session_claims_the_next_script_or_its_own() -> None:
    r = Router([Script.replies("a", name="A"), Script.replies("b", name="B")])
    r.add(Script.replies("mine", name="M"), session="s-mine")
    assert r.route("s-mine", RequestView()).script.name == "M"  # type: ignore[union-attr]
    assert r.route("s1", RequestView()).script.name == "A"  # type: ignore[union-attr]
    assert r.route("s2", RequestView()).script.name == "B"  # type: ignore[union-attr]
    d = r.route("s3", RequestView())
    assert d.kind == "no_script" and "s1" in d.message
    with pytest.raises(ValueError, match="already has a script"):
        r.add(Script.replies("x"), session="s1")


def test_first_unconsumed_matching_step_answers() -> None:
    s = Script.of(
        {"reply": {"content": "weather"}, "match": {"user": "weather"}},
        {"reply": {"content": "after tool"}, "match": {"tool_result": "call_1"}},
        {"reply": {"content": "any"}},
        name="m",
    )
    r = Router([s])
    assert r.route("s", RequestView(last_user="hi")).index == 2
    assert r.route("s", RequestView(tool_results=frozenset({"call_1"}))).index == 1
    d = r.route("s", RequestView(last_user="hello", model="deepseek-chat"))
    assert d.kind == "no_match" and d.index == 0
    assert "match.user /weather/ not found" in d.message and "'hello'" in d.message
    assert r.route("s", RequestView(last_user="the weather")).index == 0
    d = r.route("s", RequestView())
    assert d.kind == "exhausted" and "'m'" in d.message
    assert r.pending() == []


def test_model_and_header_matchers_and_nearest_step() -> None:
    s = Script.of(
        {"reply": {"content": "x"}, "match": {"model": "deepseek-chat", "headers": {"X-Team": "^blue$"}, "user": "z"}},
        {"reply": {"content": "y"}, "match": {"headers": {"x-team": "red"}}},
    )
    r = Router([s])
    d = r.route("s", RequestView(model="deepseek-chat", headers={"x-team": "green"}))
    assert d.kind == "no_match" and d.index == 1  # fewest failing conditions
    assert "match.headers.x-team wants /red/, got 'green'" in d.message
    assert r.route("s", RequestView(headers={"x-team": "red"})).index == 1


def test_repeat_last_and_pending() -> None:
    r = Router([Script.of("success", "rate_limit", repeat_last=True, name="R"), Script.replies("z", name="Z")])
    for expected in (0, 1, 1, 1):
        assert r.route("s", RequestView()).index == expected
    assert r.pending() == ["script 'Z': never claimed by any session (1 steps)"]


def test_no_scripts_means_default() -> None:
    r = Router()
    assert r.route("s", RequestView()).kind == "default"
    assert not r.scripted


# -- skipping used steps decides like the plain scan ----------------------------------------------

_WORDS = ("alpha", "beta", "gamma")


def _step(word: str | None, i: int) -> dict[str, Any]:
    step: dict[str, Any] = {"reply": {"content": f"step {i}"}}
    if word is not None:
        step["match"] = {"user": word}
    return step


_scripts = st.lists(
    st.tuples(
        st.lists(st.sampled_from((None, *_WORDS)), min_size=1, max_size=12),
        st.booleans(),
    ),
    min_size=1,
    max_size=3,
)
_requests = st.lists(
    st.tuples(st.sampled_from(("s1", "s2", "s3", "s4")), st.sampled_from(("", *_WORDS, "alpha beta"))),
    max_size=40,
)


def _build(specs: list[tuple[list[str | None], bool]], *, skip_used: bool) -> Router:
    scripts = [
        Script.of(*(_step(w, i) for i, w in enumerate(words)), name=f"S{n}", repeat_last=repeat)
        for n, (words, repeat) in enumerate(specs)
    ]
    return Router(scripts, skip_used=skip_used)


def _seen(d: Decision) -> tuple[Any, ...]:
    return (d.kind, d.session, d.script.name if d.script else None, d.index, d.message)


@settings(max_examples=300, deadline=None)
@given(_scripts, _requests)
def test_skipping_used_steps_decides_like_the_plain_scan(
    specs: list[tuple[list[str | None], bool]], requests: list[tuple[str, str]]
) -> None:
    fast, plain = _build(specs, skip_used=True), _build(specs, skip_used=False)
    for session, text in requests:
        view = RequestView(last_user=text)
        assert _seen(fast.route(session, view)) == _seen(plain.route(session, view))
    assert fast.pending() == plain.pending()


def test_a_long_script_is_consumed_in_order_to_its_last_step() -> None:
    """10,000 steps consumed one by one: each request gets the next step, then the script is
    exhausted (the skipping must not lose or repeat a step at any depth)."""
    n = 10_000
    router = Router([Script.replies(*(str(i) for i in range(n)), name="long")])
    for i in range(n):
        assert router.route("s", RequestView()).index == i
    assert router.route("s", RequestView()).kind == "exhausted"
    assert router.pending() == []
