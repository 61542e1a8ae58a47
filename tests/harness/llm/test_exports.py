"""Each package's `__all__` is sorted and every name exists (STYLE.md, like httpx's test)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest


@pytest.mark.parametrize("package", ["harness.llm", "harness.providers.deepseek"])
def test_all_sorted_and_present(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    missing = [n for n in names if not hasattr(module, n)]
    assert missing == []


@pytest.mark.parametrize("package", ["harness.llm", "harness.providers.deepseek"])
def test_modules_export_only_what_exists(package: str) -> None:
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        sub = importlib.import_module(f"{package}.{info.name}")
        for name in getattr(sub, "__all__", []):
            assert hasattr(sub, name), f"{package}.{info.name}.__all__ names missing {name}"
            assert name in module.__all__, f"{package} does not re-export {info.name}.{name}"
