"""Every package's `__all__` is sorted and names only public objects that exist.

One test for all of dshkit's packages and modules (as httpx's `test_exported_members.py` does for
its one namespace): an `__all__` is the public surface a reader and `from x import *` rely on, so
a stale name, a private name or a duplicate is a bug. Two orders count as sorted: plain `sorted()`
and ruff's isort-style order (CONSTANTS, then Classes, then functions).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

PACKAGES = ("harness", "mock_server", "conformance", "dshkit_view")


def _modules() -> list[str]:
    names: list[str] = []
    for root in PACKAGES:
        package = importlib.import_module(root)
        names.append(root)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{root}."):
            if not info.name.endswith("__main__"):
                names.append(info.name)
    return names


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _problems(module: ModuleType) -> list[str]:
    names = list(getattr(module, "__all__", []))
    problems = [f"{n} is private" for n in names if n.startswith("_")]
    problems += [f"{n} does not exist" for n in names if not hasattr(module, n)]
    problems += [f"{n} is listed twice" for n in set(names) if names.count(n) > 1]
    if names not in (sorted(names), sorted(names, key=_isort_key)):
        problems.append(f"not sorted: {names}")
    return problems


@pytest.mark.parametrize("name", _modules())
def test_all_is_sorted_and_names_public_existing_objects(name: str) -> None:
    module = importlib.import_module(name)
    assert _problems(module) == []


def test_the_check_finds_what_it_is_for() -> None:
    bad = ModuleType("bad")
    bad.__all__ = ["b", "a", "_private", "gone", "b"]  # type: ignore[attr-defined]
    bad.a = bad.b = bad._private = 1  # type: ignore[attr-defined]
    problems = _problems(bad)
    assert "_private is private" in problems
    assert "gone does not exist" in problems
    assert "b is listed twice" in problems
    assert any(p.startswith("not sorted") for p in problems)
