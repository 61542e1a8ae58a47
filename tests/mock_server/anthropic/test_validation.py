"""Messages validation (`anthropic/validation.py`) over loopback: model names, the fields DeepSeek
accepts, ignores or refuses, the tool history and thinking passback rules, each refusal a 400 in
DeepSeek's words that consumes no step."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.anthropic.validation import PASSBACK_MESSAGE, validate_messages
from dshkit.mock_server.validation import Rejection

from .wire import KEY, body, post

# -- models ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "served"), [
    ("claude-opus-4-1", "deepseek-v4-pro"),
    ("claude-opus", "deepseek-v4-pro"),
    ("claude-sonnet-4-5-20250929", "deepseek-flash"),
    ("claude-haiku-4-5", "deepseek-flash"),
    ("claude", "deepseek-flash"),
    ("deepseek-v4-flash[1m]", "deepseek-v4-flash"),
    ("deepseek-flash", "deepseek-flash"),
    ("deepseek-chat", "deepseek-v4-flash"),
])
async def test_model_mapping(mock_deepseek: MockServer, http: httpx.AsyncClient, model: str, served: str) -> None:
    resp = await post(http, mock_deepseek, {**body(), "model": model})
    assert resp.status_code == 200, resp.text
    assert resp.json()["model"] == served


@pytest.mark.parametrize("model", ["gpt-4o", "deepseek-v4-flash-1m", "opus-claude"])
async def test_unknown_model_is_400(mock_deepseek: MockServer, http: httpx.AsyncClient, model: str) -> None:
    resp = await post(http, mock_deepseek, {**body(), "model": model})
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error" and "Model Not Exist" in err["message"]
    assert "deepseek-flash" in err["message"]  # names the valid models


async def test_unknown_model_fallback_option(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(anthropic_unknown_model="flash")
    resp = await post(http, server, {**body(), "model": "gpt-4o"})
    assert resp.status_code == 200 and resp.json()["model"] == "deepseek-flash"


# -- fields and refusals ---------------------------------------------------------------------------


async def test_supported_and_ignored_fields_are_accepted(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    payload = body(
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        stop_sequences=["END"], temperature=1.7, top_p=0.9, top_k=40,
        thinking={"type": "enabled", "budget_tokens": 1024}, output_config={"effort": "xhigh"},
        tools=[{"name": "read", "description": "Read a file", "cache_control": {"type": "ephemeral"},
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
               {"type": "web_search_20250305", "name": "web_search"}],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        metadata={"user_id": "user-42"}, service_tier="auto", container="c1", mcp_servers=[],
        reasoning_effort="max", some_future_field={"x": 1},
    )
    payload["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "any-string"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                      "content": [{"type": "text", "text": "boom"}]}]},
    ]
    resp = await post(http, mock_deepseek, payload)
    assert resp.status_code == 200, resp.text


async def _rejected(server: MockServer, http: httpx.AsyncClient, payload: Any) -> dict[str, Any]:
    resp = await post(http, server, payload)
    assert resp.status_code == 400, resp.text
    got: dict[str, Any] = resp.json()
    assert set(got) == {"error"}  # DeepSeek's envelope on this route: no type/request_id on top
    assert set(got["error"]) == {"message", "type", "param", "code"}
    assert got["error"]["type"] == "invalid_request_error"
    return got["error"]


def _tool_turns(thinking_block: bool) -> list[dict[str, Any]]:
    assistant: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}]
    if thinking_block:
        assistant.insert(0, {"type": "thinking", "thinking": "", "signature": ""})
    return [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]},
    ]


@pytest.mark.parametrize(("payload", "needle"), [
    (b"{not json", "Failed to deserialize the JSON body"),
    ({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}, "missing field `max_tokens`"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}, "missing field `model`"),
    ({"model": "claude-x", "max_tokens": 5}, "missing field `messages`"),
    ({**body(), "max_tokens": "5"}, "max_tokens: invalid type"),
    ({**body(), "max_tokens": 0}, "valid range of max_tokens"),
    ({**body(), "messages": []}, "invalid length 0"),
    ({**body(), "messages": [{"role": "system", "content": "x"}]}, "unknown variant `system`"),
    ({**body(), "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
     "messages[0].content[0]: unknown variant `document`"),
    ({**body(), "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "x"}]}]}, "unknown variant `redacted_thinking`"),
    ({**body(), "output_config": {"effort": "extreme"}}, "output_config.effort: unknown variant"),
    ({**body(), "thinking": {"type": "disabled"}, "temperature": 2.5}, "`temperature` must be in [0, 2]"),
    ({**body(), "thinking": "on"}, "thinking: invalid type"),
    ({**body(), "tool_choice": {"type": "tool", "name": "read"},
      "tools": [{"name": "read", "input_schema": {"type": "object"}}]},
     "Thinking mode does not support this tool_choice"),
    ({**body(), "tool_choice": {"type": "required"}}, "tool_choice.type: unknown variant"),
    ({**body(), "messages": _tool_turns(True)[:2]}, "`tool_use` ids were found without `tool_result`"),
    ({**body(), "messages": [*_tool_turns(True)[:2], {"role": "user", "content": "no result"}]},
     "toolu_1"),
    ({**body(), "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t"}]}]}, "missing field `signature`"),
    ({**body(), "stop_sequences": "END"}, "stop_sequences: invalid type"),
])
async def test_validation_errors(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient,
                                 payload: Any, needle: str) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "unused"}}))
    err = await _rejected(server, http, payload)
    assert needle in err["message"]
    assert server.journal.last.outcome == "rejected"
    assert server.journal.unused_steps()  # a rejected request consumes no step


async def test_thinking_passback_rule(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    # Thinking on (the default) and a tool-use turn without its thinking block: DeepSeek's 400.
    err = await _rejected(mock_deepseek, http, {**body(), "messages": _tool_turns(False)})
    assert err == {"message": PASSBACK_MESSAGE, "type": "invalid_request_error", "param": None,
                   "code": "invalid_request_error"}  # corpus ds01, byte for byte in content
    # `adaptive` (Claude Code) keeps thinking on.
    await _rejected(mock_deepseek, http, {**body(), "thinking": {"type": "adaptive"}, "messages": _tool_turns(False)})
    # Passed back (even empty, AN28) or thinking off: accepted.
    for payload in ({**body(), "messages": _tool_turns(True)},
                    {**body(), "thinking": {"type": "disabled"}, "messages": _tool_turns(False)}):
        assert (await post(http, mock_deepseek, payload)).status_code == 200


def test_passback_wording_matches_the_recorded_bodies() -> None:
    from dshkit.mock_server.validation import PASSBACK_MESSAGE as CHAT_PASSBACK

    # The recorded DeepSeek bodies quote the field in backticks on both routes.
    assert CHAT_PASSBACK == "The `reasoning_content` in the thinking mode must be passed back to the API."
    assert PASSBACK_MESSAGE == "The `content[].thinking` in the thinking mode must be passed back to the API."


# -- tool history and options ----------------------------------------------------------------------


def _history(*results: dict[str, Any], uses: tuple[str, ...] = ("toolu_1",)) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            *({"type": "tool_use", "id": u, "name": "read", "input": {}} for u in uses)]},
        {"role": "user", "content": list(results)},
    ]


def _result(tid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": "x"}


TOOL = {"name": "read", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(("payload", "needle"), [
    # A result for a call that was never made (the chat route rejects an orphan tool message).
    (body(messages=_history(_result("toolu_1"), _result("toolu_9"))),
     "messages[2].content[1]: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"),
    # A result for a call of an earlier turn, not the previous one.
    (body(messages=[*_history(_result("toolu_1")), {"role": "assistant", "content": "done"},
                     {"role": "user", "content": [_result("toolu_1")]}]),
     "messages[4].content[0]: unexpected `tool_use_id`"),
    # A result in the user's first turn, before any call.
    (body(messages=[{"role": "user", "content": [_result("toolu_1")]}]), "unexpected `tool_use_id`"),
    (body(messages=_history(_result("toolu_1"), _result("toolu_1"))),
     "messages[2].content[1]: each `tool_use` must have a single result"),
    (body(messages=_history(_result("toolu_1"), uses=("toolu_1", "toolu_1"))),
     "messages[1].content[2]: `tool_use` ids must be unique"),
    # The same id again in a later turn.
    (body(messages=[*_history(_result("toolu_1")), {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}]},
        {"role": "user", "content": [_result("toolu_1")]}]),
     "messages[3].content[1]: `tool_use` ids must be unique"),
    (body(thinking={"type": "bogus"}),
     "thinking.type: unknown variant `bogus`, expected one of `enabled`, `disabled`, `adaptive`"),
    (body(tools=[TOOL, {**TOOL, "description": "again"}]), "tools[1]: tool names must be unique"),
])
async def test_unmatched_history_and_bad_options_are_400(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, payload: dict[str, Any], needle: str
) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "unused"}}))
    resp = await post(http, server, payload)
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error" and needle in err["message"], err
    assert server.journal.unused_steps()  # a rejected request consumes no step


@pytest.mark.parametrize("payload", [
    body(messages=_history(_result("toolu_1"), _result("toolu_2"), uses=("toolu_1", "toolu_2"))),
    body(thinking={"type": "enabled", "budget_tokens": 1024}),
    body(thinking={"type": "adaptive"}),
    body(tools=[TOOL, {**TOOL, "name": "write"}]),
])
async def test_matched_history_and_known_options_are_served(
    mock_deepseek: MockServer, http: httpx.AsyncClient, payload: dict[str, Any]
) -> None:
    assert (await post(http, mock_deepseek, payload)).status_code == 200


# -- what the default reply reads from the request -------------------------------------------------


async def test_default_reply_quotes_the_user_and_thinking_follows_the_request(
    mock_deepseek: MockServer, http: httpx.AsyncClient
) -> None:
    on = (await post(http, mock_deepseek, body("ping 🏓"))).json()
    assert [b["type"] for b in on["content"]] == ["thinking", "text"]
    assert on["content"][1]["text"] == 'You said: "ping 🏓"'
    off = (await post(http, mock_deepseek, body("ping", thinking={"type": "disabled"}))).json()
    assert [b["type"] for b in off["content"]] == ["text"]


async def test_default_reply_forced_tool_when_thinking_is_off(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    payload = body(thinking={"type": "disabled"}, tool_choice={"type": "tool", "name": "lookup"},
                   tools=[{"name": "lookup", "input_schema": {
                       "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}])
    got = (await post(http, mock_deepseek, payload)).json()
    assert got["stop_reason"] == "tool_use"
    assert got["content"][0]["name"] == "lookup" and set(got["content"][0]["input"]) == {"q"}


# -- any body, any bytes ---------------------------------------------------------------------------


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                     max_leaves=8)


_FIELDS = ["model", "max_tokens", "messages", "system", "stop_sequences", "temperature", "top_p",
           "thinking", "output_config", "tools", "tool_choice", "metadata", "stream"]


@given(field=st.sampled_from(_FIELDS), value=_json, block=_json)
def test_any_body_is_accepted_or_rejected_cleanly(field: str, value: Any, block: Any) -> None:
    # Bad input is a 400 with a message, never an exception of another kind (a 500).
    payload = body(tools=[{"name": "t", "input_schema": {"type": "object"}}])
    payload["messages"].append({"role": "assistant", "content": [block]})
    payload[field] = value
    try:
        validate_messages(json.dumps(payload).encode(), path="/anthropic/v1/messages", headers={})
    except Rejection as r:
        assert r.status == 400 and r.message


@pytest.mark.parametrize(("raw", "needle"), [
    (b'{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"' + b"[" * 2000 + b'"}]}',
     None),
    (b'{"model":"claude-sonnet-4-5","max_tokens":8,"messages":' + b"[" * 5000 + b"]" * 5000 + b"}",
     b"recursion limit"),
    (b'{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"\\ud800"}]}',
     b"lone surrogate"),
    (b'{"model":"claude-sonnet-4-5","max_tokens":NaN,"messages":[{"role":"user","content":"x"}]}',
     b"NaN"),
    (b'{"model":"claude-sonnet-4-5","max_tokens":' + b"9" * 5000 + b',"messages":[]}',
     b"number out of range"),
])
async def test_the_hardened_parser_guards_this_surface_too(
    mock_deepseek: MockServer, http: httpx.AsyncClient, raw: bytes, needle: bytes | None
) -> None:
    """Bodies Python's json mishandles get a 4xx envelope here as on the chat route, never a 500."""
    resp = await http.post(f"{mock_deepseek.base_url}/anthropic/v1/messages", content=raw,
                           headers={"x-api-key": KEY, "content-type": "application/json"})
    assert resp.status_code in (200, 400), resp.text
    if needle is not None:
        assert resp.status_code == 400 and needle in resp.content
        assert mock_deepseek.journal.last.status == 400
