"""Crash repair: the closers that end a turn a crashed process left open.

If the process died mid-walk (mid-stream, or between a `tool/call` and its `tool/result`), the
log ends inside a turn. On load we append what the loop would have written had it finished
(dsh-core.md §1.10): a synthetic error `tool/result` for every call of the open step that has no
result (TOOL_NOT_STARTED when no `tool/call` was logged, TOOL_OUTCOME_UNKNOWN when one was), then
`step/end` if a step is open, then `turn/end {reason: {kind: 'interrupted'}}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from dshkit.harness.llm import ToolCallBlock
from dshkit.harness.llm.messages import ToolResultMessage

from .events import SessionEvent
from .lossless import JsonValue
from .shapes import logged_message

__all__ = ["TOOL_NOT_STARTED_TEXT", "TOOL_OUTCOME_UNKNOWN_TEXT", "Closer", "interrupted_turn_closers"]

TOOL_NOT_STARTED_TEXT: Final = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
TOOL_OUTCOME_UNKNOWN_TEXT: Final = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Closer:
    """One event to append, as `Session.append` takes it."""

    type: str
    data: JsonValue
    surface_op: str | None = None
    source_event_seqs: tuple[int, ...] | None = None


@dataclass(slots=True)
class _Pending:
    step: int
    call_seq: int | None = None


@dataclass(slots=True)
class _Scan:
    turn: int | None = None
    step: int | None = None
    pending: dict[str, _Pending] = field(default_factory=dict)


def interrupted_turn_closers(events: Sequence[SessionEvent]) -> list[Closer]:
    """The closers for the turn open at the end of `events` (empty when none is open)."""
    scan = _Scan()
    for event in events:
        if event.defect is not None:
            continue  # kept verbatim from an imported log; it takes no part in turns
        type_, data = event.type, event.data
        if type_ == "turn/start":
            scan.turn, scan.step = data["turn"], None
            scan.pending.clear()
        elif type_ == "turn/end":
            scan.turn = scan.step = None
            scan.pending.clear()
        elif type_ == "step/start":
            scan.step = data["step"]
        elif type_ == "step/end":
            scan.step = None
            scan.pending.clear()
        elif type_ == "assistant/message":
            for block in logged_message(type_, data, seq=event.seq).content:
                if isinstance(block, ToolCallBlock):
                    scan.pending[block.id] = _Pending(step=data["step"])
        elif type_ == "tool/call":
            entry = scan.pending.get(data["callId"])
            if entry is not None:
                entry.call_seq = event.seq
        elif type_ == "tool/result":
            result = logged_message(type_, data, seq=event.seq)
            if isinstance(result, ToolResultMessage):
                scan.pending.pop(result.source.call_id, None)
    if scan.turn is None:
        return []
    closers: list[Closer] = []
    seq = len(events)
    for call_id, entry in scan.pending.items():
        started = entry.call_seq is not None
        text = TOOL_OUTCOME_UNKNOWN_TEXT if started else TOOL_NOT_STARTED_TEXT
        error = (
            {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
            if started
            else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
        )
        message = {
            "id": f"interrupted-tool-result-{call_id}-{seq}",
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": text}],
                    "isError": True,
                }
            ],
            "source": {"kind": "tool", "callId": call_id},
        }
        closers.append(
            Closer(
                type="tool/result",
                data={"turn": scan.turn, "step": entry.step, "message": message, "error": error},
                surface_op="append",
                source_event_seqs=(entry.call_seq,) if entry.call_seq is not None else None,
            )
        )
        seq += 1
    if scan.step is not None:
        closers.append(Closer(type="step/end", data={"turn": scan.turn, "step": scan.step}))
    closers.append(Closer(type="turn/end", data={"turn": scan.turn, "reason": {"kind": "interrupted"}}))
    return closers
