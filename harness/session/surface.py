"""The surface: the ordered list of model-visible event seqs, and its fold rules.

In the seed's walk, `derive_messages()` reads history off this list, never off the raw log
(dsh-core.md §1.5): a surface event either appends its own seq, or replaces a run of current
nodes (located by position, not numeric order) with itself, as compaction does. `plan()` checks
an event against the current state without changing it, so `Session.append` stays atomic; `apply()`
commits a plan. Positions are kept in a dict so an append costs O(1); a replace rebuilds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dshkit.harness.llm.errors import SessionError

from .events import SURFACE_EVENT_TYPES, SessionEvent, SurfaceReplace
from .lossless import JsonValue

__all__ = ["Surface", "SurfacePlan"]


@dataclass(frozen=True, slots=True)
class SurfacePlan:
    """What committing one event does to the surface."""

    seq: int
    start_pos: int | None = None
    """For a replace: the first shadowed position (inclusive)."""
    end_pos: int | None = None
    shadowed: tuple[int, ...] = ()


def _fail(problem: str) -> SessionError:
    return SessionError(problem, "INVALID_SURFACE")


def _strip_inner_content(data: Mapping[str, Any]) -> Any:
    """A tool/result's data without `message.content[0].content` (what a replace may change),
    or without `content` in the web app's flat form (`{turn, step, callId, content, isError}`)."""
    out = dict(data)
    if "message" not in out and "content" in out:
        del out["content"]
        return out
    message = dict(out.get("message") or {})
    content = list(message.get("content") or [])
    if content and isinstance(content[0], Mapping):
        first = dict(content[0])
        first.pop("content", None)
        content[0] = first
    message["content"] = content
    out["message"] = message
    return out


class Surface:
    """Model-visible nodes in order, plus a counter of replaces."""

    __slots__ = ("_pos", "nodes", "replace_generation")

    def __init__(self) -> None:
        self.nodes: list[int] = []
        self._pos: dict[int, int] = {}
        self.replace_generation = 0

    def position(self, seq: int) -> int | None:
        return self._pos.get(seq)

    def plan(self, event: SessionEvent, log: Sequence[SessionEvent]) -> SurfacePlan | None:
        """Check `event` against the rules; `None` for a non-surface event."""
        op, seqs = event.surface_op, event.source_event_seqs
        if event.type not in SURFACE_EVENT_TYPES:
            if op is not None or seqs is not None:
                raise _fail(
                    f"{event.type} is not a surface event: surfaceOp and sourceEventSeqs are "
                    "allowed only on user/message, assistant/message and tool/result"
                )
            return None
        if op is None:
            raise _fail(f"{event.type} must carry surfaceOp ('append' or a replace)")
        if seqs is not None:
            if not seqs and event.type != "assistant/message":
                raise _fail("an empty sourceEventSeqs is allowed only on assistant/message")
            if len(set(seqs)) != len(seqs):
                raise _fail(f"sourceEventSeqs {list(seqs)} has duplicates")
            for s in seqs:
                if s < 0 or s >= event.seq:
                    raise _fail(f"sourceEventSeqs must name earlier events; {s} is not < {event.seq}")
        if op == "append":
            return SurfacePlan(event.seq)
        assert isinstance(op, SurfaceReplace)
        start_pos, end_pos = self._pos.get(op.start), self._pos.get(op.end)
        if start_pos is None:
            raise _fail(f"replace start {op.start} is not a current surface node")
        if end_pos is None:
            raise _fail(f"replace end {op.end} is not a current surface node")
        if start_pos > end_pos:
            raise _fail(f"replace start {op.start} comes after end {op.end} on the surface")
        shadowed = tuple(self.nodes[start_pos : end_pos + 1])
        missing = [s for s in shadowed if s not in (seqs or ())]
        if missing:
            raise _fail(f"a replace's sourceEventSeqs must include every shadowed node; missing {missing}")
        if event.type == "tool/result":
            self._check_tool_result_replace(event.data, shadowed, log)
        return SurfacePlan(event.seq, start_pos, end_pos, shadowed)

    @staticmethod
    def _check_tool_result_replace(
        data: JsonValue, shadowed: tuple[int, ...], log: Sequence[SessionEvent]
    ) -> None:
        if len(shadowed) != 1 or log[shadowed[0]].type != "tool/result":
            raise _fail("a tool/result replace must shadow exactly one tool/result node")
        before = log[shadowed[0]].data
        if not isinstance(data, Mapping) or _strip_inner_content(data) != _strip_inner_content(before):
            raise _fail(
                "a tool/result replace may change only message.content[0].content "
                "(turn, step, error, meta, id, source, toolCallId and isError must stay equal)"
            )

    def apply(self, plan: SurfacePlan) -> None:
        if plan.start_pos is None or plan.end_pos is None:
            self._pos[plan.seq] = len(self.nodes)
            self.nodes.append(plan.seq)
            return
        self.nodes[plan.start_pos : plan.end_pos + 1] = [plan.seq]
        self._pos = {seq: i for i, seq in enumerate(self.nodes)}
        self.replace_generation += 1
