"""The catalogue on the `anthropic` protocol: both Anthropic-protocol adapters (ours on httpx and
one on the official `anthropic` SDK) pass every scenario written for it, and each deliberately
broken adapter fails exactly the scenarios that describe its bug (each run played once per
process: `catalogue_runs`)."""

from __future__ import annotations

import pytest

from dshkit.conformance.runner import for_protocol
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter

from .broken_anthropic import BROKEN_ANTHROPIC
from .catalogue_runs import ANTHROPIC_GROUP, CatalogueRuns, catalogue


def anthropic_catalogue() -> list:  # type: ignore[type-arg]
    return for_protocol(catalogue(), "anthropic")


def test_anthropic_scenarios_exist_and_some_are_neutral() -> None:
    scenarios = anthropic_catalogue()
    assert len(scenarios) >= 15
    neutral = [s.id for s in scenarios if "chat" in s.protocols]
    assert neutral and all(any(st.anthropic is not None for st in s.steps) for s in scenarios if s.id in neutral)


@pytest.mark.xdist_group(ANTHROPIC_GROUP)
@pytest.mark.parametrize("adapter", [AnthropicAdapter, AnthropicSDKAdapter], ids=lambda c: c.__name__)
def test_anthropic_catalogue_passes(adapter: type, anthropic_runs: CatalogueRuns) -> None:
    results = anthropic_runs.results(adapter)
    assert [r.id for r in results] == [s.id for s in anthropic_catalogue()]
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}


@pytest.mark.xdist_group(ANTHROPIC_GROUP)
@pytest.mark.parametrize("adapter", BROKEN_ANTHROPIC, ids=lambda cls: cls.__name__)
def test_broken_anthropic_adapter_fails_exactly_its_scenarios(adapter: type, anthropic_runs: CatalogueRuns) -> None:
    scenarios = anthropic_catalogue()
    assert {s.id for s in scenarios} >= adapter.MUST_FAIL, "MUST_FAIL names unknown scenarios"
    results = anthropic_runs.results(adapter)
    assert len(results) == len(scenarios), "every anthropic scenario was judged"
    failed = {r.id for r in results if r.status == "fail"}
    assert failed == adapter.MUST_FAIL, {
        "missed": sorted(adapter.MUST_FAIL - failed),
        "unexpected": {r.id: r.diff for r in results if r.id in failed - adapter.MUST_FAIL},
    }
