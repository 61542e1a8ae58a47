"""Every real recorded stream in `shared/corpus/real/` decoded and compared with its
`*.expected.json` (wire.md A1–A15), and A24: the assembled message serialized as the next
assistant turn keeps ids, names, arguments and reasoning. Corpus results are compared with the
expected files, never snapshotted; without the corpus these tests skip."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.llm import (
    AssistantMessage,
    BlockAssembler,
    Finish,
    GenerateOptions,
    StreamChunk,
    TextBlock,
    UserMessage,
)
from dshkit.harness.llm.messages import ModelSource, ReasoningBlock
from dshkit.harness.providers.openai_chat.decoder import StreamDecoder
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.providers.openai_chat.serialize import serialize
from dshkit.harness.providers.openai_chat.translate import map_finish_reason, map_usage
from dshkit.harness.providers.sse import SSEComment, SSEDecoder
from tests.conftest import REAL_CORPUS, corpus_missing

STEMS = sorted(p.name[: -len(".expected.json")] for p in REAL_CORPUS.glob("*.expected.json")) if REAL_CORPUS.is_dir() else []
PARAMS = STEMS or [pytest.param("absent", marks=pytest.mark.skip(reason=corpus_missing(REAL_CORPUS)))]


def load(corpus: Path, stem: str) -> tuple[bytes, dict[str, Any]]:
    meta = json.loads((corpus / f"{stem}.expected.json").read_text(encoding="utf-8"))
    raw = (corpus / meta["file"]).read_bytes()
    if meta["format"] == "jsonl":
        # README: frame each line as `data: <line>\n\n`, then `data: [DONE]\n\n`.
        lines = [line for line in raw.splitlines() if line.strip()]
        raw = b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    return raw, meta


def decode(body: bytes, cuts: list[int]) -> list[StreamChunk]:
    """The plain decoder's chunks, fed at `cuts`; the adapter's fast decoder must give the same."""
    results = []
    for decoder in (StreamDecoder(), FastStreamDecoder()):
        out: list[StreamChunk] = []
        bounds = [0, *sorted(cuts), len(body)]
        for a, b in itertools.pairwise(bounds):
            out += decoder.feed(body[a:b])
        out += decoder.close()
        results.append(out)
    assert results[0] == results[1]
    return results[0]


@pytest.mark.parametrize("stem", PARAMS)
def test_corpus_stream_matches_expected(real_corpus: Path, stem: str) -> None:
    body, meta = load(real_corpus, stem)
    expected = meta["expected"]
    chunks = decode(body, [])
    a = BlockAssembler().feed_all(chunks)
    blocks = a.blocks()

    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    reasoning = "".join(b.text for b in blocks if isinstance(b, ReasoningBlock))
    assert text == expected["content"]
    assert reasoning == expected.get("reasoning_content", "") + expected.get("reasoning_alt_field", "")
    assert sum(isinstance(b, TextBlock) for b in blocks) <= 1 and sum(isinstance(b, ReasoningBlock) for b in blocks) <= 1

    calls = [(c.id, c.name, c.arguments) for c in a.message(ModelSource(provider="deepseek", model="m")).tool_calls]
    want_calls = [(c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]]
    if expected["finish_reason"] == "length":
        want_calls = []  # max-tokens drops (possibly cut) tool calls
    assert calls == want_calls

    assert a.finish_reason == map_finish_reason(expected["finish_reason"] or "stop")
    assert a.usage == (map_usage(expected["usage"]) if expected["usage"] else None)
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0]
    assert finishes[0].meta is not None
    assert finishes[0].meta.id == (expected["ids"] or [None])[0]
    assert finishes[0].meta.model == (expected["models"] or [None])[0]
    assert finishes[0].meta.system_fingerprint == (expected["system_fingerprints"] or [None])[0]
    # ds16 ends with `data: [DONE]\n`, missing its blank line: a success flagged doneMissing.
    complete_done = body.endswith((b"data: [DONE]\n\n", b"data: [DONE]\r\n\r\n"))
    assert finishes[0].meta.done_missing is (not complete_done)
    # Comments (keep-alives, OpenRouter's processing notes) are reported as such, never as data.
    assert sum(isinstance(item, SSEComment) for item in SSEDecoder().feed(body)) == expected["sse_comment_lines"]
    assert not expected["typed_events"] and expected["error"] is None  # no in-band errors in this half


@pytest.mark.parametrize("stem", PARAMS)
def test_corpus_split_plans_agree(real_corpus: Path, stem: str) -> None:
    body, _ = load(real_corpus, stem)
    whole = decode(body, [])
    per_line = [i + 1 for i, byte in enumerate(body[:-1]) if byte == 0x0A]
    assert decode(body, per_line) == whole
    rng = random.Random(stem)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 200))))
        assert decode(body, cuts) == whole
    if len(body) <= 20_000:
        assert decode(body, list(range(1, len(body)))) == whole


A24 = ["ds03", "ds06", "ds13", "ds15", "rq01", "oc02", "oc08"]


@pytest.mark.parametrize("stem", [s for s in STEMS if s[:4] in A24] or PARAMS)
def test_a24_round_trip_as_next_assistant_turn(real_corpus: Path, stem: str) -> None:
    body, meta = load(real_corpus, stem)
    expected = meta["expected"]
    chunks = decode(body, [])
    message = BlockAssembler().feed_all(chunks).message(ModelSource(provider="deepseek", model="m"))
    assert isinstance(message, AssistantMessage)
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=[UserMessage.text("q"), message])
    wire = serialize(options)["messages"][1]
    assert wire["role"] == "assistant"
    assert (wire["content"] or "") == expected["content"]  # a tool-only turn sends null
    assert [(c["id"], c["type"], c["function"]["name"], c["function"]["arguments"]) for c in wire["tool_calls"]] == [
        (c["id"], "function", c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]
    # thinking on (V4 default): tool-call turns always carry reasoning_content, "" when none streamed
    assert wire["reasoning_content"] == expected.get("reasoning_content", "")
