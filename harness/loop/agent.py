"""`Agent`: one agent on one session — input, the drive loop and the turn algorithm.

`Agent.followup()` puts a `UserMessage` in the inbox; a turn opens (`turn/start`), claims its
input, assembles the system prompt, runs the pre-step waterfall, and runs steps (`step/start` …
`step/end`, see `steps.py`) until the model answers without tools, a tool concludes the turn, the
step budget is spent, a hook rejects, or the turn fails or is aborted; `turn/end` records why.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Callable, Iterable
from typing import Any, Literal

from dshkit.harness.llm import Adapter, ErrorCode, LlmFailure, UserMessage
from dshkit.harness.llm.codec import failure_to_json
from dshkit.harness.llm.errors import LlmError
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.prompt.assembly import Assembly
from dshkit.harness.prompt.runtime_context import RuntimeContextSnapshot
from dshkit.harness.session import Session
from dshkit.harness.tools import ToolRuntime

from .header import HeaderLog
from .inbox import Inbox, Target
from .options import AgentEvent, AgentOptions, TurnOutcome
from .prestep import Enter, PreStep, PreStepDecision, PreStepHook, Reject, run_waterfall
from .steps import Sleep, StepOutcome, StepRunner, TurnAborted

__all__ = ["Agent"]


class Agent:
    """One agent on one session: inbox, drive loop and the turn/step algorithm.

    Args:
        session: the log everything is written to first.
        adapter: the provider adapter (e.g. `DeepSeekAdapter`).
        options: model, call settings, step limit and retry policy.
        prompt: system prompt registry; a default `SystemPrompt()` when omitted. The agent adds
            its variables (`provider`, `model`, `cwd`) and tools at each assembly without
            registering them, so one prompt can serve several agents and later changes to it
            (e.g. `replace_section`) apply from the next step.
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
        self.prompt = prompt if prompt is not None else SystemPrompt()
        # The agent's own contributions are passed per assembly, never registered on `prompt`,
        # which stays the caller's (and may be shared by several agents).
        self._variables: dict[str, str | None] = {"provider": options.provider, "model": options.model}
        if session.header.cwd is not None:
            self._variables["cwd"] = session.header.cwd
        self.pre_step: list[PreStepHook] = list(pre_step)
        self._sleep = sleep
        self._random = random
        self._snapshot = RuntimeContextSnapshot.attach(session)
        self._inbox = Inbox(session)
        self._headers = HeaderLog(session)
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._signal = asyncio.Event()
        self._cancel_cause: dict[str, Any] | None = None
        self._driver: asyncio.Task[None] | None = None
        self._wake_requested = False
        self._step = 0
        """The step the running turn is at (0 before its first)."""
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
        except TurnAborted:
            pass  # cancelled between turns: nothing was opened
        finally:
            self._emit(AgentEvent("agent/status", {"status": "idle"}))
            self._reset_signal()

    def _reset_signal(self) -> None:
        self._signal = asyncio.Event()
        self._cancel_cause = None

    def _check(self) -> None:
        if self._signal.is_set():
            raise TurnAborted

    def _steps(self) -> StepRunner:
        return StepRunner(
            session=self.session, adapter=self.adapter, options=self.options, tools=self.tools,
            inbox=self._inbox, headers=self._headers, signal=self._signal,
            sleep=self._sleep, random=self._random,
        )

    async def _turn(self) -> bool:
        """Run one turn; returns whether another turn should follow."""
        session = self.session
        self._check()
        turn = session.last_turn + 1
        session.append("turn/start", {"turn": turn})
        self._step = 0
        try:
            reason = await self._steps_of_turn(turn)
        except TurnAborted:
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
            self._emit(AgentEvent("agent/error", {"turn": turn, "step": self._step, "error": exc.failure}))
        except Exception as exc:  # noqa: BLE001 (a plugin or prompt failure ends the turn, never the host)
            failure = LlmFailure(message=_error_chain(exc), code=getattr(exc, "code", None) or ErrorCode.UNKNOWN)
            reason = {"kind": "error", "error": failure_to_json(failure)}
            self._emit(AgentEvent("agent/error", {"turn": turn, "step": self._step, "error": failure}))
        finally:
            if session.open_step is not None:  # an exception between step/start and its end
                session.append("step/end", {"turn": turn, "step": session.open_step})
        session.append("turn/end", {"turn": turn, "reason": reason})
        self.outcomes.append(TurnOutcome(turn, reason))
        if reason["kind"] in ("aborted", "error", "blocked"):
            if reason["kind"] == "aborted" and self._wake_requested and self._inbox.pending:
                self._wake_requested = False
                self._reset_signal()
                return True
            return False
        if not self._inbox.pending:
            return False
        self._reset_signal()
        return True

    async def _steps_of_turn(self, turn: int) -> dict[str, Any]:
        """Run the steps of one turn; returns the `turn/end` reason."""
        session = self.session
        ending = StepOutcome.CONTINUE
        target: Target = "next-turn"
        step = 0
        while True:
            self._check()
            limit = self.options.max_steps
            if limit is not None and step >= limit:
                return {"kind": "max-steps", "limit": limit}
            decision, assembly = await self._pre_step(target, turn, step + 1)
            if isinstance(decision, Reject):
                return {"kind": "blocked"}
            if not decision.messages and (step == 0 or ending is not StepOutcome.CONTINUE):
                return ending.reason
            self._check()
            step += 1
            self._step = step
            session.append("step/start", {"turn": turn, "step": step})
            try:
                for message in decision.messages:
                    session.append_user_message(message)
                outcome = await self._steps().run(turn, step, assembly)
                if ending is not StepOutcome.MAX_TOKENS:  # a cut-off answer stays the turn's end
                    ending = outcome
            finally:
                session.append("step/end", {"turn": turn, "step": step})
            self._check()
            if ending is not StepOutcome.CONTINUE and not self._inbox.step_input_pending:
                return ending.reason
            target = "next-step"

    async def _pre_step(self, target: Target, turn: int, step: int) -> tuple[PreStepDecision, Assembly]:
        claimed = tuple(self._inbox.claim(target))
        assembly = self.prompt.assemble(variables=self._variables, tools=(self.tools.schemas,))
        self._check()
        snapshot = self._snapshot.project(assembly)

        async def default() -> PreStepDecision:
            return Enter(claimed + ((snapshot,) if snapshot is not None else ()))

        decision = await run_waterfall(self.pre_step, PreStep(turn=turn, step=step, messages=claimed), default)
        self._check()
        return decision, assembly


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
