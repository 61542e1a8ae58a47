"""`SessionStore`: where session files live and how a session is created or reopened.

The seed's walk ends with the session on disk so it can be inspected, replayed or resumed. By
default a session `<id>` lives at `./.dshkit/sessions/<id>.jsonl` (the id escaped so that any id
maps to one safe file name). `create()` writes the header and attaches a `JsonlWriter`;
`open()` loads, repairs and resumes a session (appending `session/end-seed`) with a writer
attached, so every later event lands on disk as the loop appends it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from dshkit.harness.llm.errors import UsageError

from .compression import COMPRESSED_SUFFIXES, is_compressed
from .header import SessionHeader
from .jsonl import JsonlWriter, load_session
from .session import Session

__all__ = ["DEFAULT_SESSIONS_DIR", "SessionStore", "encode_segment"]

DEFAULT_SESSIONS_DIR: Final = Path(".dshkit") / "sessions"
_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def encode_segment(value: str) -> str:
    """An injective, file-system-safe name for an id (DSH's `encodeSegment`, §1.11).

    `[A-Za-z0-9._-]` stay; every other UTF-16 code unit becomes `~XXXX`; `.` and `..` are escaped.
    """
    if not value:
        raise UsageError("a session id must not be empty")
    if value in (".", ".."):
        return "~002E" * len(value)
    out: list[str] = []
    for ch in value:
        if ch in _SAFE:
            out.append(ch)
            continue
        raw = ch.encode("utf-16-be")
        for i in range(0, len(raw), 2):
            out.append(f"~{raw[i] << 8 | raw[i + 1]:04X}")
    return "".join(out)


class SessionStore:
    """Session files under one directory, one `<id>.jsonl` each."""

    def __init__(
        self,
        root: str | os.PathLike[str] = DEFAULT_SESSIONS_DIR,
        *,
        pack_chunks: bool = True,
        durable: bool = True,
        clock: Callable[[], int] | None = None,
        event_types: Iterable[str] = (),
    ) -> None:
        self.root = Path(root)
        self.pack_chunks = pack_chunks
        self.durable = durable
        self._clock = clock
        self._event_types = tuple(event_types)
        self._writers: dict[int, JsonlWriter] = {}
        self.on_write_failure: Callable[[Session, BaseException], None] | None = None
        """Called when writing a session's log fails (the writer then stops; `flush()` raises
        `SESSION_WRITE_FAILED`); `dshkit run` cancels the turn so nothing runs unlogged."""

    def path_for(self, session_id: str) -> Path:
        return self.root / f"{encode_segment(session_id)}.jsonl"

    def create(self, header: SessionHeader | None = None, **header_fields: Any) -> Session:
        """A new session whose events are written to `path_for(id)` as they are appended.

        `header_fields` (`id`, `cwd`, …) build a header when none is given. Refuses an id whose
        file already exists.
        """
        header = header or SessionHeader.new(**header_fields)
        path = self.path_for(header.id)
        if path.exists():
            raise UsageError(f"session {header.id!r} already exists at {path}; open() it instead")
        session = Session(header, clock=self._clock, event_types=self._event_types)
        writer = JsonlWriter(path, header=header, pack_chunks=self.pack_chunks, durable=self.durable,
                             on_failure=lambda exc: self._write_failed(session, exc))
        self._attach(session, writer)
        return session

    def open(self, session: str | os.PathLike[str], *, resume: bool = True) -> Session:
        """Load a session by id or path (repairing a crashed tail) and keep writing to it.

        With `resume`, `session/end-seed` marks where the loaded log ends (unless it already
        does), as DSH does for a resumed session. A zstd-compressed log (DSH's
        `session.jsonl.zstd`) is refused: the events would be appended as plain lines.
        """
        named = str(session).removesuffix(COMPRESSED_SUFFIXES[0]).removesuffix(COMPRESSED_SUFFIXES[1])
        path = Path(session) if isinstance(session, os.PathLike) or named.endswith(".jsonl") else self.path_for(str(session))
        if not path.exists():
            raise UsageError(f"no session file at {path}")
        with open(path, "rb") as f:
            if is_compressed(f.read(4)):
                raise UsageError(
                    f"{path}: a zstd-compressed session log cannot be resumed (new events are "
                    "appended as plain JSONL lines); decompress it (`zstd -d`) and resume the .jsonl"
                )
        loaded = load_session(path, clock=self._clock, event_types=self._event_types)
        live = Session(
            loaded.header, seed=loaded.events, end_seed=resume,
            clock=self._clock, event_types=self._event_types,
        )
        writer = JsonlWriter(path, pack_chunks=self.pack_chunks, durable=self.durable,
                             on_failure=lambda exc: self._write_failed(live, exc))
        writer.write_events(live.events[len(loaded.events):])
        self._attach(live, writer)
        return live

    def _write_failed(self, session: Session, exc: BaseException) -> None:
        if self.on_write_failure is not None:
            self.on_write_failure(session, exc)

    def _attach(self, session: Session, writer: JsonlWriter) -> None:
        session.subscribe(writer)
        self._writers[id(session)] = writer

    def flush(self, session: Session) -> None:
        """Write any chunks still held for `session` (a batch normally ends at the next event)."""
        writer = self._writers.get(id(session))
        if writer is not None:
            writer.flush()

    def close(self, session: Session) -> None:
        """Flush and close the file of `session`."""
        writer = self._writers.pop(id(session), None)
        if writer is not None:
            writer.close()
