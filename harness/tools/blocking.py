"""Blocking tool work kept off the event loop, with a deadline per call.

The file tools (`read`, `write`, `list`, `grep`) do blocking I/O and, for `grep`, regex work
whose cost the model controls. Run on the event loop, one slow call would freeze everything
else: streaming, the other tools and Ctrl-C (whose handler is a loop callback). So each call
runs in a daemon thread of its own while the loop waits on a future, racing the call's
deadline and its cancel signal. A thread cannot be killed: on a deadline or a cancel the call is
abandoned (its result ignored, the thread left to end on its own, never joined at exit) and
`on_abandon` is told, so work that *can* be stopped (the `grep` worker process) is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Final, TypeVar

from dshkit.harness.llm.errors import ToolError

from .results import ABORTED

__all__ = ["TOOL_TIMEOUT", "AbortError", "ToolTimeoutError", "run_blocking"]

TOOL_TIMEOUT: Final = 30.0
"""Default seconds a `read`/`write`/`list`/`grep` call may take (`--tool-timeout`)."""

T = TypeVar("T")


class AbortError(ToolError):
    """The turn was cancelled while the call ran; the result reads like any aborted call."""

    def __init__(self) -> None:
        super().__init__("tool call aborted", ABORTED)


class ToolTimeoutError(ToolError):
    """The call ran past its deadline and was abandoned."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "TIMEOUT")


def _settle(future: asyncio.Future[T], value: T | None, error: BaseException | None) -> None:
    if future.done():
        return  # abandoned: nobody waits for this result any more
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)  # type: ignore[arg-type]


async def run_blocking(
    fn: Callable[[], T],
    *,
    timeout: float,
    signal: asyncio.Event | None = None,
    what: str = "the tool call",
    on_abandon: Callable[[], None] | None = None,
) -> T:
    """`fn()` in a daemon thread; its value, or its exception re-raised here.

    Raises `ToolTimeoutError` after `timeout` seconds and `AbortError` when `signal` is set first;
    either way (and when the awaiting task is cancelled) `on_abandon` runs before returning.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as is
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
            loop.call_soon_threadsafe(_settle, done, value, error)

    threading.Thread(target=work, name=f"dshkit {what}", daemon=True).start()
    waiters: set[asyncio.Future[object]] = {done}  # type: ignore[arg-type]
    stop = asyncio.ensure_future(signal.wait()) if signal is not None else None
    if stop is not None:
        waiters.add(stop)  # type: ignore[arg-type]
    try:
        finished, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if stop is not None:
            stop.cancel()
        if not done.done():
            done.cancel()
            if on_abandon is not None:
                on_abandon()
    if done in finished:
        return done.result()
    if stop is not None and stop in finished:
        raise AbortError()
    raise ToolTimeoutError(
        f"{what} took longer than {timeout:g}s and was stopped; narrow it (a smaller path, a "
        "simpler pattern) or allow more time with --tool-timeout"
    )
