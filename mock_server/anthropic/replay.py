"""Session-log replay on the Anthropic surface: a logged call's StreamChunks as a reply.

A session log keeps each model call as the adapter's `StreamChunk`s; :func:`chunk_replay` turns
one call back into a :class:`~dshkit.mock_server.generate.reply.Reply` cut where the logged deltas were
cut, and says how the response must end so the client sees the same outcome again (a clean
stop, a held stream, an EOF, a reset, an in-band error or an HTTP error).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan

__all__ = ["ChunkReplay", "chunk_replay"]

#: Failure code → the status that tells an Anthropic-protocol client the same class again.
_STATUS_OF_CODE: Mapping[str, int] = {
    "AUTH": 401,
    "QUOTA": 402,
    "RATE_LIMIT": 429,
    "CONTEXT_WINDOW_EXCEEDED": 400,
    "INVALID_REQUEST": 400,
    "SERVER": 500,
    "INSUFFICIENT_SYSTEM_RESOURCE": 529,
}
_FINISH_OF_KIND: Mapping[str, str] = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkReplay:
    """One logged call, ready for this surface: the reply, its fragment plan, and how it ends."""

    reply: Reply
    split: FragmentPlan
    """Cut points that give back the logged text and reasoning deltas (and the first call's)."""
    end: Literal["close", "hold", "eof", "reset", "error_event", "http"] = "close"
    """`hold`: an aborted call (the client gave up); `eof`: STREAM_CLOSED, no message_delta;
    `reset`: a transport failure; `error_event`: an in-band error after content; `http`: an
    error status before any content."""
    status: int = 200
    error_type: str | None = None
    message: str = ""


def _points(fragments: Sequence[str]) -> SplitPlan:
    cuts, pos = [], 0
    for f in fragments[:-1]:
        pos += len(f)
        cuts.append(pos)
    return SplitPlan(mode="points", points=tuple(cuts))


def chunk_replay(chunks: Sequence[Any], failure: Any = None, *, hang: bool = False) -> ChunkReplay:
    """A logged call's `StreamChunk`s (see :mod:`dshkit.mock_server.chunk_wire` for the chat route's
    form) as a reply for this surface; `failure` (an `LlmFailure`) overrides how it ends."""
    from dshkit.harness.llm import (
        BlockEnd,
        Finish,
        ReasoningBlock,
        ReasoningDelta,
        TextBlock,
        TextDelta,
        ToolCallBlock,
        ToolCallDelta,
        Usage,
    )

    texts: dict[int, list[str]] = {}
    thoughts: dict[int, list[str]] = {}
    calls: dict[int, list[Any]] = {}  # index -> [id, name, fragments]
    usage: Any = None
    finish: Any = None
    for c in chunks:
        if isinstance(c, TextDelta):
            texts.setdefault(c.index, []).append(c.text)
        elif isinstance(c, ReasoningDelta):
            thoughts.setdefault(c.index, []).append(c.text)
        elif isinstance(c, ToolCallDelta):
            slot = calls.setdefault(c.index, [c.id, c.name or "", []])
            slot[2].append(c.arguments_delta)
        elif isinstance(c, BlockEnd):
            # A block whose deltas do not add up to it (a compaction call logs none): the rest.
            b = c.block
            if isinstance(b, ToolCallBlock) and c.index not in calls:
                calls[c.index] = [b.id, b.name, [b.arguments]]
            elif isinstance(b, TextBlock | ReasoningBlock):
                into = texts if isinstance(b, TextBlock) else thoughts
                sent = "".join(into.get(c.index, ()))
                if b.text.startswith(sent) and len(b.text) > len(sent):
                    into.setdefault(c.index, []).append(b.text[len(sent):])
        elif isinstance(c, Usage):
            usage = c.usage
        elif isinstance(c, Finish):
            finish = c
    text = [f for i in sorted(texts) for f in texts[i] if f]
    reasoning = [f for i in sorted(thoughts) for f in thoughts[i] if f]
    tool_calls = tuple(
        ToolCall(id=calls[i][0], name=calls[i][1], arguments="".join(calls[i][2])) for i in sorted(calls)
    )
    first_args = [f for f in calls[min(calls)][2] if f] if calls else []
    split = FragmentPlan(text=_points(text), reasoning=_points(reasoning), arguments=_points(first_args))
    wire_usage = None
    if usage is not None:
        wire_usage = {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens or 0,
            "cache_read_input_tokens": usage.cache_read_tokens or 0,
            "output_tokens": usage.output_tokens,
        }
    if failure is None and finish is not None and not finish.reason.ok:
        failure = finish.reason.failure
        hang = hang or finish.reason.kind == "aborted"
    kind = finish.reason.kind if finish is not None else "stop"
    reply = Reply(content="".join(text), reasoning="".join(reasoning), tool_calls=tool_calls,
                  finish_reason=_FINISH_OF_KIND.get(kind, "stop"), usage=wire_usage)
    if hang:
        return ChunkReplay(reply=reply, split=split, end="hold")
    if failure is None:
        return ChunkReplay(reply=reply, split=split)
    code = str(failure.code)
    content = bool(text or reasoning or tool_calls)
    if code == "STREAM_CLOSED":
        return ChunkReplay(reply=reply, split=split, end="eof")
    if code in ("TRANSPORT", "TIMEOUT"):
        return ChunkReplay(reply=reply, split=split, end="reset")
    if code == "EMPTY_RESPONSE" and not content:
        return ChunkReplay(reply=reply, split=split)
    if code == "CONTENT_FILTER":
        return ChunkReplay(reply=dataclasses.replace(reply, finish_reason="content_filter"), split=split)
    pe = failure.provider_error
    status = failure.status or _STATUS_OF_CODE.get(code)
    etype = pe.type if pe is not None and pe.type else None
    if not content and status is not None and status >= 400:
        return ChunkReplay(reply=reply, split=split, end="http", status=status, error_type=etype,
                           message=failure.message)
    return ChunkReplay(reply=reply, split=split, end="error_event", error_type=etype or "api_error",
                       message=failure.message)
