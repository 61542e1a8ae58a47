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
`dshkit.harness.providers.anthropic.decoder.FastStreamDecoder` + `BlockAssembler`, by the official `anthropic` SDK
(`messages.create(stream=True)` over an `httpx2.MockTransport`, accumulating by block index), and
by the same bare limit (split + `orjson.loads` of every `data:` payload).

Read sizes: every decoder and limit runs with 64 KiB reads (a fast local server) and with
512-byte reads (about one event per read, as a live stream arrives). The limits pay for reads
too: each read is appended to the unfinished line of the one before and its whole lines are
split (at 64 KiB that costs next to nothing). Besides the split+orjson limit, a tighter
envelope-skipping limit (chat wire) parses only the delta of each line that repeats the
stream's envelope (id, model, fingerprint before it, the null finish after it): what a decoder
that skips the envelope could at best do.

Each contender runs several times, interleaved with the others, and its best CPU time counts.
Before timing, the dshkit decoder's assembled result (blocks, usage, finish reason, response
ids) is checked against a plain reading of the same bytes: every SSE event decoded, every
payload parsed whole by `json.loads` and translated, with none of the decoder's fast paths; and
the 512-byte reads must assemble the same result. Prints the ratios, and as the very last line
one JSON object: `vs_openai`, `vs_limit` (64 KiB), `vs_limit_512`, `vs_envelope_limit[_512]`,
`plain_vs_limit[_512]`, `fast_vs_plain`, `anthropic_vs_sdk` (null when the `anthropic` SDK is
not installed), `anthropic_vs_limit[_512]`, `msgspec_vs_orjson`, `json_vs_orjson` (ratios of
throughput, dshkit over the other), and `goals`: each goal as `{"goal", "ratio", "target",
"met"}`. Run: `python bench/decode.py` (about 40 s; needs orjson, from the `test` extra).
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

from dshkit.harness.llm import BlockAssembler, TextBlock
from dshkit.harness.llm.messages import ModelSource, ReasoningBlock
from dshkit.harness.providers.anthropic import decoder as an
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.translate import Translator
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


def run_dshkit(body: bytes, make: Callable[[], StreamDecoder] = FastStreamDecoder, read: int = READ) -> tuple[str, str, list[str]]:
    decoder = make()
    assembler = BlockAssembler()
    feed = assembler.feed
    for start in range(0, len(body), read):
        for chunk in decoder.feed(body[start:start + read]):
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


def run_dshkit_anthropic(body: bytes, read: int = READ) -> tuple[str, str, list[str]]:
    decoder = an.FastStreamDecoder()
    assembler = BlockAssembler()
    feed = assembler.feed
    for start in range(0, len(body), read):
        for chunk in decoder.feed(body[start:start + read]):
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


def run_limit(body: bytes, loads: Callable[[bytes], Any] = orjson.loads, read: int | None = None) -> int:
    """The bare limit: split into lines, parse every `data:` payload, keep nothing. With `read`,
    the body arrives in reads of that size and each read's whole lines are split (what any
    reader of a live stream pays for its read boundaries)."""
    n = 0
    if read is None:
        for line in body.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                loads(line[6:])
                n += 1
        return n
    rest = b""
    for start in range(0, len(body), read):
        buf = rest + body[start:start + read]
        end = buf.rfind(b"\n")
        if end < 0:
            rest = buf
            continue
        for line in buf[:end].split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                loads(line[6:])
                n += 1
        rest = buf[end + 1:]
    return n


LINE_HEAD = b"data: " + HEAD.encode()
LINE_TAIL = TAIL_OPEN.encode()


def run_envelope_limit(body: bytes, head: bytes = LINE_HEAD, tail: bytes = LINE_TAIL,
                       loads: Callable[[bytes], Any] = orjson.loads, read: int = READ) -> int:
    """A tighter limit: as `run_limit` with reads, but a line with the repeated envelope (the
    stream's id, model and fingerprint before the delta, the null finish after it) has only its
    delta parsed: what a decoder that skips the envelope could at best do."""
    n = 0
    rest = b""
    h, t = len(head), len(tail)
    for start in range(0, len(body), read):
        buf = rest + body[start:start + read]
        end = buf.rfind(b"\n")
        if end < 0:
            rest = buf
            continue
        for line in buf[:end].split(b"\n"):
            if line.startswith(head) and line.endswith(tail):
                loads(line[h:len(line) - t])
                n += 1
            elif line.startswith(b"data: ") and line != b"data: [DONE]":
                loads(line[6:])
                n += 1
        rest = buf[end + 1:]
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


SMALL_READ = 512
"""A live stream's read: about one event each."""


def goal(name: str, ratio: float, target: float) -> dict[str, Any]:
    return {"goal": name, "ratio": round(ratio, 3), "target": target, "met": ratio >= target}


def main() -> int:
    body, chunks = build_stream()
    ours = run_dshkit(body)
    if run_dshkit(body, StreamDecoder) != ours or run_dshkit(body, read=SMALL_READ) != ours:
        print("dshkit's fast and plain decoders (or its two read sizes) disagree on the assembled result", file=sys.stderr)
        return 1
    sdk = make_openai(body)
    if sdk() != ours:
        print("openai SDK and dshkit disagree on the assembled result", file=sys.stderr)
        return 1
    assert run_limit(body) == chunks == run_limit(body, read=SMALL_READ) == run_envelope_limit(body, read=SMALL_READ)
    if assembled(decoded(body)) != assembled(reference(body)):
        print("dshkit's fast paths and the plain reading disagree (blocks, usage, finish or ids)", file=sys.stderr)
        return 1
    # Interleave the contenders so a busy machine slows all of them alike; keep each best.
    msgspec_loads = msgspec.json.Decoder().decode
    runs: dict[str, Callable[[], Any]] = {
        "ours": lambda: run_dshkit(body),
        "ours_small": lambda: run_dshkit(body, read=SMALL_READ),
        "plain": lambda: run_dshkit(body, StreamDecoder),
        "plain_small": lambda: run_dshkit(body, StreamDecoder, read=SMALL_READ),
        "limit": lambda: run_limit(body, read=READ),
        "limit_small": lambda: run_limit(body, read=SMALL_READ),
        "envelope": lambda: run_envelope_limit(body, read=READ),
        "envelope_small": lambda: run_envelope_limit(body, read=SMALL_READ),
        "msgspec": lambda: run_limit(body, msgspec_loads),
        "json": lambda: run_limit(body, json.loads),
    }
    best = dict.fromkeys([*runs, "sdk"], float("inf"))
    for _ in range(4):
        best["sdk"] = min(best["sdk"], timed(sdk))
        for _ in range(4):
            for name, fn in runs.items():
                best[name] = min(best[name], timed(fn))

    def rate(t: float) -> float:
        return chunks / t

    print(f"stream: {chunks} chunks, {len(body) / 1e6:.2f} MB; reads of {READ // 1024} KiB and {SMALL_READ} B")
    rows = [
        ("ours", "dshkit (SSE + translate + assemble), 64 KiB reads"),
        ("ours_small", f"dshkit, {SMALL_READ} B reads"),
        ("plain", "dshkit plain path (no fast paths), 64 KiB"),
        ("plain_small", f"dshkit plain path, {SMALL_READ} B reads"),
        ("limit", "limit: split + orjson.loads, 64 KiB reads"),
        ("limit_small", f"limit: split + orjson.loads, {SMALL_READ} B reads"),
        ("envelope", "envelope-skipping limit, 64 KiB reads"),
        ("envelope_small", f"envelope-skipping limit, {SMALL_READ} B reads"),
        ("msgspec", "split + msgspec (untyped decode)"),
        ("json", "split + json.loads"),
        ("sdk", "openai SDK (stream + accumulate)"),
    ]
    for key, label in rows:
        print(f"{label:<52} {rate(best[key]):12,.0f} chunks/s  {best[key] * 1e3:8.1f} ms")
    vs_openai = best["sdk"] / best["ours"]
    vs_limit = best["limit"] / best["ours"]
    vs_limit_small = best["limit_small"] / best["ours_small"]
    print(f"dshkit vs openai SDK: {vs_openai:.1f}x (goal >= 20x)")
    print(f"dshkit vs split+orjson limit: 64 KiB {vs_limit:.2f} (goal >= 0.8), {SMALL_READ} B {vs_limit_small:.2f} (goal >= 0.6)")
    print(f"dshkit vs envelope-skipping limit: 64 KiB {best['envelope'] / best['ours']:.2f}, "
          f"{SMALL_READ} B {best['envelope_small'] / best['ours_small']:.2f}")
    an_ratios = bench_anthropic()
    if an_ratios is None:
        return 1
    an_vs_sdk, an_vs_limit, an_vs_limit_small = an_ratios
    goals = [
        goal("decode >= 0.8 of the split+orjson limit at 64 KiB reads", vs_limit, 0.8),
        goal(f"decode >= 0.6 of the split+orjson limit at {SMALL_READ} B reads", vs_limit_small, 0.6),
        goal("Anthropic decode >= 0.6 of the split+orjson limit at 64 KiB reads", an_vs_limit, 0.6),
        goal("decode >= 20x the openai SDK", vs_openai / 20, 1.0),
    ]
    for g in goals:
        print(f"goal: {g['goal']}: {g['ratio']} ({'met' if g['met'] else 'NOT met'}; target {g['target']})")
    print(json.dumps({
        "vs_openai": round(vs_openai, 2),
        "vs_limit": round(vs_limit, 3),
        "vs_limit_512": round(vs_limit_small, 3),
        "vs_envelope_limit": round(best["envelope"] / best["ours"], 3),
        "vs_envelope_limit_512": round(best["envelope_small"] / best["ours_small"], 3),
        "plain_vs_limit": round(best["limit"] / best["plain"], 3),
        "plain_vs_limit_512": round(best["limit_small"] / best["plain_small"], 3),
        "fast_vs_plain": round(best["plain"] / best["ours"], 2),
        "anthropic_vs_sdk": None if an_vs_sdk is None else round(an_vs_sdk, 2),
        "anthropic_vs_limit": round(an_vs_limit, 3),
        "anthropic_vs_limit_512": round(an_vs_limit_small, 3),
        "msgspec_vs_orjson": round(best["limit"] / best["msgspec"], 3),
        "json_vs_orjson": round(best["limit"] / best["json"], 3),
        "goals": goals,
    }))
    return 0


def bench_anthropic() -> tuple[float | None, float, float] | None:
    """The Anthropic-surface figures: (dshkit/SDK, dshkit/limit at 64 KiB, at 512 B) throughput
    ratios; None when the contenders disagree on the assembled result."""
    body, events = build_anthropic_stream()
    ours = run_dshkit_anthropic(body)
    if run_dshkit_anthropic(body, SMALL_READ) != ours:
        print("dshkit's Anthropic decoder gives another result at small reads", file=sys.stderr)
        return None
    sdk = make_anthropic(body)
    if sdk is not None and sdk() != ours:
        print("anthropic SDK and dshkit disagree on the assembled result", file=sys.stderr)
        return None
    assert run_limit(body) == events == run_limit(body, read=SMALL_READ)
    runs: dict[str, Callable[[], Any]] = {
        "ours": lambda: run_dshkit_anthropic(body),
        "ours_small": lambda: run_dshkit_anthropic(body, SMALL_READ),
        "limit": lambda: run_limit(body, read=READ),
        "limit_small": lambda: run_limit(body, read=SMALL_READ),
    }
    best = dict.fromkeys([*runs, "sdk"], float("inf"))
    for _ in range(4):
        if sdk is not None:
            best["sdk"] = min(best["sdk"], timed(sdk))
        for _ in range(4):
            for name, fn in runs.items():
                best[name] = min(best[name], timed(fn))
    print(f"anthropic stream: {events} events, {len(body) / 1e6:.2f} MB")
    for key, label in (("ours", "dshkit (SSE + translate + assemble), 64 KiB reads"),
                       ("ours_small", f"dshkit, {SMALL_READ} B reads"),
                       ("limit", "limit: split + orjson.loads, 64 KiB reads"),
                       ("limit_small", f"limit: split + orjson.loads, {SMALL_READ} B reads")):
        print(f"{label:<52} {events / best[key]:12,.0f} events/s  {best[key] * 1e3:8.1f} ms")
    vs_sdk = None
    if sdk is not None:
        print(f"{'anthropic SDK (stream + accumulate)':<52} {events / best['sdk']:12,.0f} events/s  {best['sdk'] * 1e3:8.1f} ms")
        vs_sdk = best["sdk"] / best["ours"]
        print(f"dshkit vs anthropic SDK: {vs_sdk:.1f}x")
    vs_limit = best["limit"] / best["ours"]
    vs_small = best["limit_small"] / best["ours_small"]
    print(f"dshkit vs split+orjson limit (anthropic): 64 KiB {vs_limit:.2f}, {SMALL_READ} B {vs_small:.2f}")
    return vs_sdk, vs_limit, vs_small


if __name__ == "__main__":
    sys.exit(main())
