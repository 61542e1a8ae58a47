"""Every whole-catalogue run the conformance tests judge, played once per test process.

A catalogue run spends most of its wall time waiting (keep-alive, stall and drip scenarios take
seconds of real time each) and little on the CPU, so playing the runs one test after another
left a worker idle for minutes. Here every adapter's run starts at once on one event loop, in a
thread of its own (pytest's loops stay untouched), each with its own mock server as
`run_catalogue` makes it, and a few scenarios in flight per adapter so the loop never gets
crowded enough to delay a timing-sensitive scenario. The tests then judge each adapter's
results exactly as they judged their own run. They carry `xdist_group(GROUP)` (chat protocol) or
`xdist_group(ANTHROPIC_GROUP)`, so under `--dist loadgroup` (`make test`) one worker plays each
protocol's runs and judges them all, and the two protocols may use both workers.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from dshkit.conformance import load_catalogue, run_catalogue
from dshkit.conformance.runner import ScenarioResult, for_protocol
from dshkit.conformance.scenario import Scenario
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_compat import OpenAICompatAdapter

from .broken import BROKEN
from .broken_anthropic import BROKEN_ANTHROPIC

__all__ = [
    "ANTHROPIC_ADAPTERS",
    "ANTHROPIC_GROUP",
    "CHAT_ADAPTERS",
    "GROUP",
    "PER_ADAPTER",
    "CatalogueRuns",
    "catalogue",
]

GROUP = "catalogue_runs"
"""The xdist group of the tests that read the chat-protocol runs (one worker plays them once)."""
ANTHROPIC_GROUP = "catalogue_runs_anthropic"
"""The same for the Anthropic-protocol runs: a group of its own, so `--dist loadgroup` may play
the two catalogues on two workers at once."""
PER_ADAPTER = 2
"""Scenarios in flight per adapter (16 adapters on the chat protocol: 32 on the loop at most)."""
CHAT_ADAPTERS: tuple[type, ...] = (DeepSeekAdapter, OpenAICompatAdapter, *BROKEN)
ANTHROPIC_ADAPTERS: tuple[type, ...] = (AnthropicAdapter, AnthropicSDKAdapter, *BROKEN_ANTHROPIC)

_CATALOGUE: list[Scenario] = []


def catalogue() -> list[Scenario]:
    """The bundled catalogue, loaded once per process (a fresh list each call; scenarios are frozen)."""
    if not _CATALOGUE:
        _CATALOGUE.extend(load_catalogue())
    return list(_CATALOGUE)


class CatalogueRuns:
    """The results of each adapter's whole-catalogue run on one protocol, played on first use."""

    def __init__(self, protocol: str, adapters: Sequence[type]) -> None:
        self.protocol = protocol
        self.adapters = tuple(adapters)
        self._results: dict[type, list[ScenarioResult]] | None = None
        self._lock = threading.Lock()

    def scenarios(self) -> list[Scenario]:
        return for_protocol(catalogue(), self.protocol)

    def results(self, adapter: type) -> list[ScenarioResult]:
        """`run_catalogue(scenarios, adapter, protocol=...)`'s results, in catalogue order."""
        if adapter not in self.adapters:
            raise KeyError(f"{adapter.__name__} is not one of this protocol's adapters")
        with self._lock:
            if self._results is None:
                self._results = self._play()
        return self._results[adapter]

    def _play(self) -> dict[type, list[ScenarioResult]]:
        out: dict[type, list[ScenarioResult]] = {}
        failure: list[BaseException] = []

        async def every_run() -> None:
            scenarios = self.scenarios()
            runs = [run_catalogue(scenarios, a, concurrency=PER_ADAPTER, protocol=self.protocol) for a in self.adapters]
            out.update(zip(self.adapters, await asyncio.gather(*runs), strict=True))

        def in_thread() -> None:
            try:
                asyncio.run(every_run())
            except BaseException as exc:  # handed to the calling test, which fails with it
                failure.append(exc)

        thread = threading.Thread(target=in_thread, name=f"catalogue-runs-{self.protocol}")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]
        return out
