"""Client-side helpers for the mock server tests: a WHATWG-style SSE parser and a chunk folder.

Deliberately independent of `harness` (the mock server must not depend on it) and small enough
to read in one go. `reassemble` folds wire chunks the way the openai SDK's accumulator does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


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
    text = body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = Parsed()
    *blocks, tail = text.split("\n\n")
    out.trailing = tail
    for block in blocks:
        data: list[str] = []
        name = None
        for line in block.split("\n"):
            if line.startswith(":"):
                out.comments.append(line[1:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                name = line[6:].strip()
        if data:
            ev = Event("\n".join(data), name)
            if ev.data == "[DONE]":
                out.done = True
            out.events.append(ev)
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
