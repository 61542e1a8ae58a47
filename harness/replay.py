"""Loop-level replay of session logs: `ReplayAdapter` and `replay_session`.

The replay scripts (one entry per logged model call, override sidecars, the logs of subagents,
`{{fromRequest:REGEX}}` placeholders; dsh-testing.md §2) are derived by `dshkit.harness.session`
(`replay_scripts`), which the mock server also uses to serve a log as SSE, so the real adapter
parses the same entries. `ReplayAdapter` feeds them to the agent loop as `StreamChunk`s, binding
each live session to the next unclaimed script on its first call; `replay_session` re-runs a
log's prompts through the loop and compares the result with the log. This module's top level
imports only `dshkit.harness.llm` and `dshkit.harness.session`; the loop is imported when a replay runs.
The `dshkit replay` command and the wire mode (the mock server serving the calls as SSE) live in
the application layer, `dshkit.replay`, so this library never imports the mock server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dshkit.harness.llm import (
    Finish,
    GenerateOptions,
    StreamChunk,
    TextBlock,
    ToolResultMessage,
    UserMessage,
    UserSource,
    message_to_json,
)
from dshkit.harness.session import (
    ReplayEntry,
    ReplayError,
    Session,
    SessionEvent,
    SessionHeader,
    SessionScript,
    load_log_session,
    load_session_scripts,
    logged_message,
)
from dshkit.harness.session.replay_scripts import request_strings

if TYPE_CHECKING:
    from dshkit.harness.tools import Approver, ToolRuntime

__all__ = [
    "ReplayAdapter",
    "ReplayAdapterSource",
    "ReplayReport",
    "logged_tool_runtime",
    "replay_diff",
    "replay_session",
    "turn_inputs",
]


# --- the replay adapter ----------------------------------------------------------------------


_ABORTED = "replayed call aborted by caller"


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
    `ready_dir` resolves relative `readyFile`s of `hang` entries; `on_call` is told when each
    call begins (before its first chunk), which is where a replay cancels a call the recorded
    user cancelled before any chunk.
    """

    scripts: Sequence[SessionScript]
    provider: str = "replay"
    ready_dir: Path | None = None
    on_call: Callable[[], None] | None = None
    _unclaimed: list[SessionScript] = field(init=False)
    _bound: dict[str | None, _Cursor] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._unclaimed = list(self.scripts)

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
            cursor = self._bound[options.session_id] = _Cursor(self._unclaimed.pop(0))
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
            self.on_call()
        try:
            chunks = entry.stream_chunks(
                lambda: request_strings([message_to_json(m) for m in options.messages])
            )
        except (ReplayError, ValueError) as exc:
            yield Finish.error(str(exc), "REPLAY_INVALID")
            return
        signal = options.signal
        hang = entry.kind == "hang"
        for chunk in chunks:
            if signal is not None and signal.is_set():
                yield Finish.aborted(_ABORTED)
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
    from dshkit.harness.tools import ToolResult, ToolRuntime, define_tool

    results: dict[str, tuple[ToolResultMessage, Any]] = {}
    names: set[str] = set()
    for session in sessions:
        for event in session.events:
            if event.defect is not None:
                continue
            if event.type == "tool/call":
                names.add(event.data["name"])
            elif event.type == "tool/result":
                message = session.message_at(event.seq)
                assert isinstance(message, ToolResultMessage)  # checked when it was logged
                results[message.source.call_id] = (message, event.data.get("meta"))

    async def from_log(call: Any, _next: Any) -> ToolResult:
        logged = results.get(call.call_id)
        if logged is None:
            return ToolResult(is_error=True, content=(TextBlock(text=f"no logged result for call {call.call_id}"),))
        message, meta = logged
        return ToolResult(is_error=bool(message.block.is_error), content=message.block.content, meta=meta)

    tools = [
        define_tool(name, f"{name} (answered from the replayed log)", {"type": "object"}, lambda args: "")
        for name in sorted(names)
    ]
    return ToolRuntime(tools, execute_wrappers=[from_log])


# --- re-running a log through the loop --------------------------------------------------------


def turn_inputs(session: Session) -> list[list[UserMessage]]:
    """The inbox input that opened each logged turn (its first step's messages), in order.

    A turn is started by whatever reached the inbox: a user's prompt, but also a goal round, a
    subagent's notice or a plugin's message. In a log that records its inbox (`agent/inbox/spliced`)
    a message is input when the inbox delivered it (its id was inserted there); messages that
    plugins add themselves (runtime-context snapshots, instructions, catalogs) are not, since the
    live loop makes its own. A log without inbox events (the web app's) falls back to the
    messages whose source is the user.
    """
    inserted = {
        m.get("id")
        for e in session.events
        if e.type == "agent/inbox/spliced" and e.defect is None
        for m in e.data.get("inserted", ())
    }
    turns: dict[int, list[UserMessage]] = {}
    turn = step = 0
    for event in session.events:
        if event.defect is not None:
            continue
        if event.type == "turn/start":
            turn, step = event.data["turn"], 0
        elif event.type == "step/start":
            step = event.data["step"]
        elif event.type == "user/message" and step <= 1:
            message = session.message_at(event.seq)
            if not isinstance(message, UserMessage):
                continue
            if message.id in inserted if inserted else isinstance(message.source, UserSource):
                turns.setdefault(turn, []).append(message)
    return [msgs for _, msgs in sorted(turns.items())]


def _logged_contents(events: Iterable[SessionEvent], type_: str) -> list[Any]:
    """The content of each `type_` message (interrupted assistant prefixes left out), as JSON."""
    return [
        message_to_json(logged_message(e.type, e.data, seq=e.seq))["content"]
        for e in events
        if e.type == type_ and e.defect is None and not (type_ == "assistant/message" and e.data.get("interrupted"))
    ]


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


ReplayAdapterSource = Callable[
    [Sequence[SessionScript], Path, Callable[[], None]], contextlib.AbstractAsyncContextManager[Any]
]
"""Opens the adapter a replay talks to: given the log's scripts, the workspace (where hang ready
files go) and a callback to call when each model call is requested, an async context manager
yielding the adapter; closing it closes whatever serves the calls."""


async def replay_session(
    path: str | Path,
    *,
    adapter: ReplayAdapterSource | None = None,
    workspace: Path | None = None,
    tools: Literal["logged", "builtin"] = "logged",
    out: Session | None = None,
    approver: Approver | None = None,
    tool_timeout: float | None = None,
) -> tuple[ReplayReport, Session]:
    """Re-run a log's turns (each opened by its logged inbox input, see `turn_inputs`) through
    the agent loop against its recorded calls.

    The calls are fed straight into the loop (`ReplayAdapter`) or, with `adapter`, through the
    adapter that source opens over them (`dshkit.replay.wire_adapter` serves them as SSE from the
    mock server to the real `DeepSeekAdapter`; this library does not import the mock server). With `tools="builtin"` the logged
    calls run for real in `workspace`, under the same approval policy as `dshkit run`: a log is
    untrusted input, so `bash` asks `approver` (default `terminal_approver()`: ask on a TTY,
    deny without one); pass `auto_approver` to allow everything, as `--yes` does.
    `tool_timeout` bounds each file-tool call (default `TOOL_TIMEOUT`).
    """
    from dshkit.harness.loop import Agent, AgentOptions

    logged = load_log_session(Path(path))
    scripts = load_session_scripts(path, loaded=logged)
    ws = (workspace or Path.cwd()).resolve()
    runtime: ToolRuntime
    if tools == "builtin":
        from dshkit.harness.tools import (
            TOOL_TIMEOUT,
            LocalShell,
            ToolRuntime,
            builtin_tools,
            terminal_approver,
        )

        key_env = "DEEPSEEK_API_KEY"  # as in `dshkit run`: hidden from bash, scrubbed from results
        runtime = ToolRuntime(
            builtin_tools(
                ws, tool_timeout=tool_timeout or TOOL_TIMEOUT, shell=LocalShell(ws, hide_env=(key_env,))
            ),
            approver=approver if approver is not None else terminal_approver(),
            secrets=[os.environ.get(key_env) or ""],
        )
    else:
        runtime = logged_tool_runtime([logged])
    session = out or Session(SessionHeader.new(cwd=str(ws)))
    model = "deepseek-v4-flash"
    watcher = _CancelAtHang(scripts[0].entries if scripts else ())
    async with contextlib.AsyncExitStack() as stack:
        if adapter is None:
            model_adapter: Any = ReplayAdapter(scripts, ready_dir=ws, on_call=watcher.call_started)
        else:
            model_adapter = await stack.enter_async_context(adapter(scripts, ws, watcher.call_started))

        async def no_wait(_: float) -> None:
            return None

        agent = Agent(session, model_adapter, AgentOptions(model=model), tools=runtime, sleep=no_wait)
        watcher.agent = agent
        agent.subscribe(watcher)
        ends: list[str] = []
        for inputs in turn_inputs(logged):
            for message in inputs:  # in logged order: the first step claims them all
                agent.inject(message)
            ends.extend(outcome.kind for outcome in await agent.run_until_idle())
    report = ReplayReport(
        logged_messages=_logged_contents(logged.events, "assistant/message"),
        replayed_messages=_logged_contents(session.events, "assistant/message"),
        logged_results=_logged_contents(logged.events, "tool/result"),
        replayed_results=_logged_contents(session.events, "tool/result"),
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
    (upstream's snapshot driver waits for the hang's readyFile, then cancels). A call the user
    cancelled before its first delta is cancelled as soon as it is requested (`call_started`):
    no chunk would ever arrive to count, and the replay would wait for good."""

    def __init__(self, entries: Sequence[ReplayEntry]) -> None:
        self.agent: Any = None  # set once the agent exists (the adapter is built first)
        self.entries = entries
        self.call = 0
        self.deltas = 0
        self.fired = False

    def _need(self) -> int | None:
        return _hang_point(self.entries[self.call]) if self.call < len(self.entries) else None

    def _fire(self) -> None:
        if not self.fired and self.agent is not None:
            self.fired = True
            self.agent.cancel(keep_inbox=True)

    def call_started(self) -> None:
        """A model call was requested (by the loop, or at the mock server in wire mode)."""
        if self._need() == 0:
            self._fire()

    def __call__(self, event: Any) -> None:
        if event.type != "session/event" or event.data.type != "assistant/chunk":
            return
        kind = event.data.data["chunk"]["type"]
        if kind == "finish":
            self.call, self.deltas, self.fired = self.call + 1, 0, False
            return
        need = self._need()
        if need is None:
            return
        self.deltas += kind in _DELTAS
        if self.deltas >= need:
            self._fire()


def replay_diff(what: str, logged: Sequence[Any], replayed: Sequence[Any]) -> list[str]:
    """A unified diff (indented JSON) of each logged/replayed pair that differs, and a line for a
    count that differs; empty when both lists are equal."""
    import difflib

    out: list[str] = []
    if len(logged) != len(replayed):
        out.append(f"the log holds {len(logged)} {what}(s), the replay made {len(replayed)}")
    for i, (a, b) in enumerate(zip(logged, replayed, strict=False)):
        if a != b:
            left = json.dumps(a, indent=2, ensure_ascii=False).splitlines()
            right = json.dumps(b, indent=2, ensure_ascii=False).splitlines()
            out.append(f"{what} {i + 1} differs:")
            out.extend(difflib.unified_diff(left, right, fromfile=f"logged {what} {i + 1}",
                                            tofile=f"replayed {what} {i + 1}", lineterm=""))
    return out
