"""An adapter that raises `SystemExit(0)` fails its scenario; the run goes on, prints its table,
writes its report and exits 1 (before: exit 0, no output, no report)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CASES = {
    "tests.conformance.exiting:ExitsInStream": ("step0.translate", "adapter.stream() raised SystemExit(0)"),
    "tests.conformance.exiting:ExitsInClose": ("close", "adapter.aclose() raised _AdapterExit"),
    "tests.conformance.exiting:exits_in_factory": ("factory", "the adapter factory raised SystemExit: 0"),
}
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("adapter", CASES)
def test_system_exit_is_a_failed_scenario_with_a_report(adapter: str, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "dshkit", "conformance", "--adapter", adapter, "--only", "sse-crlf", "--json", str(report)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "FAIL" in done.stdout and "sse-crlf" in done.stdout  # the table was printed
    failed, reason = CASES[adapter]
    results = json.loads(report.read_text())["scenarios"]
    assert results and all(r["status"] == "fail" for r in results)
    assert any(failed in r["failed"] for r in results), results
    assert reason in json.dumps(results), results
