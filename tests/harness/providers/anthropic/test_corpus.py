"""Every file of the real-anthropic corpus decodes to the message its sidecar expects: block
order and types, text, thinking and its signature (last `signature_delta` wins), tool id, name and
the exact concatenated `input_json`, stop reason and sequence, merged usage, message id and model
(anthropic.md AN76). Streams run under several split plans (whole, per line, per byte, seeded
random cuts), non-streaming messages through `events_from_message`, error bodies through
`failure_from_response`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.llm import (
    BlockAssembler,
    ErrorCode,
    Finish,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import BlockEnd
from dshkit.harness.llm.messages import OpaqueBlock, ReasoningBlock
from dshkit.harness.providers.anthropic.decoder import FastStreamDecoder, StreamDecoder
from dshkit.harness.providers.anthropic.failures import failure_from_response
from dshkit.harness.providers.anthropic.translate import Translator, events_from_message, map_usage
from dshkit.harness.providers.sse import SSEDecoder, SSEEvent
from tests.conftest import corpus_missing

from .conftest import REAL_ANTHROPIC, corpus_sidecars, load_capture

SIDECARS = corpus_sidecars()
STREAMS = [p for p in SIDECARS if json.loads(p.read_text())["kind"] == "stream"]
ERRORS = [p for p in SIDECARS if json.loads(p.read_text())["kind"] == "error"]
MESSAGES = [p for p in SIDECARS if json.loads(p.read_text())["kind"] == "message"]
_ABSENT = [pytest.param(None, marks=pytest.mark.skip(reason=corpus_missing(REAL_ANTHROPIC)))]


def _ids(paths: list[Path]) -> list[Any]:
    return [pytest.param(p, id=p.name.split(".")[0]) for p in paths] or _ABSENT


def splits(data: bytes) -> dict[str, list[bytes]]:
    rng = random.Random(len(data))
    cuts = sorted(rng.sample(range(1, len(data)), min(40, len(data) - 1)))
    return {
        "whole": [data],
        "lines": data.splitlines(keepends=True),
        "bytes": [data[i : i + 1] for i in range(len(data))],
        "random": [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)],
    }


def decode(parts: list[bytes]) -> tuple[list[StreamChunk], Translator]:
    """The plain decoder's chunks and translator; the adapter's fast decoder must give the same chunks."""
    plain, fast = StreamDecoder(), FastStreamDecoder()
    chunks: list[StreamChunk] = []
    fast_chunks: list[StreamChunk] = []
    for part in parts:
        chunks += plain.feed(part)
        fast_chunks += fast.feed(part)
    chunks += plain.close()
    assert fast_chunks + fast.close() == chunks
    return chunks, plain.translator


def check_blocks(chunks: list[StreamChunk], expected: dict[str, Any]) -> None:
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert len(ends) == len(expected["content"])
    signatures = [e and e["signature"] for e in (finish.replay_state or {}).get("blocks", [None] * len(ends))]
    for block, want, signature in zip(ends, expected["content"], signatures, strict=True):
        kind = want["type"]
        if kind == "text":
            assert isinstance(block, TextBlock) and block.text == want["text"]
        elif kind == "thinking":
            assert isinstance(block, ReasoningBlock) and block.text == want["thinking"]
            assert signature == want["signature"]
        elif kind == "tool_use":
            assert isinstance(block, ToolCallBlock)
            assert (block.id, block.name) == (want["id"], want["name"])
            assert block.arguments == want["input_json"]  # raw, byte for byte (AN57)
        else:  # out-of-scope blocks pass through opaque (AN78)
            assert isinstance(block, OpaqueBlock) and block.type == kind


USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@pytest.mark.parametrize("sidecar", _ids(STREAMS))
@pytest.mark.parametrize("plan", ["whole", "lines", "bytes", "random"])
def test_stream_decodes_to_expected_message(sidecar: Path, plan: str) -> None:
    meta, data = load_capture(sidecar)
    expected = meta["expected"]
    chunks, translator = decode(splits(data)[plan])
    check_blocks(chunks, expected)
    assert translator.stop_reason == expected["stop_reason"]
    assert translator.stop_sequence == expected["stop_sequence"]
    # The pings are framed as events and ignored by the translation (the message above is whole).
    events = SSEDecoder().feed(data)
    assert sum(isinstance(e, SSEEvent) and e.event == "ping" for e in events) == expected["pings"]
    usage = translator.usage
    assert {k: usage.get(k) for k in USAGE_KEYS} == {k: expected["usage"].get(k) for k in USAGE_KEYS}
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.meta is not None
    assert (finish.meta.id, finish.meta.model) == (expected["message"]["id"], expected["message"]["model"])
    # A missing message_stop (only an14's trailing event is undispatched) is flagged, not fatal.
    assert finish.meta.done_missing == (not expected["message_stop_seen"])
    kind = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls", "max_tokens": "max-tokens"}
    assert finish.reason.kind == kind[expected["stop_reason"]]
    assert chunks[-2].type == "usage" and chunks[-2].usage == map_usage(usage)  # type: ignore[union-attr]


def test_max_tokens_inside_a_tool_call_keeps_the_raw_json_but_drops_the_call(real_anthropic: Path) -> None:
    """an14: the cut tool JSON stays raw on its block-end; the assembled message drops the call
    (its arguments are incomplete), as the loop does for any max-tokens finish."""
    meta, data = load_capture(real_anthropic / "an14-sonnet37-max-tokens-truncated-tool-json.expected.json")
    chunks, _ = decode([data])
    calls = [c.block for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert calls and calls[0].arguments == meta["expected"]["content"][1]["input_json"]
    with pytest.raises(ValueError):
        json.loads(calls[0].arguments)
    blocks = BlockAssembler().feed_all(chunks).blocks()
    assert [b.type for b in blocks] == ["text"]


@pytest.mark.parametrize("sidecar", _ids(MESSAGES))
def test_non_streaming_message_decodes_to_expected(sidecar: Path) -> None:
    meta = json.loads(sidecar.read_text())
    body = json.loads((sidecar.parent / meta["file"]).read_bytes())
    translator = Translator()
    chunks: list[StreamChunk] = []
    for event in events_from_message(body):
        chunks += translator.feed(event)
    expected = meta["expected"]
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert [b.type for b in ends] == [{"tool_use": "tool-call"}.get(e["type"], e["type"]) for e in expected["content"]]
    for block, want in zip(ends, expected["content"], strict=True):
        if isinstance(block, ToolCallBlock):
            assert (block.id, block.name, json.loads(block.arguments)) == (want["id"], want["name"], want["input"])
        elif isinstance(block, TextBlock):
            assert block.text == want["text"]
    assert translator.stop_reason == expected["stop_reason"]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "tool-calls"
    assert finish.meta is not None and finish.meta.id == expected["message"]["id"]


@pytest.mark.parametrize("sidecar", _ids(ERRORS))
def test_error_body_maps_to_failure(sidecar: Path) -> None:
    """Both envelopes (DeepSeek's OpenAI-style ds01, Anthropic's er01/er02) give the message,
    the provider's error type, the status and our code (AN65, AN66)."""
    meta = json.loads(sidecar.read_text())
    body = (sidecar.parent / meta["file"]).read_bytes()
    failure = failure_from_response(meta["http_status"], body, {})
    expected = meta["expected"]
    assert failure.message == expected["message"]
    assert failure.status == meta["http_status"]
    assert failure.provider_error is not None and failure.provider_error.type == expected["error_type"]
    assert failure.request_id == expected["request_id"]
    codes = {400: ErrorCode.INVALID_REQUEST, 404: "HTTP_404"}
    assert failure.code == codes[meta["http_status"]]
