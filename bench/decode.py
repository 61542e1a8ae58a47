"""Decode throughput: dshkit's SSE decode + translate + assemble against the openai SDK and
against the bare limit, on one generated DeepSeek stream of more than 10,000 chunks.

- dshkit: `FastStreamDecoder` (the adapter's default decoder) fed 64 KiB reads, every chunk
  folded by `BlockAssembler`, then the assembled message (the path the adapter takes, minus the
  socket). The plain `StreamDecoder` (the reference, no fast paths) runs the same way, so the last
  line also says what the fast paths buy.
- openai: `OpenAI(http_client=httpx2.Client(transport=httpx2.MockTransport(...)))` serving the
  same bytes; iterate `chat.completions.create(stream=True)` and accumulate content, reasoning
  and tool-call arguments by index, as a user of the SDK would.
- limit: split the body into lines and `orjson.loads` every `data:` payload, nothing else (the
  fastest general-purpose parser's cost of just reading the JSON). msgspec's untyped decoder,
  which dshkit uses, and `json.loads` run the same split as references, so the choice of parser
  can be checked on this workload.

The same three contenders run on DeepSeek's second wire, the Anthropic Messages surface: one
generated stream of more than 10,000 events (thinking deltas, a signature, text deltas, tool_use
blocks with `input_json_delta` fragments, `event:`-framed), decoded by
`dshkit.harness.providers.anthropic.FastStreamDecoder` + `BlockAssembler`, by the official `anthropic` SDK
(`messages.create(stream=True)` over an `httpx2.MockTransport`, accumulating by block index), and
by the same bare limit (split + `orjson.loads` of every `data:` payload).

Each contender runs several times, interleaved with the others, and its best CPU time counts.
Before timing, the dshkit decoder's assembled result (blocks, usage, finish reason, response
ids) is checked against a plain reading of the same bytes: every SSE event decoded, every
payload parsed whole by `json.loads` and translated, with none of the decoder's fast paths. Prints the ratios, and as the very
last line one JSON object `{"vs_openai", "vs_limit", "plain_vs_limit", "fast_vs_plain",
"anthropic_vs_sdk", "anthropic_vs_limit", "msgspec_vs_orjson", "json_vs_orjson"}` (ratios of
throughput: dshkit/SDK and dshkit/limit, per wire; `plain_vs_limit` is the plain decoder against
the same limit and `fast_vs_plain` the fast decoder against the plain one, chat wire;
`anthropic_vs_sdk` is null when the `anthropic` SDK is not installed; the last two compare the
split-and-parse loop with msgspec and with `json.loads` against the orjson limit, chat wire). Run: `python bench/decode.py` (about 20 s; needs orjson, from the `test` extra).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec
import orjson

from dshkit.harness.llm import BlockAssembler, ModelSource, ReasoningBlock, TextBlock
from dshkit.harness.providers import anthropic as an
from dshkit.harness.providers.openai_chat import FastStreamDecoder, StreamDecoder, Translator
from dshkit.harness.providers.sse import SSEDecoder

READ = 64 * 1024
ID = "5d1c3a52-8f0e-4b8e-9a53-0c1e2f7b6a11"
HEAD = (
    '{"id":"' + ID + '","object":"chat.completion.chunk","created":1764600000,'
    '"model":"deepseek-v4-flash","system_fingerprint":"a26a7955944dc5c60445bff77fac9c8e",'
    '"choices":[{"index":0,"delta":'
)
TAIL_OPEN = ',"logprobs":null,"finish_reason":null}],"usage":null}'
WORDS = ["the", "user", "wants", "to", "know", "what", "the", "project", "does", "so", "I", "should", "read", "README.md", "first", "and", "then", "answer", "with", "a", "short", "summary", "项目", "说明", "🙂", "of", "its", "main", "features", "and", "how", "to", "run", "it"]


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
    tail = TAIL_OPEN
    if finish is not None or usage is not None:
        tail = (
            ',"logprobs":null,"finish_reason":' + json.dumps(finish) + "}],"
            '"usage":' + json.dumps(usage) + "}"
        )
    return "data: " + HEAD + json.dumps(delta, ensure_ascii=False) + tail + "\n\n"


def build_stream(reasoning: int = 4000, text: int = 4000, calls: int = 4, fragments: int = 600) -> tuple[bytes, int]:
    """A V4 thinking-mode stream: reasoning deltas, text deltas, then `calls` tool calls whose
    arguments arrive in `fragments` pieces each. Returns the body and its chunk count."""
    rng = random.Random(7)
    parts = [_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    for _ in range(reasoning):
        parts.append(_chunk({"content": None, "reasoning_content": " " + rng.choice(WORDS)}))
    for _ in range(text):
        parts.append(_chunk({"content": " " + rng.choice(WORDS), "reasoning_content": None}))
    for i in range(calls):
        parts.append(
            _chunk({"tool_calls": [{"index": i, "id": f"call_{i:02d}_abcdefghijklmnopqrstuvwx",
                                    "type": "function",
                                    "function": {"name": "read", "arguments": ""}}]})
        )
        args = json.dumps({"file_path": "README.md", "lines": [rng.choice(WORDS) for _ in range(fragments)]})
        step = max(1, len(args) // fragments)
        for start in range(0, len(args), step):
            parts.append(
                _chunk({"tool_calls": [{"index": i, "function": {"arguments": args[start:start + step]}}]})
            )
    usage = {
        "prompt_tokens": 412, "completion_tokens": 9000, "total_tokens": 9412,
        "prompt_tokens_details": {"cached_tokens": 384},
        "completion_tokens_details": {"reasoning_tokens": 4000},
        "prompt_cache_hit_tokens": 384, "prompt_cache_miss_tokens": 28,
    }
    parts.append(_chunk({"content": "", "reasoning_content": None}, "tool_calls", usage))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode("utf-8"), len(parts) - 1


def _event(event: dict[str, Any]) -> str:
    return "event: " + event["type"] + "\ndata: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n\n"


def build_anthropic_stream(
    reasoning: int = 4000, text: int = 4000, calls: int = 4, fragments: int = 600
) -> tuple[bytes, int]:
    """The Anthropic-surface twin of `build_stream`, as DeepSeek's `/anthropic` route sends it
    (UUID id, thinking start without a signature, one `signature_delta`). Returns the body and
    its event count."""
    rng = random.Random(7)
    usage = {"input_tokens": 28, "cache_read_input_tokens": 384, "output_tokens": 1}
    parts = [_event({"type": "message_start", "message": {
        "id": ID, "type": "message", "role": "assistant", "model": "deepseek-v4-flash", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    parts.append(_event({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}))
    parts.append(_event({"type": "ping"}))
    for _ in range(reasoning):
        delta = {"type": "thinking_delta", "thinking": " " + rng.choice(WORDS)}
        parts.append(_event({"type": "content_block_delta", "index": 0, "delta": delta}))
    parts.append(_event({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": ID}}))
    parts.append(_event({"type": "content_block_stop", "index": 0}))
    parts.append(_event({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}))
    for _ in range(text):
        delta = {"type": "text_delta", "text": " " + rng.choice(WORDS)}
        parts.append(_event({"type": "content_block_delta", "index": 1, "delta": delta}))
    parts.append(_event({"type": "content_block_stop", "index": 1}))
    for i in range(calls):
        index = 2 + i
        block = {"type": "tool_use", "id": f"call_{i:02d}_abcdefghijklmnopqrstuvwx", "name": "read", "input": {}}
        parts.append(_event({"type": "content_block_start", "index": index, "content_block": block}))
        args = json.dumps({"file_path": "README.md", "lines": [rng.choice(WORDS) for _ in range(fragments)]})
        step = max(1, len(args) // fragments)
        for start in range(0, len(args), step):
            delta = {"type": "input_json_delta", "partial_json": args[start:start + step]}
            parts.append(_event({"type": "content_block_delta", "index": index, "delta": delta}))
        parts.append(_event({"type": "content_block_stop", "index": index}))
    final = {"input_tokens": 28, "cache_read_input_tokens": 384, "output_tokens": 9000}
    parts.append(_event({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": final}))
    parts.append(_event({"type": "message_stop"}))
    return "".join(parts).encode("utf-8"), len(parts)


# --- contenders --------------------------------------------------------------------------------


def run_dshkit(body: bytes, make: Callable[[], StreamDecoder] = FastStreamDecoder) -> tuple[str, str, list[str]]:
    decoder = make()
    assembler = BlockAssembler()
    feed = assembler.feed
    for start in range(0, len(body), READ):
        for chunk in decoder.feed(body[start:start + READ]):
            feed(chunk)
    for chunk in decoder.close():
        feed(chunk)
    message = assembler.message(ModelSource(provider="deepseek", model="deepseek-v4-flash"))
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    reasoning = "".join(b.text for b in message.content if isinstance(b, ReasoningBlock))
    return text, reasoning, [c.arguments for c in message.tool_calls]


def assembled(chunks: list[Any]) -> tuple[Any, ...]:
    """Everything the assembler makes of a call: blocks, usage, finish reason and the response
    ids (finish meta)."""
    assembler = BlockAssembler().feed_all(chunks)
    return assembler.blocks(), assembler.usage, assembler.finish_reason, assembler.meta


def decoded(body: bytes) -> list[Any]:
    """`FastStreamDecoder`'s chunks for `body`, fed in `READ`-sized reads as the adapter gets them."""
    decoder = FastStreamDecoder()
    out: list[Any] = []
    for start in range(0, len(body), READ):
        out += decoder.feed(body[start:start + READ])
    return out + decoder.close()


def reference(body: bytes) -> list[Any]:
    """The same stream read the plain way, with none of the decoder's fast paths: every SSE
    event decoded, every payload parsed whole by `json.loads` and translated."""
    sse, translator = SSEDecoder(), Translator()
    out: list[Any] = []
    for event in sse.feed(body):
        if not hasattr(event, "data") or translator.finished:
            continue
        if event.data == "[DONE]":
            return out + translator.end(done=True)
        translator.feed_into(json.loads(event.data), out)
    return out + translator.end(done=False)


def run_dshkit_anthropic(body: bytes) -> tuple[str, str, list[str]]:
    decoder = an.FastStreamDecoder()
    assembler = BlockAssembler()
    feed = assembler.feed
    for start in range(0, len(body), READ):
        for chunk in decoder.feed(body[start:start + READ]):
            feed(chunk)
    for chunk in decoder.close():
        feed(chunk)
    message = assembler.message(ModelSource(provider="deepseek", model="deepseek-v4-flash"))
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    reasoning = "".join(b.text for b in message.content if isinstance(b, ReasoningBlock))
    return text, reasoning, [c.arguments for c in message.tool_calls]


def make_anthropic(body: bytes) -> Callable[[], tuple[str, str, list[str]]] | None:
    """The official SDK over the same bytes, accumulating text, thinking and tool JSON by block
    index as its users do with raw events; None when the SDK is not installed."""
    try:
        import anthropic
        import httpx2
    except ImportError:
        return None

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.Anthropic(
        api_key="sk-bench",
        base_url="http://bench.invalid/anthropic",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )

    def run() -> tuple[str, str, list[str]]:
        stream = client.messages.create(
            model="deepseek-v4-flash", max_tokens=32768, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[str]] = {}
        for event in stream:
            if event.type == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                elif delta.type == "thinking_delta":
                    reasoning.append(delta.thinking)
                elif delta.type == "input_json_delta":
                    calls.setdefault(event.index, []).append(delta.partial_json)
        return "".join(text), "".join(reasoning), ["".join(calls[i]) for i in sorted(calls)]

    return run


def run_limit(body: bytes, loads: Callable[[bytes], Any] = orjson.loads) -> int:
    """The bare limit: split into lines, parse every `data:` payload, keep nothing."""
    n = 0
    for line in body.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            loads(line[6:])
            n += 1
    return n


def make_openai(body: bytes) -> Callable[[], tuple[str, str, list[str]]]:
    import httpx2
    import openai

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.OpenAI(
        api_key="sk-bench",
        base_url="http://bench.invalid/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )

    def run() -> tuple[str, str, list[str]]:
        stream = client.chat.completions.create(
            model="deepseek-v4-flash", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[str]] = {}
        for chunk in stream:
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                extra = delta.model_extra or {}
                if extra.get("reasoning_content"):
                    reasoning.append(extra["reasoning_content"])
                for call in delta.tool_calls or ():
                    if call.function is not None and call.function.arguments:
                        calls.setdefault(call.index, []).append(call.function.arguments)
        return "".join(text), "".join(reasoning), ["".join(calls[i]) for i in sorted(calls)]

    return run


def timed(fn: Callable[[], Any]) -> float:
    """CPU seconds `fn` takes. Every contender is single-threaded and CPU-bound, so this is
    its cost, and time spent waiting for a core while other work runs is not counted."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> int:
    body, chunks = build_stream()
    ours = run_dshkit(body)
    if run_dshkit(body, StreamDecoder) != ours:
        print("dshkit's fast and plain decoders disagree on the assembled result", file=sys.stderr)
        return 1
    sdk = make_openai(body)
    if sdk() != ours:
        print("openai SDK and dshkit disagree on the assembled result", file=sys.stderr)
        return 1
    assert run_limit(body) == chunks
    if assembled(decoded(body)) != assembled(reference(body)):
        print("dshkit's fast paths and the plain reading disagree (blocks, usage, finish or ids)", file=sys.stderr)
        return 1
    # Interleave the contenders so a busy machine slows all of them alike; keep each best.
    msgspec_loads = msgspec.json.Decoder().decode
    t_ours = t_plain = t_limit = t_sdk = t_msgspec = t_json = float("inf")
    for _ in range(4):
        t_sdk = min(t_sdk, timed(sdk))
        for _ in range(4):
            t_ours = min(t_ours, timed(lambda: run_dshkit(body)))
            t_plain = min(t_plain, timed(lambda: run_dshkit(body, StreamDecoder)))
            t_limit = min(t_limit, timed(lambda: run_limit(body)))
            t_msgspec = min(t_msgspec, timed(lambda: run_limit(body, msgspec_loads)))
            t_json = min(t_json, timed(lambda: run_limit(body, json.loads)))
    def rate(t: float) -> float:
        return chunks / t

    print(f"stream: {chunks} chunks, {len(body) / 1e6:.2f} MB")
    print(f"dshkit (SSE + translate + assemble): {rate(t_ours):12,.0f} chunks/s  {t_ours * 1e3:8.1f} ms")
    print(f"dshkit plain path (no fast paths):   {rate(t_plain):12,.0f} chunks/s  {t_plain * 1e3:8.1f} ms")
    print(f"bare limit (split + orjson.loads):   {rate(t_limit):12,.0f} chunks/s  {t_limit * 1e3:8.1f} ms")
    print(f"split + msgspec (untyped decode):    {rate(t_msgspec):12,.0f} chunks/s  {t_msgspec * 1e3:8.1f} ms")
    print(f"split + json.loads:                  {rate(t_json):12,.0f} chunks/s  {t_json * 1e3:8.1f} ms")
    print(f"openai SDK (stream + accumulate):    {rate(t_sdk):12,.0f} chunks/s  {t_sdk * 1e3:8.1f} ms")
    vs_openai = t_sdk / t_ours
    vs_limit = t_limit / t_ours
    print(f"dshkit vs openai SDK: {vs_openai:.1f}x (goal >= 20x)")
    print(f"dshkit vs bare limit: {vs_limit:.2f} (goal >= 0.8)")
    an_ratios = bench_anthropic()
    if an_ratios is None:
        return 1
    an_vs_sdk, an_vs_limit = an_ratios
    print(json.dumps({
        "vs_openai": round(vs_openai, 2),
        "vs_limit": round(vs_limit, 3),
        "plain_vs_limit": round(t_limit / t_plain, 3),
        "fast_vs_plain": round(t_plain / t_ours, 2),
        "anthropic_vs_sdk": None if an_vs_sdk is None else round(an_vs_sdk, 2),
        "anthropic_vs_limit": round(an_vs_limit, 3),
        "msgspec_vs_orjson": round(t_limit / t_msgspec, 3),
        "json_vs_orjson": round(t_limit / t_json, 3),
    }))
    return 0


def bench_anthropic() -> tuple[float | None, float] | None:
    """The Anthropic-surface figures: (dshkit/SDK, dshkit/limit) throughput ratios; None when
    the contenders disagree on the assembled result."""
    body, events = build_anthropic_stream()
    ours = run_dshkit_anthropic(body)
    sdk = make_anthropic(body)
    if sdk is not None and sdk() != ours:
        print("anthropic SDK and dshkit disagree on the assembled result", file=sys.stderr)
        return None
    assert run_limit(body) == events
    t_ours = t_limit = t_sdk = float("inf")
    for _ in range(4):
        if sdk is not None:
            t_sdk = min(t_sdk, timed(sdk))
        for _ in range(4):
            t_ours = min(t_ours, timed(lambda: run_dshkit_anthropic(body)))
            t_limit = min(t_limit, timed(lambda: run_limit(body)))
    print(f"anthropic stream: {events} events, {len(body) / 1e6:.2f} MB")
    print(f"dshkit (SSE + translate + assemble): {events / t_ours:12,.0f} events/s  {t_ours * 1e3:8.1f} ms")
    print(f"bare limit (split + orjson.loads):   {events / t_limit:12,.0f} events/s  {t_limit * 1e3:8.1f} ms")
    vs_sdk = None
    if sdk is not None:
        print(f"anthropic SDK (stream + accumulate): {events / t_sdk:12,.0f} events/s  {t_sdk * 1e3:8.1f} ms")
        vs_sdk = t_sdk / t_ours
        print(f"dshkit vs anthropic SDK: {vs_sdk:.1f}x")
    vs_limit = t_limit / t_ours
    print(f"dshkit vs bare limit (anthropic): {vs_limit:.2f} (same orjson limit as on chat)")
    return vs_sdk, vs_limit


if __name__ == "__main__":
    sys.exit(main())
