"""The router's used-step skipping against the plain scan: the same decisions, in any order.

`Router(skip_used=True)` (the default) jumps over consumed steps; `skip_used=False` walks every
step from the first, as the router always did. Over random scripts (steps that match a user
text or anything, `repeat_last` on or off) and random request orders across sessions, both must
answer every request with the same kind, step and message, and report the same pending steps.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.mock_server import Script
from dshkit.mock_server.routing import Decision, RequestView, Router

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
