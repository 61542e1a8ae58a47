"""The pytest plugin: `pytest --pyargs conformance --dshkit-adapter …`, and inert without it.

Each check is a pytest run in a subprocess, most of whose time is interpreter and plugin start-up;
the four runs start together (once per module, `plugin_runs`) so their start-ups overlap, and each
test then judges its own run's output."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# One xdist worker starts the runs for all four tests (`--dist loadgroup`, as `make test` runs).
pytestmark = pytest.mark.xdist_group("plugin_runs")

#: The pytest arguments of each run, by the test that judges it.
RUNS: dict[str, tuple[str, ...]] = {
    "parametrized": ("--pyargs", "conformance", "--dshkit-adapter", "harness.providers.deepseek:DeepSeekAdapter",
                     "--dshkit-only", "A22", "--dshkit-only", "tool-split-arguments", "-v"),
    "xdist": ("--pyargs", "conformance", "--dshkit-adapter", "tests.conformance.broken:LosesUsageAdapter",
              "-m", "A8", "-n", "2", "-q"),
    "not_applicable": ("--pyargs", "conformance", "--dshkit-adapter",
                       "harness.providers.openai_compat:OpenAICompatAdapter",
                       "--dshkit-only", "end-eof-after-finish-flagged", "-rs", "-q"),
    "inert": ("--pyargs", "conformance", "-q"),
}


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """Start every run of `RUNS` at once (each in its own empty folder), then wait for all."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, args in RUNS.items():
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                cwd=tmp_path_factory.mktemp(name), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
        done = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        yield done
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_catalogue_runs_as_parametrized_tests(plugin_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = plugin_runs["parametrized"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_scenario[ser-stream-flags] PASSED" in r.stdout
    assert "test_scenario[tool-split-arguments] PASSED" in r.stdout


def test_markers_and_failures_and_xdist(plugin_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = plugin_runs["xdist"]
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 failed" in r.stdout and "usage-trailing-then-null" in r.stdout


def test_not_applicable_is_skipped(plugin_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = plugin_runs["not_applicable"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 skipped" in r.stdout and "done_marker" in r.stdout


def test_inert_without_the_option(plugin_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    r = plugin_runs["inert"]
    assert r.returncode == 5, r.stdout + r.stderr  # no tests collected, no server started
