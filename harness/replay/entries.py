"""Replay entries: one per logged model call, derived from a session log (dsh-testing.md §2.4).

A session log records every model call as its `assistant/chunk` events (§2.2).
`derive_replay_script` walks a log's events into `ReplayEntry`s, splitting at each `finish`;
a `SessionScript` holds the entries of one logged session. What a log cannot say (a call that
threw before its first chunk, a call the client cancelled) comes from an override sidecar
(`override.py`); the files around a log are found by `scripts.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dshkit.harness.llm import HarnessError, StreamChunk
from dshkit.harness.llm.codec import chunk_from_json
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.lossless import thaw_json

__all__ = [
    "HANG_PREFIX",
    "ReplayEntry",
    "ReplayError",
    "ReplayKind",
    "SessionScript",
    "derive_replay_script",
]

ReplayKind = Literal["chunks", "throw", "hang"]
HANG_PREFIX: tuple[dict[str, Any], ...] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)
"""Upstream's fixed `hang` prefix (§2.5): what a hanging call sends before it waits."""


class ReplayError(HarnessError):
    """A log, sidecar or placeholder that cannot be replayed; the message says what to do."""

    def __init__(self, message: str, code: str = "REPLAY_INVALID") -> None:
        super().__init__(message, code)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayEntry:
    """One recorded model call, as upstream's replay entries (§2.4)."""

    kind: ReplayKind = "chunks"
    chunks: tuple[dict[str, Any], ...] = ()
    """`StreamChunk` JSON (DSH camelCase); string leaves may hold `{{fromRequest:…}}`."""
    message: str | None = None
    """`throw`: the failure message."""
    code: str | None = None
    """`throw`: the failure code (AUTH, SERVER, …)."""
    ready_file: str | None = None
    """`hang`: an empty marker file created once the prefix was sent, relative to the
    workspace (checked when the sidecar is read: never absolute, never `..`)."""
    where: str = ""
    """Where it came from, for messages (`file turn 1 step 2`)."""

    @property
    def played_chunks(self) -> tuple[dict[str, Any], ...]:
        """The chunk JSON this call sends: its own, or the fixed prefix of a `hang`."""
        return HANG_PREFIX if self.kind == "hang" else self.chunks

    def stream_chunks(self, request: Callable[[], str] | None = None) -> list[StreamChunk]:
        """The chunks to play, placeholders filled from `request()` (the live request's strings,
        see `request_strings`), which is called only when a chunk holds a placeholder."""
        from .placeholders import fill_from_request, has_placeholder

        raw: Any = list(self.played_chunks)
        if request is not None and has_placeholder(raw):
            raw = fill_from_request(raw, request())
        return [chunk_from_json(c, f"{self.where} chunks[{i}]") for i, c in enumerate(raw)]

    @property
    def aborted(self) -> bool:
        """The recorded client gave up on this call: a `hang`, or chunks ending in an `aborted`
        finish. Replay holds it open until the live client cancels."""
        if self.kind == "hang":
            return True
        last = self.chunks[-1] if self.chunks else None
        return last is not None and last.get("type") == "finish" and last.get("reason", {}).get("kind") == "aborted"

    def to_json(self) -> dict[str, Any]:
        """The sidecar form of this entry."""
        if self.kind == "hang":
            return {"kind": "hang", **({"readyFile": self.ready_file} if self.ready_file else {})}
        out: dict[str, Any] = {"kind": self.kind, "chunks": list(self.chunks)}
        if self.kind == "throw":
            out.update(message=self.message, code=self.code)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionScript:
    """The replay entries of one logged session, in call order."""

    session_id: str
    created_at: int
    entries: tuple[ReplayEntry, ...]
    source: str
    """The log file (or sidecar) the entries came from."""
    primary: bool = True


def derive_replay_script(events: Sequence[SessionEvent], *, source: str = "<log>") -> list[ReplayEntry]:
    """One entry per model call: each run of `assistant/chunk` events closed by a `finish`.

    A compaction summary marked `llmStreamCall` is one synthetic call at its position (its raw
    output as empty-delta blocks, then usage and a `stop` finish). A call left without a finish
    (a thrown stream) cannot be replayed from the log; the error says to add an override.
    """
    entries: list[ReplayEntry] = []
    group: list[dict[str, Any]] = []
    key: tuple[int, int] | None = None

    def open_call_error(boundary: str) -> ReplayError:
        turn, step = key or (0, 0)
        return ReplayError(
            f"{source}: the model call of turn {turn} step {step} has chunks but no finish "
            f"(a thrown stream) and ends at {boundary}; write a replay.override.json patch "
            "for it (dsh-testing.md §2.6)"
        )

    for event in events:
        if event.defect is not None:
            continue  # an imported event that breaks a rule (its load warning says which)
        if event.type == "assistant/chunk":
            data = thaw_json(event.data)
            here = (data["turn"], data["step"])
            if group and here != key:
                raise open_call_error(f"turn {here[0]} step {here[1]}")
            key = here
            group.append(data["chunk"])
            if data["chunk"].get("type") == "finish":
                entries.append(
                    ReplayEntry(chunks=tuple(group), where=f"{source} turn {here[0]} step {here[1]}")
                )
                group = []
        elif event.type == "compaction/summary":
            data = thaw_json(event.data)
            if not data.get("llmStreamCall"):
                continue  # a template or remote summarizer never used this adapter
            if group:
                raise open_call_error("a compaction summary")
            raw = data.get("rawOutput")
            if not isinstance(raw, list):
                raise ReplayError(
                    f"{source} seq {event.seq}: a compaction/summary marked llmStreamCall has no "
                    "rawOutput to replay"
                )
            chunks: list[dict[str, Any]] = []
            for i, block in enumerate(raw):
                chunks.append({"type": "block-start", "index": i, "blockType": block.get("type", "text")})
                chunks.append({"type": "block-end", "index": i, "block": block})
            if isinstance(data.get("usage"), dict):
                chunks.append({"type": "usage", "usage": data["usage"]})
            chunks.append({"type": "finish", "reason": {"kind": "stop"}})
            entries.append(ReplayEntry(chunks=tuple(chunks), where=f"{source} compaction seq {event.seq}"))
    if group:
        raise open_call_error("the end of the log")
    return entries
