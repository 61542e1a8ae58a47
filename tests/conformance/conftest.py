"""Shared configuration of the conformance tests: the catalogue runs, played once per process."""

from __future__ import annotations

import pytest

from .catalogue_runs import ANTHROPIC_SHARDS, CHAT_SHARDS, CatalogueRuns


@pytest.fixture(scope="session")
def chat_runs() -> CatalogueRuns:
    """Every chat-protocol adapter's whole-catalogue run (the real two and every broken one), by shard."""
    return CatalogueRuns("chat", CHAT_SHARDS)


@pytest.fixture(scope="session")
def anthropic_runs() -> CatalogueRuns:
    """Every anthropic-protocol adapter's whole-catalogue run (the real two and every broken one)."""
    return CatalogueRuns("anthropic", ANTHROPIC_SHARDS)
