"""The tests mirror the code: every module of the installed package has a test module named for it.

`dshkit/<dir>/<name>.py` is tested by `tests/<dir>/test_<name>.py` (the package's links
`dshkit/harness`, `dshkit/mock_server`, `dshkit/conformance` and `dshkit/view` are followed, so
`dshkit/view/load.py` pairs with `tests/view/test_load.py`). Feature folders such as `tests/e2e/`
may hold more; what this keeps is that the next engineer who changes a module finds its tests
where the module is, whatever its size.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXEMPT = {
    # The catalogue as tests, collected by `pytest --pyargs dshkit.conformance`: a test module
    # itself, played by tests/conformance/test_pytest_plugin.py.
    "conformance/test_catalogue.py",
}


def _modules() -> list[Path]:
    """Every module of the package, relative to `dshkit/`, following its links."""
    found = []
    for folder, _, files in os.walk(ROOT / "dshkit", followlinks=True):
        for name in files:
            if name.endswith(".py") and name not in {"__init__.py", "__main__.py"}:
                found.append((Path(folder) / name).relative_to(ROOT / "dshkit"))
    return sorted(found)


def test_the_walk_finds_every_package() -> None:
    tops = {module.parts[0] for module in _modules() if len(module.parts) > 1}
    assert {"harness", "mock_server", "conformance", "view", "recordings"} <= tops


def test_every_module_has_its_test_module() -> None:
    missing = [
        f"dshkit/{module} -> tests/{module.parent / ('test_' + module.name)}"
        for module in _modules()
        if module.as_posix() not in EXEMPT
        and not (ROOT / "tests" / module.parent / f"test_{module.name}").is_file()
    ]
    assert missing == [], "modules without a test module of their own:\n" + "\n".join(missing)


def test_every_exemption_is_still_a_module() -> None:
    assert {m.as_posix() for m in _modules()} >= EXEMPT
