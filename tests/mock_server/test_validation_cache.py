"""The fast path's validation cache against plain validation: the same result, or the same error.

`ValidationCache` validates a body seen again once more into a template and serves later
requests of the same bytes from it, with a body parsed afresh. Every request must still get
what plain validation gives it (equal `ChatRequest`, or an equal `Rejection`), and no two
requests may share an object a test or a callback could change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.mock_server import MockServerFactory, Script
from dshkit.mock_server.anthropic.validation import validate_messages
from dshkit.mock_server.validation import ChatRequest, Rejection, ValidationCache, validate_chat

from .test_validation import CASES, TOOL, U, body

_CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}
VALID: list[Any] = [
    body(),
    body(stream=True, temperature=0.7, top_p=1e-3, seed=-(2**63), n=1, stop=["x", "y"], max_tokens=5),
    body(tools=[TOOL], tool_choice="required", api_key="sk-secret", nested={"password": "p", "x": [1.5, None]}),
    {"model": "deepseek-reasoner", "messages": [*U, {"role": "assistant", "content": None, "tool_calls": [_CALL],
                                                     "reasoning_content": "r"},
                                                {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]},
    body(messages=[*U, {"role": "assistant", "content": "pre", "prefix": True}], big=2**70, tiny=5e-324),
    body(messages=[{"role": "user", "content": [{"type": "text", "text": "é中🎉"}, {"type": "text", "text": "json \u0000"}]}],
         response_format={"type": "json_object"}, extra="JSON please"),
]


def _plain(raw: bytes, path: str = "/chat/completions", headers: dict[str, str] | None = None) -> ChatRequest:
    return validate_chat(raw, path=path, headers=headers or {})


def _outcome(validate: Callable[[], ChatRequest]) -> ChatRequest | Rejection:
    try:
        return validate()
    except Rejection as r:
        return r


def _ids(value: Any) -> set[int]:
    """The ids of every container in a parsed body (what a caller could change in place)."""
    out, stack = set(), [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (dict, list)):
            out.add(id(v))
            stack.extend(v.values() if isinstance(v, dict) else v)
    return out


def _raws() -> list[bytes]:
    raws = [json.dumps(b).encode() for b in VALID]
    raws.append(b"\xef\xbb\xbf" + raws[0])  # a BOM: the plain parser reads it
    raws.append(json.dumps(VALID[1], indent=2).encode("utf-16"))
    return raws


@pytest.mark.parametrize("raw", _raws())
def test_every_request_gets_what_plain_validation_gives_and_objects_of_its_own(raw: bytes) -> None:
    cache = ValidationCache()
    seen: list[ChatRequest] = []
    for i in range(5):
        headers = {"X-Mock-Session": f"s{i}", "Authorization": "Bearer sk-key"}
        got = cache.validate(lambda headers=headers: _plain(raw, "/beta/chat/completions", headers), raw,
                             path="/beta/chat/completions", headers=headers)
        assert got == _plain(raw, "/beta/chat/completions", headers)
        assert got.view.headers["x-mock-session"] == f"s{i}" and "sk-key" not in str(got.view.headers)
        for earlier in seen:
            assert not _ids(earlier.body) & _ids(got.body) and not _ids(earlier.redacted) & _ids(got.redacted)
        assert not _ids(got.body) & _ids(got.redacted)  # the journal's copy is apart from the view's
        seen.append(got)


def test_headers_redacted_by_the_caller_give_the_same_request_and_a_view_of_its_own() -> None:
    """The handler hands in the journal entry's redacted headers: the result is still plain
    validation's, and the view's headers are a copy (a callback changing them leaves the
    journal's record alone)."""
    from dshkit.mock_server.journal import redact_headers

    cache = ValidationCache()
    raw = json.dumps(VALID[2]).encode()
    for i in range(4):
        headers = {"X-Mock-Session": f"s{i}", "Authorization": "Bearer sk-key", "X-Api-Key": "sk-other"}
        journal = redact_headers(headers)
        got = cache.validate(lambda headers=headers: _plain(raw, headers=headers), raw, path="/chat/completions",
                             headers=headers, redacted_headers=journal)
        assert got == _plain(raw, headers=headers)
        assert got.view.headers == journal and got.view.headers is not journal
        got.view.headers["x-mock-session"] = "changed"
        assert journal["x-mock-session"] == f"s{i}"


def test_the_path_is_part_of_the_key() -> None:
    cache = ValidationCache()
    raw = json.dumps(body()).encode()
    for path in ["/chat/completions", "/beta/chat/completions"] * 3:
        got = cache.validate(lambda path=path: _plain(raw, path), raw, path=path, headers={})
        assert got.beta == path.startswith("/beta/") and got.view.path == path


@pytest.mark.parametrize("name,payload", [(c[0], c[1]) for c in CASES])
def test_an_invalid_body_gets_the_same_error_every_time(name: str, payload: Any) -> None:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    cache = ValidationCache()
    plain = _outcome(lambda: _plain(raw))
    assert isinstance(plain, Rejection), name
    for _ in range(4):
        assert _outcome(lambda: cache.validate(lambda: _plain(raw), raw, path="/chat/completions", headers={})) == plain


def test_the_anthropic_validator_through_the_cache() -> None:
    raw = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": U, "stream": True,
                      "tools": [{"name": "f", "input_schema": {"type": "object"}}]}).encode()
    cache = ValidationCache()

    def plain() -> ChatRequest:
        return validate_messages(raw, path="/anthropic/v1/messages", headers={})

    for _ in range(4):
        assert cache.validate(plain, raw, path="/anthropic/v1/messages", headers={}) == plain()


def test_a_large_body_or_many_bodies_stay_within_the_bounds() -> None:
    cache = ValidationCache(entries=4, max_body=200)
    big = json.dumps(body(messages=[{"role": "user", "content": "x" * 300}])).encode()
    calls = 0

    def counted(raw: bytes) -> Callable[[], ChatRequest]:
        def validate() -> ChatRequest:
            nonlocal calls
            calls += 1
            return _plain(raw)
        return validate

    for _ in range(3):
        assert cache.validate(counted(big), big, path="/chat/completions", headers={}) == _plain(big)
    assert calls == 3  # over max_body: validated in full each time
    raws = [json.dumps(body(n=i)).encode() for i in range(10)]
    for raw in raws * 3:
        assert cache.validate(counted(raw), raw, path="/chat/completions", headers={}) == _plain(raw)
    assert len(cache._kept) <= 4
    small = ValidationCache(budget=3 * len(raws[0]))
    for raw in raws * 3:
        assert small.validate(counted(raw), raw, path="/chat/completions", headers={}) == _plain(raw)
    assert sum(len(raw) for _, raw in small._kept) <= 3 * len(raws[0]) and small._kept


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**80), 2**80),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
_json = st.recursive(_scalar, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
                     max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(extra=st.dictionaries(st.sampled_from(["x", "token", "api_key", "meta", "stream", "n", "temperature"]), _json,
                             max_size=3),
       content=st.text(max_size=20))
def test_any_body_gets_the_same_outcome_through_the_cache(extra: dict[str, Any], content: str) -> None:
    try:
        raw = json.dumps(body(messages=[{"role": "user", "content": content}], **extra)).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not a body a client can send as UTF-8
        return
    cache = ValidationCache()
    plain = _outcome(lambda: _plain(raw))
    for _ in range(3):
        assert _outcome(lambda: cache.validate(lambda: _plain(raw), raw, path="/chat/completions", headers={})) == plain


async def test_changing_a_journal_body_changes_no_later_request(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(Script.replies("a", repeat_last=True))
    payload = body(tools=[TOOL], stream=False)
    async with httpx.AsyncClient(timeout=5) as c:
        answers = []
        for _ in range(5):
            r = await c.post(server.url, json=payload)
            assert r.status_code == 200, r.text
            answers.append(r.json()["choices"][0]["message"])
            assert server.journal.last.body == payload
            server.journal.last.body["messages"].clear()  # a test changing what it reads
            server.journal.last.body["tools"][0]["function"]["name"] = "changed"
    assert all(a == answers[0] for a in answers)
