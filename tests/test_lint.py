"""The code stays ruff-clean and `mypy --strict` clean (DESIGN.md, "Style to follow"), so CI
fails on a regression instead of leaving it to whoever runs `make lint` next."""

from __future__ import annotations

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


def test_mypy_strict_clean(tmp_path: Path) -> None:
    # A private cache per run keeps parallel workers and repeated runs from sharing state.
    result = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert result.returncode == 0, result.stdout + result.stderr
