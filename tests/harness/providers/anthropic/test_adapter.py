"""AnthropicAdapter over real HTTP (loopback aiohttp server serving raw bytes): the request it
sends (path, auth headers, body), every corpus stream served as live bytes (gzip too), error
bodies and statuses (400 in DeepSeek's envelope, 401, 529 overloaded with Retry-After), a reset
mid-stream, and cancellation by signal."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from dshkit.harness.llm import (
    Adapter,
    BlockAssembler,
    ErrorCode,
    Finish,
    GenerateOptions,
    StreamChunk,
    TextBlock,
    UserMessage,
)
from dshkit.harness.llm.retry import is_retryable
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic.decoder import StreamDecoder
from dshkit.harness.providers.anthropic.translate import Translator

from ..conftest import RawServer, body, pieces
from .conftest import load_capture
from .test_corpus import STREAMS, _ids, check_blocks
from .wire import TEXT_TURN, TOOL_TURN

KEY = "sk-test-anthropic"


def options(**kw: Any) -> GenerateOptions:
    base: dict[str, Any] = {"provider": "deepseek", "model": "deepseek-v4-flash", "messages": [UserMessage.text("hi")], "system": "Be brief."}
    base.update(kw)
    return GenerateOptions(**base)


async def run(url: str, opts: GenerateOptions | None = None, **kw: Any) -> list[StreamChunk]:
    async with AnthropicAdapter(url, api_key=KEY, **kw) as adapter:
        return [c async for c in adapter.stream(opts or options())]


def finish_of(chunks: list[StreamChunk]) -> Finish:
    assert isinstance(chunks[-1], Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return chunks[-1]


def test_is_an_adapter() -> None:
    assert isinstance(AnthropicAdapter("http://127.0.0.1:9", api_key=KEY), Adapter)


async def test_request_path_headers_and_body(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(TOOL_TURN))
    chunks = await run(url + "/anthropic", options(session_id="s-1"))
    assert finish_of(chunks).reason.kind == "tool-calls"
    sent = raw_server.requests[0]
    assert sent.path == "/anthropic/v1/messages"  # AN1
    assert sent.headers["x-api-key"] == KEY and "authorization" not in sent.headers
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["x-deepseek-harness-session-id"] == "s-1"
    sent_body = json.loads(sent.body)
    assert (sent_body["model"], sent_body["stream"], sent_body["system"]) == ("deepseek-v4-flash", True, "Be brief.")


async def test_an_injected_decoder_translates_every_response(raw_server: RawServer) -> None:
    """`decoder=` swaps the translation for one adapter: a decoder per response, from the factory."""

    class Shouting(Translator):
        __slots__ = ()

        def feed_into(self, event: Any, out: list[StreamChunk]) -> None:
            delta = event.get("delta") if isinstance(event, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                event = {**event, "delta": {**delta, "text": delta["text"].upper()}}
            super().feed_into(event, out)

    made: list[StreamDecoder] = []

    def factory() -> StreamDecoder:
        made.append(StreamDecoder(Shouting()))
        return made[-1]

    url = await raw_server.serve(body(TEXT_TURN))
    for _ in range(2):
        chunks = await run(url, decoder=factory)
        assert finish_of(chunks).reason.kind == "stop"
        assert BlockAssembler().feed_all(chunks).blocks() == [TextBlock(text="IT IS A TOOLKIT.")]
    assert len(made) == 2 and made[0] is not made[1] and all(d.finished for d in made)


async def test_bearer_auth(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(TEXT_TURN))
    await run(url, auth="bearer")
    assert raw_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in raw_server.requests[0].headers


@pytest.mark.parametrize("sidecar", _ids(STREAMS))
async def test_corpus_stream_over_http(raw_server: RawServer, sidecar: Path) -> None:
    meta, data = load_capture(sidecar)
    parts = [data[i : i + 7] for i in range(0, len(data), 7)]  # many small writes
    url = await raw_server.serve(pieces(parts, headers={"Content-Type": "text/event-stream; charset=utf-8", "request-id": "req_1"}))
    chunks = await run(url)
    check_blocks(chunks, meta["expected"])
    finish = finish_of(chunks)
    assert finish.meta is not None and finish.meta.request_id == "req_1"


async def test_gzip_body_is_decoded(raw_server: RawServer, real_anthropic: Path) -> None:
    """AN46: an19 and an07 were recorded gzip-encoded."""
    meta, data = load_capture(real_anthropic / "an19-haiku45-thinking-signature-gzip.expected.json")
    url = await raw_server.serve(body(gzip.compress(data), headers={"Content-Encoding": "gzip"}))
    chunks = await run(url)
    check_blocks(chunks, meta["expected"])


async def test_deepseek_400_thinking_not_passed_back(raw_server: RawServer, real_anthropic: Path) -> None:
    """ds01: DeepSeek's OpenAI-style envelope on the /anthropic route (AN65/AN66)."""
    data = (real_anthropic / "ds01-deepseek-anthropic-400-thinking-not-passed-back.error.json").read_bytes()
    url = await raw_server.serve(body(data, status=400, content_type="application/json"))
    failure = finish_of(await run(url)).reason.failure
    assert failure is not None and failure.code == ErrorCode.INVALID_REQUEST and failure.status == 400
    assert "must be passed back" in failure.message
    assert failure.provider_error is not None and failure.provider_error.type == "invalid_request_error"


async def test_529_overloaded_is_retryable_server_failure(raw_server: RawServer) -> None:
    envelope = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_9"}
    url = await raw_server.serve(body(json.dumps(envelope).encode(), status=529, headers={"Retry-After": "3"}, content_type="application/json"))
    failure = finish_of(await run(url)).reason.failure
    assert failure is not None
    assert (failure.code, failure.status, failure.message, failure.request_id) == (ErrorCode.SERVER, 529, "Overloaded", "req_9")
    assert failure.provider_retry_after_ms == 3000.0
    assert is_retryable(failure)


async def test_401_is_auth(raw_server: RawServer) -> None:
    envelope = {"error": {"message": "Authentication Fails", "type": "authentication_error", "param": None, "code": "invalid_api_key"}}
    url = await raw_server.serve(body(json.dumps(envelope).encode(), status=401, content_type="application/json"))
    failure = finish_of(await run(url)).reason.failure
    assert failure is not None and failure.code == ErrorCode.AUTH and not is_retryable(failure)


async def test_reset_mid_stream_is_transport_failure_keeping_partial(raw_server: RawServer) -> None:
    head = TEXT_TURN[: TEXT_TURN.index(b"event: content_block_stop")]

    async def reset(request: web.Request, response: web.StreamResponse) -> None:
        assert request.transport is not None
        request.transport.abort()

    url = await raw_server.serve(pieces([head], then=reset))
    chunks = await run(url)
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code in (ErrorCode.TRANSPORT, ErrorCode.STREAM_CLOSED)
    assert [b.text for b in BlockAssembler().feed_all(chunks).interrupted_blocks()] == ["It is a toolkit."]  # type: ignore[union-attr]


async def test_signal_aborts_a_parked_stream(raw_server: RawServer) -> None:
    head = TEXT_TURN[: TEXT_TURN.index(b"event: content_block_stop")]
    reached = asyncio.Event()

    async def park(request: web.Request, response: web.StreamResponse) -> None:
        reached.set()
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([head], then=park))
    signal = asyncio.Event()
    async with AnthropicAdapter(url, api_key=KEY) as adapter:
        chunks: list[StreamChunk] = []
        async for chunk in adapter.stream(options(signal=signal)):
            chunks.append(chunk)
            if chunk.type == "text-delta" and chunk.text == "a toolkit.":  # type: ignore[union-attr]
                await reached.wait()
                signal.set()
    finish = finish_of(chunks)
    assert finish.reason.kind == "aborted"


async def test_missing_key_is_an_error_finish() -> None:
    async with AnthropicAdapter("http://127.0.0.1:9", api_key="") as adapter:
        chunks = [c async for c in adapter.stream(options())]
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code == ErrorCode.MISSING_CREDENTIAL


async def test_task_cancel_reraises_and_closes_the_response(raw_server: RawServer) -> None:
    head = TEXT_TURN[: TEXT_TURN.index(b"event: content_block_stop")]
    seen = asyncio.Event()

    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([head], then=park))
    adapter = AnthropicAdapter(url, api_key=KEY)
    got: list[StreamChunk] = []

    async def consume() -> None:
        async for chunk in adapter.stream(options()):
            got.append(chunk)
            if chunk.type == "text-delta":
                seen.set()

    task = asyncio.ensure_future(consume())
    await seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(isinstance(c, Finish) for c in got)
    await adapter.aclose()


async def test_empty_body_and_refused_connection(raw_server: RawServer) -> None:
    url = await raw_server.serve(body(b""))
    failure = finish_of(await run(url)).reason.failure
    assert failure is not None and failure.code == ErrorCode.EMPTY_RESPONSE
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    failure = finish_of(await run(f"http://127.0.0.1:{port}")).reason.failure
    assert failure is not None and failure.code == ErrorCode.TRANSPORT
