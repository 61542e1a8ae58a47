"""The response headers DeepSeek's gateway sends, as the official SDKs and dshkit's adapter see them.

On both wires every response (streamed, whole, error, mock 418) carries a 32-hex-digit
`x-ds-trace-id` of its own and the gateway's CORS headers, and no `x-request-id` or
`x-deepseek-request-id` unless a fault step asks for one (docs/mock_server.md, "Response
headers", gives the evidence). Anthropic's own envelope also names the request in `request-id`.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import openai
import pytest

from dshkit.harness.llm import GenerateOptions, UserMessage
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import MockServer, MockServerFactory, Script

TRACE = re.compile(r"^[0-9a-f]{32}$")
GATEWAY = {"vary": "origin, access-control-request-method, access-control-request-headers",
           "access-control-allow-credentials": "true"}


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


async def test_dshkit_adapter_takes_the_trace_id_as_the_request_id(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(Script.of("server_error"))
    adapter = DeepSeekAdapter(server.base_url, "k")
    try:
        options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
        chunks = [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()
    failure = chunks[-1].reason.failure  # type: ignore[attr-defined]
    assert failure.code == "SERVER" and failure.request_id is not None and TRACE.match(failure.request_id)
    assert server.journal.last.status == 500
