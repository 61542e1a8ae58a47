"""The package layers hold: `harness` imports neither `mock_server` nor `conformance` (nor the
`dshkit` application layer), `import mock_server` does not import pytest, and the `dshkit`
command imports only the module of the subcommand it runs.

The import facts are checked in fresh interpreters (a subprocess each), since this test process
has long since imported everything; the static check also catches imports inside functions,
which no import of the package would run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dshkit.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_HARNESS = ("mock_server", "conformance", "dshkit", "dshkit_view")


def _modules_after(code: str) -> set[str]:
    """The names in `sys.modules` after running `code` in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def test_no_harness_module_imports_the_other_packages_even_lazily() -> None:
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
                      for n in names if _top(n) in FORBIDDEN_IN_HARNESS]
    assert found == []


def test_importing_every_harness_module_loads_no_other_package() -> None:
    modules = _modules_after(
        "import importlib, pkgutil, harness\n"
        "for info in pkgutil.walk_packages(harness.__path__, 'harness.'):\n"
        "    importlib.import_module(info.name)"
    )
    assert len([m for m in modules if _top(m) == "harness"]) > 20  # the walk did import them
    assert sorted(m for m in modules if _top(m) in FORBIDDEN_IN_HARNESS) == []


def test_import_mock_server_imports_no_pytest() -> None:
    modules = _modules_after("import mock_server")
    assert "mock_server.server" in modules
    assert sorted(m for m in modules if _top(m) in ("pytest", "_pytest", "pytest_asyncio", "syrupy")) == []


@pytest.mark.parametrize("command", ["run", "decode", "replay"])
def test_the_cli_imports_only_the_module_of_the_command_it_runs(command: str) -> None:
    modules = _modules_after(
        "from dshkit.cli import main\n"
        "try:\n"
        f"    main([{command!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    own = COMMANDS[command]
    assert own in modules
    others = {m for name, m in COMMANDS.items() if name != command} - {own}
    assert sorted(others & modules) == []
    assert "conformance" not in modules and "dshkit_view" not in modules


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_alone_has_the_same_help_as_in_the_whole_parser(command: str) -> None:
    def help_of(parser: object) -> str:
        (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]  # type: ignore[attr-defined]
        return str(action.choices[command].format_help())

    assert help_of(build_parser(command)) == help_of(build_parser())
