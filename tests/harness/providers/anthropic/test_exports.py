"""The Anthropic provider packages' `__all__` is sorted, every name exists, and each module's
public names are re-exported by its package (STYLE.md)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

PACKAGES = ["harness.providers.anthropic", "harness.providers.anthropic_sdk"]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_sorted_present_and_complete(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names) and len(names) == len(set(names))
    assert [n for n in names if not hasattr(module, n)] == []
    for info in pkgutil.iter_modules(module.__path__):
        sub = importlib.import_module(f"{package}.{info.name}")
        for name in getattr(sub, "__all__", []):
            assert hasattr(sub, name), f"{package}.{info.name}.__all__ names missing {name}"
            assert name in module.__all__, f"{package} does not re-export {info.name}.{name}"
