"""`run_blocking`: blocking tool work in a thread of its own, raced against the call's deadline
and its cancel signal; an abandoned call is reported to `on_abandon`, a finished one hands back
its value or its exception."""

from __future__ import annotations

import asyncio
import threading

import pytest

from dshkit.harness.tools.blocking import AbortError, ToolTimeoutError, run_blocking


async def test_run_blocking_abandons_a_stuck_call_and_tells_on_abandon() -> None:
    release = threading.Event()
    abandoned: list[bool] = []
    with pytest.raises(ToolTimeoutError, match=r"took longer than 0\.2s"):
        await run_blocking(release.wait, timeout=0.2, what="wait", on_abandon=lambda: abandoned.append(True))
    release.set()
    assert abandoned == [True]


async def test_a_set_signal_abandons_the_call_as_aborted() -> None:
    release = threading.Event()
    signal = asyncio.Event()
    abandoned: list[bool] = []
    call = asyncio.create_task(run_blocking(
        release.wait, timeout=600, signal=signal, on_abandon=lambda: abandoned.append(True),
    ))
    signal.set()
    with pytest.raises(AbortError) as caught:
        await call
    release.set()
    assert caught.value.code == "ABORTED" and abandoned == [True]


async def test_the_call_s_value_or_exception_reaches_the_awaiting_task() -> None:
    abandoned: list[bool] = []
    on_abandon = lambda: abandoned.append(True)  # noqa: E731
    assert await run_blocking(lambda: threading.current_thread().name, timeout=30, what="ls",
                              on_abandon=on_abandon) == "dshkit ls"  # not the loop's thread

    def fail() -> None:
        raise PermissionError("no entry")

    with pytest.raises(PermissionError, match="no entry"):
        await run_blocking(fail, timeout=30, signal=asyncio.Event(), on_abandon=on_abandon)
    assert abandoned == []  # a call that ended is not abandoned
