"""The catalogue against both real adapters (each run played once per process: `catalogue_runs`)."""

from __future__ import annotations

import pytest

from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_compat import OpenAICompatAdapter

from .catalogue_runs import (
    ANTHROPIC_ADAPTERS,
    ANTHROPIC_SHARDS,
    CHAT_ADAPTERS,
    CHAT_SHARDS,
    GROUP,
    CatalogueRuns,
    group_of,
)

pytestmark = pytest.mark.xdist_group(GROUP)

#: What the openai SDK hides from OpenAICompatAdapter (declared on its capabilities).
SDK_NOT_APPLICABLE = {
    "sse-blocks-without-data", "sse-byte-order-mark", "end-eof-after-finish-flagged",
    "end-done-unterminated-flagged", "end-done-without-finish-reason", "err-inband-error-keeps-usage",
}


def test_catalogue_passes_on_deepseek_adapter(chat_runs: CatalogueRuns) -> None:
    results = chat_runs.results(DeepSeekAdapter)
    assert [r.id for r in results] == [s.id for s in chat_runs.scenarios()]
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}


def test_catalogue_on_openai_compat_adapter(chat_runs: CatalogueRuns) -> None:
    results = chat_runs.results(OpenAICompatAdapter)
    assert {r.id: r.diff for r in results if r.status == "fail"} == {}
    assert {r.id for r in results if r.status == "n/a"} == SDK_NOT_APPLICABLE
    reasons = {r.id: r.reason for r in results if r.status == "n/a"}
    assert reasons["err-inband-error-keeps-usage"] == (
        "the adapter declares no error_usage capability (reads the usage on the chunk that carries an in-band error)"
    )


def test_the_catalogue_tests_share_one_worker_under_loadgroup(request: pytest.FixtureRequest) -> None:
    # `make test` runs `--dist loadgroup`; were the group lost (tests/conftest.py says how it
    # was once), every worker would play all the catalogue runs again.
    assert group_of(DeepSeekAdapter) == group_of(OpenAICompatAdapter) == GROUP
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith(f"@{GROUP}"), request.node.nodeid


def test_every_adapter_is_played_in_exactly_one_shard() -> None:
    for adapters, shards in ((CHAT_ADAPTERS, CHAT_SHARDS), (ANTHROPIC_ADAPTERS, ANTHROPIC_SHARDS)):
        played = [a for shard in shards.values() for a in shard]
        assert sorted(played, key=lambda a: a.__name__) == sorted(adapters, key=lambda a: a.__name__)
        assert all(shards[group_of(a)] for a in adapters)
