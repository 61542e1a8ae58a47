"""Replay of real recorded streams (S35): `.sse` byte for byte, `.jsonl` framed plus `[DONE]`.

The recordings are read from the shared corpus in place (skipped when absent), never copied.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from dshkit.mock_server import MockServerFactory, Script
from dshkit.mock_server.generate.encode import frame_jsonl

from ..conftest import corpus_missing
from .wire import chat, parse_sse, reassemble


def _corpus_files(real_corpus: Path) -> list[Path]:
    files = sorted(p for p in real_corpus.iterdir() if p.suffix in (".sse", ".jsonl"))
    if not files:
        pytest.skip("no .sse/.jsonl files in the corpus")
    return files


async def test_every_corpus_stream_replays_exactly(dshkit_mock_server: MockServerFactory, real_corpus: Path) -> None:
    files = _corpus_files(real_corpus)
    scripts = [Script.of({"raw": {"file": str(f)}}, session=f.stem) for f in files]
    server = await dshkit_mock_server(*scripts)
    async with httpx.AsyncClient(timeout=2) as c:
        for f in files:
            r = await c.post(server.url, json=chat(), headers={"X-Mock-Session": f.stem})
            data = f.read_bytes()
            assert r.content == (data if f.suffix == ".sse" else frame_jsonl(data)), f.name
            expected = json.loads(f.with_name(f.stem + ".expected.json").read_text())["expected"]
            if f.stem.startswith("ds"):  # DeepSeek's own recordings fold with the plain rules
                got = reassemble(parse_sse(r.content).chunks)
                assert got["content"] == expected["content"], f.name
                assert got["reasoning"] == expected["reasoning_content"], f.name
                assert [(t["id"], t["name"], t["arguments"]) for t in got["tool_calls"]] == [
                    (t["id"], t["name"], t["arguments"]) for t in expected["tool_calls"]], f.name
    server.assert_consumed()


async def test_replayed_tool_call_through_openai(dshkit_mock_server: MockServerFactory, real_corpus: Path) -> None:
    f = real_corpus / "ds06-deepseek-v4-flash-thinking-tool-call.jsonl"
    if not f.exists():
        pytest.skip(corpus_missing(f))
    server = await dshkit_mock_server(Script.of({"raw": {"file": str(f), "write_plan": {"events_per_write": 0, "size": 7}}}))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=0.9) as client:
        args = ""
        reasoning = ""
        async for ch in await client.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "w"}], stream=True):
            d = ch.choices[0].delta
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                args += tc.function.arguments or ""
    assert args == '{"location": "San Francisco"}'
    assert reasoning.startswith("The user asks about the weather")
    assert len(server.journal.last.writes) > 1000 // 7


# --- logged calls on both wires: the same outcome comes back ---------------------------------

TEXT = [{"type": "block-start", "index": 0, "blockType": "text"}, {"type": "text-delta", "index": 0, "text": "Hel"}]
ARGS = [{"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "call_1", "name": "bash", "argumentsDelta": '{"command":"ec'}]
FAILURES = [
    ("AUTH", []), ("QUOTA", []), ("RATE_LIMIT", []), ("INVALID_REQUEST", []), ("CONTEXT_WINDOW_EXCEEDED", []),
    ("SERVER", []), ("STREAM_CLOSED", ARGS), ("STREAM_CLOSED", TEXT), ("TRANSPORT", TEXT), ("EMPTY_RESPONSE", []),
    ("CONTENT_FILTER", TEXT), ("INSUFFICIENT_SYSTEM_RESOURCE", []), ("SERVER", TEXT), ("TIMEOUT", []),
]
DEPARTURES = {
    # (wire, logged code, content before it): what the client reports instead, and why
    ("chat", "SERVER", True): "PROVIDER_ERROR",  # an in-band error event is PROVIDER_ERROR (the adapter's decision)
    ("anthropic", "INSUFFICIENT_SYSTEM_RESOURCE", False): "SERVER",  # no such stop reason: the overloaded 529
    ("chat", "TIMEOUT", False): "TRANSPORT",  # replayed as a reset; a real stall would wait for the idle timeout
    ("anthropic", "TIMEOUT", False): "TRANSPORT",
}


@pytest.mark.parametrize("wire", ["chat", "anthropic"])
async def test_a_logged_failure_comes_back_as_the_same_code_on_each_wire(
    dshkit_mock_server: MockServerFactory, wire: str
) -> None:
    """Each `throw` entry, rendered from `plan_call` by `chunk_wire` or `anthropic.replay`, is
    read by the real adapter of that wire as the logged failure again."""
    from dshkit.harness.llm import Finish, GenerateOptions, UserMessage
    from dshkit.harness.providers.anthropic import AnthropicAdapter
    from dshkit.harness.providers.deepseek import DeepSeekAdapter

    steps = [{"chunks": {"kind": "throw", "chunks": chunks, "message": f"{code} as logged", "code": code}}
             for code, chunks in FAILURES]
    server = await dshkit_mock_server(Script.of(*steps))
    adapter = (DeepSeekAdapter(server.base_url, "sk-x") if wire == "chat"
               else AnthropicAdapter(server.base_url + "/anthropic", "sk-x"))
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=[UserMessage.text("hi")])
    got, want = [], []
    try:
        for code, chunks in FAILURES:
            finish = [c async for c in adapter.stream(options)][-1]
            assert isinstance(finish, Finish) and finish.reason.failure is not None
            got.append(finish.reason.failure.code)
            want.append(DEPARTURES.get((wire, code, bool(chunks)), code))
    finally:
        await adapter.aclose()
    assert got == want
