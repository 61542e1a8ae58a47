"""The Adapter protocol: the single seam between the harness and a provider's wire.

Like httpx's transport, it is small on purpose: `stream(options)` yields `StreamChunk`s and ends
with exactly one `finish`. Provider and transport failures never escape as exceptions; they end
the stream with a `finish` of kind `error` (or `aborted` when `options.signal` is set).
An `asyncio.CancelledError` is the one exception that passes through, after the response is
closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .chunks import StreamChunk
from .options import GenerateOptions

__all__ = ["Adapter", "AdapterCapabilities"]


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
