"""Anthropic rendering (`anthropic/render.py`): the event stream and the whole message a reply
becomes, stop reasons, split and write plans, framing and the quirks."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import MockServerFactory, Script
from dshkit.mock_server.anthropic.render import encode_events
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan

from ..wire import parse_sse
from .wire import body, events, fold, post


async def test_non_streaming_body(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    args = '{"city": "Paris", "q": "say \\"hi\\""}'
    server = await dshkit_mock_server(Script.of(
        {"reply": {"reasoning": "Need weather.", "tool_calls": [{"name": "weather", "arguments": args}]}}))
    resp = await post(http, server, body())
    assert resp.headers["content-type"].startswith("application/json")
    got = resp.json()
    assert got["type"] == "message" and got["role"] == "assistant"
    assert got["stop_reason"] == "tool_use" and got["stop_sequence"] is None
    thinking, call = got["content"]
    assert thinking == {"type": "thinking", "thinking": "Need weather.", "signature": got["id"]}
    assert call["type"] == "tool_use" and call["name"] == "weather"
    assert call["input"] == json.loads(args) and call["id"].startswith("call_00_")
    assert set(got["usage"]) >= {"input_tokens", "output_tokens", "cache_read_input_tokens"}


async def test_stop_sequence_cuts_and_is_reported(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "one two ``` three"}},
                                                {"reply": {"content": "one two ``` three"}}))
    msg = fold(events((await post(http, server, body(stream=True, stop_sequences=["```", "zzz"]))).content))
    assert msg["content"][0]["text"] == "one two " and msg["stop_reason"] == "stop_sequence"
    assert msg["stop_sequence"] == "```"
    got = (await post(http, server, body(stop_sequences=["```"]))).json()
    assert got["stop_reason"] == "stop_sequence" and got["stop_sequence"] == "```"


async def test_max_tokens_mid_tool_call(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    reply = {"reply": {"content": "Let me call.", "tool_calls": [{"name": "f", "arguments": '{"a": "long value"}'}]}}
    server = await dshkit_mock_server(Script.of(reply, {**reply, "stream": {"quirks": ["open_block_after_max_tokens"]}}))
    payload = body(stream=True, max_tokens=6, thinking={"type": "disabled"})
    evs = events((await post(http, server, payload)).content)
    msg = fold(evs)
    assert msg["stop_reason"] == "max_tokens"
    args = msg["input_json"][1]
    assert args and '{"a": "long value"}'.startswith(args) and args != '{"a": "long value"}'
    assert sum(e["type"] == "content_block_stop" for e in evs) == 2
    evs = events((await post(http, server, payload)).content)
    assert sum(e["type"] == "content_block_stop" for e in evs) == 1  # the last block stays open (an14)
    assert evs[-2]["type"] == "message_delta" and evs[-1]["type"] == "message_stop"


async def test_finish_reasons_map_to_stop_reasons(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of(
        {"reply": {"content": "filtered", "finish_reason": "content_filter"}},
        {"reply": {"content": "partial", "finish_reason": "insufficient_system_resource"}},
        {"reply": {"content": "partial", "finish_reason": "insufficient_system_resource"}},
    ))
    assert fold(events((await post(http, server, body(stream=True))).content))["stop_reason"] == "refusal"
    evs = events((await post(http, server, body(stream=True))).content)
    # No Anthropic stop reason says "out of resources": an in-band error ends the stream.
    assert evs[-1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert not any(e["type"] in ("message_delta", "message_stop") for e in evs)
    resp = await post(http, server, body())
    assert resp.status_code == 529 and resp.json()["error"]["type"] == "overloaded_error"


async def test_split_plans_and_write_plans(dshkit_mock_server: MockServerFactory) -> None:
    args = '{"city": "Zürich", "note": "a\\"b"}'
    step = {"reply": {"reasoning": "réflexion", "content": "héllo wörld", "tool_calls": [
        {"name": "f", "arguments": args}, {"name": "g", "arguments": ""}]},
        "stream": {"split": {"mode": "fixed", "size": 2},
                   "writes": {"events_per_write": 0, "size": 5, "inside_utf8": True, "inside_escapes": True}}}
    server = await dshkit_mock_server(Script.of(step))
    # aiohttp as the client: it sees the bytes in the writes' pieces and must reassemble them.
    async with aiohttp.ClientSession() as session, session.post(
        server.make_url("/anthropic/v1/messages"), json=body(stream=True)
    ) as resp:
        data = b"".join([chunk async for chunk in resp.content.iter_any()])
    evs = events(data)
    msg = fold(evs)
    assert msg["content"][0]["thinking"] == "réflexion" and msg["content"][1]["text"] == "héllo wörld"
    assert msg["input_json"] == {2: args, 3: ""}  # byte for byte; an argument-less call sends ""
    text_deltas = [e["delta"]["text"] for e in evs if e.get("delta", {}).get("type") == "text_delta"]
    assert text_deltas == ["hé", "ll", "o ", "wö", "rl", "d"]
    writes = server.journal.last.writes
    assert len(writes) > 20 and all(len(w.data) <= 5 for w in writes)


@pytest.mark.parametrize(("quirk", "check"), [
    ("thinking_start_signature", lambda evs, raw: evs[1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}),
    ("no_pings", lambda evs, raw: not any(e["type"] == "ping" for e in evs)),
    ("many_pings", lambda evs, raw: sum(e["type"] == "ping" for e in evs) == 3),
    ("padded_data", lambda evs, raw: b'}       \n' in raw and b'data: {"type": "ping"}\n' in raw),
    ("delta_output_only", lambda evs, raw: set(evs[-2]["usage"]) == {"output_tokens"}),
    ("delta_input_differs", lambda evs, raw: evs[-2]["usage"]["input_tokens"] > evs[0]["message"]["usage"]["input_tokens"]),
    ("anthropic_ids", lambda evs, raw: evs[0]["message"]["id"].startswith("msg_01")
     and fold(evs)["content"][0]["signature"] != evs[0]["message"]["id"]),
])
async def test_quirks(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient, quirk: str, check: Any) -> None:
    reply = {"reasoning": "hmm", "content": "ok"}
    server = await dshkit_mock_server(Script.of({"reply": reply}, {"reply": reply, "stream": {"quirks": [quirk]}}))
    plain = (await post(http, server, body(stream=True))).content
    raw = (await post(http, server, body(stream=True))).content
    assert raw != plain
    evs = events(raw)
    assert check(evs, raw)
    assert fold(evs)["content"][1]["text"] == "ok"  # the reply itself is unchanged


async def test_data_only_quirk_drops_event_lines(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "x"}, "stream": {"quirks": ["data_only", "usage_chunk"]}}))
    parsed = parse_sse((await post(http, server, body(stream=True))).content)
    assert parsed.events and all(e.event is None for e in parsed.events)
    assert json.loads(parsed.events[-1].data) == {"type": "message_stop"}


async def test_crlf_framing(dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient) -> None:
    server = await dshkit_mock_server(Script.of({"reply": {"content": "x"}, "stream": {"framing": "crlf"}}))
    raw = (await post(http, server, body(stream=True))).content
    assert raw.count(b"\r\n\r\n") == len(events(raw)) and b"\n\n" not in raw.replace(b"\r\n", b"")


def test_docs_list_every_anthropic_quirk() -> None:
    from pathlib import Path

    from dshkit.mock_server.anthropic.render import ANTHROPIC_QUIRKS

    guide = (Path(__file__).parents[3] / "docs" / "mock_server.md").read_text(encoding="utf-8")
    assert "## The Anthropic Messages surface" in guide
    for name in ANTHROPIC_QUIRKS:
        assert f"| `{name}` |" in guide, name


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(content=_text, reasoning=_text, args=st.lists(_text, max_size=3),
       size=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_events_fold_back_to_the_reply(content: str, reasoning: str, args: list[str], size: int, seed: int) -> None:
    reply = Reply(content=content, reasoning=reasoning,
                  tool_calls=tuple(ToolCall(name=f"t{i}", id=f"c{i}", arguments=a) for i, a in enumerate(args)))
    raw = b"".join(encode_events(reply, split=FragmentPlan.all(SplitPlan(mode="fixed", size=size)), seed=seed))
    msg = fold(events(raw))
    want = ([("thinking", reasoning)] if reasoning else []) + ([("text", content)] if content else [])
    got = [(b["type"], b.get("thinking", b.get("text"))) for b in msg["content"] if b["type"] != "tool_use"]
    assert got == want
    calls = [b for b in msg["content"] if b["type"] == "tool_use"]
    assert [(b["id"], b["name"]) for b in calls] == [(f"c{i}", f"t{i}") for i in range(len(args))]
    first_call = len(want)
    assert [msg["input_json"][first_call + i] for i in range(len(args))] == args  # byte for byte
    assert msg["stop_reason"] == ("tool_use" if args else "end_turn")
