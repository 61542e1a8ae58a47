"""Session-log replay on the Anthropic surface: a logged call's plan as a reply of this protocol.

`dshkit.harness.replay.plan.plan_call` says what one logged call held and how it ended;
:func:`chunk_replay` renders that plan as a :class:`~dshkit.mock_server.generate.reply.Reply`
cut where the logged deltas were cut, and says how the response must end so the client sees the
same outcome again. Anthropic has no stop reason for an exhausted server: where the chat wire
sends `insufficient_system_resource` as a finish reason, this one answers the overloaded status
529 (an error event after content).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.harness.replay.plan import plan_call
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan

__all__ = ["ChunkReplay", "chunk_replay"]

_OVERLOADED = 529
_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length", "content-filter": "content_filter"}


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
    plan = plan_call(chunks, failure, hang=hang)
    text, reasoning = plan.fragments("text"), plan.fragments("reasoning")
    calls = plan.tool_calls()
    first_args = [f for f in calls[0][2] if f] if calls else []
    split = FragmentPlan(text=_points(text), reasoning=_points(reasoning), arguments=_points(first_args))
    usage = None
    if plan.usage is not None:
        usage = {
            "input_tokens": plan.usage.input_tokens,
            "cache_creation_input_tokens": plan.usage.cache_write_tokens or 0,
            "cache_read_input_tokens": plan.usage.cache_read_tokens or 0,
            "output_tokens": plan.usage.output_tokens,
        }
    reply = Reply(
        content="".join(text), reasoning="".join(reasoning),
        tool_calls=tuple(ToolCall(id=i, name=n, arguments="".join(a)) for i, n, a in calls),
        finish_reason=_FINISH_REASONS.get(plan.finish, "stop"), usage=usage,
    )
    end, status, failure_ = plan.end, plan.status, plan.failure
    exhausted = plan.finish == "insufficient-system-resource"
    if exhausted and end == "finished":
        end = "in-band-error" if plan.content else "http-error"
        status = (failure_.status if failure_ is not None else None) or _OVERLOADED
    pe = failure_.provider_error if failure_ is not None else None
    # an exhausted server is `overloaded_error` on this wire, before content (the 529) and after
    etype = pe.type if pe is not None and pe.type else ("overloaded_error" if exhausted else None)
    message = plan.message
    if end == "http-error":
        assert status is not None  # an http-error always has one
        return ChunkReplay(reply=reply, split=split, end="http", status=status, error_type=etype, message=message)
    if end == "in-band-error":
        return ChunkReplay(reply=reply, split=split, end="error_event", error_type=etype or "api_error", message=message)
    if end == "finished":
        return ChunkReplay(reply=reply, split=split)
    return ChunkReplay(reply=reply, split=split, end=end)
