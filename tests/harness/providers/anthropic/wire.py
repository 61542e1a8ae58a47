"""Builders for Anthropic-format SSE bodies in tests: `sse(*events)` frames each event with its
`event:` line, as DeepSeek and Anthropic send them."""

from __future__ import annotations

import json
from typing import Any


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events
    )


def start(id_: str = "3f9c1a2e-0000-4000-8000-000000000001", model: str = "deepseek-v4-flash", **usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": id_, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage.get("input_tokens", 20), "cache_read_input_tokens": usage.get("cache_read", 0), "output_tokens": 1},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, output_tokens: int = 9, **extra: Any) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}, "usage": {"output_tokens": output_tokens, **extra}}


MESSAGE_STOP = {"type": "message_stop"}
PING = {"type": "ping"}

SIGNATURE = "3f9c1a2e-0000-4000-8000-000000000001"
TOOL_TURN = sse(
    start(),
    block_start(0, {"type": "thinking", "thinking": ""}),  # DeepSeek: no signature key (AN50)
    PING,
    delta(0, "thinking_delta", thinking="Read the file "),
    delta(0, "thinking_delta", thinking="first."),
    delta(0, "signature_delta", signature=SIGNATURE),
    stop(0),
    block_start(1, {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
    delta(1, "input_json_delta", partial_json=""),
    delta(1, "input_json_delta", partial_json='{"file_pa'),
    delta(1, "input_json_delta", partial_json='th": "README.md"}'),
    stop(1),
    message_delta("tool_use", 31, input_tokens=20, cache_read_input_tokens=0),
    MESSAGE_STOP,
)
TEXT_TURN = sse(
    start(),
    block_start(0, {"type": "text", "text": ""}),
    delta(0, "text_delta", text="It is "),
    delta(0, "text_delta", text="a toolkit."),
    stop(0),
    message_delta("end_turn"),
    MESSAGE_STOP,
)
