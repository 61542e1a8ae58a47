"""The suite catches bugs: each broken adapter fails exactly the scenarios it declares."""

from __future__ import annotations

import pytest

from dshkit.conformance import run_catalogue

from .broken import BROKEN
from .catalogue_runs import CatalogueRuns, catalogue, params


@pytest.mark.parametrize("adapter", params(BROKEN))
def test_broken_adapter_fails_exactly_its_scenarios(adapter: type, chat_runs: CatalogueRuns) -> None:
    assert {s.id for s in chat_runs.scenarios()} >= adapter.MUST_FAIL, "MUST_FAIL names unknown scenarios"
    results = chat_runs.results(adapter)
    assert len(results) == len(chat_runs.scenarios()), "every scenario of the catalogue was judged"
    failed = {r.id for r in results if r.status == "fail"}
    assert failed == adapter.MUST_FAIL, {
        "missed": sorted(adapter.MUST_FAIL - failed),
        "unexpected": {r.id: r.diff for r in results if r.id in failed - adapter.MUST_FAIL},
    }
    assert not [r.id for r in results if r.status == "n/a"]


async def test_a_self_retrying_adapter_is_named_as_such() -> None:
    # The second request meets an exhausted script (a mock 418); the verdict must say why.
    from .broken import SelfRetryingAdapter

    [result] = await run_catalogue([s for s in catalogue() if s.id == "err-no-self-retry-503"], SelfRetryingAdapter)
    assert result.status == "fail" and "step0.requests" in result.failed
    assert "retries on its own" in result.reason
    assert "# actual finish, step0: kind=error code=HTTP_418 status=418" in result.diff
