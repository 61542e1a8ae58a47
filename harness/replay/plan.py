"""The plan of one replayed call: what its content was and how it ended, for any wire.

A session log keeps each model call as the adapter's `StreamChunk`s (dsh-testing.md §2.2);
serving it again over a wire needs two facts the chunks only imply. `plan_call` derives both
once: the content pieces in the order they arrived (text and reasoning deltas, tool-call
argument fragments with the call's id and name on its first piece, and whatever a `block-end`
holds beyond its deltas, as a compaction call logs no deltas at all), and the ending that makes
a client report the same outcome again:

- `finished`: a finish reason (`stop`, `tool-calls`, `max-tokens`, or the failures that are
  finish reasons on the wire: `content-filter`, `insufficient-system-resource`; an
  EMPTY_RESPONSE is a `stop` with no content);
- `http-error`: an error status before any content (AUTH 401, QUOTA 402, RATE_LIMIT 429,
  INVALID_REQUEST and CONTEXT_WINDOW_EXCEEDED 400, SERVER 500, or the logged `status`);
- `eof`: the stream stops without its end (STREAM_CLOSED);
- `reset`: the connection drops (TRANSPORT, TIMEOUT);
- `in-band-error`: an error event after content, or for a class no status expresses;
- `hold`: the recorded client gave up (an `aborted` finish or a `hang` entry): the stream stays
  open until the live client leaves.

Each wire renders the plan in its own bytes: Chat Completions in
`dshkit.mock_server.chunk_wire`, Anthropic Messages in `dshkit.mock_server.anthropic.replay`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from dshkit.harness.llm import (
    ErrorCode,
    Finish,
    LlmFailure,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import (
    BlockEnd,
    BlockStart,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from dshkit.harness.llm.errors import is_context_window_exceeded, is_quota_exceeded
from dshkit.harness.llm.messages import ReasoningBlock

__all__ = ["STATUS_OF_CODE", "CallEnd", "CallPlan", "FinishName", "Piece", "plan_call"]

CallEnd = Literal["finished", "http-error", "eof", "reset", "in-band-error", "hold"]
FinishName = Literal["stop", "tool-calls", "max-tokens", "content-filter", "insufficient-system-resource"]

STATUS_OF_CODE: Mapping[str, int] = {
    ErrorCode.AUTH: 401,
    ErrorCode.QUOTA: 402,
    ErrorCode.RATE_LIMIT: 429,
    ErrorCode.CONTEXT_WINDOW_EXCEEDED: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.SERVER: 500,
}
"""Failure code → the HTTP status both wires' adapters classify as that code again."""
_FINISH_CODES: Mapping[str, FinishName] = {
    ErrorCode.CONTENT_FILTER: "content-filter",
    ErrorCode.INSUFFICIENT_SYSTEM_RESOURCE: "insufficient-system-resource",
}
_FINISH_KINDS: Mapping[str, FinishName] = {"stop": "stop", "tool-calls": "tool-calls", "max-tokens": "max-tokens"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """One fragment of a call's content, in arrival order."""

    kind: Literal["text", "reasoning", "tool-call"]
    index: int
    """The block index in the logged stream."""
    text: str
    """The text or reasoning delta, or a fragment of the tool call's arguments."""
    call_id: str = ""
    """Tool call: its id (on every piece; the wire sends it with the first)."""
    name: str = ""
    """Tool call: its name."""
    first: bool = False
    """Tool call: the first piece of this call (where the wire names the call)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPlan:
    """One logged call, wire-neutral: its content pieces, usage and ending."""

    pieces: tuple[Piece, ...] = ()
    usage: TokenUsage | None = None
    end: CallEnd = "finished"
    finish: FinishName = "stop"
    """With `finished`: the finish reason to send."""
    failure: LlmFailure | None = None
    """The failure the client must report again (None for a plain finish)."""
    message: str = ""
    """The failure's message as a wire sends it: clients tell a context overflow and an empty
    balance by the wording alone, so a logged message without it gets it added."""
    status: int | None = None
    """The status of `http-error`; for `in-band-error`, the status its code maps to, if any."""

    @property
    def content(self) -> bool:
        """Whether anything reaches the client before the end (a text, or any tool call)."""
        return any(p.text or p.kind == "tool-call" for p in self.pieces)

    def fragments(self, kind: Literal["text", "reasoning"]) -> list[str]:
        """The non-empty fragments of every block of `kind`, blocks in index order."""
        by_block: dict[int, list[str]] = {}
        for p in self.pieces:
            if p.kind == kind and p.text:
                by_block.setdefault(p.index, []).append(p.text)
        return [f for i in sorted(by_block) for f in by_block[i]]

    def tool_calls(self) -> list[tuple[str, str, list[str]]]:
        """`(id, name, argument fragments)` of each tool call, in block index order."""
        calls: dict[int, tuple[str, str, list[str]]] = {}
        for p in self.pieces:
            if p.kind == "tool-call":
                calls.setdefault(p.index, (p.call_id, p.name, []))[2].append(p.text)
        return [calls[i] for i in sorted(calls)]


def _block_rest(chunk: BlockEnd, calls: dict[int, tuple[str, str]], sent: dict[int, list[str]]) -> Piece | None:
    """What a `block-end` holds beyond the deltas sent for it (a compaction call logs no deltas
    at all, §2.4), so the client assembles the logged block."""
    block = chunk.block
    if isinstance(block, ToolCallBlock):
        if chunk.index in calls:
            return None
        calls[chunk.index] = (block.id, block.name)
        return Piece(kind="tool-call", index=chunk.index, text=block.arguments, call_id=block.id,
                     name=block.name, first=True)
    if isinstance(block, (TextBlock, ReasoningBlock)):
        so_far = "".join(sent.get(chunk.index, ()))
        if block.text.startswith(so_far) and len(block.text) > len(so_far):
            kind: Literal["text", "reasoning"] = "text" if isinstance(block, TextBlock) else "reasoning"
            return Piece(kind=kind, index=chunk.index, text=block.text[len(so_far):])
    return None


def _worded(failure: LlmFailure | None) -> str:
    if failure is None:
        return ""
    if failure.code == ErrorCode.CONTEXT_WINDOW_EXCEEDED and not is_context_window_exceeded(failure.message):
        return failure.message + " (this model's maximum context length was exceeded)"
    if failure.code == ErrorCode.QUOTA and not is_quota_exceeded(failure.message):
        return failure.message + " (insufficient balance)"
    return failure.message


def plan_call(chunks: Sequence[StreamChunk], failure: LlmFailure | None = None, *, hang: bool = False) -> CallPlan:
    """The plan of one logged call. `failure` ends it with that error even without an error
    `finish` among `chunks` (an override's `throw` entry); `hang` holds it open after the
    chunks (a `hang` entry)."""
    pieces: list[Piece] = []
    calls: dict[int, tuple[str, str]] = {}  # block index -> the call's id and name (first delta)
    sent: dict[int, list[str]] = {}
    usage: TokenUsage | None = None
    finish: Finish | None = None
    for chunk in chunks:
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            sent.setdefault(chunk.index, []).append(chunk.text)
            kind: Literal["text", "reasoning"] = "text" if isinstance(chunk, TextDelta) else "reasoning"
            pieces.append(Piece(kind=kind, index=chunk.index, text=chunk.text))
        elif isinstance(chunk, ToolCallDelta):
            first = chunk.index not in calls
            call_id, name = calls.setdefault(chunk.index, (chunk.id, chunk.name or ""))
            pieces.append(Piece(kind="tool-call", index=chunk.index, text=chunk.arguments_delta,
                                call_id=call_id, name=name, first=first))
        elif isinstance(chunk, BlockEnd):
            rest = _block_rest(chunk, calls, sent)
            if rest is not None:
                pieces.append(rest)
        elif isinstance(chunk, Usage):
            usage = chunk.usage
        elif isinstance(chunk, Finish):
            finish = chunk
        elif not isinstance(chunk, BlockStart):  # pragma: no cover - the union is closed
            raise TypeError(f"not a StreamChunk: {chunk!r}")
    if failure is None and finish is not None and not finish.reason.ok:
        failure = finish.reason.failure
        hang = hang or finish.reason.kind == "aborted"
    plan = CallPlan(pieces=tuple(pieces), usage=usage, failure=failure, message=_worded(failure))
    if hang:
        return replace(plan, end="hold")
    if failure is None:
        return replace(plan, finish=_FINISH_KINDS.get(finish.reason.kind if finish else "stop", "stop"))
    code = failure.code
    if code == ErrorCode.STREAM_CLOSED:
        return replace(plan, end="eof")
    if code in (ErrorCode.TRANSPORT, ErrorCode.TIMEOUT):
        return replace(plan, end="reset")
    if code == ErrorCode.EMPTY_RESPONSE and not plan.content:
        return plan  # a `stop` with nothing in it
    if code in _FINISH_CODES:
        return replace(plan, finish=_FINISH_CODES[code])
    status = failure.status or STATUS_OF_CODE.get(code)
    if not plan.content and status is not None and status >= 400:
        return replace(plan, end="http-error", status=status)
    return replace(plan, end="in-band-error", status=status)
