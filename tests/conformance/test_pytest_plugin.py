"""The pytest plugin: `pytest --pyargs dshkit.conformance --dshkit-adapter …`, and inert without it.

Each check is a pytest session of its own, run in this process through pytest's `pytester`
(a fresh session with its own options, as a user's command line would start it), except the
xdist run: its workers are processes anyway, so it stays a subprocess."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _session(pytester: pytest.Pytester, *args: str) -> tuple[int, str]:
    """(exit code, stdout) of `pytest -p no:cacheprovider -p no:xdist ARGS` in a folder holding only
    a user's usual pytest.ini (pytest-asyncio asks every project to choose its loop scope)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist", *args)
    return int(result.ret), "\n".join(result.outlines)


def test_catalogue_runs_as_parametrized_tests(pytester: pytest.Pytester) -> None:
    code, out = _session(pytester, "--pyargs", "dshkit.conformance", "--dshkit-adapter", "dshkit.harness.providers.deepseek:DeepSeekAdapter",
                         "--dshkit-only", "A22", "--dshkit-only", "tool-split-arguments", "-v")
    assert code == 0, out
    assert "test_scenario[ser-stream-flags] PASSED" in out
    assert "test_scenario[tool-split-arguments] PASSED" in out


def test_a_run_after_an_in_process_session_still_recognises_its_failures(pytester: pytest.Pytester) -> None:
    """A catalogue run in this process after an in-process pytester session (which drops the
    modules first imported during it): the transport errors and finishes must still be those
    the runner knows (tests/conftest.py imports them beforehand)."""
    from dshkit.conformance import load_catalogue, run_catalogue
    from dshkit.harness.providers.deepseek import DeepSeekAdapter

    code, out = _session(pytester, "--pyargs", "dshkit.conformance", "--dshkit-adapter",
                         "dshkit.harness.providers.deepseek:DeepSeekAdapter", "--dshkit-only", "net-stall-before-first-byte")
    assert code == 0, out
    # The same stall into the idle watchdog (httpx's ReadTimeout), on a shorter watchdog: the
    # wait proves nothing here, the error's class does.
    scenarios = [s.model_copy(update={"idle_timeout_s": 0.3}) for s in load_catalogue() if s.id == "net-stall-before-first-byte"]
    (result,) = asyncio.run(run_catalogue(scenarios, DeepSeekAdapter))
    assert result.status == "pass", result.diff


#: Installed plugins this session has no use for, each costing its import in all three processes
#: (together ~0.4 s of CPU a process); ours and xdist still load by their entry points, as a
#: user's would.
UNUSED_PLUGINS = ("hypothesispytest", "syrupy", "anyio", "dshkit_mock_server", "asyncio", "xdist.looponfail")


def test_markers_and_failures_and_xdist(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    blocked = [arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *blocked, "--pyargs", "dshkit.conformance",
         "--dshkit-adapter", "tests.conformance.broken:LosesUsageAdapter", "-m", "A8", "-n", "2", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 failed" in r.stdout and "usage-trailing-then-null" in r.stdout


def test_not_applicable_is_skipped(pytester: pytest.Pytester) -> None:
    code, out = _session(pytester, "--pyargs", "dshkit.conformance", "--dshkit-adapter",
                         "dshkit.harness.providers.openai_compat:OpenAICompatAdapter",
                         "--dshkit-only", "end-eof-after-finish-flagged", "-rs", "-q")
    assert code == 0, out
    assert "1 skipped" in out and "done_marker" in out


def test_inert_without_the_option(pytester: pytest.Pytester) -> None:
    code, out = _session(pytester, "--pyargs", "dshkit.conformance", "-q")
    assert code == 5, out  # no tests collected, no server started


def test_pytest_plugin_on_the_anthropic_protocol(pytester: pytest.Pytester) -> None:
    """`pytest --pyargs dshkit.conformance --dshkit-protocol anthropic`: scenarios as tests, a broken
    adapter failing its own (each a pytest session of its own, run in this process by pytester)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")

    def run(adapter: str) -> tuple[int, str]:
        result = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "-p", "no:xdist", "--pyargs", "dshkit.conformance", "--dshkit-adapter", adapter,
            "--dshkit-protocol", "anthropic", "--dshkit-only", "AN28", "-v",
        )
        return int(result.ret), "\n".join(result.outlines)

    code, out = run("dshkit.harness.providers.anthropic:AnthropicAdapter")
    assert code == 0, out
    assert "test_scenario[an-signature-passback] PASSED" in out
    code, out = run("tests.conformance.broken_anthropic:BlanksSignaturesAdapter")
    assert code == 1 and "test_scenario[an-signature-passback] FAILED" in out, out
