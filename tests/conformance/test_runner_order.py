"""A catalogue run starts the scenarios that wait in real time first (so their seconds overlap
the rest instead of holding the run open at its end) and still reports in catalogue order."""

from __future__ import annotations

from dshkit.conformance import load_catalogue, run_catalogue
from dshkit.conformance.cli import select
from dshkit.conformance.runner import ScenarioResult, expected_wait_s
from dshkit.harness.providers.deepseek import DeepSeekAdapter


def test_the_waits_are_estimated_from_the_scenarios_own_timings() -> None:
    by_id = {s.id: s for s in load_catalogue()}
    keep_alives, stall = by_id["net-keepalives-feed-watchdog"], by_id["net-stall-before-first-byte"]
    assert expected_wait_s(keep_alives) == 16 * 0.25  # its keep-alives, not its generous budget
    assert expected_wait_s(stall) == stall.idle_timeout_s  # it ends when the watchdog fires
    assert expected_wait_s(stall.model_copy(update={"idle_timeout_s": 0.5})) == 0.5
    # A stall the scenario cancels or aborts early does not run into the watchdog.
    assert expected_wait_s(by_id["net-cancel-propagates"]) == expected_wait_s(by_id["net-abort-mid-stream"]) == 0
    assert expected_wait_s(by_id["finish-repeated"]) == 0
    longest = max(by_id.values(), key=expected_wait_s)
    assert longest.id == "net-keepalives-feed-watchdog"


async def test_the_longest_wait_starts_first_and_results_keep_catalogue_order() -> None:
    picked = select(load_catalogue(), ["finish-repeated", "net-slow-headers", "net-stall-before-first-byte"])
    picked = [s.model_copy(update={"idle_timeout_s": 0.5}) if s.id.startswith("net-stall") else s for s in picked]
    catalogue_order = [s.id for s in picked]
    assert catalogue_order == ["finish-repeated", "net-stall-before-first-byte", "net-slow-headers"]
    played: list[str] = []

    def record(result: ScenarioResult, done: int, total: int) -> None:
        played.append(result.id)

    # One at a time, so the order they end in is the order they started in.
    results = await run_catalogue(picked, DeepSeekAdapter, concurrency=1, on_result=record)
    assert [r.id for r in results] == catalogue_order
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}
    assert played == ["net-stall-before-first-byte", "net-slow-headers", "finish-repeated"]
