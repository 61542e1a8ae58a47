"""The Anthropic surface mints a message id, signature and `tool_use` ids per response, and
rejects a history whose tool results cannot be matched to their calls (orphans, duplicates),
an unknown thinking type and duplicate tool names, each with a 400 on this surface."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script

from .wire import parse_sse

TOOLS_STEP = {"reply": {"reasoning": "Look both up.", "tool_calls": [
    {"name": "read", "arguments": {"p": "a"}}, {"name": "read", "arguments": {"p": "b"}}]}}


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 256,
            "messages": [{"role": "user", "content": "go"}], **extra}


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
        msg = _message(await _post(http, server, _body(stream=i % 2 == 0)))
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
    got = [_message(await _post(http, mock_deepseek, _body()))["id"] for _ in range(3)]
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
        msg = _message(await _post(http, server, _body(messages=messages)))
        messages.append({"role": "assistant", "content": msg["content"]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": "ok"}
            for b in msg["content"] if b["type"] == "tool_use"]})


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
    (_body(messages=_history(_result("toolu_1"), _result("toolu_9"))),
     "messages[2].content[1]: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"),
    # A result for a call of an earlier turn, not the previous one.
    (_body(messages=[*_history(_result("toolu_1")), {"role": "assistant", "content": "done"},
                     {"role": "user", "content": [_result("toolu_1")]}]),
     "messages[4].content[0]: unexpected `tool_use_id`"),
    # A result in the user's first turn, before any call.
    (_body(messages=[{"role": "user", "content": [_result("toolu_1")]}]), "unexpected `tool_use_id`"),
    (_body(messages=_history(_result("toolu_1"), _result("toolu_1"))),
     "messages[2].content[1]: each `tool_use` must have a single result"),
    (_body(messages=_history(_result("toolu_1"), uses=("toolu_1", "toolu_1"))),
     "messages[1].content[2]: `tool_use` ids must be unique"),
    # The same id again in a later turn.
    (_body(messages=[*_history(_result("toolu_1")), {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}]},
        {"role": "user", "content": [_result("toolu_1")]}]),
     "messages[3].content[1]: `tool_use` ids must be unique"),
    (_body(thinking={"type": "bogus"}),
     "thinking.type: unknown variant `bogus`, expected one of `enabled`, `disabled`, `adaptive`"),
    (_body(tools=[TOOL, {**TOOL, "description": "again"}]), "tools[1]: tool names must be unique"),
])
async def test_unmatched_history_and_bad_options_are_400(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, payload: dict[str, Any], needle: str
) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "unused"}}))
    resp = await _post(http, server, payload)
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error" and needle in err["message"], err
    assert server.journal.unused_steps()  # a rejected request consumes no step


@pytest.mark.parametrize("payload", [
    _body(messages=_history(_result("toolu_1"), _result("toolu_2"), uses=("toolu_1", "toolu_2"))),
    _body(thinking={"type": "enabled", "budget_tokens": 1024}),
    _body(thinking={"type": "adaptive"}),
    _body(tools=[TOOL, {**TOOL, "name": "write"}]),
])
async def test_matched_history_and_known_options_are_served(
    mock_deepseek: MockServer, http: httpx.AsyncClient, payload: dict[str, Any]
) -> None:
    assert (await _post(http, mock_deepseek, payload)).status_code == 200


async def test_a_repeated_logged_call_gets_a_new_message_id(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    logged = [{"type": "reasoning-delta", "index": 0, "text": "Think."},
              {"type": "text-delta", "index": 1, "text": "Done."},
              {"type": "finish", "reason": {"kind": "stop"}}]
    script = Script.of({"chunks": {"chunks": logged}}).model_copy(update={"repeat_last": True})
    server = await dshkit_mock_server(script)
    got = [_message(await _post(http, server, _body(stream=i % 2 == 0))) for i in range(3)]
    assert len({m["id"] for m in got}) == 3
    assert len({m["content"][0]["signature"] for m in got}) == 3
