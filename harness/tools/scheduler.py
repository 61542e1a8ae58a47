"""The scheduler: run one step's tool calls, overlapping bodies, committing in model order.

In the seed's walk the loop takes the tool-call blocks of the `assistant/message` in model order.
Concurrency-safe calls share a rolling pool (default 10); any other call runs alone, as a barrier
(dsh-core.md §4.5). Calls start strictly in model order: `on_start` (the loop logs `tool/call`)
then the policy stages, awaited before the next call starts. Results are committed contiguously
from the lowest unfinished index, so `on_result` (the loop logs `tool/result`) sees model order
whatever order the bodies finish in. On cancellation nothing new starts, running bodies drain
and commit, and every call never started gets `on_start` + an `ABORTED_BEFORE_DISPATCH` result.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dshkit.harness.llm import ToolCallBlock

from .results import ToolResult, aborted_before_dispatch_result
from .runtime import PreparedCall, ToolRuntime

__all__ = ["DEFAULT_MAX_PARALLEL", "StepToolResults", "run_tool_calls"]

DEFAULT_MAX_PARALLEL: Final = 10

OnStart = Callable[[ToolCallBlock], "Awaitable[Any] | Any"]
OnResult = Callable[[ToolCallBlock, ToolResult], "Awaitable[Any] | Any"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepToolResults:
    """What the step's tool calls produced, in model order."""

    results: tuple[ToolResult, ...]
    concluded: bool
    """A tool asked to end the turn (`ToolCall.conclude_turn()`)."""
    aborted: bool
    """The signal was set; calls not started have ABORTED_BEFORE_DISPATCH results."""


@dataclass(slots=True)
class _Slot:
    block: ToolCallBlock
    prepared: PreparedCall
    task: asyncio.Task[ToolResult] | None = None


async def _call(hook: Callable[..., Any] | None, *args: Any) -> None:
    if hook is not None:
        value = hook(*args)
        if inspect.isawaitable(value):
            await value


async def run_tool_calls(
    runtime: ToolRuntime,
    calls: Sequence[ToolCallBlock],
    *,
    signal: asyncio.Event | None = None,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> StepToolResults:
    """Run `calls` (in model order) through `runtime`.

    Args:
        signal: set it to cancel; the function still returns normally, with every call paired.
        max_parallel: size of the pool for concurrency-safe calls (1 = serial).
        on_start: awaited as each call starts, before its policy stages (log `tool/call` here).
        on_result: awaited for each final result, in model order (log `tool/result` here).
    """
    if max_parallel < 1:
        raise ValueError("max_parallel must be at least 1")
    signal = signal or asyncio.Event()
    slots: list[_Slot] = []
    results: list[ToolResult] = []

    async def start(block: ToolCallBlock) -> _Slot:
        await _call(on_start, block)
        prepared = await runtime.prepare(block.id, block.name, block.arguments, signal=signal)
        slot = _Slot(block, prepared)
        if prepared.dispatch:
            slot.task = asyncio.create_task(runtime.run_body(prepared), name=f"tool {block.name} {block.id}")
        slots.append(slot)
        return slot

    async def commit(*, wait: bool) -> None:
        while len(results) < len(slots):
            slot = slots[len(results)]
            if slot.task is not None and not slot.task.done() and not wait:
                return
            body = await slot.task if slot.task is not None else await runtime.run_body(slot.prepared)
            result = await runtime.complete(slot.prepared, body)
            results.append(result)
            await _call(on_result, slot.block, result)

    def running() -> list[asyncio.Task[ToolResult]]:
        return [s.task for s in slots[len(results):] if s.task is not None and not s.task.done()]

    try:
        for block in calls:
            if signal.is_set():
                break
            if runtime.is_concurrency_safe(block.name, block.arguments):
                # joins the rolling pool
                while len(running()) >= max_parallel:
                    await asyncio.wait(running(), return_when=asyncio.FIRST_COMPLETED)
                    await commit(wait=False)
                if signal.is_set():
                    break
                await start(block)
                await commit(wait=False)
            else:
                await commit(wait=True)  # an exclusive call is a barrier
                if signal.is_set():
                    break
                await start(block)
                await commit(wait=True)
        await commit(wait=True)  # drain whatever is in flight, in model order
    except asyncio.CancelledError:
        pending = [s.task for s in slots if s.task is not None and not s.task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise
    except Exception:
        # an internal failure: let started bodies finish, fabricate nothing, re-raise
        pending = [s.task for s in slots if s.task is not None and not s.task.done()]
        await asyncio.gather(*pending, return_exceptions=True)
        raise
    aborted = signal.is_set()
    for block in calls[len(slots):]:
        # never started: a synthetic pair keeps every call answered (trap 20)
        await _call(on_start, block)
        result = aborted_before_dispatch_result()
        results.append(result)
        await _call(on_result, block, result)
    return StepToolResults(
        results=tuple(results),
        concluded=any(r.concludes_turn for r in results),
        aborted=aborted,
    )
