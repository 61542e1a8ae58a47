"""The one stream life cycle (`dshkit.harness.providers.stream`), as each of the four adapters
runs it over loopback: the two on httpx and the two on the official SDKs read different items
(body bytes, SDK events) but end the same way: the request id stamped on the finish, an
`aborted` finish when the signal is set, EMPTY_RESPONSE for an empty body, a mid-stream cut as an
error finish, and a cancelled consumer's `CancelledError` propagating with the response closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from dshkit.harness.llm import Adapter, ErrorCode, Finish, GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_compat import OpenAICompatAdapter

from .anthropic import wire as an
from .conftest import RawServer, body, pieces
from .openai_chat import wire as chat

KEY = "sk-test-0123"


@dataclass(frozen=True)
class Wire:
    """One adapter and the bodies its wire speaks."""

    make: Callable[[str], Adapter]
    whole: bytes
    """A complete answer whose one text delta is `hi`."""
    opening: bytes
    """The start of an answer, up to and including that delta."""


CHAT_OPENING = chat.sse(chat.chunk({"role": "assistant", "content": "hi"}), done=False)
CHAT_WHOLE = CHAT_OPENING + chat.sse(chat.chunk({}, "stop"))
AN_OPENING = an.sse(an.start(), an.block_start(0, {"type": "text", "text": ""}), an.delta(0, "text_delta", text="hi"))
AN_WHOLE = AN_OPENING + an.sse(an.stop(0), an.message_delta("end_turn"), an.MESSAGE_STOP)

WIRES = {
    "DeepSeekAdapter": Wire(lambda url: DeepSeekAdapter(url, api_key=KEY), CHAT_WHOLE, CHAT_OPENING),
    "OpenAICompatAdapter": Wire(lambda url: OpenAICompatAdapter(url, KEY), CHAT_WHOLE, CHAT_OPENING),
    "AnthropicAdapter": Wire(lambda url: AnthropicAdapter(url, api_key=KEY), AN_WHOLE, AN_OPENING),
    "AnthropicSDKAdapter": Wire(lambda url: AnthropicSDKAdapter(url, KEY), AN_WHOLE, AN_OPENING),
}
every_adapter = pytest.mark.parametrize("wire", list(WIRES.values()), ids=list(WIRES))


def options(**kw: Any) -> GenerateOptions:
    return GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),), **kw)


async def run(adapter: Adapter, opts: GenerateOptions | None = None) -> list[StreamChunk]:
    try:
        return [c async for c in adapter.stream(opts or options())]
    finally:
        await adapter.aclose()


def finish_of(chunks: list[StreamChunk]) -> Finish:
    assert [type(c) for c in chunks].count(Finish) == 1 and isinstance(chunks[-1], Finish), chunks
    return chunks[-1]


@every_adapter
async def test_the_request_id_is_stamped_on_a_successful_finish(wire: Wire, raw_server: RawServer) -> None:
    url = await raw_server.serve(body(wire.whole, headers={"x-request-id": "req-7"}))
    finish = finish_of(await run(wire.make(url)))
    assert finish.reason.kind == "stop" and finish.meta is not None and finish.meta.request_id == "req-7"


@every_adapter
async def test_a_stream_cut_mid_way_is_an_error_finish_with_the_request_id(wire: Wire, raw_server: RawServer) -> None:
    async def cut(request: web.Request, response: web.StreamResponse) -> None:
        assert request.transport is not None
        request.transport.abort()

    url = await raw_server.serve(pieces([wire.opening], headers={"x-request-id": "req-8"}, then=cut))
    chunks = await run(wire.make(url))
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["hi"]
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code in (ErrorCode.TRANSPORT, ErrorCode.STREAM_CLOSED), failure
    assert failure.request_id == "req-8"


@every_adapter
async def test_an_empty_body_is_an_empty_response(wire: Wire, raw_server: RawServer) -> None:
    url = await raw_server.serve(body(b""))
    failure = finish_of(await run(wire.make(url))).reason.failure
    assert failure is not None and failure.code == ErrorCode.EMPTY_RESPONSE


@every_adapter
async def test_a_signal_set_before_the_call_sends_nothing(wire: Wire, raw_server: RawServer) -> None:
    url = await raw_server.serve(body(wire.whole))
    signal = asyncio.Event()
    signal.set()
    finish = finish_of(await run(wire.make(url), options(signal=signal)))
    assert finish.reason.kind == "aborted" and raw_server.requests == []


@every_adapter
async def test_a_signal_mid_stream_ends_with_an_aborted_finish(wire: Wire, raw_server: RawServer) -> None:
    async def park(request: web.Request, response: web.StreamResponse) -> None:
        await raw_server.release.wait()

    url = await raw_server.serve(pieces([wire.opening], then=park))
    signal = asyncio.Event()
    chunks: list[StreamChunk] = []
    adapter = wire.make(url)
    try:
        async for chunk in adapter.stream(options(signal=signal)):
            chunks.append(chunk)
            if isinstance(chunk, TextDelta):
                signal.set()
    finally:
        await adapter.aclose()
    finish = finish_of(chunks)
    assert finish.reason.kind == "aborted" and finish.reason.failure is not None
    assert finish.reason.failure.code == ErrorCode.ABORTED


@pytest_asyncio.fixture
async def held_open() -> AsyncIterator[tuple[str, asyncio.Event, list[bytes]]]:
    """A bare HTTP server that answers with the bytes put in its list, keeps the response open,
    and sets the event once the client has closed the connection."""
    closed = asyncio.Event()
    parts: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for part in parts:
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        await writer.drain()
        await reader.read()  # returns at EOF: the client closed the connection
        closed.set()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", closed, parts
    finally:
        server.close()
        await server.wait_closed()


@every_adapter
async def test_a_cancelled_consumer_closes_the_response_and_the_error_propagates(
    wire: Wire, held_open: tuple[str, asyncio.Event, list[bytes]]
) -> None:
    url, closed, parts = held_open
    parts.append(wire.opening)
    first = asyncio.Event()
    adapter = wire.make(url)

    async def consume() -> None:
        async for chunk in adapter.stream(options()):
            if isinstance(chunk, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    try:
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await closed.wait()  # the server saw the connection close
    finally:
        await adapter.aclose()
