"""Adapters that would keep a conformance run alive: the budget covers closing the adapter, a
stream that swallows cancellation is left behind after a grace, and the run always ends."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from dshkit.conformance import load_catalogue, run_catalogue
from dshkit.conformance.cli import select
from dshkit.conformance.runner import ScenarioResult

from ..together import Played, play_together
from .broken import HangingCloseAdapter, SwallowsCancelAdapter, release_holds

T = TypeVar("T")
ROOT = Path(__file__).parents[2]
#: The run must end long before this; it only stops a regression from hanging the suite.
SAFETY_S = 60
#: The graces the runner and the CLI give a task that swallowed its cancellation (2 s and 1 s in
#: production), shortened here: the adapters below hold such a task until the test releases it,
#: so it can never end within any grace, and waiting the full one only idled the worker.
HANG_GRACE_S = 0.2


async def _within(coro: Coroutine[Any, Any, T], seconds: float) -> T:
    """The coroutine's result; fails (instead of hanging, as wait_for would on a task that ignores
    its cancellation) when it has not finished after `seconds`."""
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    assert done, f"the run did not end within {seconds} s"
    return task.result()


#: A budget shorter than the catalogue's default (15 s): the hanging `aclose()` uses all of it,
#: so the test waits about this long. Streaming these two one-step scenarios takes milliseconds
#: (a hundred times less than this even on a loaded host); the close must be what runs out.
SHORT_BUDGET_S = 2.0


# The three runs below each wait on purpose (a budget, a grace, a CLI process that waits out its
# own): played together once (`tests/together.py`), each judged by its own test. None of their
# verdicts depends on how fast the machine runs: what they wait for never ends.


async def _hanging_close() -> list[ScenarioResult]:
    scenarios = [s.model_copy(update={"budget_s": SHORT_BUDGET_S})
                 for s in select(load_catalogue(), ["finish-repeated", "end-eof-before-finish"])]
    return await _within(run_catalogue(scenarios, HangingCloseAdapter), SAFETY_S)


async def _swallowed_cancel() -> list[ScenarioResult]:
    # With the runner's cancel grace shortened to HANG_GRACE_S (`runs`; the other run has no
    # cancel step, so the shortened grace changes nothing for it).
    (scenario,) = select(load_catalogue(), ["net-cancel-propagates"])
    return await _within(run_catalogue([scenario], SwallowsCancelAdapter), SAFETY_S)


async def _cli_with_leftover_tasks() -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        code = (
            "import sys; from dshkit.cli import main; import dshkit.conformance.runner as r, dshkit.conformance.cli as c; "
            f"r.CANCEL_GRACE_S = c._LEFTOVER_GRACE_S = {HANG_GRACE_S}; "
            "sys.exit(main(['conformance', '--adapter', 'tests.conformance.broken:SwallowsCancelAdapter', "
            f"'--only', 'net-cancel-propagates', '--json', {str(report)!r}]))"
        )
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], cwd=ROOT,
                                       capture_output=True, text=True, timeout=SAFETY_S)
        return done, json.loads(report.read_text()) if report.exists() else {}


runs_group = pytest.mark.xdist_group("runner_budget")


@pytest.fixture(scope="module")
def runs() -> Iterator[Played[str, Any]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("dshkit.conformance.runner.CANCEL_GRACE_S", HANG_GRACE_S)
        # release_holds, on the plays' loop once they end: frees the tasks the broken adapters
        # hold, so that loop closes cleanly.
        yield play_together({"hanging close": _hanging_close, "swallowed cancel": _swallowed_cancel,
                             "cli": _cli_with_leftover_tasks}, after=release_holds)


@runs_group
def test_hanging_aclose_fails_within_the_budget_and_the_run_ends(runs: Played[str, Any]) -> None:
    results = runs["hanging close"]
    assert [r.status for r in results] == ["fail", "fail"]
    for r in results:
        assert r.reason == "failed: close", r.reason
        assert "adapter.aclose() did not return within" in r.diff
        assert f"within the {SHORT_BUDGET_S:g} s budget" in r.diff  # the scenario's own budget


@runs_group
def test_a_stream_that_swallows_cancellation_fails_its_cancel_check(runs: Played[str, Any]) -> None:
    (result,) = runs["swallowed cancel"]
    assert result.status == "fail"
    assert "step0.cancel" in result.reason and "timeout" not in result.reason, result.reason
    assert "CancelledError swallowed" in result.diff


@runs_group
def test_the_cli_exits_despite_tasks_that_ignore_cancellation(runs: Played[str, Any]) -> None:
    done, report = runs["cli"]
    assert done.returncode == 1, done.stderr
    assert report["summary"]["fail"] == 1
    assert "Traceback" not in done.stderr, done.stderr
