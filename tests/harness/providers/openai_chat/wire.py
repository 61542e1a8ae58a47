"""Helpers that write Chat Completions wire chunks (DeepSeek's) and SSE bodies, for the tests of
this folder and of the adapters built on the chat base (`deepseek/`, `test_stream.py`)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from dshkit.harness.llm import BlockAssembler, StreamChunk
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder

ID = "5d1c3a52-8f0e-4b8e-9a53-0c1e2f7b6a11"
MODEL = "deepseek-v4-flash"
FP = "a26a7955944dc5c60445bff77fac9c8e"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None, **extra: Any) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice."""
    out: dict[str, Any] = {
        "id": ID,
        "object": "chat.completion.chunk",
        "created": 1764600000,
        "model": MODEL,
        "system_fingerprint": FP,
        "choices": [{"index": 0, "delta": delta if delta is not None else {}, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }
    out.update(extra)
    return out


def call(index: int, id: str | None = None, name: str | None = None, arguments: str | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index}
    if id is not None:
        entry["id"] = id
        entry["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        entry["function"] = function
    entry.update(extra)
    return entry


USAGE = {
    "prompt_tokens": 283,
    "completion_tokens": 69,
    "total_tokens": 352,
    "prompt_tokens_details": {"cached_tokens": 256},
    "completion_tokens_details": {"reasoning_tokens": 24},
    "prompt_cache_hit_tokens": 256,
    "prompt_cache_miss_tokens": 27,
}


def sse(*objects: Any, done: bool = True) -> bytes:
    """Frame objects (dicts, or raw strings used verbatim as data) as an SSE body."""
    parts = []
    for o in objects:
        data = o if isinstance(o, str) else json.dumps(o, ensure_ascii=False)
        parts.append(f"data: {data}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def decode(body: bytes, reads: list[int] | None = None) -> list[StreamChunk]:
    """Run bytes through the plain `StreamDecoder`, split at `reads` offsets (default: whole),
    and check that the adapter's `FastStreamDecoder` gives the very same chunks."""
    results = []
    for decoder in (StreamDecoder(), FastStreamDecoder()):
        out: list[StreamChunk] = []
        cuts = [0, *(reads or []), len(body)]
        for a, b in itertools.pairwise(cuts):
            out += decoder.feed(body[a:b])
        out += decoder.close()
        results.append(out)
    assert results[0] == results[1], "the fast decoder differs from the plain one"
    return results[0]


def assemble(chunks: list[StreamChunk]) -> BlockAssembler:
    return BlockAssembler().feed_all(chunks)
