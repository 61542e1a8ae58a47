"""JSONL persistence: read, validate, repair and durably write session logs.

The log the seed's walk builds must survive the process: line 1 is the header, then one event
(or packed chunk row) per line (dsh-core.md §1.11). Reading takes a zstd-compressed log as it
takes a plain one (DSH's `session.jsonl.zstd`, see `compression.py`), validates every event through a
`Session`, synthesizes envelopes for projected fixtures (dsh-testing.md §2.3), tolerates a torn
tail only after the last committed `turn/end`, refuses unknown required types, and appends the
crash-repair closers of §1.10 (which `load_session` writes back before the session is used).
Writing batches the chunks of a stream and makes each batch durable (flush + fsync) when the
next non-chunk event arrives, packing delta runs into rows.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.jsonio import JsonTooDeep, dumps, loads

from .chunk_rows import is_chunk_row, pack_events, unpack_line
from .compression import decompress_log, is_compressed
from .events import SessionEvent, event_from_json, event_to_json
from .header import SessionHeader
from .lossless import JsonValue
from .repair import interrupted_turn_closers
from .session import Session

__all__ = [
    "JsonlWriter",
    "LoadedLog",
    "dump_session",
    "dumps_json_line",
    "load_session",
    "parse_session_log",
    "save_session",
]


def dumps_json_line(value: JsonValue) -> str:
    """One compact JSON line, without the newline: strict JSON that encodes as UTF-8 whatever
    it holds (a lone surrogate is written as an ASCII escape, NaN as a string; see `jsonio`)."""
    return dumps(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedLog:
    """A parsed session file, validated and repaired in memory."""

    session: Session
    """Every valid event plus any repair closers (no `session/end-seed` added)."""
    projected: bool
    """The file omitted `seq`/`time` envelopes (a committed fixture)."""
    closers: tuple[SessionEvent, ...]
    """Events appended by crash repair (§1.10); not yet on disk."""
    good_bytes: int
    """Length of the valid prefix of the file, in bytes; a torn tail starts here."""
    dropped_lines: int
    """Body lines cut off as a torn tail."""
    defects: tuple[str, ...] = ()
    """With `lenient`: one located message per event kept as a defect (see `SessionEvent.defect`)."""
    compressed: bool = False
    """The file was zstd-compressed; `good_bytes` counts its decompressed bytes."""

    @property
    def header(self) -> SessionHeader:
        return self.session.header

    @property
    def needs_write_back(self) -> bool:
        return bool(self.closers) or self.dropped_lines > 0


def _split_lines(raw: bytes) -> list[tuple[int, int, bytes]]:
    """(1-based line number, end offset incl. newline, content) of every line."""
    out: list[tuple[int, int, bytes]] = []
    start = 0
    number = 0
    while start < len(raw):
        number += 1
        nl = raw.find(b"\n", start)
        end = len(raw) if nl < 0 else nl + 1
        out.append((number, end, raw[start:end]))
        start = end
    return out


def _mentions_turn_end(line: bytes) -> bool:
    try:
        value = loads(line)
    except ValueError:
        return False
    return isinstance(value, Mapping) and value.get("type") == "turn/end"


def _corrupt(source: str, line: int, problem: str) -> SessionError:
    return SessionError(f"{source}:{line}: {problem}", "SESSION_CORRUPT")


def _too_deep(source: str, line: int) -> SessionError:
    """A line nested deeper than Python can parse or walk (json.loads and the codecs recurse).
    Never a torn write (a cut line is a syntax error), so it is reported, not dropped."""
    return _corrupt(
        source, line,
        "a JSON value is nested too deeply to read (hundreds of levels); no event nests "
        "like that, so the line is damaged or was not written by a session log writer: delete "
        "this line (or restore the file from a backup) and load it again",
    )


def parse_session_log(
    raw: bytes | str,
    *,
    source: str = "<session log>",
    repair: bool = True,
    clock: Callable[[], int] | None = None,
    event_types: Iterable[str] = (),
    lenient: bool = False,
) -> LoadedLog:
    """Parse and validate a session JSONL document, plain or zstd-compressed (told by its bytes).

    Raises `SessionError`: `SESSION_FORMAT_UNSUPPORTED` for a foreign version or an unknown
    event type without `ignorable`; `SESSION_CORRUPT` (naming the line) for a bad header or for
    a bad line that is followed by a committed `turn/end`, and for a damaged or truncated zstd
    file; `SESSION_TOO_LARGE` for a zstd file that expands past the cap (a zstd bomb).

    `lenient` is for reading logs another program wrote (import, replay, decode): an event
    that is well-formed JSON with a valid envelope but whose data or surface fields break a
    rule is kept as a defect (`SessionEvent.defect`, listed in `LoadedLog.defects`) instead of
    failing the load, so one inconsistent line does not hide the rest of the log.
    """
    data = raw.encode() if isinstance(raw, str) else raw
    compressed = is_compressed(data)
    if compressed:
        data = decompress_log(data, source=source)
    lines = _split_lines(data)
    body_start = 0
    header: SessionHeader | None = None
    header_end = 0
    for i, (number, end, text) in enumerate(lines):
        if not text.strip():
            continue
        try:
            value = loads(text)
            header = SessionHeader.from_json(value, f" ({source}:{number})")
        except (JsonTooDeep, RecursionError) as exc:
            raise _too_deep(source, number) from exc
        except ValueError as exc:
            raise _corrupt(source, number, f"the header is not JSON ({exc})") from exc
        body_start, header_end = i + 1, end
        break
    if header is None:
        raise SessionError(f"{source}: empty session log (no header line)", "SESSION_CORRUPT")

    session = Session(header, clock=clock, event_types=event_types)
    projected: bool | None = None
    good_bytes = header_end
    dropped = 0
    defects: list[str] = []
    body = lines[body_start:]
    for k, (number, end, text) in enumerate(body):
        if not text.strip():
            good_bytes = end
            continue
        try:
            value = loads(text)
            if not isinstance(value, Mapping):
                raise SessionError("a body line must be a JSON object", "SESSION_CORRUPT")
            enveloped = "seq0" in value if is_chunk_row(value) else "seq" in value
            if projected is None:
                projected = not enveloped
            for member in unpack_line(value, next_seq=session.next_seq, where=f"{source}:{number}"):
                parsed = event_from_json(member, f"{source}:{number}")
                problem = session._commit(session._checked(parsed, f"{source}:{number}"), publish=False, lenient=lenient)
                if problem is not None:
                    defects.append(f"{source}:{number}: {problem}")
        except SessionError as exc:
            if exc.code == "SESSION_FORMAT_UNSUPPORTED":
                raise SessionError(f"{source}:{number}: {exc.message}", exc.code) from exc
            _tail_or_raise(body[k + 1 :], source, number, exc.message)
            dropped = len(body) - k
            break
        except (JsonTooDeep, RecursionError) as exc:
            raise _too_deep(source, number) from exc
        except ValueError as exc:  # JSON syntax, codec errors
            _tail_or_raise(body[k + 1 :], source, number, str(exc))
            dropped = len(body) - k
            break
        good_bytes = end

    closers: list[SessionEvent] = []
    if repair:
        events = session.events
        when = events[-1].time if len(events) else 0
        for closer in interrupted_turn_closers(events):
            closers.append(
                session.append(
                    closer.type, closer.data, surface_op=closer.surface_op,
                    source_event_seqs=closer.source_event_seqs, time=when,
                )
            )
    return LoadedLog(
        session=session,
        projected=bool(projected),
        closers=tuple(closers),
        good_bytes=good_bytes,
        dropped_lines=dropped,
        defects=tuple(defects),
        compressed=compressed,
    )


def _tail_or_raise(rest: list[tuple[int, int, bytes]], source: str, line: int, problem: str) -> None:
    """A bad line is a torn tail only when no committed `turn/end` follows it (§1.11)."""
    if any(_mentions_turn_end(text) for _, _, text in rest):
        raise _corrupt(
            source, line, f"{problem} — and a later turn/end exists, so this is corruption, not a "
            "torn tail; restore the file from a backup or cut it at this line by hand"
        )


def _event_line(event: SessionEvent, projected: bool) -> str:
    obj = event_to_json(event)
    if projected:
        del obj["seq"], obj["time"]
    return dumps_json_line(obj)


_log = logging.getLogger("dshkit.harness.session")


def load_session(
    path: str | os.PathLike[str],
    *,
    write_back: bool = True,
    clock: Callable[[], int] | None = None,
    event_types: Iterable[str] = (),
) -> Session:
    """Load a session file; a torn tail is cut and repair closers are durably written back.

    Nothing is thrown away: the bytes of a cut tail are first appended to `<file>.torn` (and a
    warning names it), so a line that was cut by mistake can still be recovered by hand. A
    zstd-compressed log is read but never written: its repair stays in memory.
    """
    path = Path(path)
    raw = path.read_bytes()
    loaded = parse_session_log(raw, source=str(path), clock=clock, event_types=event_types)
    if loaded.compressed:
        if loaded.needs_write_back:
            _log.warning("%s: compressed, so the repair of its tail is kept in memory only", path)
        return loaded.session
    if write_back and loaded.dropped_lines:
        torn = path.with_name(path.name + ".torn")
        with open(torn, "ab") as kept:
            kept.write(raw[loaded.good_bytes :])
            kept.flush()
            os.fsync(kept.fileno())
        _log.warning(
            "%s: cut %d unreadable line(s) after the last turn/end (a crash's torn tail); "
            "the bytes are kept in %s",
            path, loaded.dropped_lines, torn,
        )
    if write_back and loaded.needs_write_back:
        with open(path, "r+b") as f:
            f.truncate(loaded.good_bytes)
            f.seek(loaded.good_bytes)
            if loaded.good_bytes:
                f.seek(loaded.good_bytes - 1)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.writelines((_event_line(event, loaded.projected) + "\n").encode() for event in loaded.closers)
            f.flush()
            os.fsync(f.fileno())
    return loaded.session


def dump_session(session: Session, *, pack_chunks: bool = True) -> str:
    """The whole session as JSONL text: header, then events (delta runs packed into rows)."""
    events: list[dict[str, Any]] = [event_to_json(e) for e in session.events]
    rows = pack_events(events) if pack_chunks else events
    lines = [dumps_json_line(session.header.to_json())] + [dumps_json_line(r) for r in rows]
    return "\n".join(lines) + "\n"


def save_session(session: Session, path: str | os.PathLike[str], *, pack_chunks: bool = True) -> Path:
    """Write a snapshot of `session` to `path` atomically (temp file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dump_session(session, pack_chunks=pack_chunks))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


class JsonlWriter:
    """A session observer that appends each event to a JSONL file, durably.

    `assistant/chunk` events are held until the next other event (or `flush()`), then the
    batch is written in one go (runs of deltas packed into rows when `pack_chunks`), flushed
    and, when `durable`, fsynced. A chunk batch lost in a crash is a torn tail, which loading
    tolerates and repairs.

    A write that fails (disk full, a closed file) never leaves a gap: the failure is kept in
    `failure`, passed to `on_failure` (or, without one, logged once: file, first event not
    written, cause), and from then on no event is written, so the file stays a readable prefix
    of the session. An observer cannot stop the session itself, so its owner must act:
    `flush()` and `close()` raise `SessionError` (`SESSION_WRITE_FAILED`) naming the file and
    the first lost event (once; `close()` after a raising `flush()` only closes).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        header: SessionHeader | None = None,
        pack_chunks: bool = True,
        durable: bool = True,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.pack_chunks = pack_chunks
        self.durable = durable
        self.on_failure = on_failure
        """Called once with the error when a write fails (e.g. to stop the run at once)."""
        self.failure: BaseException | None = None
        self.lost_from: int | None = None
        """`seq` of the first event that did not reach the file, once a write failed."""
        self._reported = False
        self._pending: list[SessionEvent] = []
        if header is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] = open(self.path, "x", encoding="utf-8")  # noqa: SIM115
            self._file.write(dumps_json_line(header.to_json()) + "\n")
            self._sync()
        else:
            ends_open = False
            with open(self.path, "rb") as existing:
                if existing.seek(0, os.SEEK_END) > 0:
                    existing.seek(-1, os.SEEK_END)
                    ends_open = existing.read(1) != b"\n"
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            if ends_open:  # never glue the next event onto an unterminated last line
                self._file.write("\n")

    def __call__(self, event: SessionEvent) -> None:
        if self.failure is not None:
            return  # nothing after a lost event: the file stays a prefix of the session
        self._pending.append(event)
        if event.type != "assistant/chunk":
            self._write_pending()

    def write_events(self, events: Iterable[SessionEvent]) -> None:
        """Queue events appended before this writer was attached, and flush them."""
        self._pending.extend(events)
        self.flush()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        first = self._pending[0].seq
        try:
            batch = [event_to_json(e) for e in self._pending]
            rows = pack_events(batch) if self.pack_chunks else batch
            self._file.write("".join(dumps_json_line(r) + "\n" for r in rows))
            self._sync()
        except (OSError, ValueError) as exc:  # ValueError: an encoding problem, a closed file
            self.failure, self.lost_from = exc, first
            if self.on_failure is None:
                _log.error("%s", self._failure_message())
            else:  # the owner reports it (`flush()` raises the same message)
                self.on_failure(exc)
        finally:
            self._pending.clear()

    def _failure_message(self) -> str:
        return (
            f"{self.path}: writing the session log failed from event seq {self.lost_from} on "
            f"({type(self.failure).__name__}: {self.failure}); the file holds the events before "
            "it and nothing after. Free space or fix the file's permissions, then resume the "
            "session from the file"
        )

    def flush(self) -> None:
        """Write what is pending; `SessionError` (`SESSION_WRITE_FAILED`) if a write failed."""
        if self.failure is None:
            self._write_pending()
        if self.failure is not None and not self._reported:
            self._reported = True
            raise SessionError(self._failure_message(), "SESSION_WRITE_FAILED") from self.failure

    def _sync(self) -> None:
        self._file.flush()
        if self.durable:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flush what is pending and close the file (idempotent)."""
        if self._file.closed:
            return
        try:
            self.flush()
        finally:
            with contextlib.suppress(OSError, ValueError):  # a full disk fails the close's flush too
                self._file.close()
