"""Shared configuration of the conformance tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers this marker itself; declared here too so `-p no:xdist` runs still collect.
    config.addinivalue_line("markers", "xdist_group(name): run on the same xdist worker under --dist loadgroup")
