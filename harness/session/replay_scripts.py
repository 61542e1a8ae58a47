"""Replay scripts derived from session logs: one entry per logged model call (dsh-testing.md §2).

A session log records every model call as its `assistant/chunk` events (§2.2).
`derive_replay_script` walks a log into replay entries, one per call (split at each `finish`,
§2.4); `load_session_scripts` adds override sidecars (§2.6) and the logs of a parent's subagents
(§2.8); `fill_from_request` resolves `{{fromRequest:REGEX}}` placeholders (§2.7). These are
codecs over the log, so the mock server can import them to serve a log as SSE; the loop-level
replay (`ReplayAdapter`, `replay_session`) lives in `dshkit.harness.replay`, `dshkit replay` in `dshkit.replay`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from dshkit.harness.llm import HarnessError, StreamChunk, chunk_from_json

from .events import SessionEvent
from .jsonl import parse_session_log
from .lossless import thaw_json
from .session import Session

_log = logging.getLogger("dshkit.harness.session")

__all__ = [
    "ReplayEntry",
    "ReplayError",
    "SessionScript",
    "derive_replay_script",
    "fill_from_request",
    "load_log_session",
    "load_session_scripts",
    "parse_override",
    "request_strings",
]

ReplayKind = Literal["chunks", "throw", "hang"]
_CHUNK_TYPES = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"}
)
_HANG_PREFIX: tuple[dict[str, Any], ...] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)
"""Upstream's fixed `hang` prefix (§2.5)."""
_PLACEHOLDER = "{{fromRequest:"
_ENTRY_KEYS: dict[ReplayKind, tuple[frozenset[str], ...]] = {
    "chunks": (frozenset({"kind", "chunks"}),),
    "throw": (frozenset({"kind", "chunks", "message", "code"}),),
    "hang": (frozenset({"kind"}), frozenset({"kind", "readyFile"})),
}
"""The exact key sets a sidecar entry of each kind may have (§2.6)."""


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
    """`hang`: an empty marker file created once the prefix was sent."""
    where: str = ""
    """Where it came from, for messages (`file turn 1 step 2`)."""

    def stream_chunks(self, request: Callable[[], str] | None = None) -> list[StreamChunk]:
        """The chunks to play, placeholders filled from `request()` (the live request's strings,
        see `request_strings`), which is called only when a chunk holds a placeholder."""
        raw: Any = list(self.chunks) if self.kind != "hang" else list(_HANG_PREFIX)
        if request is not None and _PLACEHOLDER in json.dumps(raw, ensure_ascii=False):
            raw = fill_from_request(raw, request())
        return [chunk_from_json(c, f"{self.where} chunks[{i}]") for i, c in enumerate(raw)]

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


# --- deriving scripts from logs -------------------------------------------------------------


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


def _entry_from_json(value: Any, where: str) -> ReplayEntry:
    if not isinstance(value, Mapping):
        raise ReplayError(f"{where}: an entry must be an object with `kind`")
    kind: Any = value.get("kind")
    if kind not in get_args(ReplayKind):  # a tuple: a JSON list or object as `kind` is unhashable
        raise ReplayError(f"{where}.kind: expected chunks, throw or hang, got {kind!r}")
    if frozenset(value) not in _ENTRY_KEYS[kind]:
        shapes = " or ".join(str(sorted(s)) for s in _ENTRY_KEYS[kind])
        raise ReplayError(f"{where}: a {kind} entry has exactly the keys {shapes}, got {sorted(value)}")
    chunks = value.get("chunks", [])
    if not isinstance(chunks, list):
        raise ReplayError(f"{where}.chunks: expected a list of StreamChunk objects")
    for i, chunk in enumerate(chunks):
        if not isinstance(chunk, Mapping) or chunk.get("type") not in _CHUNK_TYPES:
            raise ReplayError(f"{where}.chunks[{i}]: not a StreamChunk (type must be one of {sorted(_CHUNK_TYPES)})")
        try:
            chunk_from_json(dict(chunk), f"{where}.chunks[{i}]")
        except ValueError as exc:
            raise ReplayError(str(exc)) from None
    if kind == "throw":
        for k in ("message", "code"):
            if not isinstance(value[k], str) or not value[k]:
                raise ReplayError(f"{where}.{k}: expected a non-empty string")
    ready = value.get("readyFile")
    if ready is not None and not isinstance(ready, str):
        raise ReplayError(f"{where}.readyFile: expected a string")
    return ReplayEntry(
        kind=kind,  # checked against `_ENTRY_KEYS` above
        chunks=tuple(dict(c) for c in chunks),
        message=value.get("message"),
        code=value.get("code"),
        ready_file=ready,
        where=where,
    )


def parse_override(doc: Any, derived: Sequence[ReplayEntry] | None, *, source: str = "replay.override.json") -> list[ReplayEntry]:
    """Apply a sidecar (§2.6): a bare list replaces the script; `{patches: [{at, entry}]}` swaps
    call `at` of the derived script, or appends one call when `at` equals its length."""
    if isinstance(doc, list):
        return [_entry_from_json(e, f"{source}[{i}]") for i, e in enumerate(doc)]
    if not isinstance(doc, Mapping) or set(doc) != {"patches"} or not isinstance(doc["patches"], list):
        raise ReplayError(f"{source}: expected a list of entries or {{\"patches\": [{{\"at\", \"entry\"}}]}}")
    base = list(derived or ())
    n = len(base)
    seen: set[int] = set()
    for i, patch in enumerate(doc["patches"]):
        where = f"{source}.patches[{i}]"
        if not isinstance(patch, Mapping) or set(patch) != {"at", "entry"}:
            raise ReplayError(f"{where}: a patch has exactly the keys `at` and `entry`")
        at = patch["at"]
        if type(at) is not int or at < 0:
            raise ReplayError(f"{where}.at: expected a non-negative integer, got {at!r}")
        if at in seen:
            raise ReplayError(f"{where}.at: call {at} is patched twice")
        if at > n:
            raise ReplayError(f"{where}.at: {at} is out of range; the derived script has {n} call(s) (at == {n} appends)")
        seen.add(at)
        entry = _entry_from_json(patch["entry"], f"{where}.entry")
        if at == n:
            base.append(entry)
        else:
            base[at] = entry
    return base


def _children_of(primary: Path) -> list[Path]:
    """`NAME.1.jsonl`, `NAME.2.jsonl`, … next to `NAME.jsonl`, contiguous from 1."""
    stem = primary.name.removesuffix(".jsonl")
    found = sorted(
        (int(m.group(1)), p)
        for p in primary.parent.glob(f"{stem}.*.jsonl")
        if (m := re.fullmatch(re.escape(stem) + r"\.(\d+)\.jsonl", p.name))
    )
    numbers = [n for n, _ in found]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ReplayError(f"{primary}: child logs must be numbered {stem}.1.jsonl, {stem}.2.jsonl, … without gaps; found {numbers}")
    return [p for _, p in found]


def _override_of(primary: Path) -> Path | None:
    """`replay.override.json` beside `session.jsonl`, or `X--replay.override.json` beside
    `X--session.jsonl` (the corpus naming)."""
    name = primary.name
    candidates = [primary.parent / "replay.override.json"] if name == "session.jsonl" else []
    if "session.jsonl" in name:
        candidates.insert(0, primary.parent / name.replace("session.jsonl", "replay.override.json"))
    return next((c for c in candidates if c.is_file()), None)


def load_log_session(path: Path) -> Session:
    """A log as recorded, for replay: validated leniently, not repaired, never written to.
    Unreadable lines after the last `turn/end` (a torn tail) are skipped with a warning; events
    that break a rule are kept as defects (`SessionEvent.defect`), each with a warning."""
    try:
        loaded = parse_session_log(path.read_bytes(), source=str(path), repair=False, lenient=True)
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the session log: {exc.strerror}") from None
    for defect in loaded.defects:
        _log.warning("%s (kept as a defect; it takes no part in replay)", defect)
    if loaded.dropped_lines:
        _log.warning(
            "%s: skipping %d unreadable line(s) after the last turn/end (a torn tail)",
            path, loaded.dropped_lines,
        )
    return loaded.session


def load_session_scripts(
    path: str | Path,
    *,
    children: Sequence[str | Path] | None = None,
    override: str | Path | Literal[False] | None = None,
    loaded: Session | None = None,
) -> list[SessionScript]:
    """The scripts of a logged session and its subagents: primary first, then children by
    `createdAt` and id (§2.8). `children` defaults to `NAME.N.jsonl` files beside the log;
    `override` to the sidecar beside it (False: none). The sidecar applies to the primary only.
    `loaded` is the primary log when the caller has already loaded it."""
    primary = Path(path)
    side = _override_of(primary) if override is None else (Path(override) if override else None)
    doc: Any = None
    if side is not None:
        try:
            doc = json.loads(side.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReplayError(f"{side}: cannot read the override sidecar: {exc}") from None
    session: Session | None = loaded
    if session is None and (primary.exists() or not isinstance(doc, list)):
        session = load_log_session(primary)
    if isinstance(doc, list):
        entries = parse_override(doc, None, source=str(side))
    else:
        assert session is not None
        entries = derive_replay_script(session.events, source=str(primary))
        if doc is not None:
            entries = parse_override(doc, entries, source=str(side))
    head = session.header if session is not None else None
    scripts = [
        SessionScript(
            session_id=head.id if head else "",
            created_at=head.created_at if head else 0,
            entries=tuple(entries),
            source=str(primary),
        )
    ]
    child_paths = [Path(c) for c in children] if children is not None else (
        _children_of(primary) if primary.exists() else []
    )
    kids: list[SessionScript] = []
    for child in child_paths:
        s = load_log_session(child)
        events = s.events[s.header.seed_length or 0 :]  # a fork's inherited prefix is not its own
        kids.append(
            SessionScript(
                session_id=s.header.id,
                created_at=s.header.created_at,
                entries=tuple(derive_replay_script(events, source=str(child))),
                source=str(child),
                primary=False,
            )
        )
    kids.sort(key=lambda k: (k.created_at, k.session_id))
    return scripts + kids


# --- {{fromRequest:REGEX}} -------------------------------------------------------------------


def request_strings(messages: Any) -> str:
    """Every string leaf of the request's messages, in traversal order, joined by newlines."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(messages)
    return "\n".join(out)


def _fill_text(text: str, corpus: str) -> str:
    out: list[str] = []
    pos = 0
    while (start := text.find(_PLACEHOLDER, pos)) >= 0:
        out.append(text[pos:start])
        body = start + len(_PLACEHOLDER)
        close = text.find("}}", body)
        if close < 0:
            raise ReplayError(f"unterminated {_PLACEHOLDER}…}} placeholder in {text[start:start + 80]!r}")
        end = close
        while end < len(text) and text[end] == "}":
            end += 1  # the last two braces of the run close it: `\d{4}}}` keeps `{4}`
        pattern = text[body : end - 2]
        try:
            matches = list(re.finditer(pattern, corpus))
        except re.error as exc:
            raise ReplayError(f"invalid regex in {_PLACEHOLDER}{pattern}}}}}: {exc}") from None
        if not matches:
            raise ReplayError(
                f"{_PLACEHOLDER}{pattern}}}}} matched nothing in the live request's messages; the "
                "request drifted from the recording, or the pattern needs fixing"
            )
        last = matches[-1]
        out.append(last.group(1) if last.re.groups else last.group(0))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def fill_from_request(value: Any, corpus: str) -> Any:
    """Replace `{{fromRequest:REGEX}}` in every string leaf (§2.7): the last match of REGEX in
    `corpus` wins, its first group (or the whole match). Values without a placeholder are
    returned as they are."""
    if isinstance(value, str):
        return _fill_text(value, corpus) if _PLACEHOLDER in value else value
    if isinstance(value, Mapping):
        return {k: fill_from_request(v, corpus) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [fill_from_request(v, corpus) for v in value]
    return value
