"""Both httpx adapters over real HTTP against bodies nested deeper than Python can parse: a deep
`data:` payload (in the first event, and after some text) and a deep JSON error body. Each call
must end in one error finish, never raise `RecursionError` out of the stream (issue 18)."""

from __future__ import annotations

from typing import Any

import pytest

from dshkit.harness.llm import Finish, GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter

from .conftest import RawServer, body

DEPTH = 100_000
DEEP = b"[" * DEPTH + b"]" * DEPTH
DEEP_OBJECT = b'{"error":' * DEPTH + b"1" + b"}" * DEPTH
CHAT_TEXT = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":'
             b'[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}\n\n')
ANTHROPIC_START = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
                   b'"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
                   b'"output_tokens":0}}}\n\nevent: content_block_start\ndata: {"type":"content_block_start",'
                   b'"index":0,"content_block":{"type":"text","text":""}}\n\n')


def options(provider: str) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="deepseek-v4-flash", messages=[UserMessage.text("hi")])


async def run(kind: str, url: str) -> list[StreamChunk]:
    adapter: Any
    if kind == "chat":
        adapter = DeepSeekAdapter(url, api_key="sk-test-deep")
    else:
        adapter = AnthropicAdapter(url, api_key="sk-test-deep")
    async with adapter:
        return [c async for c in adapter.stream(options("deepseek"))]


def error_finish(chunks: list[StreamChunk]) -> Finish:
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0], chunks
    assert finishes[0].reason.kind == "error", finishes[0]
    return finishes[0]


@pytest.mark.parametrize("kind", ["chat", "anthropic"])
@pytest.mark.parametrize("prefix", ["first", "after-text"])
@pytest.mark.parametrize("payload", [DEEP, DEEP_OBJECT], ids=["array", "object"])
async def test_a_deep_data_line_ends_in_an_error_finish(raw_server: RawServer, kind: str, prefix: str, payload: bytes) -> None:
    head = b"" if prefix == "first" else (CHAT_TEXT if kind == "chat" else ANTHROPIC_START)
    event = b"event: content_block_delta\n" if kind == "anthropic" else b""
    url = await raw_server.serve(body(head + event + b"data: " + payload + b"\n\n"))
    finish = error_finish(await run(kind, url))
    assert finish.reason.failure is not None and finish.reason.failure.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize("kind", ["chat", "anthropic"])
@pytest.mark.parametrize("payload", [DEEP, DEEP_OBJECT], ids=["array", "object"])
async def test_a_deep_400_body_ends_in_an_error_finish(raw_server: RawServer, kind: str, payload: bytes) -> None:
    url = await raw_server.serve(body(payload, status=400, content_type="application/json"))
    finish = error_finish(await run(kind, url))
    failure = finish.reason.failure
    assert failure is not None and failure.status == 400 and failure.code == "INVALID_REQUEST"


@pytest.mark.parametrize("kind", ["chat", "anthropic"])
async def test_a_deep_error_event_ends_in_an_error_finish(raw_server: RawServer, kind: str) -> None:
    url = await raw_server.serve(body(b"event: error\ndata: " + DEEP_OBJECT + b"\n\n"))
    error_finish(await run(kind, url))


async def test_a_deep_chunk_msgspec_reads_still_decodes_or_fails_cleanly(raw_server: RawServer) -> None:
    """Nesting msgspec parses but `json` does not (a few thousand levels) inside a chunk field."""
    deep = b"[" * 3000 + b"]" * 3000
    chunk = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
             b'"delta":{"content":"a","extra":' + deep + b'},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    url = await raw_server.serve(body(CHAT_TEXT + chunk))
    chunks = await run("chat", url)
    assert isinstance(chunks[-1], Finish)
