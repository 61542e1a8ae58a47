"""The runner (`dshkit.conformance.runner`): loading an adapter factory, playing scenarios over
real HTTP (their order, scenario fields such as `api_key: required`), and adapters that would
keep a run alive or end it (a hanging `aclose()`, a swallowed cancellation, `sys.exit()`)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, TypeVar

import pytest

from dshkit.cli import main
from dshkit.conformance import load_catalogue, run_catalogue
from dshkit.conformance.cli import select
from dshkit.conformance.runner import (
    FactoryError,
    ScenarioResult,
    expected_wait_s,
    load_factory,
    run_scenario,
)
from dshkit.conformance.scenario import load_scenario_file
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import MockServer

from ..together import Played, play_together
from .broken import HangingCloseAdapter, SwallowsCancelAdapter, release_holds

# --- budgets and graces ----------------------------------------------------------------------------
# Adapters that would keep a run alive: the budget covers closing the adapter, a stream that
# swallows cancellation is left behind after a grace, and the run always ends.


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
def runs() -> Played[str, Any]:
    # The shortened grace holds only while the runs play (they have ended when play_together
    # returns), so the other tests of this module meet the runner's own.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("dshkit.conformance.runner.CANCEL_GRACE_S", HANG_GRACE_S)
        # release_holds, on the plays' loop once they end: frees the tasks the broken adapters
        # hold, so that loop closes cleanly.
        return play_together({"hanging close": _hanging_close, "swallowed cancel": _swallowed_cancel,
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


# --- order -----------------------------------------------------------------------------------------
# A catalogue run starts the scenarios that wait in real time first (so their seconds overlap
# the rest instead of holding the run open at its end) and still reports in catalogue order.


def test_the_waits_are_estimated_from_the_scenarios_own_timings() -> None:
    by_id = {s.id: s for s in load_catalogue()}
    keep_alives, stall = by_id["net-keepalives-feed-watchdog"], by_id["net-stall-before-first-byte"]
    assert expected_wait_s(keep_alives) == 16 * 0.25  # its keep-alives, not its generous budget
    assert expected_wait_s(stall) == stall.idle_timeout_s  # it ends when the watchdog fires
    assert expected_wait_s(stall.model_copy(update={"idle_timeout_s": 0.5})) == 0.5
    # A stall the scenario cancels or aborts early does not run into the watchdog.
    assert expected_wait_s(by_id["net-cancel-propagates"]) == expected_wait_s(by_id["net-abort-mid-stream"]) == 0
    assert expected_wait_s(by_id["finish-repeated"]) == 0
    longest = max(by_id.values(), key=expected_wait_s)
    assert longest.id == "net-keepalives-feed-watchdog"


async def test_the_longest_wait_starts_first_and_results_keep_catalogue_order() -> None:
    picked = select(load_catalogue(), ["finish-repeated", "net-slow-headers", "net-stall-before-first-byte"])
    picked = [s.model_copy(update={"idle_timeout_s": 0.5}) if s.id.startswith("net-stall") else s for s in picked]
    catalogue_order = [s.id for s in picked]
    assert catalogue_order == ["finish-repeated", "net-stall-before-first-byte", "net-slow-headers"]
    played: list[str] = []

    def record(result: ScenarioResult, done: int, total: int) -> None:
        played.append(result.id)

    # One at a time, so the order they end in is the order they started in.
    results = await run_catalogue(picked, DeepSeekAdapter, concurrency=1, on_result=record)
    assert [r.id for r in results] == catalogue_order
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}
    assert played == ["net-stall-before-first-byte", "net-slow-headers", "finish-repeated"]


# --- not applicable ------------------------------------------------------------------------------
# A scenario the adapter cannot play is n/a, not a failure: a capability the adapter declares it
# lacks (an attribute it does not have counts as supported), or a protocol the scenario is not
# written for.


class _NoStrictSse(DeepSeekAdapter):
    """The real adapter, declaring no strict SSE decoding and recording each one made and closed."""

    capabilities = SimpleNamespace(strict_sse=False)  # no `done_marker`: counts as supported
    made: ClassVar[list[_NoStrictSse]] = []
    closed: ClassVar[list[_NoStrictSse]] = []

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.made.append(self)

    async def aclose(self) -> None:
        self.closed.append(self)
        await super().aclose()


NEEDS = """\
area: sse
scenarios:
  - id: needs-strict-sse
    title: t
    tags: [A1]
    requires: [strict_sse]
    wire: {reply: {content: x}}
    expect: {finish: {kind: stop}}
  - id: needs-done-marker
    title: t
    tags: [A2]
    requires: [done_marker]
    wire: {reply: {content: x}}
    expect: {finish: {kind: stop}}
"""


async def test_what_an_adapter_cannot_play_is_not_applicable(tmp_path: Path) -> None:
    (tmp_path / "needs.yaml").write_text(NEEDS)
    strict, done = load_scenario_file(tmp_path / "needs.yaml")
    _NoStrictSse.made.clear()
    _NoStrictSse.closed.clear()
    results = await run_catalogue([strict, done], _NoStrictSse)
    assert [(r.status, r.reason) for r in results] == [
        ("n/a", "the adapter declares no strict_sse capability (decodes SSE strictly (data-less blocks, byte order mark))"),
        ("pass", ""),
    ]
    made, closed = _NoStrictSse.made, _NoStrictSse.closed
    assert len(made) == 2 and sorted(map(id, closed)) == sorted(map(id, made))  # the n/a one's was closed too, each once
    async with MockServer() as server:
        other = await run_scenario(strict, DeepSeekAdapter, server, protocol="anthropic")
    assert (other.status, other.reason) == ("n/a", "written for chat, not anthropic")


# --- credentials -----------------------------------------------------------------------------------
# `api_key: required` plays the scenario on a mock that requires the scenario's key (a request
# without it, or with another, gets a 401), and `request.headers_present` requires a header
# (`a|b`: either name), the counterpart of `headers_absent`. Both on the chat and the Anthropic
# protocol, with the real adapters.


KEY_SCENARIOS = """\
area: anthropic
protocols: [chat, anthropic]
scenarios:
  - id: key-required
    title: the key is required
    tags: [AN9]
    api_key: required
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect: {finish: {kind: stop}}
  - id: header-present
    title: a header is required
    tags: [AN9]
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect:
      finish: {kind: stop}
      request: {headers_present: ["x-api-key|authorization", "content-type"]}
  - id: header-missing
    title: a header nobody sends
    tags: [AN9]
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect:
      finish: {kind: stop}
      request: {headers_present: ["x-never-sent|x-not-either"]}
"""


@pytest.fixture
def key_scenarios(tmp_path: Path) -> list[Any]:
    path = tmp_path / "keys.yaml"
    path.write_text(KEY_SCENARIOS, encoding="utf-8")
    return load_scenario_file(path)


def _wrong_key(adapter: type) -> Any:
    def factory(base_url: str, api_key: str, **kw: Any) -> Any:
        return adapter(base_url, api_key + "-not-it", **kw)
    return factory


@pytest.mark.parametrize(("protocol", "adapter"), [("chat", DeepSeekAdapter), ("anthropic", AnthropicAdapter)])
async def test_required_key_and_present_headers(key_scenarios: list[Any], protocol: str, adapter: type) -> None:
    results = {r.id: r for r in await run_catalogue(key_scenarios, adapter, protocol=protocol)}
    assert results["key-required"].status == "pass", results["key-required"].diff
    assert results["header-present"].status == "pass", results["header-present"].diff
    missing = results["header-missing"]
    assert missing.status == "fail" and missing.failed == ["step0.serialize"]
    assert '"header x-never-sent|x-not-either": "<absent>"' in missing.diff

    required = [s for s in key_scenarios if s.id == "key-required"]
    (wrong,) = await run_catalogue(required, _wrong_key(adapter), protocol=protocol)
    assert wrong.status == "fail" and "code=AUTH status=401" in wrong.diff, wrong.diff


# --- loading the factory ---------------------------------------------------------------------------
# `--adapter pkg.mod:Factory` / `--dshkit-adapter`: resolved from the current directory, and a
# path or a factory that cannot work is one usage error before any scenario runs.


_MODULE = '''\
from dshkit.harness.providers.deepseek import DeepSeekAdapter


def make(base_url, api_key, *, connect_timeout_s, idle_timeout_s):
    return DeepSeekAdapter(base_url, api_key, connect_timeout_s=connect_timeout_s, idle_timeout_s=idle_timeout_s)


def wrong(base_url):
    return None


class NoTimeouts:
    def __init__(self, base_url, api_key):
        pass
'''


def _project(root: Path) -> str:
    """A user's project folder holding `<pkg>/adapters.py`; returns the (unique) package name."""
    name = f"userpkg_{uuid.uuid4().hex[:8]}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "adapters.py").write_text(_MODULE)
    return name


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    return _project(tmp_path)


def test_console_script_finds_the_module_in_the_current_directory(tmp_path: Path) -> None:
    # The installed `dshkit` script, not `python -m` (which puts the current directory on sys.path).
    pkg = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(Path(sys.executable).parent / "dshkit"), "conformance", "--adapter", f"{pkg}.adapters:make",
                        "--only", "A22"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "total" in r.stdout


@pytest.mark.parametrize(("attr", "words"), [
    ("wrong", ["cannot be called as factory(base_url, api_key, *, connect_timeout_s, idle_timeout_s)", "(base_url)"]),
    ("NoTimeouts", ["cannot be called as", "connect_timeout_s"]),
    ("mak", ["has no attribute 'mak'", "did you mean 'make'?"]),
])
def test_an_unusable_factory_is_one_usage_error(project: str, attr: str, words: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--adapter", f"{project}.adapters:{attr}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no scenario ran, no table
    assert err.count("\n") == 1 and err.startswith("dshkit conformance: ")
    assert all(w in err for w in words), err


def test_a_missing_module_names_the_directory_searched(project: str, tmp_path: Path) -> None:
    with pytest.raises(FactoryError, match=r"cannot import module 'nosuchpkg_x.adapters'.*current directory \(" + re.escape(str(tmp_path))):
        load_factory("nosuchpkg_x.adapters:make")


def _plugin_session(folder: Path, *args: str) -> tuple[int, str]:
    """(exit code, output) of the `pytest` console script run in `folder` as a user would (not
    `python -m pytest`, which puts the current directory on sys.path; not in-process, where
    pytester's module snapshot would re-import httpx under this process's adapters)."""
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    # Installed plugins the session has no use for (their imports were ~0.3 s of CPU); ours still
    # loads by its entry point.
    unused = [a for name in ("xdist", "hypothesispytest", "syrupy", "anyio", "dshkit_mock_server") for a in ("-p", f"no:{name}")]
    r = subprocess.run([str(Path(sys.executable).parent / "pytest"), "-p", "no:cacheprovider", *unused,
                        "--pyargs", "dshkit.conformance", *args],
                       cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)
    return r.returncode, r.stdout + r.stderr


def test_plugin_wrong_signature_is_one_collection_error(tmp_path: Path) -> None:
    pkg = _project(tmp_path)
    code, out = _plugin_session(tmp_path, "--dshkit-adapter", f"{pkg}.adapters:wrong", "-q")
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "1 error" in out and "failed" not in out and "passed" not in out
    # once in the error report (the short summary repeats it whole on CI, where $CI turns off truncation)
    assert out.split("short test summary info")[0].count("cannot be called as factory(base_url, api_key") == 1
    assert "Traceback" not in out and "pytest_plugin.py" not in out


def test_plugin_finds_the_module_in_the_current_directory(tmp_path: Path) -> None:
    pkg = _project(tmp_path)
    code, out = _plugin_session(tmp_path, "--dshkit-adapter", f"{pkg}.adapters:make", "--dshkit-only", "A22", "-q")
    assert code == 0, out
    assert "passed" in out


# --- adapters that call sys.exit() -----------------------------------------------------------------
# An adapter that raises `SystemExit(0)` fails its scenario; the run goes on, prints its table,
# writes its report and exits 1 (before: exit 0, no output, no report).
#
# The CLI runs in this process: a `SystemExit` that escaped the runner would leave `main()` here
# too (pytest fails the test with it) instead of returning 1, and what a subprocess would print as
# a traceback reaches stderr or asyncio's logger, both read below.


EXIT_CASES = {
    "tests.conformance.exiting:ExitsInStream": ("step0.translate", "adapter.stream() raised SystemExit(0)"),
    "tests.conformance.exiting:ExitsInClose": ("close", "adapter.aclose() raised _AdapterExit"),
    "tests.conformance.exiting:exits_in_factory": ("factory", "the adapter factory raised SystemExit: 0"),
}


@pytest.mark.parametrize("adapter", EXIT_CASES)
def test_system_exit_is_a_failed_scenario_with_a_report(
    adapter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    report = tmp_path / "r.json"
    code = main(["conformance", "--adapter", adapter, "--only", "sse-crlf", "--json", str(report)])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in err
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "FAIL" in out and "sse-crlf" in out  # the table was printed
    failed, reason = EXIT_CASES[adapter]
    results = json.loads(report.read_text())["scenarios"]
    assert results and all(r["status"] == "fail" for r in results)
    assert any(failed in r["failed"] for r in results), results
    assert reason in json.dumps(results), results
