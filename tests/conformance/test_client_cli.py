"""`client_cli`: `dshkit conformance --client`, its exit codes, its reports and the matrix page
drawn from saved reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance import client_cli
from dshkit.conformance.client_matrix import ClientRun

from .client_runs import BROKEN, result


def test_cli_client_mode_exit_codes_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "client.json"
    code = main(["conformance", "--client", f"{sys.executable} {BROKEN} crash", "--only", "tool-split-arguments",
                 "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 1
    assert ("FAIL tools/tool-split-arguments (opener with empty arguments, then fragments without id or name "
            "(the live shape)): failed: driver; the driver exited with status 1") in out
    doc = json.loads(report.read_text())
    assert doc["client"].endswith("crash") and doc["driver"]["client"] == "broken-crash"
    assert doc["summary"] == {"pass": 0, "fail": 1, "n/a": 0}
    assert "RuntimeError" in doc["scenarios"][0]["stderr"]


@pytest.mark.parametrize(("argv", "words"), [
    (["--client", "openai-python", "--adapter", "x:y"], "cannot be combined with --adapter"),
    (["--client", "openai-python", "--client-option", "nonsense"], "must look like KEY=VALUE"),
    (["--client", "openai-python", "--client-option", "speed=11"], "has no option speed (it offers: max_retries)"),
    (["--client", "openai-python", "--protocol", "anthropic"], "speaks chat, not anthropic"),
    (["--client", f"{sys.executable} {BROKEN} slow-hello-typo"], "did not describe itself"),
])
def test_cli_client_usage_errors_exit_2(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", *argv]) == 2
    assert words in capsys.readouterr().err


def test_cli_renders_the_matrix_from_saved_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reports, page = tmp_path / "reports", tmp_path / "clients.md"
    reports.mkdir()
    run = ClientRun(name="demo", hello={"libraries": {"demo-lib": "1"}}, protocol="chat",
                    results=[result("http-500-server", "pass")], catalogue=1)
    (reports / "demo.json").write_text(json.dumps(run.to_json()))
    assert main(["conformance", "--json-dir", str(reports), "--matrix-md", str(page)]) == 0
    assert "| demo | — | — | — | pass |" in page.read_text()
    assert main(["conformance", "--matrix-md", str(page)]) == 2
    assert "needs --json-dir DIR" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"[" * 5000, b'{"client": "x", "scenarios": 3}',
                                     b'{"client": "x", "scenarios": [{"status": "pass"}]}', b"{,}"])
def test_a_bad_saved_report_is_a_located_usage_error(tmp_path: Path, content: bytes,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    reports, page = tmp_path / "reports", tmp_path / "clients.md"
    reports.mkdir()
    (reports / "bad.json").write_bytes(content)
    assert main(["conformance", "--json-dir", str(reports), "--matrix-md", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dshkit conformance: {reports / 'bad.json'}: ") and "Traceback" not in err
    assert not page.exists()


def test_a_report_holding_a_lone_surrogate_is_written_as_strict_json(tmp_path: Path) -> None:
    run = ClientRun(name="demo\ud800", hello={}, protocol="chat",
                    results=[result("http-500-server", "fail", "got \ud800 back")], catalogue=1)
    reports = tmp_path / "reports"
    client_cli._write(reports / "demo.json", run)
    assert json.loads((reports / "demo.json").read_text(encoding="utf-8"))["client"] == "demo\ud800"
    back = client_cli._reports(reports)
    assert back[0].name == "demo\ud800" and back[0].results[0].reason == "got \ud800 back"
