"""The request journal: every request the mock server saw, what answered it and every byte it wrote.

Entries are kept in memory for assertions (`journal.last.body`, `journal.for_session(id)`,
`journal.assert_consumed()`) and optionally appended to a JSONL file as each exchange finishes.
Secrets never enter the journal: the values of credential headers and of credential fields at
any depth of the body are replaced by `{{scrubbed:NAME}}` before the entry is stored, by the
secrets policy the recorder and the harness use too (`dshkit.harness.secrets`). Each write keeps
its bytes (the same object the server sent, no copy) and a `time.monotonic()` timestamp. So that
a long-running server does not grow without bound, only the last `keep` finished exchanges hold
their bytes, headers and body, and only as many of them as fit in `keep_bytes` (the bytes
written plus the request body's size; default 64 MiB): older entries are trimmed to counts and
timings, oldest first, and `Journal.trimmed` says how many were (`Journal(keep=None,
keep_bytes=None)` keeps everything). Of the trimmed entries, only the last `keep_trimmed`
(default 100,000) stay in memory at all, so that a load test of millions of requests does not
grow by half a kilobyte each; `Journal.dropped` says how many left (the JSONL file has them).
Lines are always valid JSON: lone surrogates are escaped and non-finite numbers become strings.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dshkit.harness.llm import jsonio
from dshkit.harness.llm.errors import JsonShapeError
from dshkit.harness.secrets import scrub_headers, scrub_json

__all__ = [
    "DEFAULT_KEEP",
    "DEFAULT_KEEP_BYTES",
    "DEFAULT_KEEP_TRIMMED",
    "Journal",
    "JournalEntry",
    "NestingTooDeep",
    "UnconsumedStepsError",
    "Write",
    "json_line",
    "redact_body",
    "redact_headers",
]

#: Finished exchanges whose bytes stay in memory by default: enough for a test's assertions,
#: small enough that a soak of thousands of streams stays flat (`bench/soak.py`).
DEFAULT_KEEP = 100
#: The bytes finished exchanges may hold in memory by default (written bytes plus request
#: bodies): 100 replies of 50,000 chunks each would otherwise hold about 1.7 GB.
DEFAULT_KEEP_BYTES = 64 * 1024 * 1024
#: Trimmed entries (counts, timings, outcome) that stay in memory by default: each holds about
#: half a kilobyte, so 100,000 of them about 50 MB; older ones leave the journal altogether.
DEFAULT_KEEP_TRIMMED = 100_000


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of `headers` with credentials replaced; names are lower-cased."""
    return scrub_headers(headers)


NestingTooDeep = JsonShapeError
"""Raised when a body nests arrays/objects deeper than the `max_depth` given to
:func:`redact_body`: a JSON-shape problem, so the one :class:`JsonShapeError` class."""


def redact_body(body: Any, *, max_depth: int = 512) -> Any:
    """A copy of a parsed JSON body with the values under credential names replaced.

    Raises :class:`NestingTooDeep` past `max_depth` levels, before recursing any deeper: the
    server validates nesting in this same pass, which it makes on every request anyway.
    """
    return scrub_json(body, max_depth=max_depth)


def json_line(obj: Any) -> str:
    """`obj` as one line of valid JSON that encodes as UTF-8, whatever strings and floats it holds.

    Plain UTF-8 text stays readable; a lone surrogate (from a client's `"\\ud800"` or a header
    byte that is not UTF-8) switches the line to ASCII escapes, which decode back to the same
    string; NaN and the infinities, which JSON cannot hold, are written as strings. The one
    encoder of every JSON line dshkit writes (`dshkit.harness.llm.jsonio.dumps`).
    """
    return jsonio.dumps(obj, compact=False)


@dataclass(slots=True)
class Write:
    """One network write."""

    t: float
    """`time.monotonic()` just before the write."""
    data: bytes


def _size_of(writes: list[Write]) -> int:
    """The bytes of `writes`; most exchanges are one write (a whole response), read without a
    generator (this runs for every request, twice)."""
    if len(writes) == 1:
        return len(writes[0].data)
    return sum(len(w.data) for w in writes)


@dataclass(slots=True)
class JournalEntry:
    """One request and everything the server did about it."""

    seq: int
    """1-based arrival number."""
    t: float
    """`time.monotonic()` when the request arrived."""
    method: str
    path: str
    headers: dict[str, str]
    """Request headers, lower-cased, credentials scrubbed."""
    body: Any = None
    """The parsed JSON body (credentials scrubbed); None when it was not JSON."""
    session: str | None = None
    script: str | None = None
    """The name of the script that answered, if any."""
    step: int | None = None
    """The 0-based index of the step that answered, if any."""
    script_behavior: str | None = None
    """What the script asked for (`random`, a fault name, `reply`, `raw`, `default`)."""
    behavior: str | None = None
    """What was actually done (the concrete fault a `random` step picked)."""
    status: int | None = None
    outcome: str | None = None
    """completed | reset | stalled | client_closed | closed | rejected | server_error."""
    error: dict[str, Any] | None = None
    """The error object sent, for rejections and HTTP-error faults."""
    writes: list[Write] = field(default_factory=list)
    """Every write, with its bytes; emptied when the entry is trimmed."""
    trimmed: bool = False
    """True once the journal dropped this entry's writes, headers and body (see `Journal.keep`
    and `Journal.keep_bytes`)."""
    request_bytes: int = 0
    """The size of the request body as received (counted against `Journal.keep_bytes`)."""
    _held: int = 0
    _count: int = 0
    _sent: int = 0
    first_write_t: float | None = None
    """`time.monotonic()` of the first write (kept after trimming)."""
    last_write_t: float | None = None
    """`time.monotonic()` of the last write (kept after trimming)."""

    @property
    def data(self) -> bytes:
        """Every byte written for this request, joined (headers excluded)."""
        if self.trimmed:
            raise LookupError(
                f"journal entry {self.seq} was trimmed: only the last `keep` exchanges keep their "
                "bytes, within the journal's byte budget; start the server with journal_keep=None "
                "and journal_bytes=None (--journal-keep all --journal-bytes all) to keep all, or "
                "read every exchange in full from its --journal file"
            )
        return b"".join(w.data for w in self.writes)

    @property
    def bytes_sent(self) -> int:
        return self._sent if self.trimmed else _size_of(self.writes)

    @property
    def write_count(self) -> int:
        """How many writes the server made (kept after trimming)."""
        return self._count if self.trimmed else len(self.writes)

    def events(self) -> list[Any]:
        """The response's Server-Sent Events, parsed: each event's `data` decoded as JSON, or
        kept as the string when it is not JSON (`[DONE]`, a fault's garbage); comments and a
        JSON (non-streamed) body give none. Raises LookupError for a trimmed entry."""
        from dshkit.harness.providers.sse import SSEDecoder, SSEEvent

        decoder = SSEDecoder()
        items = decoder.feed(self.data) + decoder.close()
        out: list[Any] = []
        for item in items:
            if isinstance(item, SSEEvent):
                try:
                    out.append(json.loads(item.data))
                except ValueError:
                    out.append(item.data)
        return out

    def response_json(self) -> Any:
        """A whole (non-streamed) JSON response body, parsed (an error envelope included).
        Raises ValueError when the body is not JSON (a stream: see :meth:`events`)."""
        return json.loads(self.data)

    def trim(self) -> None:
        """Drop the bytes, headers and body; keep counts, timings and the outcome."""
        if self.trimmed:
            return
        writes = self.writes
        self._count = len(writes)
        self._sent = _size_of(writes)
        if writes:
            self.first_write_t, self.last_write_t = writes[0].t, writes[-1].t
        self.writes = []
        self.headers = {}
        self.body = None
        self.trimmed = True

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; writes carry `text` when they decode as UTF-8, else `b64`."""
        writes: list[dict[str, Any]] = []
        for w in self.writes:
            rec: dict[str, Any] = {"t": round(w.t, 6), "size": len(w.data)}
            try:
                rec["text"] = w.data.decode("utf-8")
            except UnicodeDecodeError:
                rec["b64"] = base64.b64encode(w.data).decode("ascii")
            writes.append(rec)
        return {
            "seq": self.seq,
            "t": round(self.t, 6),
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "session": self.session,
            "script": self.script,
            "step": self.step,
            "script_behavior": self.script_behavior,
            "behavior": self.behavior,
            "status": self.status,
            "outcome": self.outcome,
            "error": self.error,
            "writes": writes,
        }


class UnconsumedStepsError(AssertionError):
    """Raised by :meth:`Journal.assert_consumed` when scripted steps were never used."""


class Journal:
    """All requests seen by one server, in arrival order."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        pending: Callable[[], list[str]] | None = None,
        keep: int | None = DEFAULT_KEEP,
        keep_bytes: int | None = DEFAULT_KEEP_BYTES,
        keep_trimmed: int | None = DEFAULT_KEEP_TRIMMED,
        next_seq: Callable[[], int] | None = None,
    ) -> None:
        if keep is not None and keep < 0:
            raise ValueError(f"journal keep must be >= 0 or None (keep all), got {keep}")
        if keep_bytes is not None and keep_bytes < 0:
            raise ValueError(f"journal keep_bytes must be >= 0 or None (no budget), got {keep_bytes}")
        if keep_trimmed is not None and keep_trimmed < 0:
            raise ValueError(f"journal keep_trimmed must be >= 0 or None (keep all), got {keep_trimmed}")
        self.path = Path(path) if path is not None else None
        self.keep = keep
        """Finished entries that keep their bytes, headers and body; None keeps all."""
        self.keep_bytes = keep_bytes
        """The byte budget of the finished entries that keep their bytes (written bytes plus
        request bodies); the oldest are trimmed until the rest fit. None: no budget."""
        self.keep_trimmed = keep_trimmed
        """Trimmed entries that stay in memory (the oldest leave first); None keeps all."""
        self.next_seq = next_seq
        """Hands out `seq` numbers when several processes share one numbering (the workers of
        `dshkit serve --workers`); None numbers entries 1, 2, 3… in this journal."""
        self._kept_bytes = 0
        self._trimmed = 0
        self._trimmed_for_bytes = 0
        self._finished: deque[JournalEntry] = deque()
        self._trimmed_held: deque[JournalEntry] = deque()
        self._dropped: Counter[str] = Counter()
        self._arrived = 0
        # By id(entry), in arrival order: a trimmed entry leaves from the middle in O(1) (an
        # entry still being written may be older than the ones that leave).
        self._entries: dict[int, JournalEntry] = {}
        self._pending = pending
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")

    def open_entry(
        self, *, t: float, method: str, path: str, headers: Mapping[str, str]
    ) -> JournalEntry:
        """Record a new request (headers scrubbed here) and return its entry."""
        with self._lock:
            self._arrived += 1
            entry = JournalEntry(
                seq=self.next_seq() if self.next_seq is not None else self._arrived,
                t=t,
                method=method,
                path=path,
                headers=redact_headers(headers),
            )
            self._entries[id(entry)] = entry
        return entry

    def close_entry(self, entry: JournalEntry) -> None:
        """The exchange is over: append it to the JSONL file, if any, then trim old entries."""
        if self._file is not None:
            line = json_line(entry.to_json())
            with self._lock:
                self._file.write(line + "\n")
                self._file.flush()
        keep, budget = self.keep, self.keep_bytes
        if keep is None and budget is None:
            return
        held = entry.request_bytes + _size_of(entry.writes)
        with self._lock:
            entry._held = held
            self._finished.append(entry)
            self._kept_bytes += held
            finished = self._finished
            while finished:
                over_count = keep is not None and len(finished) > keep
                if not over_count and (budget is None or self._kept_bytes <= budget):
                    break
                old = finished.popleft()
                self._kept_bytes -= old._held
                old.trim()
                self._trimmed += 1
                self._trimmed_for_bytes += not over_count
                self._trimmed_held.append(old)
            held_trimmed, most = self._trimmed_held, self.keep_trimmed
            while most is not None and len(held_trimmed) > most:
                gone = held_trimmed.popleft()
                del self._entries[id(gone)]
                self._dropped[str(gone.outcome)] += 1

    @property
    def kept_bytes(self) -> int:
        """The bytes the finished, untrimmed entries hold (written bytes plus request bodies, as
        counted against `keep_bytes`)."""
        return self._kept_bytes

    @property
    def trimmed(self) -> int:
        """How many finished entries were trimmed (their bytes, headers and body dropped)."""
        return self._trimmed

    @property
    def dropped(self) -> int:
        """How many trimmed entries left the journal altogether (beyond `keep_trimmed`)."""
        return self._dropped.total()

    def dropped_outcomes(self) -> dict[str, int]:
        """The outcomes of the entries that left the journal, counted (`dropped` in all)."""
        with self._lock:
            return dict(self._dropped)

    @property
    def trimmed_for_bytes(self) -> int:
        """How many of `trimmed` were trimmed to stay within `keep_bytes` rather than `keep`."""
        return self._trimmed_for_bytes

    def stats(self) -> dict[str, Any]:
        """What the journal holds: entries, trimmed entries (and how many for the byte budget),
        the entries dropped altogether, the bytes kept and the three limits."""
        tracked = (self.keep, self.keep_bytes) != (None, None)
        with self._lock:
            return {
                "entries": len(self._entries),
                "kept": len(self._finished) if tracked else None,
                "kept_bytes": self._kept_bytes if tracked else None,
                "trimmed": self._trimmed,
                "trimmed_for_bytes": self._trimmed_for_bytes,
                "dropped": self._dropped.total(),
                "keep": self.keep,
                "keep_bytes": self.keep_bytes,
                "keep_trimmed": self.keep_trimmed,
            }

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def entries(self) -> list[JournalEntry]:
        """A snapshot of every entry held (all but the `dropped` ones), in arrival order."""
        with self._lock:
            return list(self._entries.values())

    @property
    def last(self) -> JournalEntry:
        """The most recent entry."""
        with self._lock:
            if not self._entries:
                raise LookupError("the journal is empty: the mock server has received no request")
            return next(reversed(self._entries.values()))

    def for_session(self, session: str) -> list[JournalEntry]:
        """Entries of one session, in arrival order."""
        return [e for e in self.entries if e.session == session]

    def chat(self) -> list[JournalEntry]:
        """Entries for chat-completion requests only (not `/models` and the like)."""
        return [e for e in self.entries if e.path.endswith("/chat/completions")]

    def messages(self) -> list[JournalEntry]:
        """Entries for the Anthropic Messages surface (`/anthropic/v1/messages`, `/anthropic/messages`)."""
        return [
            e for e in self.entries
            if e.path.startswith("/anthropic/") and e.path.endswith("/messages")
        ]

    def bodies(self) -> list[Any]:
        """The parsed bodies (credentials scrubbed) of the model calls on both wires, in
        arrival order: what the client sent, without reading journal bytes."""
        return [e.body for e in self.entries
                if e.path.endswith("/chat/completions") or (e.path.startswith("/anthropic/") and e.path.endswith("/messages"))]

    def step_counts(self) -> dict[tuple[str, int], int]:
        """How many requests each scripted step answered: `(script name, step index)` → count.
        A `repeat_last` step counts every reuse; steps nobody used are absent (see
        :meth:`unused_steps`); auxiliary answers and default replies are not steps."""
        counts: dict[tuple[str, int], int] = {}
        for e in self.entries:
            if e.script is not None and e.step is not None:
                key = (e.script, e.step)
                counts[key] = counts.get(key, 0) + 1
        return counts

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self.entries)

    def __getitem__(self, index: int) -> JournalEntry:
        return self.entries[index]

    def unused_steps(self) -> list[str]:
        """Descriptions of scripted steps no request consumed."""
        return self._pending() if self._pending is not None else []

    def assert_consumed(self) -> None:
        """Fail, listing them, if any scripted step was never used."""
        unused = self.unused_steps()
        if unused:
            raise UnconsumedStepsError(
                f"{len(unused)} scripted step(s) were never used:\n  "
                + "\n  ".join(unused)
                + "\n(the client made fewer requests than scripted, or its requests were "
                "answered by other steps; see server.journal for what arrived)"
            )
