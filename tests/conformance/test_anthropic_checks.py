"""The Anthropic server checks (`dshkit.conformance.anthropic_checks`): `--only` selection, the
verdicts on our mock's Anthropic surface, and each stream check judged on hand-built answers: a
correct stream passes, each kind of wrong one fails with a diff naming the fault."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from dshkit.conformance.anthropic_checks import (
    ANTHROPIC_SERVER_CHECKS,
    run_anthropic_checks,
    select_anthropic_checks,
)
from dshkit.mock_server import MockServer

from ..upstream import upstream

Event = dict[str, Any]


def _stream() -> list[Event]:
    """A correct streamed Message: a signed thinking block, then a text block."""
    return [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                              "model": "deepseek-v4-flash", "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": 4, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-1"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]


def _without(events: list[Event], kind: str, delta: str | None = None) -> list[Event]:
    return [e for e in events if not (e["type"] == kind and (delta is None or e["delta"]["type"] == delta))]


def _edited(events: list[Event], at: int, **change: Any) -> list[Event]:
    return [{**e, **change} if i == at else e for i, e in enumerate(events)]


def _frame(events: list[Event], names: dict[int, str] | None = None) -> bytes:
    """SSE with each event named after its type (or `names[i]`)."""
    names = names or {}
    return b"".join(f"event: {names.get(i, e['type'])}\ndata: {json.dumps(e)}\n\n".encode()
                    for i, e in enumerate(events))


@asynccontextmanager
async def _serving(body: bytes, content_type: str = "text/event-stream") -> AsyncIterator[str]:
    """A server answering every request with `body`; yields the base URL an Anthropic client gets."""

    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async with upstream(handler) as base:
        yield base + "/anthropic"


async def _judge(url: str) -> dict[str, Any]:
    return {r.id: r for r in await run_anthropic_checks(url, "sk-hand", ids=["AN43", "AN48"], timeout_s=5)}


async def test_a_correct_stream_passes_both_stream_checks() -> None:
    async with _serving(_frame(_stream())) as url:
        results = await _judge(url)
    assert {k: (r.status, r.diff) for k, r in results.items()} == {"AN43": ("pass", ""), "AN48": ("pass", "")}


#: (what is wrong, the body, the check that must fail, the line of its diff that names the fault)
WRONG_STREAMS: dict[str, tuple[bytes, str, str]] = {
    "no message_stop": (_frame(_without(_stream(), "message_stop")), "AN43", '+    "message_delta"\n'),
    "an event named other than its type": (_frame(_stream(), names={3: "delta"}), "AN43",
                                           '+  "event name = type": false,\n'),
    "message_delta without usage": (_frame(_edited(_stream(), 9, usage=None)), "AN43",
                                    '+  "message_delta.usage.output_tokens": false\n'),
    "block indices that skip one": (_frame([{**e, "index": 2} if e.get("index") == 1 else e for e in _stream()]),
                                    "AN48", "+    2\n"),
    "deltas of block 0 after block 1 started": (_frame(_edited(_stream(), 7, index=0)), "AN48",
                                                '+  "interleaved": true,\n'),
    "a thinking block without a signature": (_frame(_without(_stream(), "content_block_delta", "signature_delta")),
                                             "AN48", '+  "thinking signature": false\n'),
}


@pytest.mark.parametrize("fault", WRONG_STREAMS)
async def test_each_wrong_stream_fails_the_check_that_owns_it(fault: str) -> None:
    body, item, named = WRONG_STREAMS[fault]
    async with _serving(body) as url:
        results = await _judge(url)
    failed = {k for k, r in results.items() if r.status == "fail"}
    assert failed == {item}, {k: r.diff for k, r in results.items()}
    assert results[item].reason == "response differs"
    assert named in results[item].diff, results[item].diff


async def test_a_stream_served_as_json_fails_on_its_content_type() -> None:
    async with _serving(_frame(_stream()), content_type="application/json") as url:
        results = await _judge(url)
    assert results["AN43"].status == "fail" and '+  "content-type": "application/json",' in results["AN43"].diff
    assert results["AN48"].status == "pass"  # the events themselves are fine


async def test_the_mock_anthropic_surface_passes_and_a_key_check_needs_a_key() -> None:
    async with MockServer(api_key="sk-an-right") as strict, MockServer() as lax:
        keyed = await run_anthropic_checks(strict.anthropic_base_url, "sk-an-right", ids=["AN14", "AN16", "AN65"])
        open_ = await run_anthropic_checks(lax.anthropic_base_url, "sk-whatever", ids=["AN14"])
    assert {r.id: (r.status, r.diff) for r in keyed} == {"AN14": ("pass", ""), "AN16": ("pass", ""),
                                                          "AN65": ("pass", "")}
    (any_key,) = open_
    assert any_key.status == "n/a" and "accepts any key" in any_key.reason and "--api-key" in any_key.reason


async def test_server_checks_fail_on_an_endpoint_that_is_not_anthropic() -> None:
    """The chat route's root is no Anthropic surface: the checks must say so, not pass."""
    async with MockServer() as server:
        results = await run_anthropic_checks(server.base_url, "sk-x", ids=["AN1", "AN43", "AN40"])
    assert {r.id: r.status for r in results} == {"AN1": "fail", "AN43": "fail", "AN40": "fail"}


def test_only_selects_by_id_or_area_in_check_order() -> None:
    assert select_anthropic_checks([]) == list(ANTHROPIC_SERVER_CHECKS)
    assert select_anthropic_checks(["AN65", "area:an-stream", "an-json", "AN43"]) == ["AN40", "AN43", "AN48",
                                                                                       "AN65", "AN75"]
    with pytest.raises(ValueError, match=r"--only 'AN99' names no Anthropic server check; use AN1, .*an-stream"):
        select_anthropic_checks(["AN43", "AN99"])

