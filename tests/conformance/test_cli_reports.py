"""`dshkit conformance`: exit codes, and JSON/JUnit reports that count what the table shows."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance.report import to_junit, write_json
from dshkit.conformance.runner import ScenarioResult
from dshkit.mock_server import MockServer

BROKEN = "tests.conformance.broken:LosesUsageAdapter"


def _table_totals(out: str) -> dict[str, int]:
    m = re.search(r"^total\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M)
    assert m, out
    return {"pass": int(m[1]), "fail": int(m[2]), "n/a": int(m[3])}


def test_all_pass_exits_0_and_reports_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j, x = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["conformance", "--only", "area:finish-usage", "--only", "A2", "--json", str(j), "--junit", str(x)])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(j.read_text())
    assert doc["adapter"] == "dshkit.harness.providers.deepseek:DeepSeekAdapter"
    assert set(doc) == {"adapter", "scenarios", "summary"}
    assert doc["summary"] == _table_totals(out)
    assert all(set(s) == {"id", "title", "tags", "status", "reason", "failed", "seconds", "notes"} for s in doc["scenarios"])
    assert all(s["failed"] == [] and s["seconds"] > 0 for s in doc["scenarios"])
    suite = ET.parse(x).getroot()
    cases = suite.findall(".//testcase")
    assert len(cases) == len(doc["scenarios"]) == sum(doc["summary"].values())
    assert {c.get("name") for c in cases} == {s["id"] for s in doc["scenarios"]}
    assert all(c.get("classname") in ("finish-usage", "stream-end", "sse", "transport", "errors", "text") for c in cases)


def test_failure_exits_1_with_a_json_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j, x = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["conformance", "--adapter", BROKEN, "--only", "area:finish-usage", "--json", str(j), "--junit", str(x)])
    out = capsys.readouterr().out
    assert code == 1
    doc = json.loads(j.read_text())
    failed = [s for s in doc["scenarios"] if s["status"] == "fail"]
    assert {s["id"] for s in failed} == {"finish-repeated", "usage-trailing-then-null"}
    assert all(s["diff"].startswith("--- expected/") and "\n+++ actual/" in s["diff"] for s in failed)
    assert '+null' in failed[0]["diff"]
    assert all("\n# actual finish, step0: kind=stop" in s["diff"] for s in failed)
    assert all(s["failed"] == ["step0.usage"] and s["reason"] == "failed: step0.usage" for s in failed)
    assert doc["summary"] == _table_totals(out) and doc["summary"]["fail"] == 2
    root = ET.parse(x).getroot()
    assert len(root.findall(".//testcase/failure")) == 2
    # Each failure names its scenario's title (what it played) in the table and the JSON report.
    assert "FAIL finish-usage/finish-repeated (an extra chunk after the finish chunk repeats finish_reason" in out
    assert failed[0]["title"] == "an extra chunk after the finish chunk repeats finish_reason (OpenRouter, oc01)"


def test_the_matrix_page_names_each_failure_by_its_reports_title(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.view.matrix_page import matrix_page

    j = tmp_path / "broken.json"
    assert main(["conformance", "--adapter", BROKEN, "--only", "finish-repeated", "--json", str(j)]) == 1
    capsys.readouterr()
    doc = json.loads(j.read_text())
    doc["scenarios"][0]["title"] = "a title only this report carries"
    html = matrix_page([("broken.json", doc)])
    failure = html[html.index('<details class="failure-diff" data-scenario="finish-repeated">'):]
    assert "a title only this report carries" in failure[:failure.index("</summary>")]


@pytest.mark.parametrize(
    "argv",
    [
        ["conformance", "--adapter", "no_such_module:Factory"],
        ["conformance", "--adapter", "dshkit.harness.providers.deepseek:NoSuchThing"],
        ["conformance", "--adapter", "missing-colon"],
        ["conformance", "--only", "not-a-tag"],
        ["conformance", "--server", "http://127.0.0.1:9", "--only", "S99"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "dshkit conformance:" in capsys.readouterr().err


def test_bad_scenario_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("scenarios: [{id: x}]\n")
    assert main(["conformance", "--scenarios", str(f)]) == 2
    assert str(f) in capsys.readouterr().err


def test_openai_adapter_reports_na(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j = tmp_path / "r.json"
    code = main(["conformance", "--adapter", "dshkit.harness.providers.openai_compat:OpenAICompatAdapter",
                 "--only", "A2", "--json", str(j)])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(j.read_text())
    assert doc["summary"]["n/a"] >= 3 and doc["summary"] == _table_totals(out)
    assert "n/a  stream-end/end-eof-after-finish-flagged" in out


def test_server_direction_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j = tmp_path / "s.json"
    with MockServer(api_key="sk-cli-server") as server:
        code = main(["conformance", "--server", server.base_url, "--api-key", "sk-cli-server",
                     "--only", "area:server-stream", "--json", str(j)])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(j.read_text())
    assert doc["server"] == server.base_url and doc["adapter"] is None
    assert doc["summary"] == _table_totals(out)
    assert {s["id"] for s in doc["scenarios"]} >= {"S18", "S21b", "S29", "S36"}


def test_junit_suite_time_is_wall_time_not_the_sum() -> None:
    # Scenarios run concurrently: three of 2 s each, overlapping, took 3 s of wall time.
    results = [ScenarioResult(id=f"s{i}", tags=["A1", "area:sse"], status="pass", seconds=2.0, started_at=100.0 + i * 0.5)
               for i in range(3)]
    root = to_junit(results, name="run")
    assert root.get("time") == "3.000" and root.find("testsuite").get("time") == "3.000"  # type: ignore[union-attr]
    assert [c.get("time") for c in root.iter("testcase")] == ["2.000"] * 3


def test_a_json_report_holding_a_lone_surrogate_is_strict_utf8_json(tmp_path: Path) -> None:
    result = ScenarioResult(id="x\ud800", tags=[], status="fail", reason="sent \ud800 and \udfff")
    path = tmp_path / "r.json"
    write_json(path, [result], adapter="a:b")
    doc = json.loads(path.read_bytes().decode("utf-8"))
    assert doc["scenarios"][0]["id"] == "x\ud800" and doc["scenarios"][0]["reason"] == "sent \ud800 and \udfff"
