"""The Anthropic surface (`anthropic/surface.py`) over loopback: its paths and auth, the ids it
mints per response, the error envelope and types per status, and where faults cut its events."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.anthropic.validation import PASSBACK_MESSAGE

from ..wire import parse_sse
from .wire import KEY, body, events, fold, post

# -- paths and auth --------------------------------------------------------------------------------


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


async def test_anthropic_envelope_option(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(anthropic_envelope="anthropic")
    resp = await post(http, server, {**body(), "model": "gpt-4o"})
    got = resp.json()
    assert resp.status_code == 400 and got["type"] == "error"
    assert got["error"]["type"] == "invalid_request_error" and "Model Not Exist" in got["error"]["message"]
    assert got["request_id"].startswith("req_")


# -- error envelopes per status --------------------------------------------------------------------


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


# -- faults ----------------------------------------------------------------------------------------


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


# -- ids minted per response -----------------------------------------------------------------------


TOOLS_STEP = {"reply": {"reasoning": "Look both up.", "tool_calls": [
    {"name": "read", "arguments": {"p": "a"}}, {"name": "read", "arguments": {"p": "b"}}]}}


async def _post(http: httpx.AsyncClient, server: MockServer, payload: dict[str, Any]) -> httpx.Response:
    return await http.post(server.make_url("/anthropic/v1/messages"), content=json.dumps(payload).encode(),
                           headers={"X-Mock-Session": "s1"})


def _message(resp: httpx.Response) -> dict[str, Any]:
    """The message of a streamed or whole response: id, signature, tool_use ids."""
    assert resp.status_code == 200, resp.text
    if not resp.headers["content-type"].startswith("text/event-stream"):
        return dict(resp.json())
    msg: dict[str, Any] = {}
    for e in parse_sse(resp.content).events:
        ev = json.loads(e.data)
        if ev["type"] == "message_start":
            msg = dict(ev["message"], content=[])
        elif ev["type"] == "content_block_start":
            msg["content"].append(dict(ev["content_block"]))
        elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "signature_delta":
            msg["content"][ev["index"]]["signature"] = ev["delta"]["signature"]
    return msg


async def _ids(server: MockServer, http: httpx.AsyncClient, n: int) -> list[tuple[str, str, tuple[str, ...]]]:
    out = []
    for i in range(n):
        msg = _message(await _post(http, server, body(stream=i % 2 == 0)))
        sig = next(b["signature"] for b in msg["content"] if b["type"] == "thinking")
        calls = tuple(b["id"] for b in msg["content"] if b["type"] == "tool_use")
        out.append((msg["id"], sig, calls))
    return out


@pytest.mark.parametrize("quirks", [[], ["anthropic_ids"]])
async def test_a_repeated_step_mints_new_ids_per_response(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, quirks: list[str]
) -> None:
    script = Script.of({**TOOLS_STEP, "stream": {"quirks": quirks}}).model_copy(update={"repeat_last": True})
    server = await dshkit_mock_server(script, seed=5)
    ids = await _ids(server, http, 4)
    assert len({m for m, _, _ in ids}) == 4
    assert len({s for _, s, _ in ids}) == 4
    calls = [c for _, _, cs in ids for c in cs]
    assert len(calls) == 8 and len(set(calls)) == 8
    again = await dshkit_mock_server(script, seed=5)
    assert await _ids(again, http, 4) == ids  # still a function of the seed


async def test_default_replies_get_a_new_message_id_each(mock_deepseek: MockServer, http: httpx.AsyncClient) -> None:
    got = [_message(await _post(http, mock_deepseek, body()))["id"] for _ in range(3)]
    assert len(set(got)) == 3


async def test_a_session_that_passes_history_back_is_served(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    # The same step answers twice; the second request carries the first answer back. With
    # repeated ids that history would hold two `tool_use` blocks with one id.
    script = Script.of(TOOLS_STEP).model_copy(update={"repeat_last": True})
    server = await dshkit_mock_server(script)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(3):
        msg = _message(await _post(http, server, body(messages=messages)))
        messages.append({"role": "assistant", "content": msg["content"]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": "ok"}
            for b in msg["content"] if b["type"] == "tool_use"]})


async def test_a_repeated_logged_call_gets_a_new_message_id(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    logged = [{"type": "reasoning-delta", "index": 0, "text": "Think."},
              {"type": "text-delta", "index": 1, "text": "Done."},
              {"type": "finish", "reason": {"kind": "stop"}}]
    script = Script.of({"chunks": {"chunks": logged}}).model_copy(update={"repeat_last": True})
    server = await dshkit_mock_server(script)
    got = [_message(await _post(http, server, body(stream=i % 2 == 0))) for i in range(3)]
    assert len({m["id"] for m in got}) == 3
    assert len({m["content"][0]["signature"] for m in got}) == 3
