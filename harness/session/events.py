"""Session events: the envelope, the surface operations and the catalogue of known types.

Every step of the seed's walk leaves one of these in the log: `turn/start`, `step/start`, the
`user/message`s, each raw `assistant/chunk`, the assembled `assistant/message`, `tool/call` with
the raw argument string, `tool/result`, `step/end`, `turn/end` (dsh-core.md §1.1–1.3). An event
is a slotted frozen dataclass whose `data` stays plain (frozen) JSON, so the log is lossless and
a DSH log imports unchanged; `event_to_json`/`event_from_json` are the envelope codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from dshkit.harness.llm.errors import SessionError

from .lossless import JsonValue

__all__ = [
    "CORE_EVENT_TYPES",
    "PLUGIN_EVENT_TYPES",
    "SESSION_FORMAT_VERSION",
    "SURFACE_EVENT_TYPES",
    "SessionEvent",
    "SurfaceOp",
    "SurfaceReplace",
    "event_from_json",
    "event_to_json",
    "surface_op_from_json",
    "surface_op_to_json",
]

SESSION_FORMAT_VERSION: Final = 0
"""The on-disk format version; a log with another version is refused as unsupported."""

SURFACE_EVENT_TYPES: Final = frozenset({"user/message", "assistant/message", "tool/result"})
"""The only types that may carry (and must carry) `surfaceOp`: they produce model messages."""

CORE_EVENT_TYPES: Final = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "todo/write",
        "request/header",
        "request/context",
        "session/end-seed",
    }
)
"""dsh-core.md §1.2."""

PLUGIN_EVENT_TYPES: Final = frozenset(
    {
        # §1.3 table: written by plugins in core flows.
        "agent/inbox/spliced",
        "llm/retry",
        "llm/retry-started",
        "compaction/start",
        "compaction/summary",
        "compaction/prune",
        "compaction/end",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        # §1.3 "other known types the loader accepts": kept as opaque events.
        "agent-preset/selected",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "command/done",
        "command/run",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "permission/preset",
        "plan/mode",
        "sandbox/mode",
        "schedule/change",
        "session/title",
        "session/title-llm-request",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "web/deepseek-search-llm-request",
    }
)
"""Plugin-merged types a DSH log may hold; their data is accepted as any JSON object."""


@dataclass(frozen=True, slots=True)
class SurfaceReplace:
    """`{"op": "replace", "start", "end"}`: replace the surface nodes from `start` to `end`
    (by their positions in the node list, not by numeric order) with this event."""

    start: int
    end: int


SurfaceOp: TypeAlias = Literal["append"] | SurfaceReplace


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEvent:
    """One logged event. `data` is frozen lossless JSON (`FrozenDict`/`FrozenList`)."""

    type: str
    seq: int
    """Zero-based and contiguous: an event's seq is its index in the log."""
    time: int
    """Epoch milliseconds (0 for events imported from a projected log).

    Any safe integer, negative included: a projected packed row's members are rebuilt from time 0
    plus the row's recorded gaps, and DSH records negative gaps when the wall clock stepped back.
    """
    data: JsonValue
    ignorable: bool = False
    """A reader that does not know `type` may skip the event; without it, it must refuse."""
    surface_op: SurfaceOp | None = None
    """Set exactly on `user/message`, `assistant/message` and `tool/result`."""
    source_event_seqs: tuple[int, ...] | None = None
    """The earlier events this one was made from (its chunks, its `tool/call`, the shadowed nodes)."""
    defect: str | None = None
    """Set only on events of an imported log that break a rule (`parse_session_log(lenient=True)`):
    what is wrong. Such an event is kept verbatim in the log (so it rewrites unchanged) but takes
    no part in the surface, turn tracking or replay; it is never written by dshkit itself."""


def surface_op_to_json(op: SurfaceOp) -> JsonValue:
    if isinstance(op, SurfaceReplace):
        return {"op": "replace", "start": op.start, "end": op.end}
    return "append"


def _nonneg_int(value: Any) -> bool:
    return type(value) is int and value >= 0


_MAX_SAFE = 2**53 - 1


def _safe_int(value: Any) -> bool:
    return type(value) is int and -_MAX_SAFE <= value <= _MAX_SAFE


def surface_op_from_json(value: JsonValue, where: str = "surfaceOp") -> SurfaceOp:
    if value == "append":
        return "append"
    if isinstance(value, Mapping):
        if set(value) != {"op", "start", "end"} or value.get("op") != "replace":
            raise SessionError(
                f"{where}: a replace must be exactly {{op: 'replace', start, end}}, got {value!r}",
                "INVALID_EVENT",
            )
        start, end = value["start"], value["end"]
        if not (_nonneg_int(start) and _nonneg_int(end)):
            raise SessionError(
                f"{where}: replace start and end must be non-negative integers", "INVALID_EVENT"
            )
        return SurfaceReplace(start, end)
    raise SessionError(f"{where}: expected 'append' or a replace object, got {value!r}", "INVALID_EVENT")


_ENVELOPE_KEYS: Final = frozenset(
    {"type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"}
)


def event_to_json(event: SessionEvent) -> dict[str, JsonValue]:
    """The event as one JSONL line holds it."""
    out: dict[str, JsonValue] = {
        "type": event.type,
        "seq": event.seq,
        "time": event.time,
        "data": event.data,
    }
    if event.ignorable:
        out["ignorable"] = True
    if event.surface_op is not None:
        out["surfaceOp"] = surface_op_to_json(event.surface_op)
    if event.source_event_seqs is not None:
        out["sourceEventSeqs"] = list(event.source_event_seqs)
    return out


def event_from_json(value: JsonValue, where: str = "event") -> SessionEvent:
    """Read an envelope (data is not checked here: `Session` validates it on append/seed)."""
    if not isinstance(value, Mapping):
        raise SessionError(f"{where}: an event must be a JSON object", "INVALID_EVENT")
    extra = set(value) - _ENVELOPE_KEYS
    if extra:
        raise SessionError(
            f"{where}: unexpected top-level keys {sorted(extra)} (an event holds only "
            "type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs)",
            "INVALID_EVENT",
        )
    type_ = value.get("type")
    if not isinstance(type_, str) or not type_:
        raise SessionError(f"{where}.type: expected a non-empty string", "INVALID_EVENT")
    seq, time = value.get("seq"), value.get("time")
    if not _nonneg_int(seq):
        raise SessionError(f"{where}.seq: expected a non-negative integer", "INVALID_EVENT")
    if not _safe_int(time):
        raise SessionError(f"{where}.time: expected epoch milliseconds (a safe integer)", "INVALID_EVENT")
    if "data" not in value:
        raise SessionError(f"{where}: missing data", "INVALID_EVENT")
    ignorable = value.get("ignorable", False)
    if ignorable is not True and ignorable is not False:
        raise SessionError(f"{where}.ignorable: only `true` is allowed", "INVALID_EVENT")
    op = value.get("surfaceOp")
    seqs = value.get("sourceEventSeqs")
    if seqs is not None and (
        not isinstance(seqs, list) or not all(type(s) is int for s in seqs)
    ):
        raise SessionError(f"{where}.sourceEventSeqs: expected a list of integers", "INVALID_EVENT")
    assert isinstance(seq, int) and isinstance(time, int)
    return SessionEvent(
        type=type_,
        seq=seq,
        time=time,
        data=value["data"],
        ignorable=bool(ignorable),
        surface_op=None if op is None else surface_op_from_json(op, f"{where}.surfaceOp"),
        source_event_seqs=None if seqs is None else tuple(seqs),
    )
