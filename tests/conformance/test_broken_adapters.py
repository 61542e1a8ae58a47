"""The suite catches bugs: each broken adapter fails exactly the scenarios it declares."""

from __future__ import annotations

import pytest

from conformance import load_catalogue, run_catalogue

from .broken import BROKEN


@pytest.mark.parametrize("adapter", BROKEN, ids=lambda cls: cls.__name__)
async def test_broken_adapter_fails_exactly_its_scenarios(adapter: type) -> None:
    catalogue = load_catalogue()
    assert {s.id for s in catalogue} >= adapter.MUST_FAIL, "MUST_FAIL names unknown scenarios"
    results = await run_catalogue(catalogue, adapter)
    failed = {r.id for r in results if r.status == "fail"}
    assert failed == adapter.MUST_FAIL, {
        "missed": sorted(adapter.MUST_FAIL - failed),
        "unexpected": {r.id: r.diff for r in results if r.id in failed - adapter.MUST_FAIL},
    }
    assert not [r.id for r in results if r.status == "n/a"]
