"""An adapter that raises `SystemExit(0)` fails its scenario; the run goes on, prints its table,
writes its report and exits 1 (before: exit 0, no output, no report).

The CLI runs in this process: a `SystemExit` that escaped the runner would leave `main()` here
too (pytest fails the test with it) instead of returning 1, and what a subprocess would print as
a traceback reaches stderr or asyncio's logger, both read below."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dshkit.cli import main

CASES = {
    "tests.conformance.exiting:ExitsInStream": ("step0.translate", "adapter.stream() raised SystemExit(0)"),
    "tests.conformance.exiting:ExitsInClose": ("close", "adapter.aclose() raised _AdapterExit"),
    "tests.conformance.exiting:exits_in_factory": ("factory", "the adapter factory raised SystemExit: 0"),
}


@pytest.mark.parametrize("adapter", CASES)
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
    failed, reason = CASES[adapter]
    results = json.loads(report.read_text())["scenarios"]
    assert results and all(r["status"] == "fail" for r in results)
    assert any(failed in r["failed"] for r in results), results
    assert reason in json.dumps(results), results
