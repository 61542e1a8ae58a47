"""`replay_session`: a log's turns run again through the agent loop against its recorded calls.

Each logged turn is opened again by the input that opened it (`turn_inputs`), the loop runs it,
and every model call is answered from the log: straight as chunks (`ReplayAdapter`) or through
an adapter an injected source opens over the scripts (`dshkit.replay.wire_adapter` serves them
as SSE from the mock server to the real `DeepSeekAdapter`; this library never imports the mock
server). Tools answer from the log (`logged_tool_runtime`) or run for real. A call the recorded
user cancelled is cancelled again where they did (`_CancelAtHang`). The loop is imported only
when a replay runs, so the mock server can import this package without it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.llm.messages import ToolResultMessage, UserSource
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.lossless import thaw_json

from .adapter import ReplayAdapter
from .compare import ReplayReport, call_failures, logged_contents, turn_outcome
from .entries import ReplayEntry, SessionScript
from .plan import plan_call
from .scripts import load_log_session, load_session_scripts

if TYPE_CHECKING:
    from dshkit.harness.tools import ToolRuntime
    from dshkit.harness.tools.policy import Approver

__all__ = ["ReplayAdapterSource", "logged_tool_runtime", "replay_session", "turn_inputs"]


# --- tools answered from the log --------------------------------------------------------------


def logged_tool_runtime(sessions: Iterable[Session]) -> ToolRuntime:
    """A `ToolRuntime` whose tools answer each call with the result logged for its call id, so
    a replay runs no tool for real (upstream's workspaces and tools are not ours)."""
    from dshkit.harness.tools import ToolRuntime, define_tool
    from dshkit.harness.tools.results import ToolResult

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
    """The inbox input that opened each logged turn (its first step's messages), in order."""
    return [msgs for _, msgs in _inputs_by_turn(session)]


def _inputs_by_turn(session: Session) -> list[tuple[int, list[UserMessage]]]:
    """`turn_inputs` with each turn's number.

    A turn is started by whatever reached the inbox: a user's prompt, but also a goal round, a
    subagent's notice or a plugin's message. In a log that records its inbox (`agent/inbox/spliced`)
    a message is input when the inbox delivered it (its id was inserted there); messages that
    plugins add themselves (runtime-context snapshots, instructions, catalogs) are not, since the
    live loop makes its own. A log without inbox events (the web app's) falls back to the
    messages whose source is the user.
    """
    inserted: set[str] = set()
    for e in session.events:
        items = e.data.get("inserted") if e.type == "agent/inbox/spliced" and e.defect is None else None
        if isinstance(items, Sequence) and not isinstance(items, str):  # a hand-edited log may hold anything
            inserted.update(m["id"] for m in items if isinstance(m, Mapping) and isinstance(m.get("id"), str))
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
    return sorted(turns.items())


def _logged_outcomes(session: Session, turns: Iterable[int]) -> list[Any]:
    """The logged outcome of each of `turns` (`{"kind": "none"}` for a turn the log never ends)."""
    ends = {
        e.data.get("turn"): turn_outcome(thaw_json(e.data).get("reason"))
        for e in session.events if e.type == "turn/end" and e.defect is None
    }
    return [ends.get(turn, {"kind": "none"}) for turn in turns]


ReplayAdapterSource = Callable[
    [Sequence[SessionScript], Path, Callable[[int, int], None]], contextlib.AbstractAsyncContextManager[Any]
]
"""Opens the adapter a replay talks to: given the log's scripts, the workspace (where hang ready
files go) and a callback to call with (script position, entry index) when each recorded call is
requested, an async context manager yielding the adapter; closing it closes whatever serves the
calls. The adapter is taken to deliver the deltas a Chat Completions stream of each call carries."""


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
        from dshkit.harness.tools import ToolRuntime, builtin_tools
        from dshkit.harness.tools.blocking import TOOL_TIMEOUT
        from dshkit.harness.tools.policy import terminal_approver
        from dshkit.harness.tools.providers import LocalShell

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
    inputs_by_turn = _inputs_by_turn(logged)
    turns = [turn for turn, _ in inputs_by_turn]
    watcher = _CancelAtHang(
        scripts[0].entries if scripts else (), _tool_aborts(logged, turns), wire=adapter is not None
    )
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
        for _, inputs in inputs_by_turn:
            for message in inputs:  # in logged order: the first step claims them all
                agent.inject(message)
            ends.extend(outcome.kind for outcome in await agent.run_until_idle())
    report = ReplayReport(
        logged_messages=logged_contents(logged.events, "assistant/message"),
        replayed_messages=logged_contents(session.events, "assistant/message"),
        logged_results=logged_contents(logged.events, "tool/result"),
        replayed_results=logged_contents(session.events, "tool/result"),
        turn_ends=ends,
        logged_outcomes=_logged_outcomes(logged, turns),
        replayed_outcomes=[
            turn_outcome(thaw_json(e.data).get("reason")) for e in session.events if e.type == "turn/end"
        ],
        logged_failures=call_failures(logged.events),
        replayed_failures=call_failures(session.events),
        calls=sum(len(s.entries) for s in scripts),
    )
    return report, session


_DELTAS = frozenset({"text-delta", "reasoning-delta", "tool-call-delta"})


def _hang_point(entry: ReplayEntry, *, wire: bool) -> int | None:
    """How many deltas of this call reach the loop before the recorded client cancelled; None
    when the call was not cancelled. Straight into the loop every logged delta arrives; over a
    wire only those the wire carries (`plan_call`: no empty text, a block's missing rest added)."""
    if not entry.aborted:
        return None
    if wire:
        plan = plan_call(entry.stream_chunks(), hang=True)
        return sum(1 for p in plan.pieces if p.text or p.kind == "tool-call")
    return sum(1 for c in entry.played_chunks if c.get("type") in _DELTAS)


class _CancelAtHang:
    """Cancels each turn where the recording's user did, and never waits for good.

    In a call the recorded client gave up on (a `hang` entry, or chunks ending in an `aborted`
    finish), the turn is cancelled once that call's prefix arrived, as upstream's snapshot
    driver waits for the hang's readyFile and then cancels; a call cancelled before its first
    delta is cancelled as soon as it is requested. Each call of the primary script is counted
    from the moment it is requested (`call_started`), not from its finish: a cancelled call
    logs no finish, and a second hang after it must be cancelled too. A turn the log ends
    `aborted` while its tools ran (no call of it was cut) is cancelled once its last logged
    tool result is in again, so the loop does not ask for a call the log never made.
    """

    def __init__(self, entries: Sequence[ReplayEntry], tool_aborts: Sequence[int | None], *, wire: bool) -> None:
        self.agent: Any = None  # set once the agent exists (the adapter is built first)
        self.needs = [_hang_point(e, wire=wire) for e in entries]
        self.tool_aborts = tool_aborts
        self.need: int | None = None
        self.deltas = 0
        self.fired = False
        self.turn = -1
        self.results = 0

    def _fire(self) -> None:
        if not self.fired and self.agent is not None:
            self.fired = True
            self.agent.cancel(keep_inbox=True)

    def call_started(self, script: int, index: int) -> None:
        """Call `index` of script `script` was requested (by the loop, or at the mock server in
        wire mode); only the primary script's (0) calls are the replayed agent's."""
        if script != 0:
            return
        self.need = self.needs[index] if index < len(self.needs) else None
        self.deltas, self.fired = 0, False
        if self.need == 0:
            self._fire()

    def __call__(self, event: Any) -> None:
        if event.type != "session/event":
            return
        kind = event.data.type
        if kind == "turn/start":
            self.turn, self.results, self.need = self.turn + 1, 0, None
        elif kind == "tool/result":
            self.results += 1
            wanted = self.tool_aborts[self.turn] if 0 <= self.turn < len(self.tool_aborts) else None
            if wanted is not None and self.results >= wanted:
                self.fired = False  # a new cancel point of its own
                self._fire()
        elif kind == "assistant/chunk" and self.need is not None:
            self.deltas += event.data.data["chunk"]["type"] in _DELTAS
            if self.deltas >= self.need:
                self._fire()


def _tool_aborts(session: Session, turns: Sequence[int]) -> list[int | None]:
    """For each of `turns`: how many tool results the log holds for it when the log ends it
    `aborted` while its tools ran (a tool result, not a chunk, was the turn's last model-side
    event), else None."""
    results: dict[int, int] = {}
    last: dict[int, str] = {}
    aborted: set[int] = set()
    turn = 0
    for e in session.events:
        if e.defect is not None:
            continue
        if e.type == "turn/start":
            turn = e.data["turn"]
        elif e.type in ("assistant/chunk", "tool/result"):
            last[turn] = e.type
            if e.type == "tool/result":
                results[turn] = results.get(turn, 0) + 1
        elif e.type == "turn/end" and (e.data.get("reason") or {}).get("kind") == "aborted":
            aborted.add(e.data.get("turn", turn))
    return [results[t] if t in aborted and last.get(t) == "tool/result" else None for t in turns]
