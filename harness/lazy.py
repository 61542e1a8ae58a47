"""Names a package exports but imports on first use (PEP 562), so that importing the package
costs only what the caller touches: `dshkit serve` gets ready without the harness's session
code, and one provider subpackage does not load the others' shared modules."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: a name of `homes` is imported from the submodule
    `homes[name]` of `package` on first use and kept in the package; any other name is an
    AttributeError, as for a module without one."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
