"""The reports of a run (`dshkit.conformance.report`): the JSON document, JUnit XML, the closing
table and the live progress line, each read from the same hand-built results."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from dshkit.conformance.report import (
    Progress,
    render_table,
    to_json,
    to_junit,
    write_json,
    write_junit,
)
from dshkit.conformance.runner import ScenarioResult

#: One run of each status, over two areas: what every report below is read from.
RESULTS = [
    ScenarioResult(id="sse-crlf", tags=["A1", "area:sse"], status="pass", title="CRLF framing", seconds=0.25),
    ScenarioResult(id="finish-repeated", tags=["A4", "area:finish-usage"], status="fail",
                   title="the finish repeats", reason="failed: step0.usage", failed=["step0.usage"],
                   diff="--- expected/step0.usage\n+++ actual/step0.usage\n", info=["step0.serialize: a note"]),
    ScenarioResult(id="sse-bom", tags=["A2", "area:sse"], status="n/a", title="a byte order mark",
                   reason="the adapter declares no strict_sse capability"),
]


def test_the_table_counts_each_area_and_names_failures_by_title_and_na_by_id() -> None:
    lines = render_table(RESULTS, title="adapter conformance: x:y").splitlines()
    assert lines[0] == "adapter conformance: x:y"
    rows = {line.split()[0]: line.split()[1:] for line in lines if line[:1].isalpha() and len(line.split()) == 4}
    assert rows == {"area": ["pass", "fail", "n/a"], "finish-usage": ["0", "1", "0"], "sse": ["1", "0", "1"],
                    "total": ["1", "1", "1"]}
    assert "FAIL finish-usage/finish-repeated (the finish repeats): failed: step0.usage" in lines
    assert "n/a  sse/sse-bom: the adapter declares no strict_sse capability" in lines
    assert not [line for line in lines if "sse-crlf" in line]  # a pass is only counted


def test_junit_marks_failures_and_skips_under_their_area() -> None:
    suite = to_junit(RESULTS, name="run").find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert {n: c.get("classname") for n, c in cases.items()} == {
        "sse-crlf": "sse", "finish-repeated": "finish-usage", "sse-bom": "sse"}
    failure = cases["finish-repeated"].find("failure")
    assert failure is not None and failure.get("message") == "failed: step0.usage"
    assert failure.text == "--- expected/step0.usage\n+++ actual/step0.usage\n"
    assert cases["finish-repeated"].findtext("system-out") == "step0.serialize: a note"
    skipped = cases["sse-bom"].find("skipped")
    assert skipped is not None and skipped.get("message") == "the adapter declares no strict_sse capability"
    assert list(cases["sse-crlf"]) == []  # a pass carries nothing


def test_junit_suite_time_is_wall_time_not_the_sum() -> None:
    # Scenarios run concurrently: three of 2 s each, overlapping, took 3 s of wall time.
    results = [ScenarioResult(id=f"s{i}", tags=["A1", "area:sse"], status="pass", seconds=2.0, started_at=100.0 + i * 0.5)
               for i in range(3)]
    root = to_junit(results, name="run")
    assert root.get("time") == "3.000" and root.find("testsuite").get("time") == "3.000"  # type: ignore[union-attr]
    assert [c.get("time") for c in root.iter("testcase")] == ["2.000"] * 3
    # Results built by hand, without start times: the plain sum.
    assert to_junit(RESULTS, name="run").get("time") == "0.250"


def test_json_and_junit_files_count_what_the_table_counts(tmp_path: Path) -> None:
    write_json(tmp_path / "r.json", RESULTS, adapter="pkg.mod:make", server="http://127.0.0.1:1")
    write_junit(tmp_path / "r.xml", RESULTS, name="run")
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert (doc["adapter"], doc["server"]) == ("pkg.mod:make", "http://127.0.0.1:1")
    assert doc["summary"] == {"pass": 1, "fail": 1, "n/a": 1}
    assert [("diff" in s) for s in doc["scenarios"]] == [False, True, False]  # only a failure has one
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")


def test_a_client_run_names_its_client_and_driver_instead_of_an_adapter() -> None:
    doc = to_json(RESULTS[:1], adapter=None, client="openai-python", driver={"library": "openai", "version": "1"})
    assert list(doc) == ["client", "driver", "scenarios", "summary"]
    assert (doc["client"], doc["driver"]) == ("openai-python", {"library": "openai", "version": "1"})
    assert doc["summary"] == {"pass": 1, "fail": 0, "n/a": 0} and [s["id"] for s in doc["scenarios"]] == ["sse-crlf"]


def test_a_json_report_holding_a_lone_surrogate_is_strict_utf8_json(tmp_path: Path) -> None:
    result = ScenarioResult(id="x\ud800", tags=[], status="fail", reason="sent \ud800 and \udfff")
    path = tmp_path / "r.json"
    write_json(path, [result], adapter="a:b")
    doc = json.loads(path.read_bytes().decode("utf-8"))
    assert doc["scenarios"][0]["id"] == "x\ud800" and doc["scenarios"][0]["reason"] == "sent \ud800 and \udfff"


def test_progress_rewrites_one_line_on_a_terminal_and_stays_silent_elsewhere() -> None:
    live, piped = io.StringIO(), io.StringIO()  # a StringIO is no tty: silent unless enabled
    on, off = Progress(live, enabled=True), Progress(piped)
    for i, r in enumerate(RESULTS, 1):
        on(r, i, len(RESULTS))
        off(r, i, len(RESULTS))
    on.close()
    off.close()
    assert live.getvalue() == ("\r\x1b[K[  1/3] pass 1 fail 0 n/a 0  sse-crlf"
                               "\r\x1b[K[  2/3] pass 1 fail 1 n/a 0  finish-repeated"
                               "\r\x1b[K[  3/3] pass 1 fail 1 n/a 1  sse-bom\r\x1b[K")
    assert piped.getvalue() == "" and off.counts == on.counts == {"pass": 1, "fail": 1, "n/a": 1}
