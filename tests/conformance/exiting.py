"""Adapters that call `sys.exit()` somewhere: each must cost its scenario, never the whole run."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

from dshkit.harness.llm import GenerateOptions, StreamChunk
from dshkit.harness.providers.deepseek import DeepSeekAdapter


class ExitsInStream(DeepSeekAdapter):
    """Ends the process from inside its stream, after the request went out."""

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        async for chunk in super().stream(options):
            yield chunk
            sys.exit(0)


class ExitsInClose(DeepSeekAdapter):
    async def aclose(self) -> None:
        await super().aclose()
        sys.exit(0)


def exits_in_factory(base_url: str, api_key: str, **kw: Any) -> DeepSeekAdapter:
    sys.exit(0)
