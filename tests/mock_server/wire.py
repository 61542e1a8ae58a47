"""Client-side helpers for the mock server tests: the body read as a client reads it, and a chunk
folder.

`parse_sse` reads a body with the harness's one SSE decoder (WHATWG rules: CR/LF/CRLF, multi-line
data, comments, byte order mark), so these tests see exactly the events every adapter sees.
`reassemble` folds wire chunks the way the openai SDK's accumulator does, independently of the
harness's translator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dshkit.harness.providers.sse import SSEComment, SSEDecoder, SSEEvent


@dataclass
class Event:
    data: str
    event: str | None = None


@dataclass
class Parsed:
    events: list[Event] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    done: bool = False
    trailing: str = ""
    """Text after the last complete event (an unterminated line)."""

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [json.loads(e.data) for e in self.events if e.data != "[DONE]"]


def parse_sse(body: bytes) -> Parsed:
    out = Parsed()
    decoder = SSEDecoder()
    for item in decoder.feed(body):
        if isinstance(item, SSEComment):
            out.comments.append(item.text.rstrip())
        elif isinstance(item, SSEEvent):
            # An event without an `event:` line is `message` to the decoder; None here.
            out.events.append(Event(item.data, None if item.event == "message" else item.event))
            out.done = out.done or item.data == "[DONE]"
    # The raw text after the last blank line: what the decoder never dispatched.
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    out.trailing = text.split("\n\n")[-1]
    return out


def reassemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """content, reasoning, tool calls by index, last finish_reason, last non-null usage."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    usage = None
    for ch in chunks:
        if ch.get("usage") is not None:
            usage = ch["usage"]
        for choice in ch.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            r = delta.get("reasoning_content", delta.get("reasoning"))
            if isinstance(r, str):
                reasoning.append(r)
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                slot["id"] += tc.get("id") or ""
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason") is not None:
                finish = choice["finish_reason"]
    return {
        "content": "".join(content),
        "reasoning": "".join(reasoning),
        "tool_calls": [calls[i] for i in sorted(calls)],
        "finish_reason": finish,
        "usage": usage,
    }


def chat(text: str = "hello", *, model: str = "deepseek-v4-flash", stream: bool = True,
         **extra: Any) -> dict[str, Any]:
    """A minimal valid request body."""
    return {"model": model, "messages": [{"role": "user", "content": text}], "stream": stream,
            **extra}
