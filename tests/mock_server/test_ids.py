"""Completion ids and generated tool-call ids are unique per response, and still seeded."""

from __future__ import annotations

from typing import Any

import httpx

from dshkit.mock_server import MockServer, Script

from .wire import chat, parse_sse, reassemble

TOOL_STEP = {"reply": {"tool_calls": [{"name": "read", "arguments": {"p": "a"}},
                                      {"name": "read", "arguments": {"p": "b"}}]}}


async def _ids(server: MockServer, n: int, **extra: Any) -> list[tuple[str, list[str]]]:
    """(completion id, tool-call ids) of `n` requests of one session, streamed and not."""
    out = []
    async with httpx.AsyncClient(timeout=5) as c:
        for i in range(n):
            stream = i % 2 == 0
            r = await c.post(server.url, json=chat(f"q{i}", stream=stream, model="deepseek-chat"),
                             headers={"X-Mock-Session": "s1"}, **extra)
            assert r.status_code == 200, r.text
            if stream:
                chunks = parse_sse(r.content).chunks
                calls = [tc["id"] for tc in reassemble(chunks)["tool_calls"]]
                out.append((chunks[0]["id"], calls))
            else:
                msg = r.json()["choices"][0]["message"]
                out.append((r.json()["id"], [tc["id"] for tc in msg.get("tool_calls") or []]))
    return out


async def test_default_replies_get_a_new_id_each() -> None:
    async with MockServer(seed=3) as server:
        ids = await _ids(server, 4)
    assert len({cid for cid, _ in ids}) == 4


async def test_a_repeated_step_mints_new_completion_and_call_ids() -> None:
    script = Script.of(TOOL_STEP, name="tools")
    script = script.model_copy(update={"repeat_last": True})
    async with MockServer(script, seed=3) as server:
        ids = await _ids(server, 4)
    calls = [c for _, cs in ids for c in cs]
    assert len({cid for cid, _ in ids}) == 4
    assert len(calls) == 8 and len(set(calls)) == 8
    assert all(c.startswith(("call_00_", "call_01_")) and len(c) == 32 for c in calls)
    async with MockServer(script, seed=3) as again:  # same seed, same requests: same ids
        assert await _ids(again, 4) == ids
