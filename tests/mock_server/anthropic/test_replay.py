"""Session-log replay on the Anthropic surface (`anthropic/replay.py`): logged chunks served as a
reply cut where the logged deltas were cut, and a logged failure as the error it was."""

from __future__ import annotations

import httpx

from dshkit.mock_server import MockServerFactory, Script

from .wire import body, events, fold, post

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


async def test_a_logged_exhausted_server_is_a_529_or_an_error_event(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    """This wire has no stop reason for a server out of resources: a logged call that ended so
    is replayed as the overloaded status before any content, an in-band error after some."""
    exhausted = {"kind": "throw", "message": "no capacity", "code": "INSUFFICIENT_SYSTEM_RESOURCE"}
    server = await dshkit_mock_server(Script.of(
        {"chunks": {**exhausted, "chunks": []}}, {"chunks": {**exhausted, "chunks": LOGGED[:4]}}))
    resp = await post(http, server, body(stream=True))
    assert resp.status_code == 529
    assert resp.json()["error"] == {"type": "overloaded_error", "message": "no capacity"}
    evs = events((await post(http, server, body(stream=True))).content)
    assert evs[-1]["type"] == "error" and evs[-1]["error"] == {"type": "overloaded_error", "message": "no capacity"}
    assert fold(evs[:-1])["content"][1]["text"] == "Calling…"
    assert not any(e["type"] in ("message_delta", "message_stop") for e in evs)
