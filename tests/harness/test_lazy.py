"""`lazy_attributes`: a package's exported name is imported from its submodule on first use
and kept in the package; nothing else is imported before, and an unknown name is an ordinary
AttributeError."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package `lazy_<id>` exporting `heavy_value` (a fresh object each time `heavy` runs)
    from its submodule `heavy` and `other` from `light`."""
    name = f"lazy_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text(
        "from dshkit.harness.lazy import lazy_attributes\n"
        "__getattr__ = lazy_attributes(__name__, {'heavy_value': 'heavy', 'other': 'light'})\n"
    )
    (root / "heavy.py").write_text("heavy_value = object()\n")
    (root / "light.py").write_text("other = 1\n")
    monkeypatch.syspath_prepend(tmp_path)
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def test_a_name_is_imported_on_first_use_and_kept(package: str) -> None:
    pkg = importlib.import_module(package)
    assert f"{package}.heavy" not in sys.modules and f"{package}.light" not in sys.modules
    value = pkg.heavy_value
    assert value is sys.modules[f"{package}.heavy"].heavy_value
    assert vars(pkg)["heavy_value"] is value  # kept: the next use does not ask __getattr__
    # kept in the package, not fetched again: with the submodule gone, a re-import would run
    # `heavy` afresh and make another object
    del sys.modules[f"{package}.heavy"]
    assert pkg.heavy_value is value and f"{package}.heavy" not in sys.modules
    assert f"{package}.light" not in sys.modules  # the other export is still not loaded


def test_an_unknown_name_is_an_attribute_error(package: str) -> None:
    pkg = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'missing'"):
        pkg.missing  # noqa: B018
    assert not hasattr(pkg, "heavy")  # a submodule's name is not an export
    assert f"{package}.heavy" not in sys.modules
