"""The openai-python driver (conformance/clients/drive_openai.py) with the real `openai` SDK.

One run of the driver over `SUBSET` and `end-eof-before-finish` is shared by the tests that judge
it (xdist group `clients-openai-python`); its scenario processes fork from a warm process that
imported the SDK once (tests/conformance/clients/warm_driver.py). Skipped with the suite's one
reason (`drivers.library_missing`) where the SDK is not installed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from dshkit.conformance.client_protocol import CLIENTS_DIR
from dshkit.conformance.client_runner import ClientCommand, ClientScenarioResult

from ..client_runs import SUBSET, driver_hello, group, run, scenarios
from .drivers import (
    assert_declarations_fit_the_catalogue,
    assert_describes_itself_before_its_import,
    need_library,
)
from .warm_driver import WarmDriver

NAME = "openai-python"
EOF_ID = "end-eof-before-finish"
"""Played in the driver's one run beside SUBSET (it fails there, by the SDK's design)."""

_WARM: list[WarmDriver] = []
"""The driver's warm process, while this module's tests run."""


@pytest.fixture(scope="module", autouse=True)
def _stop_warm_driver() -> Iterator[None]:
    yield
    while _WARM:
        _WARM.pop().close()


def _played_command() -> ClientCommand:
    """How the scenario runs start the driver: through a warm process that imports the SDK once
    for all its runs, instead of each run's process importing it (0.8 s of CPU each). The runner
    still starts, feeds, reads and ends a process of its own for each run; the describe run is a
    fresh process."""
    need_library(NAME)
    if not _WARM:
        _WARM.append(WarmDriver(CLIENTS_DIR / "drive_openai.py", "openai"))
    return ClientCommand(name=NAME, argv=_WARM[0].argv)


@functools.cache
def _driver_run() -> dict[str, ClientScenarioResult]:
    """The driver's one run, shared by the tests that judge it (the SDK is most of its time)."""
    return run(_played_command(), scenarios([*SUBSET, EOF_ID]), hello=driver_hello(NAME))


def test_describes_itself_before_importing_the_sdk() -> None:
    assert_describes_itself_before_its_import(NAME)


def test_declarations_fit_the_catalogue() -> None:
    assert_declarations_fit_the_catalogue(NAME)


@group(NAME)
def test_openai_driver_passes_the_subset() -> None:
    results = {i: r for i, r in _driver_run().items() if i in SUBSET}
    assert {i: r.status for i, r in results.items()} == dict.fromkeys(SUBSET, "pass"), \
        {i: r.diff for i, r in results.items() if r.status == "fail"}
    passback = results["rt-thinking-tool-call"].observations
    assert [o["finish"] for o in passback] == ["tool_calls", "stop"]
    assert passback[0]["reasoning"] == "The user asks about Hangzhou weather. I'll call get_weather."


@group(NAME)
def test_openai_driver_reports_what_the_library_really_does() -> None:
    """A clean EOF before any finish: the SDK raises nothing and gives no finish reason, and the
    runner says so instead of calling it a stop."""
    res = _driver_run()[EOF_ID]
    assert res.status == "fail"
    assert res.failed == ["step0.finish"]
    assert "expected finish error, the library gave no finish reason and no error" in res.reason
    assert res.observations[0]["content"] == "partial answer"
