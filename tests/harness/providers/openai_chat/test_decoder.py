"""`StreamDecoder`, the plain path from body bytes to `StreamChunk`s, and what every fast path is
held to (most tests run `FastStreamDecoder` beside it and require the same chunks).

- JSON: payloads are parsed with msgspec but read as `json.loads` would. msgspec refuses a few
  inputs the standard library accepts (escaped lone surrogates, `NaN`, `Infinity`, floats beyond
  range) and those must still decode to the same chunks, on the plain decoder and on
  `FastStreamDecoder`'s envelope and bulk paths. The reference is the `Translator` fed
  `json.loads` values directly, with no msgspec anywhere.
- Framing: `data: [DONE]` with or without its blank line, bytes after it, comments, payloads that
  are not JSON.
- Splits (issue 2; wire.md A1, S36): however a body is split into network reads, the chunks and
  the assembled message are the same. Every split point for small streams, sampled multi-splits
  for larger ones, 1-byte fragments, and one 1 MiB event (the quadratic-copy trap).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.harness.llm import ErrorCode, Finish, StreamChunk, TextBlock
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.translate import Translator

from .wire import USAGE, assemble, call, chunk, decode, sse

# --- JSON read as `json.loads` reads it --------------------------------------------------------

_ID = "5d1c3a52-8f0e-4b8e-9a53-0c1e2f7b6a11"
_HEAD = '{"id":"' + _ID + '","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
_TAIL = ',"logprobs":null,"finish_reason":null}],"usage":null}'


def _payload(delta_json: str) -> str:
    return _HEAD + delta_json + _TAIL


def _body(payloads: list[str], done: bool = True) -> bytes:
    text = "".join(f"data: {p}\n\n" for p in payloads) + ("data: [DONE]\n\n" if done else "")
    return text.encode("utf-8")


def _decoded(body: bytes, step: int = 1 << 16) -> list[dict[str, Any]]:
    """The chunks of both decoders, which must agree."""
    results = []
    for decoder in (StreamDecoder(), FastStreamDecoder()):
        out: list[StreamChunk] = []
        for i in range(0, len(body), step):
            out += decoder.feed(body[i : i + step])
        out += decoder.close()
        results.append([chunk_to_json(c) for c in out])
    assert results[0] == results[1]
    return results[0]


def _reference(payloads: list[str], done: bool = True) -> list[dict[str, Any]]:
    """What the standard library alone makes of the same payloads."""
    translator = Translator()
    out: list[StreamChunk] = []
    for payload in payloads:
        if translator.finished:
            break
        try:
            value = json.loads(payload)
        except ValueError:
            out += translator.malformed(payload)
            break
        translator.feed_into(value, out)
    out += translator.end(done=done)
    return [chunk_to_json(c) for c in out]


# Inputs msgspec refuses and `json.loads` accepts, each inside a delta and inside the envelope.
_REFUSED = [
    '{"content":"lone \\ud800 high"}',
    '{"content":"lone \\udc00 low"}',
    '{"content":"nan","extra":NaN}',
    '{"reasoning_content":"inf","x":[Infinity,-Infinity]}',
    '{"content":"huge","x":1e400}',
]


def test_payloads_msgspec_refuses_decode_as_the_standard_library_reads_them() -> None:
    plain = [_payload('{"content":"warm up "}')] * 4  # teaches the envelope first
    for delta in _REFUSED:
        payloads = [*plain, _payload(delta), _payload('{"content":" after"}')]
        decoded = _decoded(_body(payloads))
        assert decoded == _reference(payloads), delta
        finish = decoded[-1]
        assert finish["type"] == "finish" and finish["reason"]["kind"] == "stop", delta


def test_a_lone_surrogate_reaches_the_text_as_json_loads_gives_it() -> None:
    payloads = [_payload('{"content":"a"}')] * 3 + [_payload('{"content":"\\ud800b"}')]
    texts = [c["text"] for c in _decoded(_body(payloads)) if c["type"] == "text-delta"]
    assert texts == ["a", "a", "a", "\ud800b"]


def test_refused_envelope_values_take_the_full_path_unchanged() -> None:
    # NaN outside the delta: the envelope never matches, the whole chunk falls back.
    chunk = _HEAD + '{"content":"x"},"logprobs":NaN,"finish_reason":null}],"usage":null}'
    payloads = [chunk, _payload('{"content":"y"}')]
    assert _decoded(_body(payloads)) == _reference(payloads)


def test_integers_beyond_64_bits_stay_exact() -> None:
    big = 2**70 + 1
    usage = '{"prompt_tokens":' + str(big) + ',"completion_tokens":3}'
    payloads = [_HEAD + '{"content":"x"},"logprobs":null,"finish_reason":"stop"}],"usage":' + usage + "}"]
    decoded = _decoded(_body(payloads))
    assert decoded == _reference(payloads)
    usage_chunk = next(c for c in decoded if c["type"] == "usage")
    assert usage_chunk["usage"]["inputTokens"] == big


def test_malformed_payload_is_the_same_failure_as_before() -> None:
    payloads = [_payload('{"content":"ok"}'), '{"choices": [', _payload('{"content":"never"}')]
    decoded = _decoded(_body(payloads))
    assert decoded == _reference(payloads)
    finish = decoded[-1]
    assert finish["reason"]["failure"]["code"] == ErrorCode.MALFORMED_RESPONSE
    assert "malformed SSE payload" in finish["reason"]["failure"]["message"]


def test_nesting_past_the_recursion_limit_is_a_malformed_finish_on_both_paths() -> None:
    """`json.loads` raises RecursionError here; both decoders end the stream with a
    MALFORMED_RESPONSE finish instead (issue 18: an adapter never raises on a deep payload)."""
    deep = "[" * 100_000 + "]" * 100_000
    for decoder in (StreamDecoder(), FastStreamDecoder()):
        out = decoder.feed(_body([deep]))
        assert isinstance(out[-1], Finish) and out[-1].reason.failure is not None
        assert out[-1].reason.failure.code == ErrorCode.MALFORMED_RESPONSE
        assert out[-1].reason.failure.message.startswith("malformed SSE payload")


_texts = st.text(max_size=12)  # includes lone surrogates, which json.dumps escapes
_numbers = st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True))
_deltas = st.one_of(
    st.builds(lambda t: json.dumps({"content": t}), _texts),
    st.builds(lambda t: json.dumps({"reasoning_content": t}, ensure_ascii=False)
              if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in t) else json.dumps({"reasoning_content": t}), _texts),
    st.builds(lambda t, n: json.dumps({"content": t, "n": n}), _texts, _numbers),
    st.builds(lambda i, a: json.dumps({"tool_calls": [{"index": i, "function": {"arguments": a}}]}),
              st.integers(0, 2), _texts),
)


@given(st.lists(_deltas, min_size=1, max_size=12), st.booleans(), st.integers(1, 97))
def test_any_delta_decodes_as_the_standard_library_reads_it(deltas: list[str], done: bool, step: int) -> None:
    payloads = [_payload(d) for d in deltas]
    assert _decoded(_body(payloads, done), step) == _reference(payloads, done)


# --- framing: [DONE], comments, payloads that are not JSON ------------------------------------


def finish_of(chunks: list[StreamChunk]) -> Finish:
    assert isinstance(chunks[-1], Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return chunks[-1]


@pytest.mark.parametrize("tail", [b"data: [DONE]\n", b"data: [DONE]", b"data: [DO"])
def test_done_missing_its_blank_line(tail: bytes) -> None:
    chunks = decode(sse(chunk({"content": "x"}), chunk({}, "stop"), done=False) + tail)
    finish = finish_of(chunks)
    assert finish.reason.kind == "stop" and finish.meta is not None and finish.meta.done_missing


def test_done_complete_is_not_done_missing_and_later_bytes_ignored() -> None:
    chunks = decode(sse(chunk({"content": "x"}, "stop")) + sse(chunk({"content": "ignored"}), "garbage{", done=False))
    finish = finish_of(chunks)
    assert finish.meta is not None and not finish.meta.done_missing
    assert assemble(chunks).blocks() == [TextBlock(text="x")]


@pytest.mark.parametrize("payload", ['{"choices": [', "not json", "{'single': 1}", ""])
def test_malformed_json(payload: str) -> None:
    chunks = decode(sse(chunk({"content": "ok"}), payload, chunk({"content": "never"}, "stop")))
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"
    assert failure.message.startswith("malformed SSE payload: ")
    assert assemble(chunks).blocks() == [TextBlock(text="ok")]


def test_comments_are_not_translated_and_nothing_after_done_is() -> None:
    for d in (StreamDecoder(), FastStreamDecoder()):
        out = d.feed(b": keep-alive\n\n: keep-alive\n\n" + sse(chunk({"content": "x"}, "stop")))
        assert d.finished and isinstance(out[-1], Finish) and out[-1].reason.kind == "stop"
        assert assemble(out).blocks() == [TextBlock(text="x")]
        assert d.feed(b"data: more\n\n") == [] and d.close() == []


# --- however the body is split into reads --------------------------------------------------------

REPO = Path(__file__).resolve().parents[4]
SRC = ModelSource(provider="deepseek", model="m")

SMALL = {
    "reasoning-text": b": keep-alive\n\n"
    + sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"reasoning_content": "想一想 🙂"}),
        chunk({"content": "答案 é"}),
        chunk({"content": ""}, "stop", USAGE),
    ),
    "parallel-calls": sse(
        chunk({"tool_calls": [call(0, "call_00_a", "read", '{"p":')]}),
        chunk({"tool_calls": [call(0, arguments='"中"}')]}),
        chunk({"tool_calls": [call(1, "call_01_b", "ls", "{}")]}),
        chunk({}, "tool_calls", USAGE),
    ),
    "error-mid-stream": sse(chunk({"content": "partial 🙂"}), done=False)
    + b'event: error\ndata: {"error":{"message":"overloaded"}}\n\n',
    "done-missing": sse(chunk({"content": "x"}), chunk({}, "stop"), done=False) + b"data: [DONE]",
    "truncated": sse(chunk({"content": "abc"}), done=False) + b'data: {"choi',
}


def _result(body: bytes, cuts: list[int]) -> tuple[list, list]:
    chunks = decode(body, sorted(set(cuts)))
    return chunks, assemble(chunks).message(SRC, id="m").content


def _variants(body: bytes) -> list[bytes]:
    return [body, body.replace(b"\n", b"\r\n"), body.replace(b"\n", b"\r")]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_single_split_point(name: str) -> None:
    for body in _variants(SMALL[name]):
        assert len(body) <= 4096
        whole = _result(body, [])
        for i in range(1, len(body)):
            assert _result(body, [i]) == whole, (name, i)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_one_byte_fragments(name: str) -> None:
    body = SMALL[name]
    assert _result(body, list(range(1, len(body)))) == _result(body, [])


def test_line_ending_styles_agree() -> None:
    for body in SMALL.values():
        results = [_result(v, []) for v in _variants(body)]
        assert results[0] == results[1] == results[2]


def _large_bodies() -> dict[str, bytes]:
    bodies = {"seed-walk": (REPO / "examples" / "seed-walk.sse").read_bytes()}
    parts = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    parts += [chunk({"reasoning_content": f"步骤 {i} 🙂 "}) for i in range(150)]
    parts += [chunk({"content": f"word{i} "}) for i in range(150)]
    parts += [chunk({"tool_calls": [call(0, "call_00_x", "write", "")]})]
    args = json.dumps({"content": "é" * 300 + "🙂" * 50}, ensure_ascii=False)
    parts += [chunk({"tool_calls": [call(0, arguments=args[i : i + 5])]}) for i in range(0, len(args), 5)]
    parts += [chunk({}, "tool_calls", USAGE)]
    bodies["generated"] = sse(*parts)
    return bodies


LARGE = _large_bodies()


@functools.cache
def _whole(name: str) -> tuple[list, list]:
    """`_result(LARGE[name], [])`, the unsplit reference, decoded once rather than per example."""
    return _result(LARGE[name], [])


@pytest.mark.parametrize("name", sorted(LARGE))
@settings(max_examples=30)
@given(data=st.data())
def test_sampled_multi_splits(name: str, data: st.DataObject) -> None:
    body = LARGE[name]
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=40))
    assert _result(body, cuts) == _whole(name)


@given(st.lists(st.integers(1, 12), min_size=1, max_size=20))
def test_tcp_read_sizes(sizes: list[int]) -> None:
    """Reads of repeating sizes (as a socket delivers them) across the whole generated body."""
    body = LARGE["generated"]
    cuts, pos, i = [], 0, 0
    while pos < len(body):
        pos += sizes[i % len(sizes)] * 97
        cuts.append(pos)
        i += 1
    assert _result(body, [c for c in cuts if c < len(body)]) == _whole("generated")


def test_one_mib_event_fed_in_small_pieces() -> None:
    text = ("abcdefghij" * 104858)[: 1 << 20]
    body = sse(chunk({"content": text}, "stop"))
    assert len(body) > 1 << 20
    whole = decode(body)
    assert assemble(whole).blocks() == [TextBlock(text=text)]

    # 7-byte reads: linear only if the unfinished line is never re-joined per read.
    assert decode(body, list(range(7, len(body), 7))) == whole
