"""The Adapter protocol: the single seam between the harness and a provider's wire.

Like httpx's transport, it is small on purpose: `stream(options)` yields `StreamChunk`s and ends
with exactly one `finish`. Provider and transport failures never escape as exceptions; they end
the stream with a `finish` of kind `error` (or `aborted` when `options.signal` is set).
An `asyncio.CancelledError` is the one exception that passes through, after the response is
closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from .chunks import StreamChunk
from .options import GenerateOptions

__all__ = ["Adapter", "AdapterCapabilities", "SignalAborted", "race_signal"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class AdapterCapabilities:
    """What an adapter supports; the conformance suite marks other scenarios not applicable."""

    reasoning: bool = True
    tool_calls: bool = True
    parallel_tool_calls: bool = True
    in_band_errors: bool = True


@runtime_checkable
class Adapter(Protocol):
    """A provider adapter."""

    provider: str

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Send one request and yield its chunks, ending with one `Finish`."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class SignalAborted(Exception):
    """Raised by `race_signal` when the caller's signal fired first."""


async def race_signal(awaitable: Awaitable[T], waiter: asyncio.Future[Any] | None) -> T:
    """Await `awaitable`, or raise `SignalAborted` as soon as `waiter` (a task waiting on
    `GenerateOptions.signal`) completes; the losing operation is cancelled. A helper for
    adapter writers: one waiter per stream, reused for every read."""
    if waiter is None:
        return await awaitable
    if waiter.done():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise SignalAborted
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.done():
        return task.result()
    task.cancel()
    # The losing operation's outcome no longer matters: the caller aborted.
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise SignalAborted
