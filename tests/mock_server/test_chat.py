"""The Chat Completions wire (`ChatSurface`), as clients see it.

Every response carries DeepSeek's gateway headers, a trace id of its own (the Anthropic surface
sends the same ones); completion ids and generated tool-call ids are unique per response and
still seeded; usage comes unless `stream_options.include_usage` is an explicit `false`; a stop
string cuts the reply before it and ends it with `stop`.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import httpx
import openai
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script

from .wire import chat, parse_sse, reassemble

#: Every answer here ends on its own: the timeout only bounds a hang, so a loaded machine never trips it.
PATIENT = 30.0
TRACE = re.compile(r"^[0-9a-f]{32}$")
GATEWAY = {"vary": "origin, access-control-request-method, access-control-request-headers",
           "access-control-allow-credentials": "true"}

TOOL_STEP = {"reply": {"tool_calls": [{"name": "read", "arguments": {"p": "a"}},
                                      {"name": "read", "arguments": {"p": "b"}}]}}


async def _ids(server: MockServer, n: int, **extra: Any) -> list[tuple[str, list[str]]]:
    """(completion id, tool-call ids) of `n` requests of one session, streamed and not."""
    out = []
    async with httpx.AsyncClient(timeout=5) as c:
        for i in range(n):
            stream = i % 2 == 0
            r = await c.post(server.url, json=chat(f"q{i}", stream=stream, model="deepseek-chat"),
                             headers={"X-Mock-Session": "s1"}, **extra)
            assert r.status_code == 200, r.text
            if stream:
                chunks = parse_sse(r.content).chunks
                calls = [tc["id"] for tc in reassemble(chunks)["tool_calls"]]
                out.append((chunks[0]["id"], calls))
            else:
                msg = r.json()["choices"][0]["message"]
                out.append((r.json()["id"], [tc["id"] for tc in msg.get("tool_calls") or []]))
    return out


async def test_default_replies_get_a_new_id_each() -> None:
    async with MockServer(seed=3) as server:
        ids = await _ids(server, 4)
    assert len({cid for cid, _ in ids}) == 4


async def test_a_repeated_step_mints_new_completion_and_call_ids() -> None:
    script = Script.of(TOOL_STEP, name="tools")
    script = script.model_copy(update={"repeat_last": True})
    async with MockServer(script, seed=3) as server:
        ids = await _ids(server, 4)
    calls = [c for _, cs in ids for c in cs]
    assert len({cid for cid, _ in ids}) == 4
    assert len(calls) == 8 and len(set(calls)) == 8
    assert all(c.startswith(("call_00_", "call_01_")) and len(c) == 32 for c in calls)
    async with MockServer(script, seed=3) as again:  # same seed, same requests: same ids
        assert await _ids(again, 4) == ids


# -- DeepSeek's gateway headers, on both wires ---------------------------------------------------


def _gateway(headers: Any) -> str:
    """The trace id, after checking the gateway's headers are there and no request id is."""
    for name, value in GATEWAY.items():
        assert headers.get(name) == value, name
    assert headers.get("x-request-id") is None and headers.get("x-deepseek-request-id") is None
    trace = headers.get("x-ds-trace-id")
    assert trace is not None and TRACE.match(trace), trace
    return str(trace)


def test_chat_responses_carry_deepseek_gateway_headers(dshkit_mock_server_sync: Any) -> None:
    server: MockServer = dshkit_mock_server_sync(
        Script.of({"reply": {"content": "hi"}}, {"reply": {"content": "hi"}}, "server_error",
                  {"fault": "rate_limit", "request_id": "req-7"}))
    traces = []
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=2) as client:
        streamed = client.chat.completions.with_raw_response.create(
            model="deepseek-v4-flash", messages=[{"role": "user", "content": "x"}], stream=True)
        traces.append(_gateway(streamed.headers))
        assert "".join(c.choices[0].delta.content or "" for c in streamed.parse() if c.choices) == "hi"
        whole = client.chat.completions.with_raw_response.create(
            model="deepseek-v4-flash", messages=[{"role": "user", "content": "x"}])
        traces.append(_gateway(whole.headers))
        with pytest.raises(openai.InternalServerError) as err:
            client.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "x"}])
        traces.append(_gateway(err.value.response.headers))
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "x"}])
        assert limited.value.response.headers["x-request-id"] == "req-7"  # only when a step asks
        with pytest.raises(openai.APIStatusError) as exhausted:
            client.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "x"}])
        assert exhausted.value.status_code == 418
        traces.append(_gateway(exhausted.value.response.headers))
        models = client.models.with_raw_response.list()
        traces.append(_gateway(models.headers))
    assert len(set(traces)) == len(traces)  # each response has its own


@pytest.mark.parametrize("envelope", ["deepseek", "anthropic"])
def test_anthropic_responses_carry_the_same_gateway_headers(dshkit_mock_server_sync: Any, envelope: str) -> None:
    server: MockServer = dshkit_mock_server_sync(
        Script.of({"reply": {"content": "hi"}}, "overloaded"), anthropic_envelope=envelope)
    with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0, timeout=2) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "x"}])
        trace = _gateway(raw.headers)
        assert raw.parse().content[-1].text == "hi"
        with pytest.raises(anthropic.APIStatusError) as err:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 529
    assert _gateway(err.value.response.headers) != trace
    if envelope == "anthropic":  # Anthropic's server names the request in the header and the body
        assert err.value.request_id is not None and err.value.request_id == err.value.body["request_id"]  # type: ignore[index]
    else:
        assert err.value.request_id is None


# -- what the request asks of the stream ---------------------------------------------------------


@pytest.mark.parametrize(
    ("stream_options", "has_usage"),
    [(None, True), ({"include_usage": True}, True), ({"include_usage": False}, False)],
    ids=["absent", "true", "false"],
)
@pytest.mark.parametrize("quirks", [[], ["usage_chunk"]], ids=["deepseek", "usage-chunk"])
async def test_include_usage_false_leaves_usage_out(
    dshkit_mock_server: MockServerFactory, stream_options: dict[str, bool] | None, has_usage: bool, quirks: list[str]
) -> None:
    # DeepSeek sends usage even when not asked (ds16); an explicit `false` is honoured.
    server = await dshkit_mock_server(Script.of({"reply": {"content": "hi"}, "stream": {"quirks": quirks}}))
    body = chat(**({"stream_options": stream_options} if stream_options is not None else {}))
    async with httpx.AsyncClient(timeout=PATIENT) as c:
        r = await c.post(server.url, json=body)
    chunks = parse_sse(r.content).chunks
    assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)
    assert any(c.get("usage") for c in chunks) is has_usage


async def test_a_stop_string_cuts_the_reply_and_finishes_it_with_stop(http: httpx.AsyncClient) -> None:
    """The content ends before the first stop string found, streamed or not, and the reply's own
    finish reason gives way to `stop`; a stop string that never occurs changes nothing."""
    step = {"reply": {"content": "one two three two", "finish_reason": "length"}}
    script = Script.of(step, step, step, name="stops")
    async with MockServer(script) as server:
        streamed = await http.post(server.url, json=chat(stop=["three", "two"], thinking={"type": "disabled"}))
        whole = await http.post(server.url, json=chat(stop="two", stream=False))
        missed = await http.post(server.url, json=chat(stop=["four"], stream=False))
    folded = reassemble(parse_sse(streamed.content).chunks)
    assert (folded["content"], folded["finish_reason"]) == ("one ", "stop")
    choice = whole.json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("one ", "stop")
    choice = missed.json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("one two three two", "length")
