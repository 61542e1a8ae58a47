"""`StreamDecoder` parses payloads with msgspec but reads every input as `json.loads` would.

msgspec refuses a few inputs the standard library accepts (escaped lone surrogates, `NaN`,
`Infinity`, floats beyond range) and those must still decode to the same chunks, on the plain
decoder and on `FastStreamDecoder`'s envelope and bulk paths. The reference is the `Translator`
fed `json.loads` values directly, with no msgspec anywhere.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import ErrorCode, Finish, StreamChunk
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.translate import Translator

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

