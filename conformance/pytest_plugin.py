"""The pytest plugin (entry point `dshkit_conformance`): the catalogue as parametrized tests.

    pytest --pyargs dshkit.conformance --dshkit-adapter mypkg.adapter:make_adapter [-n auto]

Thin by design: `dshkit.conformance.runner` does the work. Without `--dshkit-adapter` the plugin does
nothing at all: `conformance/test_catalogue.py` is not collected and no server starts, so a
project's own suite is untouched. With it, every scenario is one test whose id is the scenario
id, with its tags as markers (`A5`, `dsh_exact`, `area_tools`, …; select with `-m`). Each
process (each xdist worker) starts one mock server on a background thread for its tests.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from dshkit.mock_server import MockServer

    from .runner import ScenarioResult
    from .scenario import Scenario

__all__ = ["marker_name"]

_OPTION = "--dshkit-adapter"
_TEST_MODULE = Path(__file__).resolve().parent / "test_catalogue.py"


def marker_name(tag: str) -> str:
    """A tag as a marker name usable in `-m` (`area:tools` → `area_tools`)."""
    return re.sub(r"\W", "_", tag)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dshkit-conformance", "dshkit adapter conformance")
    group.addoption(_OPTION, metavar="MOD:FACTORY", default=None,
                    help="run the dshkit conformance catalogue against this adapter factory "
                         "(with `pytest --pyargs dshkit.conformance`); its module is imported from the "
                         "installed packages or the current directory")
    group.addoption("--dshkit-only", action="append", default=[], metavar="TAG",
                    help="only scenarios with this tag, id or area (repeatable)")
    group.addoption("--dshkit-protocol", choices=["chat", "anthropic"], default="chat",
                    help="the wire the adapter speaks: Chat Completions (default) or the Anthropic "
                         "Messages surface (only the scenarios written for it run)")


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption(_OPTION, default=None))


_CATALOGUE_KEY = pytest.StashKey["list[Scenario]"]()


def _catalogue(config: pytest.Config) -> list[Scenario]:
    """The bundled catalogue, read once a session: its tags become markers at configure time and
    its scenarios tests at collection, and each read parses every YAML file of it again."""
    if _CATALOGUE_KEY not in config.stash:
        from .scenario import load_catalogue

        config.stash[_CATALOGUE_KEY] = load_catalogue()
    return config.stash[_CATALOGUE_KEY]


def pytest_configure(config: pytest.Config) -> None:
    if not _enabled(config):
        return
    tags = {t for s in _catalogue(config) for t in s.tags}
    for tag in sorted(tags):
        config.addinivalue_line("markers", f"{marker_name(tag)}: dshkit conformance tag {tag}")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.resolve() == _TEST_MODULE and not _enabled(config):
        return True
    return None


def _selected(config: pytest.Config) -> list[Scenario]:
    from .cli import select
    from .runner import for_protocol

    try:
        scenarios = for_protocol(_catalogue(config), config.getoption("--dshkit-protocol"))
        return select(scenarios, config.getoption("--dshkit-only"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


_FACTORY_KEY = pytest.StashKey[Any]()


def _factory(config: pytest.Config) -> Any:
    """The adapter factory named by `--dshkit-adapter`, loaded (and its signature checked) once, at
    collection: a path that does not resolve is one collection error with the sentence that says
    what to write, not one identical error per scenario."""
    if _FACTORY_KEY not in config.stash:
        from .runner import load_factory

        config.stash[_FACTORY_KEY] = load_factory(config.getoption(_OPTION))
    return config.stash[_FACTORY_KEY]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dshkit_scenario" not in metafunc.fixturenames or not _enabled(metafunc.config):
        return
    from .runner import FactoryError

    problem: str | None = None
    try:
        _factory(metafunc.config)
    except FactoryError as exc:
        problem = str(exc)
    if problem is not None:
        # One collection error that is the sentence itself (no traceback of ours to read past).
        pytest.fail(f"--dshkit-adapter: {problem}", pytrace=False)
    params = [
        pytest.param(sc, id=sc.id, marks=[getattr(pytest.mark, marker_name(t)) for t in sc.tags])
        for sc in _selected(metafunc.config)
    ]
    metafunc.parametrize("dshkit_scenario", params)


@pytest.fixture(scope="session")
def dshkit_conformance_factory(pytestconfig: pytest.Config) -> Any:
    """The adapter factory named by `--dshkit-adapter` (loaded at collection)."""
    return _factory(pytestconfig)


@pytest.fixture(scope="session")
def dshkit_conformance_server() -> Iterator[MockServer]:
    """One mock server per process (per xdist worker), on a background thread."""
    from dshkit.mock_server import MockServer

    server = MockServer(seed=7).start_in_thread()
    yield server
    server.close_thread()


@pytest.fixture
def dshkit_scenario_result(
    dshkit_scenario: Scenario,
    dshkit_conformance_factory: Any,
    dshkit_conformance_server: MockServer,
    pytestconfig: pytest.Config,
) -> ScenarioResult:
    """Run the parametrized scenario and return its verdict."""
    from .runner import run_scenario

    protocol = pytestconfig.getoption("--dshkit-protocol")
    return asyncio.run(
        run_scenario(dshkit_scenario, dshkit_conformance_factory, dshkit_conformance_server, protocol=protocol)
    )
