"""The Anthropic Messages surface over loopback with plain clients (httpx, aiohttp): paths, auth,
model mapping, field status, validation errors, the event stream, quirks, faults, routing."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.anthropic.render import encode_events
from dshkit.mock_server.anthropic.validation import PASSBACK_MESSAGE, validate_messages
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan
from dshkit.mock_server.validation import Rejection

from .wire import parse_sse

KEY = "sk-ant-test-key"


def body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 256,
            "messages": [{"role": "user", "content": text}], **extra}


def events(data: bytes) -> list[dict[str, Any]]:
    """Each event's JSON, after checking the `event:` name equals its `type` (AN43)."""
    parsed = parse_sse(data)
    out = []
    for e in parsed.events:
        obj = json.loads(e.data)
        assert e.event == obj["type"], (e.event, obj)
        out.append(obj)
    return out


def fold(evs: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble a message from events the way the anthropic SDK does (signature replaced,
    partial_json concatenated), checking the grammar and index rules on the way (AN47–AN53)."""
    assert evs[0]["type"] == "message_start"
    msg = dict(evs[0]["message"], content=[])
    assert msg["stop_reason"] is None and msg["content"] == []
    open_index: int | None = None
    json_buf: dict[int, str] = {}
    for ev in evs[1:]:
        t = ev["type"]
        if t == "content_block_start":
            assert open_index is None and ev["index"] == len(msg["content"])  # no interleaving
            open_index = ev["index"]
            msg["content"].append(dict(ev["content_block"]))
        elif t == "content_block_delta":
            assert ev["index"] == open_index
            block, d = msg["content"][ev["index"]], ev["delta"]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            else:
                assert d["type"] == "input_json_delta"
                json_buf[ev["index"]] = json_buf.get(ev["index"], "") + d["partial_json"]
        elif t == "content_block_stop":
            assert ev["index"] == open_index
            open_index = None
        elif t == "message_delta":
            msg.update(ev["delta"])
            msg["usage"] = {**msg["usage"], **ev["usage"]}
        elif t == "message_stop":
            assert ev is evs[-1]
        else:
            assert t == "ping"
    msg["input_json"] = json_buf
    return msg


async def post(client: httpx.AsyncClient, server: MockServer, payload: Any, *,
               path: str = "/anthropic/v1/messages", headers: dict[str, str] | None = None) -> httpx.Response:
    h = {"x-api-key": KEY, "anthropic-version": "2023-06-01"} if headers is None else headers
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await client.post(server.make_url(path), content=data, headers=h)


# -- paths, auth, models -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/anthropic/v1/messages", "/anthropic/messages",
                                  "/anthropic/v1/messages?beta=true"])
async def test_both_paths_serve_a_scripted_stream(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, path: str
) -> None:
    server = await dshkit_mock_server(
        Script.of({"reply": {"reasoning": "Think.", "content": "Hello, 世界 🎉"}}), api_key=KEY)
    resp = await post(http, server, body(stream=True), path=path)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    msg = fold(events(resp.content))
    assert [b["type"] for b in msg["content"]] == ["thinking", "text"]
    assert msg["content"][0]["thinking"] == "Think."
    assert msg["content"][0]["signature"] == msg["id"]  # DeepSeek: the signature is the msg id
    assert msg["content"][1]["text"] == "Hello, 世界 🎉"
    assert msg["stop_reason"] == "end_turn" and msg["stop_sequence"] is None
    assert msg["model"] == "deepseek-flash"
    assert len(msg["id"]) == 36 and msg["id"].count("-") == 4  # a UUID, not msg_01…
    usage = msg["usage"]
    assert usage["output_tokens"] > 1 and usage["cache_creation_input_tokens"] == 0
    assert server.journal.messages()[0].path == path.split("?")[0]
    server.assert_consumed()


async def test_non_streaming_body(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    args = '{"city": "Paris", "q": "say \\"hi\\""}'
    server = await dshkit_mock_server(Script.of(
        {"reply": {"reasoning": "Need weather.", "tool_calls": [{"name": "weather", "arguments": args}]}}))
    resp = await post(http, server, body())
    assert resp.headers["content-type"].startswith("application/json")
    got = resp.json()
    assert got["type"] == "message" and got["role"] == "assistant"
    assert got["stop_reason"] == "tool_use" and got["stop_sequence"] is None
    thinking, call = got["content"]
    assert thinking == {"type": "thinking", "thinking": "Need weather.", "signature": got["id"]}
    assert call["type"] == "tool_use" and call["name"] == "weather"
    assert call["input"] == json.loads(args) and call["id"].startswith("call_00_")
    assert set(got["usage"]) >= {"input_tokens", "output_tokens", "cache_read_input_tokens"}


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


@pytest.mark.parametrize(("headers", "status"), [
    ({"x-api-key": KEY}, 200),
    ({"Authorization": f"Bearer {KEY}"}, 200),
    ({"Authorization": f"Bearer {KEY}", "x-api-key": "wrong"}, 200),  # Authorization wins
    ({"Authorization": "Bearer wrong", "x-api-key": KEY}, 401),
    ({"x-api-key": "wrong"}, 401),
    ({}, 401),
    ({"x-api-key": KEY, "anthropic-version": "2099-01-01",
      "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}, 200),
])
async def test_auth(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient,
                    headers: dict[str, str], status: int) -> None:
    server = await dshkit_mock_server(api_key=KEY)
    resp = await post(http, server, body(), headers=headers)
    assert resp.status_code == status, resp.text
    if status == 401:
        err = resp.json()["error"]
        assert err["type"] == "authentication_error"
        assert KEY not in resp.text and "wrong" not in resp.text  # no key is echoed
    entry = server.journal.last
    assert all(entry.headers[h] == "{{scrubbed:" + h + "}}" for h in ("x-api-key", "authorization") if h in entry.headers)


async def test_other_anthropic_paths_are_404(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    for path in ("/anthropic/v1/messages/count_tokens", "/anthropic/v1/models"):
        resp = await http.post(mock_deepseek.make_url(path), json=body())
        assert resp.status_code == 404
        assert "/anthropic/v1/messages" in resp.json()["error"]["message"]


# -- field status and validation -----------------------------------------------------------------


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


async def test_anthropic_envelope_option(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(anthropic_envelope="anthropic")
    resp = await post(http, server, {**body(), "model": "gpt-4o"})
    got = resp.json()
    assert resp.status_code == 400 and got["type"] == "error"
    assert got["error"]["type"] == "invalid_request_error" and "Model Not Exist" in got["error"]["message"]
    assert got["request_id"].startswith("req_")


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


# -- replies: stop reasons, splits, quirks --------------------------------------------------------


async def test_stop_sequence_cuts_and_is_reported(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "one two ``` three"}},
                                                {"reply": {"content": "one two ``` three"}}))
    msg = fold(events((await post(http, server, body(stream=True, stop_sequences=["```", "zzz"]))).content))
    assert msg["content"][0]["text"] == "one two " and msg["stop_reason"] == "stop_sequence"
    assert msg["stop_sequence"] == "```"
    got = (await post(http, server, body(stop_sequences=["```"]))).json()
    assert got["stop_reason"] == "stop_sequence" and got["stop_sequence"] == "```"


async def test_max_tokens_mid_tool_call(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    reply = {"reply": {"content": "Let me call.", "tool_calls": [{"name": "f", "arguments": '{"a": "long value"}'}]}}
    server = await dshkit_mock_server(Script.of(reply, {**reply, "stream": {"quirks": ["open_block_after_max_tokens"]}}))
    payload = body(stream=True, max_tokens=6, thinking={"type": "disabled"})
    evs = events((await post(http, server, payload)).content)
    msg = fold(evs)
    assert msg["stop_reason"] == "max_tokens"
    args = msg["input_json"][1]
    assert args and '{"a": "long value"}'.startswith(args) and args != '{"a": "long value"}'
    assert sum(e["type"] == "content_block_stop" for e in evs) == 2
    evs = events((await post(http, server, payload)).content)
    assert sum(e["type"] == "content_block_stop" for e in evs) == 1  # the last block stays open (an14)
    assert evs[-2]["type"] == "message_delta" and evs[-1]["type"] == "message_stop"


async def test_finish_reasons_map_to_stop_reasons(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of(
        {"reply": {"content": "filtered", "finish_reason": "content_filter"}},
        {"reply": {"content": "partial", "finish_reason": "insufficient_system_resource"}},
        {"reply": {"content": "partial", "finish_reason": "insufficient_system_resource"}},
    ))
    assert fold(events((await post(http, server, body(stream=True))).content))["stop_reason"] == "refusal"
    evs = events((await post(http, server, body(stream=True))).content)
    # No Anthropic stop reason says "out of resources": an in-band error ends the stream.
    assert evs[-1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert not any(e["type"] in ("message_delta", "message_stop") for e in evs)
    resp = await post(http, server, body())
    assert resp.status_code == 529 and resp.json()["error"]["type"] == "overloaded_error"


async def test_split_plans_and_write_plans(dshkit_mock_server: MockServerFactory) -> None:
    args = '{"city": "Zürich", "note": "a\\"b"}'
    step = {"reply": {"reasoning": "réflexion", "content": "héllo wörld", "tool_calls": [
        {"name": "f", "arguments": args}, {"name": "g", "arguments": ""}]},
        "stream": {"split": {"mode": "fixed", "size": 2},
                   "writes": {"events_per_write": 0, "size": 5, "inside_utf8": True, "inside_escapes": True}}}
    server = await dshkit_mock_server(Script.of(step))
    # aiohttp as the client: it sees the bytes in the writes' pieces and must reassemble them.
    async with aiohttp.ClientSession() as session, session.post(
        server.make_url("/anthropic/v1/messages"), json=body(stream=True)
    ) as resp:
        data = b"".join([chunk async for chunk in resp.content.iter_any()])
    evs = events(data)
    msg = fold(evs)
    assert msg["content"][0]["thinking"] == "réflexion" and msg["content"][1]["text"] == "héllo wörld"
    assert msg["input_json"] == {2: args, 3: ""}  # byte for byte; an argument-less call sends ""
    text_deltas = [e["delta"]["text"] for e in evs if e.get("delta", {}).get("type") == "text_delta"]
    assert text_deltas == ["hé", "ll", "o ", "wö", "rl", "d"]
    writes = server.journal.last.writes
    assert len(writes) > 20 and all(len(w.data) <= 5 for w in writes)


@pytest.mark.parametrize(("quirk", "check"), [
    ("thinking_start_signature", lambda evs, raw: evs[1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}),
    ("no_pings", lambda evs, raw: not any(e["type"] == "ping" for e in evs)),
    ("many_pings", lambda evs, raw: sum(e["type"] == "ping" for e in evs) == 3),
    ("padded_data", lambda evs, raw: b'}       \n' in raw and b'data: {"type": "ping"}\n' in raw),
    ("delta_output_only", lambda evs, raw: set(evs[-2]["usage"]) == {"output_tokens"}),
    ("delta_input_differs", lambda evs, raw: evs[-2]["usage"]["input_tokens"] > evs[0]["message"]["usage"]["input_tokens"]),
    ("anthropic_ids", lambda evs, raw: evs[0]["message"]["id"].startswith("msg_01")
     and fold(evs)["content"][0]["signature"] != evs[0]["message"]["id"]),
])
async def test_quirks(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, quirk: str, check: Any) -> None:
    reply = {"reasoning": "hmm", "content": "ok"}
    server = await dshkit_mock_server(Script.of({"reply": reply}, {"reply": reply, "stream": {"quirks": [quirk]}}))
    plain = (await post(http, server, body(stream=True))).content
    raw = (await post(http, server, body(stream=True))).content
    assert raw != plain
    evs = events(raw)
    assert check(evs, raw)
    assert fold(evs)["content"][1]["text"] == "ok"  # the reply itself is unchanged


async def test_data_only_quirk_drops_event_lines(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "x"}, "stream": {"quirks": ["data_only", "usage_chunk"]}}))
    parsed = parse_sse((await post(http, server, body(stream=True))).content)
    assert parsed.events and all(e.event is None for e in parsed.events)
    assert json.loads(parsed.events[-1].data) == {"type": "message_stop"}


async def test_crlf_framing(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "x"}, "stream": {"framing": "crlf"}}))
    raw = (await post(http, server, body(stream=True))).content
    assert raw.count(b"\r\n\r\n") == len(events(raw)) and b"\n\n" not in raw.replace(b"\r\n", b"")


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "status", "etype"), [
    ("rate_limit", 429, "rate_limit_error"),
    ("overloaded", 529, "overloaded_error"),
    ("server_error", 500, "api_error"),
    ("service_unavailable", 503, "api_error"),
    ("insufficient_balance", 402, "billing_error"),
    ("auth_error", 401, "authentication_error"),
    ("reasoning_passback", 400, "invalid_request_error"),
])
async def test_http_faults_use_this_surfaces_types(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, fault: str, status: int, etype: str
) -> None:
    server = await dshkit_mock_server(sequence=[fault, fault])
    resp = await post(http, server, body(stream=True), headers={"X-Mock-Session": "s"})
    assert resp.status_code == status
    assert resp.json()["error"]["type"] == etype
    if fault == "rate_limit":
        assert resp.headers["Retry-After"] == "1"
    if fault == "reasoning_passback":
        assert resp.json()["error"]["message"] == PASSBACK_MESSAGE  # this surface's wording
    # The same fault on the chat surface keeps DeepSeek's own envelope and type.
    chat = await http.post(server.url, headers={"X-Mock-Session": "s"}, json={
        "model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "x"}]})
    assert chat.status_code == status
    if fault == "server_error":
        assert chat.json()["error"]["type"] == "server_error"


async def test_fault_with_anthropic_envelope_quirk(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of(
        {"fault": "overloaded", "request_id": "req_abc", "stream": {"quirks": ["anthropic_envelope"]}}))
    resp = await post(http, server, body())
    assert resp.status_code == 529
    assert resp.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                           "request_id": "req_abc"}


async def test_mid_stream_error_event(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of(
        {"fault": "event_error", "after_events": 3},
        {"fault": "inband_error", "type": "api_error", "message": "Internal server error"}))
    evs = events((await post(http, server, body(stream=True))).content)
    assert [e["type"] for e in evs] == ["message_start", "content_block_start", "ping", "error"]
    assert evs[-1]["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1] == {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}


async def test_stream_faults_cut_anthropic_events(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(sequence="done_missing,partial_eof,done_unterminated,malformed_event,partial_tool_eof,stream_eof")
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1]["type"] == "message_delta"  # complete, but no message_stop
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1]["type"] == "content_block_stop"  # no message_delta: the stream just ends
    raw = (await post(http, server, body(stream=True))).content
    parsed = parse_sse(raw)
    assert json.loads(parsed.events[-1].data)["type"] == "message_delta"
    assert parsed.trailing == 'event: message_stop\ndata: {"type":"message_stop"}\n'  # never dispatched
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[0] == {"type": "content_block_delta", "index": 7, "delta": None}
    evs = events((await post(http, server, body(stream=True))).content)
    assert [e["type"] for e in evs] == ["message_start", "content_block_start", "ping", "content_block_delta"]
    assert evs[1]["content_block"]["type"] == "tool_use"
    evs = events((await post(http, server, body(stream=True))).content)
    assert [e["type"] for e in evs] == ["message_start"]


async def test_behavior_header_overrides_the_script(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    resp = await post(http, mock_deepseek, body(), headers={"X-Mock-Behavior": "overloaded"})
    assert resp.status_code == 529


# -- sessions, journal: one script, both surfaces ---------------------------------------------


async def test_one_script_serves_both_surfaces_per_session(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    steps = ({"match": {"user": "weather"}, "reply": {"tool_calls": [{"name": "w", "arguments": '{"c":"P"}'}]}},
             {"match": {"tool_result": "call_fixed"}, "reply": {"content": "Sunny."}})
    a = Script.of(*steps, session="anth")
    server = await dshkit_mock_server(a, assert_all_requests_served=False)  # its 418 is the point
    server.add_script(Script.of(*steps), session="chat")
    h = {"x-api-key": KEY, "X-Mock-Session": "anth"}
    first = (await post(http, server, body("weather?", thinking={"type": "disabled"}), headers=h)).json()
    assert first["content"][0]["input"] == {"c": "P"}
    call_id = first["content"][0]["id"]
    follow = body(thinking={"type": "disabled"})
    follow["messages"] = [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": first["content"]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "22C"}]}]
    second = await post(http, server, follow, headers=h)
    # The session's second step wants a result for `call_fixed`, and this one answered another id.
    assert second.status_code == 418 and "call_fixed" in second.json()["error"]["message"]
    follow["messages"][1]["content"][0]["id"] = "call_fixed"
    follow["messages"][2]["content"][0]["tool_use_id"] = "call_fixed"
    assert (await post(http, server, follow, headers=h)).json()["content"][0]["text"] == "Sunny."
    # The other session plays the same steps on the chat surface, unaffected.
    chat = await http.post(server.url, headers={"X-Mock-Session": "chat"}, json={
        "model": "deepseek-chat", "messages": [{"role": "user", "content": "weather?"}]})
    assert chat.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"c":"P"}'
    assert [e.session for e in server.journal.messages()] == ["anth"] * 3
    assert [e.session for e in server.journal.chat()] == ["chat"]
    assert server.journal.messages()[0].body["messages"][0]["content"] == "weather?"


# -- session-log replay (chunks steps) ---------------------------------------------------------

LOGGED = [
    {"type": "reasoning-delta", "index": 0, "text": "Think"}, {"type": "reasoning-delta", "index": 0, "text": "ing."},
    {"type": "text-delta", "index": 1, "text": "Call"}, {"type": "text-delta", "index": 1, "text": "ing…"},
    {"type": "tool-call-delta", "index": 2, "id": "call_00_x", "name": "read", "argumentsDelta": '{"p":'},
    {"type": "tool-call-delta", "index": 2, "argumentsDelta": ' "a"}'},
    {"type": "usage", "usage": {"inputTokens": 30, "outputTokens": 12, "cacheReadTokens": 64}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]


async def test_chunks_step_keeps_the_logged_deltas(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"chunks": {"chunks": LOGGED}}, {"chunks": {"chunks": LOGGED}}))
    evs = events((await post(http, server, body(stream=True))).content)
    deltas = [e["delta"] for e in evs if e["type"] == "content_block_delta"]
    assert [d.get("thinking") or d.get("text") or d.get("partial_json") for d in deltas if d["type"] != "signature_delta"] \
        == ["Think", "ing.", "Call", "ing…", '{"p":', ' "a"}']
    msg = fold(evs)
    assert msg["stop_reason"] == "tool_use" and msg["content"][2]["id"] == "call_00_x"
    assert msg["usage"] == {"input_tokens": 30, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 64, "output_tokens": 12}
    got = (await post(http, server, body())).json()
    assert got["content"][2] == {"type": "tool_use", "id": "call_00_x", "name": "read", "input": {"p": "a"}}


async def test_chunks_step_failures(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    partial = LOGGED[:4]
    server = await dshkit_mock_server(Script.of(
        {"chunks": {"kind": "throw", "chunks": [], "message": "slow down", "code": "RATE_LIMIT"}},
        {"chunks": {"kind": "throw", "chunks": partial, "message": "upstream broke", "code": "SERVER"}},
        {"chunks": {"kind": "throw", "chunks": partial, "message": "closed", "code": "STREAM_CLOSED"}},
    ))
    resp = await post(http, server, body(stream=True))
    assert resp.status_code == 429 and resp.json()["error"]["type"] == "rate_limit_error"
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1] == {"type": "error", "error": {"type": "api_error", "message": "upstream broke"}}
    assert fold(evs[:-1])["content"][1]["text"] == "Calling…"
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1]["type"] == "content_block_stop" and not any(e["type"] == "message_delta" for e in evs)


# -- options: older-era model fallback, the CLI ------------------------------------------------


async def test_unknown_model_fallback_option(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(anthropic_unknown_model="flash")
    resp = await post(http, server, {**body(), "model": "gpt-4o"})
    assert resp.status_code == 200 and resp.json()["model"] == "deepseek-flash"


def test_serve_cli_prints_the_anthropic_url_and_takes_the_envelope() -> None:
    import signal

    from .cli_process import ServeProcess

    p = ServeProcess("--sequence", "rate_limit", "--anthropic-envelope", "anthropic", "--api-key", KEY)
    try:
        assert p.ready["anthropic_base_url"] == p.base_url + "/anthropic"
        with httpx.Client(timeout=2) as c:
            resp = c.post(p.ready["anthropic_base_url"] + "/v1/messages", json=body(), headers={"x-api-key": KEY})
        assert resp.status_code == 429
        got = resp.json()
        assert got["type"] == "error" and got["error"]["type"] == "rate_limit_error"
        assert got["request_id"].startswith("req_")
        code, rest = p.stop(signal.SIGINT)
        assert code == 130 and KEY not in rest
    finally:
        p.kill()


def test_docs_list_every_anthropic_quirk() -> None:
    from pathlib import Path

    from dshkit.mock_server.anthropic.render import ANTHROPIC_QUIRKS

    guide = (Path(__file__).parents[2] / "docs" / "mock_server.md").read_text(encoding="utf-8")
    assert "## The Anthropic Messages surface" in guide
    for name in ANTHROPIC_QUIRKS:
        assert f"| `{name}` |" in guide, name


# -- properties of the pure parts ------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(content=_text, reasoning=_text, args=st.lists(_text, max_size=3),
       size=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_events_fold_back_to_the_reply(content: str, reasoning: str, args: list[str], size: int, seed: int) -> None:
    reply = Reply(content=content, reasoning=reasoning,
                  tool_calls=tuple(ToolCall(name=f"t{i}", id=f"c{i}", arguments=a) for i, a in enumerate(args)))
    raw = b"".join(encode_events(reply, split=FragmentPlan.all(SplitPlan(mode="fixed", size=size)), seed=seed))
    msg = fold(events(raw))
    want = ([("thinking", reasoning)] if reasoning else []) + ([("text", content)] if content else [])
    got = [(b["type"], b.get("thinking", b.get("text"))) for b in msg["content"] if b["type"] != "tool_use"]
    assert got == want
    calls = [b for b in msg["content"] if b["type"] == "tool_use"]
    assert [(b["id"], b["name"]) for b in calls] == [(f"c{i}", f"t{i}") for i in range(len(args))]
    first_call = len(want)
    assert [msg["input_json"][first_call + i] for i in range(len(args))] == args  # byte for byte
    assert msg["stop_reason"] == ("tool_use" if args else "end_turn")


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


# -- error envelopes per status ----------------------------------------------------------------

OPENAI_STYLE = {"message", "type", "param", "code"}


def _shape(resp: httpx.Response) -> str:
    got = resp.json()
    if got.get("type") == "error" and set(got["error"]) == {"type", "message"} and "request_id" in got:
        return "anthropic"
    assert set(got) == {"error"} and set(got["error"]) == OPENAI_STYLE, got
    return "deepseek"


ENVELOPE_FAULTS = [("auth_error", 401), ("insufficient_balance", 402), ("reasoning_passback", 400),
                   ("rate_limit", 429), ("server_error", 500), ("service_unavailable", 503),
                   ("overloaded", 529)]


@pytest.mark.parametrize("mode", ["evidence", "deepseek", "anthropic"])
async def test_each_status_gets_the_envelope_the_mode_names(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, mode: str
) -> None:
    server = await dshkit_mock_server(sequence=[f for f, _ in ENVELOPE_FAULTS], anthropic_envelope=mode)
    for fault, status in ENVELOPE_FAULTS:
        resp = await post(http, server, body())
        assert resp.status_code == status
        evidence = "anthropic" if status == 429 or status >= 500 else "deepseek"
        assert _shape(resp) == (evidence if mode == "evidence" else mode), (fault, resp.text)
    # A validation 400 (not a fault) follows the mode too: DeepSeek's own body by default.
    resp = await post(http, server, {**body(), "model": "gpt-4o"})
    assert _shape(resp) == ("deepseek" if mode == "evidence" else mode)


async def test_a_5xx_carries_its_message_where_anthropic_clients_read_it(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    server = await dshkit_mock_server(Script.of({"fault": "server_error", "message": "upstream broke"}))
    resp = await post(http, server, body())
    got = resp.json()
    assert resp.status_code == 500
    assert got["type"] == "error" and got["error"] == {"type": "api_error", "message": "upstream broke"}
    assert resp.headers["request-id"] == got["request_id"]


async def test_envelope_quirks_override_the_mode_per_step(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    server = await dshkit_mock_server(Script.of(
        {"fault": "server_error", "stream": {"quirks": ["deepseek_envelope"]}},
        {"fault": "auth_error", "stream": {"quirks": ["anthropic_envelope"]}}))
    assert _shape(await post(http, server, body())) == "deepseek"
    assert _shape(await post(http, server, body())) == "anthropic"


def test_passback_wording_matches_the_recorded_bodies() -> None:
    from dshkit.mock_server.validation import PASSBACK_MESSAGE as CHAT_PASSBACK

    # The recorded DeepSeek bodies quote the field in backticks on both routes.
    assert CHAT_PASSBACK == "The `reasoning_content` in the thinking mode must be passed back to the API."
    assert PASSBACK_MESSAGE == "The `content[].thinking` in the thinking mode must be passed back to the API."
