"""The agent loop: turns and steps, from a user's sentence to the model's answer (dsh-core.md §5).

This is the seed's walk as code. `Agent.followup()` puts a `UserMessage` in the inbox; a turn
opens (`turn/start`), claims its input, assembles the system prompt, runs the pre-step
waterfall, then each step appends `step/start` and the model-visible `user/message`s, derives
the history from the Session, streams the adapter's chunks into the log (`assistant/chunk`) and
the `BlockAssembler`, appends the `assistant/message`, runs the tool calls through the tool
runtime (`tool/call` … `tool/result`, in model order), and starts another step when tools ran.
The one rule is enforced: every request is built from the log alone, and `rebuild_requests`
proves it by rebuilding each request from a finished log.
"""

from __future__ import annotations

import asyncio
import json
import random as _random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.llm import (
    Adapter,
    BlockAssembler,
    ErrorCode,
    GenerateOptions,
    HarnessError,
    LlmError,
    LlmFailure,
    Message,
    ModelSource,
    RetryPolicy,
    ToolCallBlock,
    ToolSchema,
    UserMessage,
    failure_to_json,
    message_from_json,
    message_to_json,
    retry_delay_ms,
    tool_schema_from_json,
    tool_schema_to_json,
)
from harness.prompt import Assembly, RuntimeContextSnapshot, SystemPrompt
from harness.session import JsonValue, Session, SessionEvent, thaw_json
from harness.tools import DEFAULT_MAX_PARALLEL, ToolResult, ToolRuntime, run_tool_calls

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentOptions",
    "Enter",
    "PreStep",
    "PreStepHook",
    "Reject",
    "TurnOutcome",
    "rebuild_requests",
]

# --- pre-step waterfall -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PreStep:
    """What a pre-step hook sees: the claimed input of the proposed step (without the
    runtime-context snapshot, which the default decision appends after it)."""

    turn: int
    step: int
    messages: tuple[UserMessage, ...]


@dataclass(frozen=True, slots=True)
class Enter:
    """Run the step with these messages (rewrite, add or remove input)."""

    messages: tuple[UserMessage, ...]


@dataclass(frozen=True, slots=True)
class Reject:
    """Do not run the step; the turn ends `blocked`."""

    reason: str = ""


PreStepDecision = Enter | Reject
PreStepHook = Callable[
    [PreStep, Callable[[], Awaitable[PreStepDecision]]], Awaitable[PreStepDecision]
]
"""`hook(payload, next)`: call `await next()` for the default decision, or return your own."""

# --- options and live events ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """How the agent calls the model."""

    model: str
    provider: str = "deepseek"
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    max_steps: int | None = None
    """End a turn with `{"kind": "max-steps", "limit": N}` after N steps (a dshkit extension;
    DSH has no step budget)."""
    max_parallel_tool_calls: int = DEFAULT_MAX_PARALLEL
    retry_policy: RetryPolicy | None = field(default_factory=RetryPolicy)
    """None disables retries."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """A live event a UI can follow. `session/event` carries each committed `SessionEvent`;
    `agent/status` carries `{"status": "running" | "idle"}`; `agent/error` the failure."""

    type: str
    data: Any


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended: its number and the logged `turn/end` reason."""

    turn: int
    reason: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.reason["kind"])


Sleep = Callable[[float], Awaitable[None]]


class _TurnAborted(Exception):
    """The turn's signal was set; the loop unwinds and logs `aborted`."""


class _Inbox:
    """The two input queues; every mutation is first logged as `agent/inbox/spliced`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.lists: dict[str, list[UserMessage]] = {"next-turn": [], "next-step": []}
        for event in session.events[session.header.seed_length or 0 :]:
            if event.type == "agent/inbox/spliced":
                self._apply(event.data)

    def _apply(self, data: Mapping[str, Any]) -> None:
        items = self.lists[data["target"]]
        start, removed = data["start"], data.get("removedCount", 0)
        inserted = [message_from_json(thaw_json(m)) for m in data.get("inserted", ())]
        items[start : start + removed] = inserted  # type: ignore[assignment]

    def splice(
        self,
        target: str,
        start: int,
        removed: int,
        inserted: Sequence[UserMessage] = (),
        *,
        canceled: bool = False,
    ) -> list[UserMessage]:
        items = self.lists[target]
        start = max(0, min(start, len(items)))
        removed = max(0, min(removed, len(items) - start))
        if not removed and not inserted:
            return []
        data: dict[str, JsonValue] = {"target": target, "start": start}
        if removed:
            data["removedCount"] = removed
        data["inserted"] = [message_to_json(m) for m in inserted]
        if canceled:
            data["outcome"] = "canceled"
        self.session.append("agent/inbox/spliced", data)
        taken = items[start : start + removed]
        items[start : start + removed] = list(inserted)
        return taken

    def push(self, target: str, message: UserMessage) -> None:
        pending = {m.id for lst in self.lists.values() for m in lst}
        if message.id in pending:
            raise HarnessError(f"message {message.id} is already pending", "DUPLICATE_INPUT")
        self.splice(target, len(self.lists[target]), 0, [message])

    def claim(self, target: str) -> list[UserMessage]:
        claimed = self.splice("next-step", 0, len(self.lists["next-step"]))
        if target == "next-turn":
            claimed += self.splice("next-turn", 0, 1)
        return claimed

    def clear(self) -> None:
        for target in ("next-step", "next-turn"):
            self.splice(target, 0, len(self.lists[target]), canceled=True)

    @property
    def pending(self) -> bool:
        return any(self.lists.values())


class Agent:
    """One agent on one session: inbox, drive loop and the turn/step algorithm.

    Args:
        session: the log everything is written to first.
        adapter: the provider adapter (e.g. `DeepSeekAdapter`).
        options: model, call settings, step limit and retry policy.
        prompt: system prompt registry; a default `SystemPrompt()` when omitted.
        tools: the tool runtime; its visible schemas are contributed to the prompt.
        pre_step: the pre-step waterfall, outermost first.
        sleep: awaited with seconds between retries (inject it to avoid real waits).
        random: jitter source for retry backoff.
    """

    def __init__(
        self,
        session: Session,
        adapter: Adapter,
        options: AgentOptions,
        *,
        prompt: SystemPrompt | None = None,
        tools: ToolRuntime | None = None,
        pre_step: Iterable[PreStepHook] = (),
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self.session = session
        self.adapter = adapter
        self.options = options
        self.tools = tools or ToolRuntime()
        self.prompt = prompt or SystemPrompt()
        self.prompt.variable("provider", options.provider)
        self.prompt.variable("model", options.model)
        if session.header.cwd is not None:
            self.prompt.variable("cwd", session.header.cwd)
        self.prompt.tools(self.tools.schemas)
        self.pre_step: list[PreStepHook] = list(pre_step)
        self._sleep = sleep
        self._random = random
        self._snapshot = RuntimeContextSnapshot.attach(session)
        self._inbox = _Inbox(session)
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._signal = asyncio.Event()
        self._cancel_cause: dict[str, Any] | None = None
        self._driver: asyncio.Task[None] | None = None
        self._header_logged = False
        self._wake_requested = False
        self.outcomes: list[TurnOutcome] = []
        """Every turn this agent ran, in order."""
        session.subscribe(lambda event: self._emit(AgentEvent("session/event", event)))

    # --- live events -------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Follow live events; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: AgentEvent) -> None:
        for listener in tuple(self._listeners):
            listener(event)

    @property
    def status(self) -> Literal["running", "idle"]:
        return "running" if self._driver is not None and not self._driver.done() else "idle"

    # --- input -------------------------------------------------------------------------------

    def _message(self, message: UserMessage | str) -> UserMessage:
        return UserMessage.text(message) if isinstance(message, str) else message

    def followup(self, message: UserMessage | str) -> UserMessage:
        """Queue a prompt for a new turn and wake the agent."""
        msg = self._message(message)
        self._inbox.push("next-turn", msg)
        self._wake()
        return msg

    def steer(self, message: UserMessage | str) -> UserMessage:
        """Add input to the next step of the running turn (or a new turn) and wake the agent."""
        msg = self._message(message)
        self._inbox.push("next-step", msg)
        self._wake()
        return msg

    def inject(self, message: UserMessage | str) -> UserMessage:
        """Add input to the next step without waking the agent."""
        msg = self._message(message)
        self._inbox.push("next-step", msg)
        return msg

    def cancel(self, cause: str = "user", *, keep_inbox: bool = False) -> None:
        """Abort the running turn (`turn/end` records `aborted` with `cause`) and, unless
        `keep_inbox`, drop pending input, even when idle."""
        if not keep_inbox:
            self._inbox.clear()
            self._wake_requested = False
        if self.status == "running" and self._cancel_cause is None:
            self._cancel_cause = {"kind": cause}
            self._signal.set()

    def _wake(self) -> None:
        if self.status == "idle":
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop yet: `run_until_idle()` will drive
            self._start_driver()
        elif self._signal.is_set():
            self._wake_requested = True

    def _start_driver(self) -> None:
        self._driver = asyncio.create_task(self._drive(), name=f"agent {self.session.id}")
        self._emit(AgentEvent("agent/status", {"status": "running"}))

    async def run_until_idle(self) -> list[TurnOutcome]:
        """Drive until no input is pending; returns the outcomes of the turns run meanwhile."""
        first = len(self.outcomes)
        while True:
            if self.status == "idle":
                if not self._inbox.pending:
                    break
                self._start_driver()
            assert self._driver is not None
            await asyncio.shield(self._driver)
        return self.outcomes[first:]

    async def run(self, prompt: UserMessage | str) -> TurnOutcome:
        """Run one prompt to the end of its turn (and any turns queued meanwhile)."""
        self.followup(prompt)
        outcomes = await self.run_until_idle()
        return outcomes[0] if outcomes else self.outcomes[-1]

    # --- the drive loop ----------------------------------------------------------------------

    async def _drive(self) -> None:
        try:
            while await self._turn():
                pass
        except _TurnAborted:
            pass  # cancelled between turns: nothing was opened
        finally:
            self._emit(AgentEvent("agent/status", {"status": "idle"}))
            self._signal = asyncio.Event()
            self._cancel_cause = None

    def _check(self) -> None:
        if self._signal.is_set():
            raise _TurnAborted

    async def _turn(self) -> bool:
        session = self.session
        self._check()
        turn = session.last_turn + 1
        session.append("turn/start", {"turn": turn})
        reason: dict[str, Any] = {"kind": "completed"}
        ends: dict[str, Any] | None = None
        target = "next-turn"
        step = 0
        try:
            while True:
                self._check()
                limit = self.options.max_steps
                if limit is not None and step >= limit:
                    ends = {"kind": "max-steps", "limit": limit}
                    break
                decision, assembly = await self._pre_step(target, turn, step + 1)
                if isinstance(decision, Reject):
                    ends = {"kind": "blocked"}
                    break
                if ends is not None and not decision.messages:
                    break
                if step == 0 and not decision.messages:
                    ends = {"kind": "completed"}
                    break
                self._check()
                step += 1
                session.append("step/start", {"turn": turn, "step": step})
                try:
                    for message in decision.messages:
                        session.append_user_message(message)
                    step_end = await self._run_step(turn, step, assembly)
                    if ends is None or ends.get("kind") != "max-tokens":
                        ends = step_end
                finally:
                    session.append("step/end", {"turn": turn, "step": step})
                self._check()
                if ends is not None and not self._inbox.lists["next-step"]:
                    break
                target = "next-step"
            reason = ends or {"kind": "completed"}
        except _TurnAborted:
            reason = {"kind": "aborted", "reason": self._cancel_cause or {"kind": "user"}}
        except asyncio.CancelledError:
            # The task itself was cancelled (the host is shutting down): close the turn so the
            # log stays well formed, then let the cancellation propagate.
            if session.open_step is not None:
                session.append("step/end", {"turn": turn, "step": session.open_step})
            reason = {"kind": "aborted", "reason": {"kind": "disposed"}}
            session.append("turn/end", {"turn": turn, "reason": reason})
            self.outcomes.append(TurnOutcome(turn, reason))
            raise
        except LlmError as exc:
            reason = {"kind": "error", "error": failure_to_json(exc.failure)}
            self._emit(AgentEvent("agent/error", {"turn": turn, "step": step, "error": exc.failure}))
        except Exception as exc:  # noqa: BLE001 (a plugin or prompt failure ends the turn, never the host)
            failure = LlmFailure(message=_error_chain(exc), code=getattr(exc, "code", None) or ErrorCode.UNKNOWN)
            reason = {"kind": "error", "error": failure_to_json(failure)}
            self._emit(AgentEvent("agent/error", {"turn": turn, "step": step, "error": failure}))
        finally:
            if session.open_step is not None:  # an exception between step/start and its end
                session.append("step/end", {"turn": turn, "step": session.open_step})
        session.append("turn/end", {"turn": turn, "reason": reason})
        self.outcomes.append(TurnOutcome(turn, reason))
        if reason["kind"] in ("aborted", "error", "blocked"):
            if reason["kind"] == "aborted" and self._wake_requested and self._inbox.pending:
                self._wake_requested = False
                self._signal = asyncio.Event()
                self._cancel_cause = None
                return True
            return False
        if not self._inbox.pending:
            return False
        self._signal = asyncio.Event()
        self._cancel_cause = None
        return True

    async def _pre_step(self, target: str, turn: int, step: int) -> tuple[PreStepDecision, Assembly]:
        claimed = tuple(self._inbox.claim(target))
        assembly = self.prompt.assemble()
        self._check()
        snapshot = self._snapshot.project(assembly)
        payload = PreStep(turn=turn, step=step, messages=claimed)

        async def default() -> PreStepDecision:
            return Enter(claimed + ((snapshot,) if snapshot is not None else ()))

        chain: Callable[[], Awaitable[PreStepDecision]] = default
        for hook in reversed(self.pre_step):
            chain = _bind(hook, payload, chain)
        decision = await chain()
        self._check()
        return decision, assembly

    # --- one step ----------------------------------------------------------------------------

    def _header(self, assembly: Assembly) -> dict[str, Any]:
        o = self.options
        config: dict[str, Any] = {"provider": o.provider, "model": o.model}
        if o.reasoning_effort is not None:
            config["reasoningEffort"] = o.reasoning_effort
        if o.temperature is not None:
            config["temperature"] = o.temperature
        if o.max_tokens is not None:
            config["maxTokens"] = o.max_tokens
        if o.stop is not None:
            config["stop"] = list(o.stop)
        header: dict[str, Any] = {"config": config}
        if assembly.system:
            header["system"] = assembly.system
        if assembly.tools:
            header["tools"] = [tool_schema_to_json(t) for t in assembly.tools]
        return header

    def _log_header(self, header: dict[str, Any]) -> None:
        last = self.session.last_of("request/header")
        if not self._header_logged:
            reason = "initial" if last is None else "resume"
        elif last is not None and _canonical(thaw_json(last.data)["header"]) == _canonical(header):
            return
        else:
            reason = "change"
        self.session.append("request/header", {"header": header, "reason": reason})
        self._header_logged = True

    async def _run_step(self, turn: int, step: int, assembly: Assembly) -> dict[str, Any] | None:
        session = self.session
        o = self.options
        retry = 0
        retry_id = uuid.uuid4().hex  # one id for the whole retry chain of this step, as DSH logs it
        while True:
            self._log_header(self._header(assembly))
            options = _options_from_header(
                thaw_json(session.last_of("request/header").data)["header"],  # type: ignore[union-attr]
                session.derive_messages(),
                session_id=session.id,
                signal=self._signal,
            )
            assembler = BlockAssembler()
            seqs: list[int] = []
            stream = self.adapter.stream(options)
            try:
                async for chunk in stream:
                    seqs.append(session.append_chunk(turn, step, chunk).seq)
                    assembler.feed(chunk)
                    if self._signal.is_set():
                        break
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            source = ModelSource(provider=o.provider, model=o.model)
            if self._signal.is_set():
                blocks = assembler.interrupted_blocks()
                if blocks:
                    session.append_assistant_message(
                        turn, step, assembler.message(source, interrupted=True),
                        source_event_seqs=seqs, usage=assembler.usage, interrupted=True,
                    )
                raise _TurnAborted
            finish = assembler.finish_reason
            if not finish.ok:
                failure = finish.failure or LlmFailure(message="model call failed", code=ErrorCode.UNKNOWN)
                retry += 1
                delay = None
                if o.retry_policy is not None:
                    delay = retry_delay_ms(o.retry_policy, failure, retry, random=self._random)
                if delay is None:
                    raise LlmError(failure)
                # whole milliseconds, as DSH logs `delayMs` (a float would log as `2000.0`)
                await self._retry_wait(turn, step, failure, retry, round(delay), retry_id)
                continue
            # The adapter's replay envelope (e.g. Anthropic thinking signatures) stays with the
            # message, as DSH does (dsh-core.md §6: `replayState? = assembler.replayState`).
            message = assembler.message(
                ModelSource(provider=o.provider, model=o.model, replay_state=assembler.replay_state)
            )
            session.append_assistant_message(
                turn, step, message, source_event_seqs=seqs, usage=assembler.usage
            )
            if finish.kind == "max-tokens":
                return {"kind": "max-tokens"}
            calls = message.tool_calls
            if not calls:
                return {"kind": "completed"}
            outcome = await self._run_tools(turn, step, calls)
            self._check()
            return {"kind": "completed"} if outcome else None

    async def _retry_wait(
        self, turn: int, step: int, failure: LlmFailure, retry: int, delay: int, retry_id: str
    ) -> None:
        policy = self.options.retry_policy
        assert policy is not None
        data: dict[str, JsonValue] = {
            "retryId": retry_id,
            "turn": turn,
            "step": step,
            "provider": self.options.provider,
            "mode": policy.mode,
            "policyKey": policy.key,
            "retry": retry,
            "delayMs": delay,
            "failure": failure_to_json(failure),
        }
        if policy.mode == "normal":
            data["maxRetries"] = policy.max_retries
        self.session.append("llm/retry", data)
        sleeper = asyncio.ensure_future(self._sleep(delay / 1000.0))
        waiter = asyncio.ensure_future(self._signal.wait())
        try:
            await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()
        self._check()
        self.session.append("llm/retry-started", {"retryId": retry_id, "turn": turn, "step": step, "retry": retry})

    async def _run_tools(self, turn: int, step: int, calls: Sequence[ToolCallBlock]) -> bool:
        session = self.session
        call_seqs: dict[str, int] = {}
        contexts: list[UserMessage] = []

        def on_start(block: ToolCallBlock) -> None:
            call_seqs[block.id] = session.append_tool_call(
                turn, step, block.id, block.name, block.arguments
            ).seq

        def on_result(block: ToolCallBlock, result: ToolResult) -> None:
            session.append_tool_result(
                turn, step, result.to_message(block.id),
                source_event_seqs=[call_seqs[block.id]],
                error=result.error_event_data(),
                meta=result.meta,
            )
            contexts.extend(result.additional_contexts)

        results = await run_tool_calls(
            self.tools,
            calls,
            signal=self._signal,
            max_parallel=self.options.max_parallel_tool_calls,
            on_start=on_start,
            on_result=on_result,
        )
        for message in contexts:  # parked for the next step, after every result of this one
            self._inbox.push("next-step", message)
        return results.concluded


def _bind(
    hook: PreStepHook, payload: PreStep, nxt: Callable[[], Awaitable[PreStepDecision]]
) -> Callable[[], Awaitable[PreStepDecision]]:
    async def call() -> PreStepDecision:
        return await hook(payload, nxt)

    return call


def _canonical(header: Mapping[str, Any]) -> str:
    return json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _error_chain(exc: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current) or type(current).__name__
        if not parts or parts[-1] != text:
            parts.append(text)
        current = current.__cause__ or current.__context__
    return ": ".join(parts)


def _options_from_header(
    header: Mapping[str, Any],
    messages: Sequence[Message],
    *,
    session_id: str,
    signal: asyncio.Event | None = None,
) -> GenerateOptions:
    config = header["config"]
    stop = config.get("stop")
    tools: tuple[ToolSchema, ...] = tuple(
        tool_schema_from_json(t, f"header.tools[{i}]") for i, t in enumerate(header.get("tools", ()))
    )
    return GenerateOptions(
        provider=config["provider"],
        model=config["model"],
        messages=tuple(messages),
        system=header.get("system") or None,
        tools=tools,
        reasoning_effort=config.get("reasoningEffort"),
        temperature=config.get("temperature"),
        max_tokens=config.get("maxTokens"),
        stop=tuple(stop) if stop is not None else None,
        signal=signal,
        session_id=session_id,
    )


def rebuild_requests(events: Sequence[SessionEvent | Mapping[str, Any]], *, session_id: str) -> list[GenerateOptions]:
    """Rebuild, from a log alone, the `GenerateOptions` of every model call it records.

    For each attempt (a run of `assistant/chunk` events ending in a `finish`), the request is
    the last `request/header` before it plus `derive_messages()` over the events before its
    first chunk. Serialize the result with the same adapter configuration to get the bytes the
    adapter sent; a request that differs means something reached the model without being
    logged first.
    """
    replay = Session(end_seed=False)
    requests: list[GenerateOptions] = []
    header: Mapping[str, Any] | None = None
    in_call = False
    for raw in events:
        event = raw if isinstance(raw, SessionEvent) else None
        type_ = event.type if event is not None else raw["type"]  # type: ignore[index]
        data = thaw_json(event.data) if event is not None else raw["data"]  # type: ignore[index]
        if type_ == "request/header":
            header = data["header"]
        if type_ == "assistant/chunk":
            if not in_call:
                if header is None:
                    raise HarnessError("an assistant/chunk precedes any request/header", "REBUILD_FAILED")
                requests.append(
                    _options_from_header(header, replay.derive_messages(), session_id=session_id)
                )
                in_call = True
            if data["chunk"].get("type") == "finish":
                in_call = False
        else:
            in_call = False
        if event is not None:
            replay.append(
                event.type, event.data, surface_op=event.surface_op,
                source_event_seqs=event.source_event_seqs, ignorable=event.ignorable, time=event.time,
            )
        else:
            replay.append(
                type_, data, surface_op=raw.get("surfaceOp"),  # type: ignore[union-attr]
                source_event_seqs=raw.get("sourceEventSeqs"),  # type: ignore[union-attr]
                ignorable=bool(raw.get("ignorable")), time=raw.get("time"),  # type: ignore[union-attr]
            )
    return requests

