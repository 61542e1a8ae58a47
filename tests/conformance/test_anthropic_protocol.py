"""The catalogue on the `anthropic` protocol: both Anthropic-protocol adapters (ours on httpx and
one on the official `anthropic` SDK) pass every scenario written for it, and each deliberately
broken adapter fails exactly the scenarios that describe its bug."""

from __future__ import annotations

import pytest

from conformance import for_protocol, load_catalogue, run_catalogue
from harness.providers.anthropic import AnthropicAdapter
from harness.providers.anthropic_sdk import AnthropicSDKAdapter

from .broken_anthropic import BROKEN_ANTHROPIC


def anthropic_catalogue() -> list:  # type: ignore[type-arg]
    return for_protocol(load_catalogue(), "anthropic")


def test_anthropic_scenarios_exist_and_some_are_neutral() -> None:
    scenarios = anthropic_catalogue()
    assert len(scenarios) >= 15
    neutral = [s.id for s in scenarios if "chat" in s.protocols]
    assert neutral and all(any(st.anthropic is not None for st in s.steps) for s in scenarios if s.id in neutral)


@pytest.mark.parametrize("adapter", [AnthropicAdapter, AnthropicSDKAdapter], ids=lambda c: c.__name__)
async def test_anthropic_catalogue_passes(adapter: type) -> None:
    results = await run_catalogue(anthropic_catalogue(), adapter, protocol="anthropic")
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}


@pytest.mark.parametrize("adapter", BROKEN_ANTHROPIC, ids=lambda cls: cls.__name__)
async def test_broken_anthropic_adapter_fails_exactly_its_scenarios(adapter: type) -> None:
    catalogue = anthropic_catalogue()
    assert {s.id for s in catalogue} >= adapter.MUST_FAIL, "MUST_FAIL names unknown scenarios"
    results = await run_catalogue(catalogue, adapter, protocol="anthropic")
    failed = {r.id for r in results if r.status == "fail"}
    assert failed == adapter.MUST_FAIL, {
        "missed": sorted(adapter.MUST_FAIL - failed),
        "unexpected": {r.id: r.diff for r in results if r.id in failed - adapter.MUST_FAIL},
    }
