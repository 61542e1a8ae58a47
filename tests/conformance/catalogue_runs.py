"""Every whole-catalogue run the conformance tests judge, played once per test process.

A catalogue run spends most of its wall time waiting (keep-alive, stall and drip scenarios take
seconds of real time each) and little on the CPU, so playing the runs one test after another
left a worker idle for minutes. Here the adapters of one *shard* start at once on one event loop,
in a thread of its own (pytest's loops stay untouched), each with its own mock server as
`run_catalogue` makes it, and a few scenarios in flight per adapter (`IN_FLIGHT` per shard) so
the loop never gets crowded enough to delay a timing-sensitive scenario; the few scenarios that
mostly wait on timers play on a second loop in a second thread (`split_waiting`). The tests then judge
each adapter's results exactly as they judged their own run.

Each shard is an xdist group (`group_of(adapter)`; `params` marks each adapter's test with it), so
under `--dist loadgroup` (`make test`) one worker plays a shard once and judges all its adapters,
while the other shards play on the other workers: the chat catalogue for 16 adapters on one worker
was the suite's longest serial chain, with the second core idle.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from dshkit.conformance import load_catalogue, run_catalogue
from dshkit.conformance.runner import ScenarioResult, expected_wait_s, for_protocol
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
    "ANTHROPIC_SHARDS",
    "CHAT_ADAPTERS",
    "CHAT_SHARDS",
    "GROUP",
    "IN_FLIGHT",
    "WAITING_S",
    "CatalogueRuns",
    "catalogue",
    "group_of",
    "params",
    "per_adapter",
    "split_waiting",
]

IN_FLIGHT = 20
"""Busy scenarios in flight on a shard's loop at most, shared out among its adapters
(`per_adapter`): fewer than the 32 of the single 16-adapter run this replaced, so no
timing-sensitive scenario meets a more crowded loop (the few that mostly wait play beside them:
`split_waiting`). The Anthropic shard's 18 adapters once ran 4 each, 72 scenarios on one loop:
on a loaded host a multi-step scenario then overran its 15 s budget."""

WAITING_S = 0.5
"""A scenario that waits at least this long on timers by design (`expected_wait_s`: keep-alives,
stalls into an idle timeout, a paced body) is played beside the busy ones, not in one of their
slots."""


def split_waiting(scenarios: Sequence[Scenario], protocol: str) -> tuple[list[Scenario], list[Scenario]]:
    """(the waiting scenarios, the busy rest), each in catalogue order. A shard plays an adapter's
    waiting ones all at once in a run of their own, beside its run of the busy ones: in one run
    the keep-alive scenario and the three stalls held all 4 of an adapter's slots for the first
    second, its CPU idle, and the keep-alive one a slot for 4 s."""
    waits = [expected_wait_s(s, protocol) >= WAITING_S for s in scenarios]
    return ([s for s, w in zip(scenarios, waits, strict=True) if w],
            [s for s, w in zip(scenarios, waits, strict=True) if not w])


def per_adapter(adapters: Sequence[type]) -> int:
    """Scenarios in flight per adapter of a shard (`IN_FLIGHT` shared out, at least one each)."""
    return max(1, IN_FLIGHT // len(adapters))
CHAT_ADAPTERS: tuple[type, ...] = (DeepSeekAdapter, OpenAICompatAdapter, *BROKEN)
ANTHROPIC_ADAPTERS: tuple[type, ...] = (AnthropicAdapter, AnthropicSDKAdapter, *BROKEN_ANTHROPIC)
CHAT_SHARDS: dict[str, tuple[type, ...]] = {
    "catalogue_runs": (DeepSeekAdapter, OpenAICompatAdapter, *BROKEN[0::3]),
    "catalogue_runs_broken": (*BROKEN[1::3], *BROKEN[2::3]),
}
"""The chat-protocol shards by xdist group: the two real adapters with a third of the broken ones,
then the other two thirds (a real adapter costs about twice a broken one's CPU, so the two shards
cost about the same). Two, not more: every shard lasts at least as long as its keep-alive scenario
(`net-keepalives-feed-watchdog`, 4 s of keep-alives), and four shards of 2-3 s of CPU each idled
their worker for 2-3 s apiece; two shards of twice the CPU fill that wait."""
GROUP = "catalogue_runs"
"""The group (and shard) of the two real chat-protocol adapters."""
ANTHROPIC_GROUP = "catalogue_runs_anthropic"
"""The one shard of the Anthropic-protocol runs (cheap: a fraction of a second per adapter)."""
ANTHROPIC_SHARDS: dict[str, tuple[type, ...]] = {ANTHROPIC_GROUP: ANTHROPIC_ADAPTERS}


def group_of(adapter: type) -> str:
    """The xdist group, and shard, whose worker plays `adapter`'s catalogue run."""
    for shards in (CHAT_SHARDS, ANTHROPIC_SHARDS):
        for name, adapters in shards.items():
            if adapter in adapters:
                return name
    raise KeyError(f"{adapter.__name__} is in no shard of catalogue_runs")


def params(adapters: Sequence[type]) -> list[Any]:
    """`adapters` as parametrize values, each marked with its shard's xdist group, ids by class name."""
    return [pytest.param(a, id=a.__name__, marks=pytest.mark.xdist_group(group_of(a))) for a in adapters]


_CATALOGUE: list[Scenario] = []


def catalogue() -> list[Scenario]:
    """The bundled catalogue, loaded once per process (a fresh list each call; scenarios are frozen)."""
    if not _CATALOGUE:
        _CATALOGUE.extend(load_catalogue())
    return list(_CATALOGUE)


class CatalogueRuns:
    """The results of each adapter's whole-catalogue run on one protocol; each shard is played on
    the first use of one of its adapters."""

    def __init__(self, protocol: str, shards: dict[str, tuple[type, ...]]) -> None:
        self.protocol = protocol
        self.shards = dict(shards)
        self._results: dict[type, list[ScenarioResult]] = {}
        self._lock = threading.Lock()

    def scenarios(self) -> list[Scenario]:
        return for_protocol(catalogue(), self.protocol)

    def results(self, adapter: type) -> list[ScenarioResult]:
        """`run_catalogue(scenarios, adapter, protocol=...)`'s results, in catalogue order (played
        as two runs, the waiting scenarios and the busy ones: `split_waiting`)."""
        shard = next((s for s in self.shards.values() if adapter in s), None)
        if shard is None:
            raise KeyError(f"{adapter.__name__} is not one of this protocol's adapters")
        with self._lock:
            if adapter not in self._results:
                self._results.update(self._play(shard))
        return self._results[adapter]

    def _play(self, adapters: tuple[type, ...]) -> dict[type, list[ScenarioResult]]:
        scenarios = self.scenarios()
        waiting, busy = split_waiting(scenarios, self.protocol)
        each = per_adapter(adapters)
        played: dict[str, list[list[ScenarioResult]]] = {}
        failure: list[BaseException] = []

        async def every_run(name: str, part: list[Scenario], concurrency: int) -> None:
            runs = [run_catalogue(part, a, concurrency=concurrency, protocol=self.protocol) for a in adapters]
            played[name] = list(await asyncio.gather(*runs))

        def in_thread(name: str, part: list[Scenario], concurrency: int) -> None:
            try:
                asyncio.run(every_run(name, part, concurrency))
            except BaseException as exc:  # handed to the calling test, which fails with it
                failure.append(exc)

        # The waiting scenarios get a loop (and mock servers) of their own: on the busy loop a
        # keep-alive 250 ms after the last one waited behind every ready callback of 20 busy
        # scenarios, and on a loaded host (8 workers on 2 cores) that came to the 3 s idle
        # timeout the keep-alives are there to keep from firing. A thread of its own waits for
        # the interpreter's switch interval (5 ms) instead, whatever the busy loop has queued.
        parts = [("busy", busy, each), ("waiting", waiting, max(1, len(waiting)))]
        threads = [threading.Thread(target=in_thread, args=part, name=f"catalogue-runs-{self.protocol}-{part[0]}")
                   for part in parts if part[1]]
        # A shard allocates enough to set off a few full collections, and in a test process each
        # one walked the whole heap of collected tests and imported modules (~300k objects, a
        # quarter of a second each): frozen, they are left out of the walk while the shard plays.
        gc.freeze()
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            gc.unfreeze()
        if failure:
            raise failure[0]
        out: dict[type, list[ScenarioResult]] = {}
        for k, adapter in enumerate(adapters):
            by_id = {r.id: r for runs in played.values() for r in runs[k]}
            out[adapter] = [by_id[sc.id] for sc in scenarios]
        return out
