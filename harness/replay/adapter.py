"""`ReplayAdapter`: recorded calls fed to the agent loop as `StreamChunk`s, no provider involved.

Each live session claims the next unclaimed `SessionScript` on its first call (so a parent and
its subagents get their own logs, dsh-testing.md §2.8) and walks it call by call. A call plays
its logged chunks, placeholders filled from the live request; a `throw` ends with its failure;
a call the recorded client gave up on (a `hang`, or an `aborted` finish) waits for the live
client to cancel, after creating its `readyFile` marker inside the workspace.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dshkit.harness.llm import Finish, GenerateOptions, StreamChunk
from dshkit.harness.llm.codec import message_to_json

from .entries import ReplayError, SessionScript
from .override import ready_path
from .placeholders import request_strings

__all__ = ["ReplayAdapter"]

_ABORTED = "replayed call aborted by caller"


@dataclass(slots=True)
class _Cursor:
    script: SessionScript
    position: int
    """The script's place in `ReplayAdapter.scripts` (0: the primary)."""
    next: int = 0


@dataclass(eq=False)
class ReplayAdapter:
    """An `Adapter` that plays recorded calls instead of calling a provider.

    Each live `session_id` (None counts as one anonymous session) claims the next unclaimed
    script on its first call and then walks its own cursor. Running past a script, or more
    sessions than scripts, ends the stream with an error finish naming what to re-record.
    `ready_dir` (default: the working directory) is where the `readyFile`s of `hang` entries
    go, never outside it; `on_call(script, index)` is told when call `index` of
    `scripts[script]` begins (before its first chunk), which is where a replay cancels a call
    the recorded user cancelled before any chunk.
    """

    scripts: Sequence[SessionScript]
    provider: str = "replay"
    ready_dir: Path | None = None
    on_call: Callable[[int, int], None] | None = None
    _unclaimed: list[tuple[int, SessionScript]] = field(init=False)
    _bound: dict[str | None, _Cursor] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._unclaimed = list(enumerate(self.scripts))

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        cursor = self._bound.get(options.session_id)
        if cursor is None:
            if not self._unclaimed:
                yield Finish.error(
                    f"unrecorded session #{len(self._bound) + 1} ({options.session_id}): the logs "
                    f"hold {len(self.scripts)} session(s); re-record",
                    "REPLAY_UNRECORDED_SESSION",
                )
                return
            position, script = self._unclaimed.pop(0)
            cursor = self._bound[options.session_id] = _Cursor(script, position)
        entries = cursor.script.entries
        if cursor.next >= len(entries):
            yield Finish.error(
                f"script exhausted — session requested model call #{cursor.next + 1} but its "
                f"script ({cursor.script.source}) has only {len(entries)}",
                "REPLAY_EXHAUSTED",
            )
            return
        entry = entries[cursor.next]
        cursor.next += 1
        if self.on_call is not None:
            self.on_call(cursor.position, cursor.next - 1)
        try:
            chunks = entry.stream_chunks(
                lambda: request_strings([message_to_json(m) for m in options.messages])
            )
            ready = ready_path(entry.ready_file, self.ready_dir or Path.cwd(), where=f"{entry.where}.readyFile") \
                if entry.aborted and entry.ready_file else None
        except (ReplayError, ValueError) as exc:
            yield Finish.error(str(exc), "REPLAY_INVALID")
            return
        signal = options.signal
        prefix = [c for c in chunks if not (isinstance(c, Finish) and c.reason.kind == "aborted")]
        delivered = 0
        try:
            for chunk in prefix if entry.aborted else chunks:
                if signal is not None and signal.is_set():
                    yield Finish.aborted(_ABORTED)
                    return
                delivered += 1
                yield chunk
                await asyncio.sleep(0)
        finally:
            # The marker says the whole prefix reached the client, which may cancel right on
            # its last chunk (closing this stream there), as upstream's driver does on the marker.
            if ready is not None and delivered == len(prefix):
                ready.parent.mkdir(parents=True, exist_ok=True)
                ready.touch()
        if entry.aborted:  # the recorded client gave up here: wait for this one to
            await (signal.wait() if signal is not None else asyncio.Event().wait())
            yield Finish.aborted(_ABORTED)
            return
        if entry.kind == "throw":
            yield Finish.error(entry.message or "", entry.code or "UNKNOWN")
            return
        if not chunks or not isinstance(chunks[-1], Finish):
            yield Finish.error(f"{entry.where}: the recorded call has no finish", "REPLAY_INVALID")

    async def aclose(self) -> None:
        return None

    def unused(self) -> list[str]:
        """Recorded calls no live session used."""
        out = [f"script {s.source}: never bound to a live session ({len(s.entries)} call(s))" for _, s in self._unclaimed]
        for session, cur in self._bound.items():
            if cur.next < len(cur.script.entries):
                out.append(f"session {session!r} consumed {cur.next}/{len(cur.script.entries)} recorded call(s) of {cur.script.source}")
        return out

    def assert_consumed(self) -> None:
        """Fail listing every script never bound and every session that stopped short (§2.9)."""
        unused = self.unused()
        if unused:
            raise AssertionError("recorded calls were not replayed:\n  " + "\n  ".join(unused))
