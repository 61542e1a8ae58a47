"""The pytest plugin: `pytest --pyargs conformance --dshkit-adapter …`, and inert without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_catalogue_runs_as_parametrized_tests(tmp_path: Path) -> None:
    r = _pytest("--pyargs", "conformance", "--dshkit-adapter", "harness.providers.deepseek:DeepSeekAdapter",
                "--dshkit-only", "A22", "--dshkit-only", "tool-split-arguments", "-v", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_scenario[ser-stream-flags] PASSED" in r.stdout
    assert "test_scenario[tool-split-arguments] PASSED" in r.stdout


def test_markers_and_failures_and_xdist(tmp_path: Path) -> None:
    r = _pytest("--pyargs", "conformance", "--dshkit-adapter", "tests.conformance.broken:LosesUsageAdapter",
                "-m", "A8", "-n", "2", "-q", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 failed" in r.stdout and "usage-trailing-then-null" in r.stdout


def test_not_applicable_is_skipped(tmp_path: Path) -> None:
    r = _pytest("--pyargs", "conformance", "--dshkit-adapter", "harness.providers.openai_compat:OpenAICompatAdapter",
                "--dshkit-only", "end-eof-after-finish-flagged", "-rs", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 skipped" in r.stdout and "done_marker" in r.stdout


def test_inert_without_the_option(tmp_path: Path) -> None:
    r = _pytest("--pyargs", "conformance", "-q", cwd=tmp_path)
    assert r.returncode == 5, r.stdout + r.stderr  # no tests collected, no server started
