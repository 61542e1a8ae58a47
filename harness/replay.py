"""Chunk-level replay of session logs: replay scripts, `ReplayAdapter` and `dshkit replay`.

A session log records every model call as its `assistant/chunk` events (dsh-testing.md §2.2).
`derive_replay_script` walks a log backwards into replay entries, one per call (split at each
`finish`, §2.4); `load_session_scripts` adds override sidecars (§2.6) and the logs of a parent's
subagents (§2.8); `fill_from_request` resolves `{{fromRequest:REGEX}}` placeholders (§2.7).
`ReplayAdapter` feeds entries to the agent loop as `StreamChunk`s, binding each live session to
the next unclaimed script on its first call; the mock server serves the same entries as SSE
(`mock_server.replay`), so the real adapter parses them too. This module's top level imports
only `harness.llm` and `harness.session` (the mock server uses it); the `dshkit replay` command
imports the loop when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.llm import (
    Finish,
    FinishReason,
    GenerateOptions,
    HarnessError,
    LlmFailure,
    StreamChunk,
    UserMessage,
    chunk_from_json,
    message_from_json,
    message_to_json,
)
from harness.session import Session, SessionEvent, parse_session_log, thaw_json

if TYPE_CHECKING:
    from harness.tools import ToolRuntime

__all__ = [
    "ReplayAdapter",
    "ReplayEntry",
    "ReplayError",
    "SessionScript",
    "derive_replay_script",
    "fill_from_request",
    "load_session_scripts",
    "logged_tool_runtime",
    "parse_override",
    "register",
    "request_strings",
    "user_prompts",
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

    def stream_chunks(self, strings: str | None = None) -> list[StreamChunk]:
        """The chunks to play, placeholders filled from `strings` (the live request)."""
        raw: Any = list(self.chunks) if self.kind != "hang" else list(_HANG_PREFIX)
        if strings is not None and _PLACEHOLDER in json.dumps(raw, ensure_ascii=False):
            raw = fill_from_request(raw, strings)
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
    allowed: dict[Any, set[frozenset[str]]] = {
        "chunks": {frozenset({"kind", "chunks"})},
        "throw": {frozenset({"kind", "chunks", "message", "code"})},
        "hang": {frozenset({"kind"}), frozenset({"kind", "readyFile"})},
    }
    if kind not in allowed:
        raise ReplayError(f"{where}.kind: expected chunks, throw or hang, got {kind!r}")
    if frozenset(value) not in allowed[kind]:
        shapes = " or ".join(str(sorted(s)) for s in allowed[kind])
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
        kind=kind,  # checked against `allowed` above
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
        if at == n and at >= len(base):
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


def _load_log(path: Path) -> Session:
    try:
        return parse_session_log(path.read_bytes(), source=str(path), repair=False).session
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the session log: {exc.strerror}") from None


def load_session_scripts(
    path: str | Path,
    *,
    children: Sequence[str | Path] | None = None,
    override: str | Path | Literal[False] | None = None,
) -> list[SessionScript]:
    """The scripts of a logged session and its subagents: primary first, then children by
    `createdAt` and id (§2.8). `children` defaults to `NAME.N.jsonl` files beside the log;
    `override` to the sidecar beside it (False: none). The sidecar applies to the primary only."""
    primary = Path(path)
    side = _override_of(primary) if override is None else (Path(override) if override else None)
    doc: Any = None
    if side is not None:
        try:
            doc = json.loads(side.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReplayError(f"{side}: cannot read the override sidecar: {exc}") from None
    session: Session | None = None
    if primary.exists() or not isinstance(doc, list):
        session = _load_log(primary)
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
        s = _load_log(child)
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


# --- the replay adapter ----------------------------------------------------------------------


def _fail(message: str, code: str) -> Finish:
    return Finish(reason=FinishReason(kind="error", failure=LlmFailure(message=message, code=code)))


def _aborted() -> Finish:
    failure = LlmFailure(message="replayed call aborted by caller", code="ABORTED")
    return Finish(reason=FinishReason(kind="aborted", failure=failure))


@dataclass(slots=True)
class _Cursor:
    script: SessionScript
    next: int = 0


@dataclass(eq=False)
class ReplayAdapter:
    """An `Adapter` that plays recorded calls instead of calling a provider.

    Each live `session_id` (None counts as one anonymous session) claims the next unclaimed
    script on its first call and then walks its own cursor. Running past a script, or more
    sessions than scripts, ends the stream with an error finish naming what to re-record.
    `ready_dir` resolves relative `readyFile`s of `hang` entries.
    """

    scripts: Sequence[SessionScript]
    provider: str = "replay"
    ready_dir: Path | None = None
    _unclaimed: list[SessionScript] = field(init=False)
    _bound: dict[str | None, _Cursor] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._unclaimed = list(self.scripts)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        cursor = self._bound.get(options.session_id)
        if cursor is None:
            if not self._unclaimed:
                yield _fail(
                    f"unrecorded session #{len(self._bound) + 1} ({options.session_id}): the logs "
                    f"hold {len(self.scripts)} session(s); re-record",
                    "REPLAY_UNRECORDED_SESSION",
                )
                return
            cursor = self._bound[options.session_id] = _Cursor(self._unclaimed.pop(0))
        entries = cursor.script.entries
        if cursor.next >= len(entries):
            yield _fail(
                f"script exhausted — session requested model call #{cursor.next + 1} but its "
                f"script ({cursor.script.source}) has only {len(entries)}",
                "REPLAY_EXHAUSTED",
            )
            return
        entry = entries[cursor.next]
        cursor.next += 1
        try:
            strings = request_strings([message_to_json(m) for m in options.messages])
            chunks = entry.stream_chunks(strings)
        except (ReplayError, ValueError) as exc:
            yield _fail(str(exc), "REPLAY_INVALID")
            return
        signal = options.signal
        hang = entry.kind == "hang"
        for chunk in chunks:
            if signal is not None and signal.is_set():
                yield _aborted()
                return
            if isinstance(chunk, Finish) and chunk.reason.kind == "aborted":
                hang = True  # the recorded client gave up here: wait for this one to
                break
            yield chunk
            await asyncio.sleep(0)
        if hang:
            if entry.ready_file:
                ready = Path(entry.ready_file)
                if not ready.is_absolute() and self.ready_dir is not None:
                    ready = self.ready_dir / ready
                ready.touch()
            if signal is not None:
                await signal.wait()
            else:
                await asyncio.Event().wait()
            yield _aborted()
            return
        if entry.kind == "throw":
            yield _fail(entry.message or "", entry.code or "UNKNOWN")
            return
        if not chunks or not isinstance(chunks[-1], Finish):
            yield _fail(f"{entry.where}: the recorded call has no finish", "REPLAY_INVALID")

    async def aclose(self) -> None:
        return None

    def unused(self) -> list[str]:
        """Recorded calls no live session used."""
        out = [f"script {s.source}: never bound to a live session ({len(s.entries)} call(s))" for s in self._unclaimed]
        for session, cur in self._bound.items():
            if cur.next < len(cur.script.entries):
                out.append(f"session {session!r} consumed {cur.next}/{len(cur.script.entries)} recorded call(s) of {cur.script.source}")
        return out

    def assert_consumed(self) -> None:
        """Fail listing every script never bound and every session that stopped short (§2.9)."""
        unused = self.unused()
        if unused:
            raise AssertionError("recorded calls were not replayed:\n  " + "\n  ".join(unused))


# --- tools answered from the log --------------------------------------------------------------


def logged_tool_runtime(sessions: Iterable[Session]) -> ToolRuntime:
    """A `ToolRuntime` whose tools answer each call with the result logged for its call id, so
    a replay runs no tool for real (upstream's workspaces and tools are not ours)."""
    from harness.tools import ToolResult, ToolRuntime, define_tool

    results: dict[str, Mapping[str, Any]] = {}
    names: set[str] = set()
    for session in sessions:
        for event in session.events:
            if event.type == "tool/call":
                names.add(event.data["name"])
            elif event.type == "tool/result":
                data = thaw_json(event.data)
                block = data["message"]["content"][0]
                results[block["toolCallId"]] = data

    async def from_log(call: Any, _next: Any) -> ToolResult:
        data = results.get(call.call_id)
        if data is None:
            from harness.llm import TextBlock

            return ToolResult(is_error=True, content=(TextBlock(text=f"no logged result for call {call.call_id}"),))
        message = message_from_json(data["message"])
        block = message.content[0]
        return ToolResult(is_error=bool(getattr(block, "is_error", False)), content=tuple(getattr(block, "content", ())), meta=data.get("meta"))

    tools = [
        define_tool(name, f"{name} (answered from the replayed log)", {"type": "object"}, lambda args: "")
        for name in sorted(names)
    ]
    return ToolRuntime(tools, execute_wrappers=[from_log])


# --- re-running a log through the loop --------------------------------------------------------


def user_prompts(session: Session) -> list[list[UserMessage]]:
    """The user's own messages of each turn (runtime-context snapshots left out), in order."""
    turns: dict[int, list[UserMessage]] = {}
    turn = 0
    for event in session.events:
        if event.type == "turn/start":
            turn = event.data["turn"]
            turns.setdefault(turn, [])
        elif event.type == "user/message" and event.data["source"].get("kind") == "user":
            message = message_from_json(thaw_json(event.data))
            assert isinstance(message, UserMessage)
            turns.setdefault(turn, []).append(message)
    return [msgs for _, msgs in sorted(turns.items()) if msgs]


def _assistant_contents(events: Iterable[SessionEvent]) -> list[Any]:
    return [
        thaw_json(e.data)["message"]["content"]
        for e in events
        if e.type == "assistant/message" and not e.data.get("interrupted")
    ]


def _tool_results(events: Iterable[SessionEvent]) -> list[Any]:
    return [thaw_json(e.data)["message"]["content"] for e in events if e.type == "tool/result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """How a replayed session compares with its log."""

    logged_messages: list[Any]
    replayed_messages: list[Any]
    logged_results: list[Any]
    replayed_results: list[Any]
    turn_ends: list[str]

    @property
    def messages_equal(self) -> bool:
        return self.logged_messages == self.replayed_messages

    @property
    def results_equal(self) -> bool:
        return self.logged_results == self.replayed_results


async def replay_session(
    path: str | Path,
    *,
    wire: bool = False,
    workspace: Path | None = None,
    tools: Literal["logged", "builtin"] = "logged",
    out: Session | None = None,
) -> tuple[ReplayReport, Session]:
    """Re-run a log's user prompts through the agent loop against its recorded calls.

    The calls are fed straight into the loop (`ReplayAdapter`) or, with `wire`, served as SSE by
    the mock server and parsed by the real `DeepSeekAdapter`.
    """
    import contextlib

    from harness.loop import Agent, AgentOptions
    from harness.session import SessionHeader

    scripts = load_session_scripts(path)
    logged = _load_log(Path(path))
    ws = (workspace or Path.cwd()).resolve()
    runtime: ToolRuntime
    if tools == "builtin":
        from harness.tools import ToolRuntime, auto_approver, builtin_tools

        runtime = ToolRuntime(builtin_tools(ws), approver=auto_approver)
    else:
        runtime = logged_tool_runtime([logged])
    session = out or Session(SessionHeader.new(cwd=str(ws)))
    model = "deepseek-v4-flash"
    async with contextlib.AsyncExitStack() as stack:
        if wire:
            from harness.providers.deepseek import DeepSeekAdapter
            from mock_server import MockServer
            from mock_server.replay import session_scripts_to_mock

            server = await stack.enter_async_context(MockServer(*session_scripts_to_mock(scripts, ready_dir=ws)))
            adapter: Any = DeepSeekAdapter(server.base_url, "sk-dshkit-replay", idle_timeout_s=30)
            stack.push_async_callback(adapter.aclose)
        else:
            adapter = ReplayAdapter(scripts, ready_dir=ws)

        async def no_wait(_: float) -> None:
            return None

        agent = Agent(session, adapter, AgentOptions(model=model), tools=runtime, sleep=no_wait)
        agent.subscribe(_CancelAtHang(agent, scripts[0].entries if scripts else ()))
        ends: list[str] = []
        for prompts in user_prompts(logged):
            for extra in prompts[1:]:
                agent.inject(extra)
            outcome = await agent.run(prompts[0])
            ends.append(outcome.kind)
    report = ReplayReport(
        logged_messages=_assistant_contents(logged.events),
        replayed_messages=_assistant_contents(session.events),
        logged_results=_tool_results(logged.events),
        replayed_results=_tool_results(session.events),
        turn_ends=ends,
    )
    return report, session


_DELTAS = frozenset({"text-delta", "reasoning-delta", "tool-call-delta"})


def _hang_point(entry: ReplayEntry) -> int | None:
    """How many deltas of this call arrive before the recorded client cancelled; None when the
    call was not cancelled."""
    if entry.kind == "hang":
        return 1
    last = entry.chunks[-1] if entry.chunks else None
    if last is not None and last.get("type") == "finish" and last.get("reason", {}).get("kind") == "aborted":
        return sum(1 for c in entry.chunks if c.get("type") in _DELTAS)
    return None


class _CancelAtHang:
    """Cancels the turn where the recording's user did: once a hanging call's prefix arrived
    (upstream's snapshot driver waits for the hang's readyFile, then cancels)."""

    def __init__(self, agent: Any, entries: Sequence[ReplayEntry]) -> None:
        self.agent = agent
        self.entries = entries
        self.call = 0
        self.deltas = 0

    def __call__(self, event: Any) -> None:
        if event.type != "session/event" or event.data.type != "assistant/chunk":
            return
        kind = event.data.data["chunk"]["type"]
        if kind == "finish":
            self.call, self.deltas = self.call + 1, 0
            return
        if self.call >= len(self.entries):
            return
        need = _hang_point(self.entries[self.call])
        if need is None:
            return
        self.deltas += kind in _DELTAS
        if self.deltas >= need:
            self.call, self.deltas = self.call + 1, 0
            self.agent.cancel(keep_inbox=True)


def _replay_command(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is not None and not workspace.is_dir():
        print(f"dshkit replay: --workspace {args.workspace} is not a directory", file=sys.stderr)
        return 2
    try:
        report, session = asyncio.run(
            replay_session(args.session, wire=args.wire, workspace=workspace, tools=args.tools)
        )
    except (HarnessError, OSError) as exc:
        print(f"dshkit replay: {exc}", file=sys.stderr)
        return 2
    if args.out:
        from harness.session import save_session

        save_session(session, args.out)
    result = {
        "type": "replay",
        "session": args.session,
        "mode": "wire" if args.wire else "chunks",
        "turns": report.turn_ends,
        "assistant_messages": len(report.logged_messages),
        "messages_equal": report.messages_equal,
        "tool_results_equal": report.results_equal,
    }
    print(json.dumps(result, ensure_ascii=False))
    if not report.messages_equal:
        for i, (a, b) in enumerate(zip(report.logged_messages, report.replayed_messages, strict=False)):
            if a != b:
                print(f"message {i + 1} differs:\n  logged:   {json.dumps(a, ensure_ascii=False)[:400]}\n"
                      f"  replayed: {json.dumps(b, ensure_ascii=False)[:400]}", file=sys.stderr)
                break
        else:
            print(f"logged {len(report.logged_messages)} assistant message(s), replayed "
                  f"{len(report.replayed_messages)}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `dshkit replay`."""
    p = sub.add_parser(
        "replay",
        help="re-run a session log's prompts against its recorded model calls",
        description="Replay a session JSONL (ours or upstream DSH's, packed rows and override "
        "sidecars included): its user prompts go through the agent loop again, each model call is "
        "answered by the recorded chunks, and the replayed assistant messages are compared with "
        "the logged ones. Exit 0 when they are equal, 1 when not, 2 on bad input.",
    )
    p.add_argument("session", help="the session JSONL (children NAME.N.jsonl and the sidecar are found beside it)")
    p.add_argument("--wire", action="store_true", help="serve the calls as DeepSeek SSE through the mock server and the real adapter")
    p.add_argument("--workspace", help="workspace for builtin tools and hang ready files (default: .)")
    p.add_argument("--tools", choices=("logged", "builtin"), default="logged",
                   help="answer tool calls from the log (default) or run the builtin tools in --workspace")
    p.add_argument("--out", help="write the replayed session JSONL here")
    p.set_defaults(func=_replay_command)

