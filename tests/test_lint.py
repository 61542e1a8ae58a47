"""The code stays ruff-clean and `mypy --strict` clean (DESIGN.md, "Style to follow").

`mypy --strict` over the whole tree costs more than the rest of the suite's slowest tests together,
so it runs once, as its own CI step (`make lint`, called by `.ci/run` besides `make test`), instead of
inside every `make test`. What stays here is cheap: ruff (well under a second), and a guard that CI
still runs the full lint step, so dropping it from CI fails the suite."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_ruff_clean() -> None:
    result = _run("ruff", "check", "dshkit", "harness", "mock_server", "conformance", "dshkit_view", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def _make_target(name: str) -> str:
    """The recipe lines of Makefile target `name` (up to the next blank line)."""
    match = re.search(rf"^{name}:[^\n]*\n((?:\t[^\n]*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert match, f"Makefile has no `{name}` target"
    return match.group(1)


def test_ci_runs_lint_with_mypy_strict_besides_the_suite() -> None:
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make test" in ci and "make lint" in ci, "CI must run both `make test` and `make lint`"
    lint = _make_target("lint")
    assert "ruff check" in lint and "mypy" in lint
    assert "strict = true" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
