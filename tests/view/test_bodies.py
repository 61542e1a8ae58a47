"""`request_bodies`: the fast path (each history message serialized once) against the plain path
(`serialize` of every request), over generated agent histories and over real logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import (
    AssistantMessage,
    GenerateOptions,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
)
from dshkit.harness.llm.messages import (
    ImageAttachment,
    ImageBlock,
    ModelSource,
    ReasoningBlock,
    SystemMessage,
    ToolResultMessage,
)
from dshkit.harness.loop import rebuild_requests
from dshkit.harness.providers.deepseek import DeepSeekConfig
from dshkit.harness.session import parse_session_log
from dshkit.view.bodies import request_bodies

from .conftest import Walk

TOOLS = (
    ToolSchema(name="read", description="Read a file.", parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSchema(name="list", description="List a folder.", parameters={"type": "object"}, strict=False),
)
SOURCE = ModelSource(provider="deepseek", model="deepseek-v4-flash")
TEXT = st.text(max_size=12)


def _assistant(draw: Callable[[Any], Any]) -> AssistantMessage:
    blocks: list[Any] = []
    if draw(st.booleans()):
        blocks.append(ReasoningBlock(text=draw(TEXT)))
    if draw(st.booleans()):
        blocks.append(TextBlock(text=draw(TEXT)))
    for i in range(draw(st.integers(0, 2))):
        blocks.append(ToolCallBlock(id=f"call_{i}", name=draw(st.sampled_from(["read", "list"])), arguments=draw(TEXT)))
    return AssistantMessage(content=tuple(blocks), source=SOURCE)


@st.composite
def histories(draw: Callable[[Any], Any]) -> list[GenerateOptions]:
    """The requests of one agent run: a history that grows step by step, retries that resend
    it, settings that change between calls (thinking, tool choice, system text, tools) and
    compactions that replace the history."""
    history: list[Message] = []
    settings: dict[str, Any] = {"system": "You are terse.", "tools": TOOLS, "reasoning_effort": None,
                                "tool_choice": None, "max_tokens": None}
    requests: list[GenerateOptions] = []
    for _ in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(["user", "assistant", "tool", "system-message", "image", "call", "call", "retry",
                                   "effort", "choice", "system", "tools", "compact"]))
        if op == "user":
            history.append(UserMessage(content=(TextBlock(text=draw(TEXT)),)))
        elif op == "assistant":
            history.append(_assistant(draw))
        elif op == "tool":
            history.append(ToolResultMessage.create(f"call_{draw(st.integers(0, 1))}", draw(TEXT)))
        elif op == "system-message":
            history.append(SystemMessage(content=(TextBlock(text=draw(TEXT)),)))
        elif op == "image":
            image = ImageBlock(attachment=ImageAttachment(attachment_id="a1", media_type="image/png", bytes=3))
            history.append(UserMessage(content=(image,)))
        elif op == "effort":
            settings["reasoning_effort"] = draw(st.sampled_from([None, "off", "none", "low", "high", "max", "huge"]))
        elif op == "choice":
            settings["tool_choice"] = draw(st.sampled_from([None, "auto", "none", "required", "read", "missing"]))
        elif op == "system":
            settings["system"] = draw(st.none() | TEXT)
        elif op == "tools":
            settings["tools"] = draw(st.sampled_from([(), TOOLS, TOOLS[:1]]))
        elif op == "compact":
            history = [*history[-1:], UserMessage(content=(TextBlock(text="summary so far"),))]
        if op in ("call", "retry") or draw(st.booleans()):
            if op == "retry" and requests:
                requests.append(requests[-1])
            else:
                requests.append(GenerateOptions(provider="deepseek", model="deepseek-v4-flash",
                                                messages=tuple(history), **settings))
    return requests


def _outcomes(requests: list[GenerateOptions], config: DeepSeekConfig | None, plain: bool) -> list[Any]:
    """Each request's body, or the error serializing it raised (as its type and message)."""
    out: list[Any] = []
    for k in range(len(requests)):
        try:
            out.append(request_bodies(requests[: k + 1], config, plain=plain)[-1])
        except Exception as exc:
            out.append((type(exc).__name__, str(exc)))
    return out


@given(histories(), st.sampled_from([None, DeepSeekConfig(era="r1"), DeepSeekConfig(tool_only_content="empty"),
                                     DeepSeekConfig(thinking="disabled", max_tokens=64)]))
def test_fast_bodies_equal_plain_bodies(requests: list[GenerateOptions], config: DeepSeekConfig | None) -> None:
    assert _outcomes(requests, config, plain=False) == _outcomes(requests, config, plain=True)


def test_bodies_of_a_real_walk_equal_the_plain_path(walk: Walk) -> None:
    loaded = parse_session_log(walk.log.read_bytes())
    requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    fast = request_bodies(requests)
    assert fast == request_bodies(requests, plain=True) and len(fast) == 3
    # the history only grew: each body holds the one before it, whole, then what the step added
    assert fast[2]["messages"][: len(fast[1]["messages"])] == fast[1]["messages"]


def test_bodies_of_dsh_logs_equal_the_plain_path(dsh_sessions: Path) -> None:
    compared = 0
    for log in sorted(dsh_sessions.glob("*--session*.jsonl")):
        loaded = parse_session_log(log.read_bytes(), lenient=True)
        try:
            requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
        except Exception:
            continue
        try:
            expected = request_bodies(requests, plain=True)
        except Exception:
            continue
        assert request_bodies(requests) == expected, log.name
        compared += 1
    if not compared:
        pytest.skip("no DSH log in the corpus could be rebuilt")
