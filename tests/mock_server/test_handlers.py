"""The model-call handlers: the order of their checks, request bodies and their encodings, the
`X-Mock-Behavior` override, their telemetry and what a failure inside one answers."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.chat import ChatSurface
from dshkit.mock_server.generate.reply import Reply
from dshkit.mock_server.handlers import decode_body
from dshkit.mock_server.scripts import StreamSpec
from dshkit.mock_server.surface import Body, Call
from dshkit.mock_server.validation import Rejection

from .wire import chat


def _body(text: str = "hi", **fields: Any) -> bytes:
    return json.dumps({"model": "deepseek-chat", "messages": [{"role": "user", "content": text}], **fields}).encode()


# -- bodies and their Content-Encoding -----------------------------------------------------------


def test_a_body_is_decoded_as_its_content_encoding_says() -> None:
    data = _body()
    deflated = zlib.compress(data)
    assert decode_body(data, None, 1000) == decode_body(data, " Identity ", 1000) == data
    assert decode_body(gzip.compress(data), "gzip", 1000) == decode_body(gzip.compress(data), "X-GZIP", 1000) == data
    assert decode_body(deflated, "deflate", 1000) == data
    with pytest.raises(Rejection) as e:
        decode_body(data, "br", 1000)
    assert (e.value.status, e.value.code) == (415, "unsupported_content_encoding")
    with pytest.raises(Rejection) as e:
        decode_body(data, "deflate", 1000)
    assert e.value.status == 400 and "not valid deflate data" in e.value.message
    with pytest.raises(Rejection) as e:
        decode_body(deflated[:-6], "deflate", 1000)
    assert e.value.status == 400 and "truncated" in e.value.message
    with pytest.raises(Rejection) as e:  # a bomb stops at the limit, it is never inflated whole
        decode_body(gzip.compress(b" " * 100_000), "gzip", 1000)
    assert (e.value.status, e.value.code) == (413, "request_too_large") and "after decompression" in e.value.message
    assert decode_body(gzip.compress(b" " * 1000), "gzip", 1000) == b" " * 1000  # exactly the limit passes


async def test_gzip_body_is_decoded(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server()
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, content=gzip.compress(_body("zipped")), headers={"Content-Encoding": "gzip"})
    assert r.status_code == 200 and "zipped" in r.json()["choices"][0]["message"]["content"]


# -- the order of the checks ---------------------------------------------------------------------


async def test_auth_then_size_then_validation_and_no_rejected_request_takes_a_step(http: httpx.AsyncClient) -> None:
    """Each request fails the first check it meets, in the fixed order, and consumes no step:
    the script's one step still answers the request that passes them all."""
    events: list[dict[str, Any]] = []
    async with MockServer(Script.replies("the step"), api_key="k", max_body_bytes=200, on_event=events.append) as s:
        key = {"Authorization": "Bearer k"}
        too_big_and_invalid = b'{"model": 5, "x": "' + b"x" * 300 + b'"}'
        unauthorized = await http.post(s.url, content=too_big_and_invalid)
        too_large = await http.post(s.url, content=too_big_and_invalid, headers=key)
        invalid = await http.post(s.url, content=b'{"model": 5}', headers=key)
        served = await http.post(s.url, content=_body(stream=False), headers=key)
    assert [r.status_code for r in (unauthorized, too_large, invalid, served)] == [401, 413, 400, 200]
    assert served.json()["choices"][0]["message"]["content"] == "the step"
    s.assert_consumed()
    entries = list(s.journal)
    assert [(e.behavior, e.step, e.outcome) for e in entries] == [
        ("rejected", None, "rejected")] * 3 + [("reply", 0, "completed")]
    assert entries[2].body == {"model": 5}  # a rejected body is journaled, parsed
    # Telemetry: a `request` and a `result` event for each, in order, the same seq in both.
    assert [(e["type"], e["seq"]) for e in events] == [(t, n) for n in (1, 2, 3, 4) for t in ("request", "result")]
    assert events[-1] == {
        "type": "result", "seq": 4, "session": entries[3].session, "script": "script", "step": 0,
        "behavior": "reply", "status": 200, "outcome": "completed", "writes": entries[3].write_count,
        "bytes": entries[3].bytes_sent}


async def test_behavior_header_plays_a_fault_without_consuming(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(Script.replies("scripted"))
    async with httpx.AsyncClient(timeout=1) as c:
        r = await c.post(server.url, json=chat(stream=False), headers={"X-Mock-Behavior": "server_error"})
        assert r.status_code == 500
        r = await c.post(server.url, json=chat(stream=False), headers={"X-Mock-Behavior": "nope"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "mock_unknown_fault"
        r = await c.post(server.url, json=chat(stream=False))
        assert r.json()["choices"][0]["message"]["content"] == "scripted"


# -- a failure inside the handler ----------------------------------------------------------------


class _BrokenBodies(ChatSurface):
    """Chat Completions whose non-streaming bodies fail to render (a bug in a wire's code)."""

    def body(self, call: Call, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        raise RuntimeError("rendering failed")

    def response_headers(self, trace_id: str) -> Mapping[str, str]:
        return {**super().response_headers(trace_id), "x-broken": "yes"}


@pytest.mark.parametrize("front", [True, False], ids=["front", "aiohttp"])
async def test_a_handler_that_fails_answers_500_and_the_server_serves_on(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, front: bool
) -> None:
    async with MockServer(surfaces=(_BrokenBodies(),), front=front) as server:
        failed = await http.post(server.url, json=chat(stream=False))
        streamed = await http.post(server.url, json=chat())
    assert failed.status_code == 500 and failed.headers["x-broken"] == "yes"
    assert failed.json()["error"]["code"] == "mock_internal_error"
    assert streamed.status_code == 200 and streamed.content.endswith(b"data: [DONE]\n\n")
    assert [e.outcome for e in server.journal] == ["server_error", "completed"]
    assert "mock server handler failed on POST /chat/completions" in caplog.text
