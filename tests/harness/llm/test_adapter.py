"""`race_signal`, the adapter writer's helper: an operation raced against the caller's cancel signal.

Every case runs on the test's own event loop with no timers: the operations wait on futures the
test resolves, so who wins each race is decided by the test, not by the clock.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from dshkit.harness.llm.adapter import SignalAborted, race_signal


async def _cancellable(outcome: list[str], release: asyncio.Future[str]) -> str:
    """An operation that records how it ended."""
    try:
        value = await release
    except asyncio.CancelledError:
        outcome.append("cancelled")
        raise
    outcome.append("done")
    return value


async def test_without_a_waiter_the_operation_is_simply_awaited() -> None:
    release: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    release.set_result("body")
    assert await race_signal(_cancellable([], release), None) == "body"


async def test_a_signal_already_set_aborts_without_starting_the_operation() -> None:
    waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    waiter.set_result(True)
    outcome: list[str] = []
    operation = _cancellable(outcome, asyncio.get_running_loop().create_future())
    with pytest.raises(SignalAborted):
        await race_signal(operation, waiter)
    assert inspect.getcoroutinestate(operation) == inspect.CORO_CLOSED and outcome == []


async def test_the_first_to_finish_wins_and_a_losing_operation_is_cancelled() -> None:
    signal = asyncio.Event()
    waiter = asyncio.ensure_future(signal.wait())
    loop = asyncio.get_running_loop()
    released: asyncio.Future[str] = loop.create_future()
    released.set_result("chunk")
    won: list[str] = []
    assert await race_signal(_cancellable(won, released), waiter) == "chunk"
    assert won == ["done"] and not waiter.done()  # the same waiter serves the next read
    lost: list[str] = []
    signal.set()
    with pytest.raises(SignalAborted):
        await race_signal(_cancellable(lost, loop.create_future()), waiter)
    assert lost == ["cancelled"]


async def test_cancelling_the_caller_cancels_the_operation_too() -> None:
    loop = asyncio.get_running_loop()
    waiter = asyncio.ensure_future(asyncio.Event().wait())
    outcome: list[str] = []
    started, ended = asyncio.Event(), loop.create_future()
    tasks: list[asyncio.Task[Any]] = []

    async def operation() -> str:
        tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        started.set()
        try:
            return await _cancellable(outcome, loop.create_future())
        finally:
            ended.set_result(None)

    caller = asyncio.ensure_future(race_signal(operation(), waiter))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert tasks[0].cancelling()  # the operation was told to stop along with its caller
    await ended
    assert outcome == ["cancelled"]
    waiter.cancel()
