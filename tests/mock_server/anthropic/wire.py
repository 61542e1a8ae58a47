"""The Anthropic wire as these tests read it: a request body, a POST to the mock's Messages
path, and a stream's events folded into a message the way the `anthropic` SDK folds them."""

from __future__ import annotations

import json
from typing import Any

import httpx

from dshkit.mock_server import MockServer

from ..wire import parse_sse

KEY = "sk-ant-test-key"


def body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 256,
            "messages": [{"role": "user", "content": text}], **extra}


def events(data: bytes) -> list[dict[str, Any]]:
    """Each event's JSON, after checking the `event:` name equals its `type` (AN43)."""
    parsed = parse_sse(data)
    out = []
    for e in parsed.events:
        obj = json.loads(e.data)
        assert e.event == obj["type"], (e.event, obj)
        out.append(obj)
    return out


def fold(evs: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble a message from events the way the anthropic SDK does (signature replaced,
    partial_json concatenated), checking the grammar and index rules on the way (AN47–AN53)."""
    assert evs[0]["type"] == "message_start"
    msg = dict(evs[0]["message"], content=[])
    assert msg["stop_reason"] is None and msg["content"] == []
    open_index: int | None = None
    json_buf: dict[int, str] = {}
    for ev in evs[1:]:
        t = ev["type"]
        if t == "content_block_start":
            assert open_index is None and ev["index"] == len(msg["content"])  # no interleaving
            open_index = ev["index"]
            msg["content"].append(dict(ev["content_block"]))
        elif t == "content_block_delta":
            assert ev["index"] == open_index
            block, d = msg["content"][ev["index"]], ev["delta"]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            else:
                assert d["type"] == "input_json_delta"
                json_buf[ev["index"]] = json_buf.get(ev["index"], "") + d["partial_json"]
        elif t == "content_block_stop":
            assert ev["index"] == open_index
            open_index = None
        elif t == "message_delta":
            msg.update(ev["delta"])
            msg["usage"] = {**msg["usage"], **ev["usage"]}
        elif t == "message_stop":
            assert ev is evs[-1]
        else:
            assert t == "ping"
    msg["input_json"] = json_buf
    return msg


async def post(client: httpx.AsyncClient, server: MockServer, payload: Any, *,
               path: str = "/anthropic/v1/messages", headers: dict[str, str] | None = None) -> httpx.Response:
    h = {"x-api-key": KEY, "anthropic-version": "2023-06-01"} if headers is None else headers
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await client.post(server.make_url(path), content=data, headers=h)
