"""One step: a model call (with retries) streamed into the log, then the tool calls it asked for.

`StepRunner.run` appends every chunk as it arrives, assembles the assistant message, and returns
a typed `StepOutcome`: `CONTINUE` when tools ran and the model must speak again, `COMPLETED` when
the answer is final (or a tool concluded the turn), `MAX_TOKENS` when the model was cut off. A
set signal raises `TurnAborted` after logging whatever the model had already said.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dshkit.harness.llm import (
    Adapter,
    BlockAssembler,
    ErrorCode,
    LlmFailure,
    ToolCallBlock,
    UserMessage,
)
from dshkit.harness.llm.codec import failure_to_json
from dshkit.harness.llm.errors import LlmError
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.llm.retry import retry_delay_ms
from dshkit.harness.prompt.assembly import Assembly
from dshkit.harness.session import Session
from dshkit.harness.session.lossless import JsonValue
from dshkit.harness.tools import ToolRuntime
from dshkit.harness.tools.results import ToolResult
from dshkit.harness.tools.scheduler import run_tool_calls

from .header import HeaderLog, RequestHeader
from .inbox import Inbox
from .options import AgentOptions

__all__ = ["STREAM_CLOSED_WITHOUT_DONE", "Sleep", "StepOutcome", "StepRunner", "TurnAborted"]

Sleep = Callable[[float], Awaitable[None]]
EMPTY_BODY_MESSAGE = "API returned no response body"
"""How the HTTP adapters' failure for a body without a byte ends (`DeepSeek API returned no …`)."""
STREAM_CLOSED_WITHOUT_DONE = LlmFailure(message="SSE stream ended without [DONE]", code=ErrorCode.STREAM_CLOSED)
"""The failure a call whose stream lacked `[DONE]` ends in under `missing_done="fail"` (DSH's
words and code for it)."""


def _empty_body(failure: LlmFailure | None, assembler: BlockAssembler) -> bool:
    """The `EMPTY_RESPONSE` dshkit's HTTP adapters end a 200 body without one byte with
    (`… API returned no response body`, no response facts in `meta`, no block). An empty
    completion (`model returned a completed response with no content`), live or replayed from a
    log, is not one."""
    return (
        failure is not None and failure.code == ErrorCode.EMPTY_RESPONSE
        and failure.message.endswith(EMPTY_BODY_MESSAGE) and assembler.meta is None
        and not assembler.interrupted_blocks()
    )


class TurnAborted(Exception):
    """The turn's signal was set; the loop unwinds and logs `aborted`."""


class StepOutcome(enum.Enum):
    """How a step ended, as far as the turn is concerned."""

    CONTINUE = "continue"
    """Tools ran; the model speaks again in another step."""
    COMPLETED = "completed"
    MAX_TOKENS = "max-tokens"

    @property
    def reason(self) -> dict[str, Any]:
        """The `turn/end` reason a turn ending on this outcome logs."""
        return {"kind": "completed" if self is StepOutcome.CONTINUE else self.value}


@dataclass(slots=True, kw_only=True)
class StepRunner:
    """What a step needs from its agent. `signal` is the running turn's cancel signal."""

    session: Session
    adapter: Adapter
    options: AgentOptions
    tools: ToolRuntime
    inbox: Inbox
    headers: HeaderLog
    signal: asyncio.Event
    sleep: Sleep
    random: Callable[[], float]

    def check(self) -> None:
        if self.signal.is_set():
            raise TurnAborted

    async def run(self, turn: int, step: int, assembly: Assembly) -> StepOutcome:
        session = self.session
        o = self.options
        retry = 0
        retry_id = uuid.uuid4().hex  # one id for the whole retry chain of this step, as DSH logs it
        while True:
            self.headers.log(RequestHeader.build(o, assembly))
            request = self.headers.read_back().request(
                session.derive_messages(), session_id=session.id, signal=self.signal
            )
            assembler = BlockAssembler()
            seqs: list[int] = []
            stream = self.adapter.stream(request)
            try:
                async for chunk in stream:
                    seqs.append(session.append_chunk(turn, step, chunk).seq)
                    assembler.feed(chunk)
                    if self.signal.is_set():
                        break
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            source = ModelSource(provider=o.provider, model=o.model)
            if self.signal.is_set():
                if assembler.interrupted_blocks():
                    session.append_assistant_message(
                        turn, step, assembler.message(source, interrupted=True),
                        source_event_seqs=seqs, usage=assembler.usage, interrupted=True,
                    )
                raise TurnAborted
            finish = assembler.finish_reason
            failure = finish.failure if not finish.ok else None
            if finish.ok and assembler.meta is not None and assembler.meta.done_missing and o.missing_done == "fail":
                failure = STREAM_CLOSED_WITHOUT_DONE  # DSH trusts no call whose stream lacked [DONE]
            elif _empty_body(finish.failure, assembler) and o.empty_body == "fail":
                failure = STREAM_CLOSED_WITHOUT_DONE  # DSH: a body without events lacks [DONE] too
            if failure is not None or not finish.ok:
                failure = failure or LlmFailure(message="model call failed", code=ErrorCode.UNKNOWN)
                retry += 1
                delay = None
                if o.retry_policy is not None:
                    delay = retry_delay_ms(o.retry_policy, failure, retry, random=self.random)
                if delay is None:
                    raise LlmError(failure)
                # whole milliseconds, as DSH logs `delayMs` (a float would log as `2000.0`)
                await self._retry_wait(turn, step, failure, retry, round(delay), retry_id)
                continue
            # The adapter's replay envelope (e.g. Anthropic thinking signatures) stays with the
            # message, as DSH keeps `replayState` from the assembler.
            message = assembler.message(
                ModelSource(provider=o.provider, model=o.model, replay_state=assembler.replay_state)
            )
            session.append_assistant_message(
                turn, step, message, source_event_seqs=seqs, usage=assembler.usage
            )
            if finish.kind == "max-tokens":
                return StepOutcome.MAX_TOKENS
            calls = message.tool_calls
            if not calls:
                return StepOutcome.COMPLETED
            concluded = await self._run_tools(turn, step, calls)
            self.check()
            return StepOutcome.COMPLETED if concluded else StepOutcome.CONTINUE

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
        sleeper = asyncio.ensure_future(self.sleep(delay / 1000.0))
        waiter = asyncio.ensure_future(self.signal.wait())
        try:
            await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()
        self.check()
        self.session.append("llm/retry-started", {"retryId": retry_id, "turn": turn, "step": step, "retry": retry})

    async def _run_tools(self, turn: int, step: int, calls: Sequence[ToolCallBlock]) -> bool:
        """Run the calls in model order; returns whether a tool concluded the turn."""
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
            signal=self.signal,
            max_parallel=self.options.max_parallel_tool_calls,
            on_start=on_start,
            on_result=on_result,
        )
        for message in contexts:  # parked for the next step, after every result of this one
            self.inbox.push("next-step", message)
        return results.concluded
