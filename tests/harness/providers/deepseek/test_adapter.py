"""DeepSeekAdapter over real HTTP (loopback aiohttp server serving raw bytes): the request sent,
status and body mapping, Retry-After, request ids, resets, the idle watchdog, keep-alives,
cancellation by signal and by task.cancel(), refused connections, empty bodies (dsh-core.md
§3.2, §3.8; wire.md A13)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import time
from typing import Any

import httpx
import pytest
from aiohttp import web

from dshkit.harness.llm import (
    Adapter,
    BlockAssembler,
    Finish,
    GenerateOptions,
    LlmFailure,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    UserMessage,
)
from dshkit.harness.llm.chunks import ProviderError
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.llm.messages import ReasoningBlock
from dshkit.harness.llm.retry import is_retryable
from dshkit.harness.providers.deepseek import DeepSeekAdapter, DeepSeekConfig
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.serialize import encode_body, serialize
from dshkit.harness.providers.openai_chat.translate import Translator

from ..conftest import RawServer, body, pieces
from ..openai_chat.wire import USAGE, call, chunk, sse

KEY = "sk-test-0123"
SUCCESS = sse(
    chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
    chunk({"reasoning_content": "Read it first."}),
    chunk({"tool_calls": [call(0, "call_00_r", "read", "")]}),
    chunk({"tool_calls": [call(0, arguments='{"file_path":')]}),
    chunk({"tool_calls": [call(0, arguments='"README.md"}')]}),
    chunk({"content": ""}, "tool_calls", USAGE),
)


def options(**kw: Any) -> GenerateOptions:
    base: dict[str, Any] = {"provider": "deepseek", "model": "deepseek-v4-flash", "messages": [UserMessage.text("What does this project do?")], "system": "Be brief."}
    base.update(kw)
    return GenerateOptions(**base)


async def run(url: str, opts: GenerateOptions | None = None, **adapter_kw: Any) -> list[StreamChunk]:
    async with DeepSeekAdapter(url, api_key=KEY, **adapter_kw) as adapter:
        return [c async for c in adapter.stream(opts or options())]


def only_finish(chunks: list[StreamChunk]) -> Finish:
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0]
    return finishes[0]


def failure_of(chunks: list[StreamChunk]) -> LlmFailure:
    finish = only_finish(chunks)
    assert finish.reason.kind == "error" and finish.reason.failure is not None
    return finish.reason.failure


async def test_success_and_the_exact_request(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(SUCCESS, headers={"x-request-id": "req-42"}))
    opts = options(session_id="sess-9", reasoning_effort="high")
    chunks = await run(url, opts, user_id="anon")
    finish = only_finish(chunks)
    assert finish.reason.kind == "tool-calls"
    assert finish.meta is not None and finish.meta.request_id == "req-42" and not finish.meta.done_missing
    assembled = BlockAssembler().feed_all(chunks)
    assert assembled.blocks() == [ReasoningBlock(text="Read it first."), ToolCallBlock(id="call_00_r", name="read", arguments='{"file_path":"README.md"}')]

    [request] = raw_server.requests
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["x-deepseek-harness-session-id"] == "sess-9"
    assert request.headers["x-deepseek-harness-user-id"] == "anon"
    assert request.body == encode_body(serialize(opts))
    sent = json.loads(request.body)
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["stream"] is True and sent["thinking"] == {"type": "enabled"} and sent["reasoning_effort"] == "high"


async def test_an_injected_decoder_translates_every_response(raw_server: RawServer) -> None:
    """`decoder=` is how a test or a broken adapter swaps the translation: one decoder per
    response, built by the factory, and what its translator makes is what the stream yields."""

    class Shouting(Translator):
        __slots__ = ()

        def feed_delta(self, delta: dict[str, Any], out: list[StreamChunk]) -> None:
            content = delta.get("content")
            super().feed_delta({**delta, "content": content.upper()} if isinstance(content, str) else delta, out)

    made: list[StreamDecoder] = []

    def factory() -> StreamDecoder:
        made.append(StreamDecoder(Shouting()))
        return made[-1]

    url = await raw_server.serve(body(sse(chunk({"content": "quiet "}), chunk({"content": "please"}, "stop"))))
    async with DeepSeekAdapter(url, api_key=KEY, decoder=factory) as adapter:
        for _ in range(2):
            chunks = [c async for c in adapter.stream(options())]
            assert only_finish(chunks).reason.kind == "stop"
            assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="QUIET PLEASE")]
    assert len(made) == 2 and made[0] is not made[1] and all(d.finished for d in made)


async def test_base_url_path_is_kept(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(SUCCESS))
    await run(url + "/v1/")
    assert raw_server.requests[0].path == "/v1/chat/completions"


def test_adapter_protocol() -> None:
    adapter = DeepSeekAdapter("http://127.0.0.1:9", api_key=KEY)
    assert isinstance(adapter, Adapter)
    assert adapter.provider == "deepseek"


async def test_request_headers_and_url() -> None:
    adapter = DeepSeekAdapter("http://127.0.0.1:9/", api_key="  sk-test  ", user_id="anon-1")
    try:
        request = adapter.build_request(options(messages=[UserMessage.text("x")], session_id="sess-1", purpose="compaction"))
        assert str(request.url) == "http://127.0.0.1:9/chat/completions"
        assert request.method == "POST"
        h = request.headers
        assert h["authorization"] == "Bearer sk-test"
        assert h["content-type"] == "application/json"
        assert h["accept"] == "text/event-stream"
        assert h["user-agent"]
        assert h["x-deepseek-harness-user-id"] == "anon-1"
        assert h["x-deepseek-harness-session-id"] == "sess-1"
        assert h["x-deepseek-harness-compact"] == "1"
        assert json.loads(request.content) == serialize(options(messages=[UserMessage.text("x")], session_id="sess-1", purpose="compaction"))
        plain = adapter.build_request(options(messages=[UserMessage.text("x")])).headers
        assert "x-deepseek-harness-session-id" not in plain and "x-deepseek-harness-compact" not in plain
    finally:
        await adapter.aclose()


@pytest.mark.parametrize(("key", "code"), [(None, "MISSING_CREDENTIAL"), ("   ", "MISSING_CREDENTIAL"), ("sk bad", "INVALID_CREDENTIAL"), ("sk-é", "INVALID_CREDENTIAL")])
async def test_api_key_validation(key: str | None, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    adapter = DeepSeekAdapter("http://127.0.0.1:9", api_key=key)
    try:
        with pytest.raises(UsageError) as info:
            adapter.build_request(options(messages=[UserMessage.text("x")]))
        assert info.value.code == code
        chunks = [c async for c in adapter.stream(options(messages=[UserMessage.text("x")]))]
        assert len(chunks) == 1 and chunks[0].reason.failure.code == code  # type: ignore[union-attr]
    finally:
        await adapter.aclose()


def envelope(message: str, type_: str = "invalid_request_error", code: str | None = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}}).encode()


CONTEXT_MSG = (
    "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
    "(139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."
)

STATUS_CASES = [
    # status, body, headers, code, message, provider_error
    (400, envelope("Model Not Exist"), {}, "INVALID_REQUEST", "Model Not Exist", ProviderError(type="invalid_request_error", code="invalid_request_error")),
    (400, envelope(CONTEXT_MSG), {}, "CONTEXT_WINDOW_EXCEEDED", CONTEXT_MSG, ProviderError(type="invalid_request_error", code="invalid_request_error")),
    (400, envelope("Invalid max_tokens value, the valid range of max_tokens is [1, 393216]"), {}, "INVALID_REQUEST", "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]", ProviderError(type="invalid_request_error", code="invalid_request_error")),
    (401, envelope("Authentication Fails, Your api key: ****0123 is invalid", "authentication_error"), {}, "AUTH", "Authentication Fails, Your api key: ****0123 is invalid", ProviderError(type="authentication_error", code="invalid_request_error")),
    (402, envelope("Insufficient Balance", "unknown_error"), {}, "QUOTA", "Insufficient Balance", ProviderError(type="unknown_error", code="invalid_request_error")),
    (403, envelope("Forbidden", "permission_error", None), {}, "AUTH", "Forbidden", ProviderError(type="permission_error")),
    (413, b"<html>Request Entity Too Large</html>", {}, "INVALID_REQUEST", "DeepSeek API error (HTTP 413): <html>Request Entity Too Large</html>", None),
    (413, envelope(CONTEXT_MSG), {}, "INVALID_REQUEST", CONTEXT_MSG, ProviderError(type="invalid_request_error", code="invalid_request_error")),
    (422, envelope("Invalid Parameters"), {}, "INVALID_REQUEST", "Invalid Parameters", ProviderError(type="invalid_request_error", code="invalid_request_error")),
    (429, envelope("Rate limit reached for requests", "rate_limit_error", "rate_limit_exceeded"), {}, "RATE_LIMIT", "Rate limit reached for requests", ProviderError(type="rate_limit_error", code="rate_limit_exceeded")),
    (429, envelope("You exceeded your current quota", "insufficient_quota", "insufficient_quota"), {}, "QUOTA", "You exceeded your current quota", ProviderError(type="insufficient_quota", code="insufficient_quota")),
    (500, b"Internal Server Error", {}, "SERVER", "DeepSeek API error (HTTP 500): Internal Server Error", None),
    (500, b"", {}, "SERVER", "DeepSeek API error (HTTP 500)", None),
    (503, envelope("Server overloaded, please retry later", "service_unavailable_error", "server_busy"), {}, "SERVER", "Server overloaded, please retry later", ProviderError(type="service_unavailable_error", code="server_busy")),
    (503, b"{not json", {}, "SERVER", "DeepSeek API error (HTTP 503): {not json", None),
    (404, envelope("Not Found", "invalid_request_error", None), {}, "HTTP_404", "Not Found", ProviderError(type="invalid_request_error")),
]


@pytest.mark.parametrize(("status", "data", "headers", "code", "message", "provider_error"), STATUS_CASES, ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(STATUS_CASES)])
async def test_http_error_mapping(raw_server: RawServer, status: int, data: bytes, headers: dict, code: str, message: str, provider_error: ProviderError | None) -> None:
    url = await raw_server.serve(body(data, status=status, headers=headers, content_type="application/json"))
    chunks = await run(url)
    assert len(chunks) == 1
    failure = failure_of(chunks)
    assert (failure.code, failure.status, failure.message) == (code, status, message)
    assert failure.provider_error == provider_error
    assert failure.provider_retry_after_ms is None


@pytest.mark.parametrize(("status", "retryable"), [(400, False), (401, False), (402, False), (422, False), (429, True), (500, True), (503, True)])
async def test_a13_retryability(raw_server: RawServer, status: int, retryable: bool) -> None:
    url = await raw_server.serve(body(envelope("x", "t", None), status=status))
    assert is_retryable(failure_of(await run(url))) is retryable


async def test_retry_after_seconds_and_request_id(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(envelope("slow down", "rate_limit_error", None), status=429, headers={"Retry-After": "7", "x-request-id": "req-429"}))
    failure = failure_of(await run(url))
    assert (failure.code, failure.provider_retry_after_ms, failure.request_id) == ("RATE_LIMIT", 7000.0, "req-429")


async def test_retry_after_http_date(raw_server: RawServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    url = await raw_server.serve(body(envelope("slow down"), status=429, headers={"Retry-After": when, "x-deepseek-request-id": "ds-1"}))
    failure = failure_of(await run(url))
    assert failure.provider_retry_after_ms is not None and 0 < failure.provider_retry_after_ms <= 31_000
    assert failure.request_id == "ds-1"


@pytest.mark.parametrize("value", ["0", "-5", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"])
async def test_retry_after_ignored_when_not_positive_or_unreadable(raw_server: RawServer, value: str) -> None:
    url = await raw_server.serve(body(envelope("x"), status=503, headers={"Retry-After": value}))
    assert failure_of(await run(url)).provider_retry_after_ms is None


async def test_request_id_on_in_stream_failures(raw_server: RawServer) -> None:
    data = sse(chunk({"content": "partial"}), {"error": {"message": "upstream died", "type": "server_error"}}, done=False)
    url = await raw_server.serve(body(data, headers={"x-request-id": "req-mid"}))
    chunks = await run(url)
    finish = only_finish(chunks)
    assert finish.reason.failure is not None and finish.reason.failure.message == "upstream died"
    assert finish.reason.failure.request_id == "req-mid"
    assert finish.meta is not None and finish.meta.request_id == "req-mid"
    assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="partial")]


async def test_eof_before_finish_is_stream_closed(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(sse(chunk({"content": "cut"}), done=False)))
    chunks = await run(url)
    assert failure_of(chunks).code == "STREAM_CLOSED"
    assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="cut")]


async def test_eof_after_finish_is_done_missing_success(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(sse(chunk({"content": "ok"}), chunk({}, "stop"), done=False)))
    finish = only_finish(await run(url))
    assert finish.reason.kind == "stop" and finish.meta is not None and finish.meta.done_missing


async def test_empty_200_body_is_empty_response(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(b"", headers={"x-request-id": "req-e"}))
    chunks = await run(url)
    assert len(chunks) == 1 and failure_of(chunks).code == "EMPTY_RESPONSE"
    assert failure_of(chunks).request_id == "req-e"


async def test_malformed_payload_over_http(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(sse(chunk({"content": "a"}), "{oops")))
    assert failure_of(await run(url)).code == "MALFORMED_RESPONSE"


async def test_split_writes_inside_utf8_characters(raw_server: RawServer) -> None:
    data = sse(chunk({"content": "中文 🙂"}), chunk({}, "stop"))
    parts = [data[i : i + 3] for i in range(0, len(data), 3)]
    url = await raw_server.serve(pieces(parts))
    chunks = await run(url)
    assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="中文 🙂")]


# --- transport failures --------------------------------------------------------------------------


async def test_connection_reset_before_headers(raw_server: RawServer) -> None:
    async def reset(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.abort()
        return web.Response()

    url = await raw_server.serve(reset)
    chunks = await run(url)
    failure = failure_of(chunks)
    assert failure.code == "TRANSPORT" and url in failure.message
    assert failure.message.startswith("DeepSeek API request to")


async def test_connection_reset_mid_stream(raw_server: RawServer) -> None:
    async def reset(request: web.Request, response: web.StreamResponse) -> None:
        assert request.transport is not None
        request.transport.abort()

    url = await raw_server.serve(pieces([sse(chunk({"content": "half"}), done=False)], headers={"x-request-id": "req-r"}, then=reset))
    chunks = await run(url)
    failure = failure_of(chunks)
    assert failure.code == "TRANSPORT" and failure.message.startswith("DeepSeek API stream from")
    assert failure.request_id == "req-r"
    assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="half")]


async def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chunks = await run(f"http://127.0.0.1:{port}")
    failure = failure_of(chunks)
    assert failure.code == "TRANSPORT" and str(port) in failure.message


async def test_idle_watchdog_mid_stream(raw_server: RawServer) -> None:
    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([sse(chunk({"reasoning_content": "hmm"}), done=False)], then=park))
    chunks = await run(url, idle_timeout_s=0.2)
    assert failure_of(chunks).code == "TIMEOUT"
    assert BlockAssembler().feed_all(chunks).blocks() == [ReasoningBlock(text="hmm")]


async def test_idle_watchdog_before_headers(raw_server: RawServer) -> None:
    async def park(request: web.Request) -> web.StreamResponse:
        await raw_server.release.wait()
        return web.Response()

    url = await raw_server.serve(park)
    chunks = await run(url, idle_timeout_s=0.2)
    assert len(chunks) == 1 and failure_of(chunks).code == "TIMEOUT"


async def test_keep_alive_comments_keep_a_slow_stream_alive(raw_server: RawServer) -> None:
    # The stream lasts longer than the idle timeout (by the server's clock, however slowly the
    # machine runs), but a comment goes out every 50 ms: only a 1.5 s gap between two writes,
    # thirty times the pacing, could trip the watchdog, so a loaded machine does not.
    idle = 1.5

    async def slow(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        until = loop.time() + 1.2 * idle
        while loop.time() < until:
            await response.write(b": keep-alive\n\n")
            await asyncio.sleep(0.05)  # pacing the server, not synchronising the test
        await response.write(sse(chunk({"content": "late but fine"}, "stop")))
        await response.write_eof()
        return response

    url = await raw_server.serve(slow)
    chunks = await run(url, idle_timeout_s=idle)
    assert only_finish(chunks).reason.kind == "stop"
    assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="late but fine")]


# --- cancellation --------------------------------------------------------------------------------


async def test_signal_already_set() -> None:
    signal = asyncio.Event()
    signal.set()
    chunks = await run("http://127.0.0.1:9", options(signal=signal))
    finish = only_finish(chunks)
    assert finish.reason.kind == "aborted" and finish.reason.failure is not None and finish.reason.failure.code == "ABORTED"


async def test_signal_mid_stream_gives_aborted_finish(raw_server: RawServer) -> None:
    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([sse(chunk({"content": "so far"}), done=False)], then=park))
    signal = asyncio.Event()
    chunks: list[StreamChunk] = []
    async with DeepSeekAdapter(url, api_key=KEY) as adapter:
        async for c in adapter.stream(options(signal=signal)):
            chunks.append(c)
            if len(chunks) == 2:  # block-start and the first text delta
                signal.set()
    finish = only_finish(chunks)
    assert finish.reason.kind == "aborted"
    assert finish.reason.failure == LlmFailure(message="DeepSeek request aborted by caller", code="ABORTED")
    assert BlockAssembler().feed_all(chunks).interrupted_blocks() == [TextBlock(text="so far")]


async def test_signal_while_waiting_for_headers(raw_server: RawServer) -> None:
    arrived = asyncio.Event()

    async def park(request: web.Request) -> web.StreamResponse:
        arrived.set()
        await raw_server.release.wait()
        return web.Response()

    url = await raw_server.serve(park)
    signal = asyncio.Event()

    async def abort_when_arrived() -> None:
        await arrived.wait()
        signal.set()

    aborter = asyncio.create_task(abort_when_arrived())
    chunks = await run(url, options(signal=signal))
    await aborter
    assert [c.reason.kind for c in chunks if isinstance(c, Finish)] == ["aborted"] and len(chunks) == 1


class RecordingTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.responses: list[httpx.Response] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        self.responses.append(response)
        return response


async def test_task_cancel_reraises_and_closes_the_response(raw_server: RawServer) -> None:
    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([sse(chunk({"content": "x"}), done=False)], then=park))
    transport = RecordingTransport()
    first = asyncio.Event()
    seen: list[StreamChunk] = []

    async with DeepSeekAdapter(url, api_key=KEY, transport=transport) as adapter:

        async def consume() -> None:
            async for c in adapter.stream(options(signal=asyncio.Event())):
                seen.append(c)
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not any(isinstance(c, Finish) for c in seen)  # cancellation is not swallowed into a finish
        assert len(transport.responses) == 1 and transport.responses[0].is_closed


async def test_task_cancel_without_signal(raw_server: RawServer) -> None:
    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([sse(chunk({"content": "x"}), done=False)], then=park))
    transport = RecordingTransport()
    first = asyncio.Event()
    async with DeepSeekAdapter(url, api_key=KEY, transport=transport) as adapter:

        async def consume() -> None:
            async for _ in adapter.stream(options()):
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert transport.responses[0].is_closed


async def test_config_is_used(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(SUCCESS))
    await run(url, options(reasoning_effort=None), config=DeepSeekConfig(thinking="disabled", max_tokens=64))
    sent = json.loads(raw_server.requests[0].body)
    assert sent["thinking"] == {"type": "disabled"} and sent["max_tokens"] == 64
