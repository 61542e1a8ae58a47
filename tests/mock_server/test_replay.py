"""Replay of real recorded streams (S35): `.sse` byte for byte, `.jsonl` framed plus `[DONE]`.

The recordings are read from the shared corpus in place (skipped when absent), never copied.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from dshkit.mock_server import MockServerFactory, Script, frame_jsonl

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
        pytest.skip(f"{f.name} is absent")
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
