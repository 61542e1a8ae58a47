"""Every package's `__all__` is sorted and names only public objects that exist.

One test for all of dshkit's packages and modules (as httpx's `test_exported_members.py` does for
its one namespace): an `__all__` is the public surface a reader and `from x import *` rely on, so
a stale name, a private name or a duplicate is a bug. Two orders count as sorted: plain `sorted()`
and ruff's isort-style order (CONSTANTS, then Classes, then functions). A package's `__all__`
must also equal the names docs/api.md's guide gives it (the documented public surface), and the
whole surface stays at most `LIMIT` names.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

PACKAGES = ("dshkit.harness", "dshkit.mock_server", "dshkit.conformance", "dshkit.view")


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


API_DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"
ROW = re.compile(r"^\| `(\w+)` \| `(dshkit[\w.]*)` \| .+ \|$")
LIMIT = 65
"""The surface stays about sixty names: a new public name has to displace one or justify the limit."""


def _documented_surface(text: str) -> dict[str, list[str]]:
    """Package → the names docs/api.md's job tables give it (rows `| `name` | `package` | for |`),
    in order of appearance."""
    surface: dict[str, list[str]] = {}
    for line in text.splitlines():
        if row := ROW.match(line):
            surface.setdefault(row.group(2), []).append(row.group(1))
    return surface


def _packages() -> dict[str, list[str]]:
    """Every package (not plain module) → its `__all__`, empty ones included."""
    found: dict[str, list[str]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        if hasattr(module, "__path__"):
            found[name] = list(getattr(module, "__all__", []))
    return found


def test_every_package_exports_exactly_its_documented_surface() -> None:
    """docs/api.md is the public surface: a package's `__all__` names what the guide gives it,
    no more (an internal helper leaking out) and no less (a documented name gone)."""
    documented = _documented_surface(API_DOC.read_text())
    exported = {package: names for package, names in _packages().items() if names}
    assert sorted(documented) == sorted(exported)
    for package, names in exported.items():
        listed = documented[package]
        assert [n for n in names if n not in listed] == [], f"{package} exports undocumented names"
        assert [n for n in listed if n not in names] == [], f"docs/api.md lists names {package} does not export"
        assert sorted(set(listed)) == sorted(listed), f"docs/api.md lists a name of {package} twice"


def test_the_surface_stays_small() -> None:
    total = sum(len(names) for names in _packages().values())
    assert total <= LIMIT, f"{total} public names; docs/api.md promises at most {LIMIT}"
    assert f"surface is {total} names" in API_DOC.read_text().replace("\n", " "), "docs/api.md states the count"


def test_package_namespaces_hold_no_public_name_outside_all() -> None:
    """A trimmed name must leave the package's namespace too, or `from pkg import name` keeps
    working and the surface silently grows back (submodules are the exception). Packages that
    export nothing are held to it as well."""
    for package, names in _packages().items():
        module = importlib.import_module(package)
        public = {n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, ModuleType)}
        public -= {"annotations"}  # `from __future__ import annotations`
        assert sorted(public - set(names)) == [], f"{package} holds public names outside __all__"


def test_the_surface_check_reads_the_doc_format() -> None:
    text = (
        "intro\n\n## A job\n\n| name | import from | for |\n| --- | --- | --- |\n"
        "| `X` | `dshkit.a` | one. |\n| `y` | `dshkit.b` | two. |\n\n## Another\n| `Z` | `dshkit.a` | z. |\n"
        "| `GenerateOptions.model` | `str` | required | a field row, not a name. |\n"
    )
    assert _documented_surface(text) == {"dshkit.a": ["X", "Z"], "dshkit.b": ["y"]}
