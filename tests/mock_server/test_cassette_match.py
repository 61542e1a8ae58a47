"""Cassette matching: which recorded exchange answers a live request, over real HTTP (httpx to a
real mock server replaying a cassette recorded through the real recorder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import MockServer, MockServerFactory, Recorder, Script, load_cassette
from dshkit.mock_server.cassette import Cassette, Read, RecordedExchange, RecordedRequest
from dshkit.mock_server.cassette_match import (
    DEFAULT_MATCH_ON,
    CassetteRouter,
    resolve_match_on,
    values_match,
)
from dshkit.mock_server.routing import RequestView, body_matches

KEY = "sk-live-SECRET-0123456789abcdef"


def _chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": [{"role": "user", "content": text}], **extra}


def _anthropic(text: str, system: str) -> dict[str, Any]:
    return {"model": "deepseek-chat", "max_tokens": 64, "system": system,
            "messages": [{"role": "user", "content": text}]}


async def _record(
    upstream: MockServer, out: Path, requests: list[tuple[str, dict[str, Any]]], **recorder: Any
) -> Cassette:
    async with Recorder(upstream.base_url, out, **recorder) as rec, httpx.AsyncClient(timeout=10) as c:
        for path, body in requests:
            r = await c.post(rec.base_url + path, json=body, headers={"Authorization": f"Bearer {KEY}"})
            assert r.status_code == 200, r.text
    return load_cassette(out)


async def _replay(cassette: Cassette, requests: list[tuple[str, dict[str, Any]]], **router: Any
                  ) -> tuple[list[httpx.Response], CassetteRouter]:
    matcher = CassetteRouter.for_cassette(cassette, **router)
    async with MockServer(router=matcher) as server, httpx.AsyncClient(timeout=10) as c:
        out = [await c.post(server.base_url + path, json=body, headers={"Authorization": "Bearer other-key"})
               for path, body in requests]
    return out, matcher


def _content(r: httpx.Response) -> str:
    body = r.json()
    if "choices" in body:
        return str(body["choices"][0]["message"]["content"])
    return str(body["content"][0]["text"])


async def test_each_request_gets_the_answer_recorded_for_it(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("A", "B", "C"))
    cassette = await _record(upstream, tmp_path / "c", [("/chat/completions", _chat(t)) for t in "abc"])
    got, router = await _replay(cassette, [("/chat/completions", _chat(t)) for t in "cab"])
    assert [_content(r) for r in got] == ["C", "A", "B"]
    assert router.misses == [] and router.pending() == []


async def test_an_unmatched_request_gets_418_with_the_nearest_recorded_request(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("A", "B"))
    cassette = await _record(upstream, tmp_path / "c", [
        ("/chat/completions", _chat("what is the weather in Paris today?")),
        ("/chat/completions", _chat("tell me a joke")),
    ])
    got, router = await _replay(cassette, [("/chat/completions", _chat("what is the weather in Rome today?"))])
    assert got[0].status_code == 418
    error = got[0].json()["error"]
    assert error["code"] == "mock_no_match"
    assert "Nearest: exchange 1" in error["message"]  # the most similar of the two
    assert '+      "content": "what is the weather in Rome today?"' in error["message"]
    assert [m.message for m in router.misses] == [error["message"]]
    assert KEY not in error["message"] and "other-key" not in error["message"]


async def test_a_changed_system_prompt_on_the_anthropic_surface_does_not_match(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("A"))
    path = "/anthropic/v1/messages"
    cassette = await _record(upstream, tmp_path / "c", [(path, _anthropic("hi", "be brief"))])
    got, _ = await _replay(cassette, [(path, _anthropic("hi", "be verbose")), (path, _anthropic("hi", "be brief"))])
    assert got[0].status_code == 418 and "differs in: messages" in got[0].json()["error"]["message"]
    assert _content(got[1]) == "A"


async def test_path_method_tools_and_body_matchers(dshkit_mock_server: MockServerFactory, tmp_path: Path) -> None:
    upstream = await dshkit_mock_server(Script.replies("A"))
    tool = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    cassette = await _record(upstream, tmp_path / "c", [("/v1/chat/completions", _chat("hi", tools=[tool]))])
    got, _ = await _replay(cassette, [
        ("/chat/completions", _chat("hi", tools=[tool])),  # another path
        ("/v1/chat/completions", _chat("hi")),  # no tools
        ("/v1/chat/completions", _chat("hi", tools=[tool], temperature=0.5)),  # an extra field is fine
    ])
    assert [r.status_code for r in got] == [418, 418, 200]
    assert "differs in: path" in got[0].json()["error"]["message"]
    assert "differs in: tools" in got[1].json()["error"]["message"]
    got, _ = await _replay(cassette, [("/v1/chat/completions", _chat("hi", tools=[tool], temperature=0.5))],
                           match_on=["body"])
    assert got[0].status_code == 418  # the whole body must be equal


async def test_a_scrubbed_value_in_the_cassette_matches_the_live_value(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("A"))
    body = _chat("my org is org-abc123, ok?")
    cassette = await _record(upstream, tmp_path / "c", [("/chat/completions", body)], scrub=["ORG=org-[a-z0-9]+"])
    assert "org-abc123" not in (tmp_path / "c.cassette.jsonl").read_text()
    got, _ = await _replay(cassette, [("/chat/completions", _chat("my org is org-zzz9, ok?"))])
    assert _content(got[0]) == "A"
    got, _ = await _replay(cassette, [("/chat/completions", _chat("my team is org-zzz9, ok?"))])
    assert got[0].status_code == 418  # the text around the placeholder must still be the same


async def test_a_matcher_that_raises_is_a_mismatch_that_says_so(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("A"))
    cassette = await _record(upstream, tmp_path / "c", [("/chat/completions", _chat("hi"))])

    def buggy(live: RecordedRequest, recorded: RecordedRequest) -> bool:
        return bool(live.body["no such field"])

    got, _ = await _replay(cassette, [("/chat/completions", _chat("hi"))], match_on=["path", buggy])
    assert got[0].status_code == 418  # not a 500
    assert "buggy: the matcher raised KeyError: 'no such field'" in got[0].json()["error"]["message"]


def test_a_recorded_body_too_deep_to_diff_still_gives_a_message() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    x = RecordedExchange(request=RecordedRequest(body={"model": "m", "messages": deep}), status=200,
                         reads=(Read(b"{}", 0.0),))
    router = CassetteRouter.for_cassette(Cassette(exchanges=(x,)))
    decision = router.route("s", RequestView(body=_chat("hi"), path="/chat/completions"))
    assert decision.kind == "no_match" and "nest too deeply" in decision.message


def test_values_match() -> None:
    assert values_match({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not values_match({"a": 1}, {"a": 1.0})  # 1 and 1.0 are different JSON
    assert not values_match(True, 1)
    assert not values_match({"a": 1}, {"a": 1, "b": 2})
    assert values_match("{{scrubbed:key}}", {"any": "value"})
    assert values_match("Bearer {{scrubbed:authorization}} end", "Bearer sk-123 end")
    assert not values_match("Bearer {{scrubbed:authorization}} end", "Bearer sk-123 END")
    assert values_match("a.*{{scrubbed:x}}(", "a.*anything(")  # the text around is literal, not a regex
    assert not values_match("a.*{{scrubbed:x}}(", "abc(")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@given(json_values, json_values)
def test_values_match_agrees_with_body_matches_without_embedded_placeholders(a: Any, b: Any) -> None:
    # the server's `match.body` comparison is the plain path; this one adds only placeholders
    # inside strings, which random text does not hold
    assert values_match(a, b) == body_matches(a, b)
    assert values_match(a, a)


def test_resolve_match_on() -> None:
    assert [name for name, _ in resolve_match_on(None)] == list(DEFAULT_MATCH_ON)
    assert [name for name, _ in resolve_match_on("body")] == ["body"]

    def mine(live: RecordedRequest, recorded: RecordedRequest) -> bool:
        return True

    assert [name for name, _ in resolve_match_on(["method", mine])] == ["method", "mine"]
    with pytest.raises(ValueError, match=r"unknown matcher 'prompt'.*method, path, model"):
        resolve_match_on(["prompt"])
    with pytest.raises(ValueError, match="neither a matcher name nor a callable"):
        resolve_match_on([3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="match_on is empty"):
        resolve_match_on([])
