"""`dshkit conformance` (`dshkit.conformance.cli`): exit codes, JSON/JUnit reports that count what
the table shows, usage errors, the server direction, and the `--protocol anthropic` runs."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance.cli import select
from dshkit.conformance.scenario import load_scenario_file
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


SELECTABLE = """\
scenarios:
  - {id: one, title: t, tags: [A1, area:sse], wire: {reply: {content: x}}, expect: {finish: {kind: stop}}}
  - {id: two, title: t, tags: [A2, area:text], wire: {reply: {content: x}}, expect: {finish: {kind: stop}}}
  - {id: three, title: t, tags: [A1, A3, area:text], wire: {reply: {content: x}}, expect: {finish: {kind: stop}}}
"""


def test_only_selects_by_id_tag_or_area_once_each_in_catalogue_order(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SELECTABLE)
    scenarios = load_scenario_file(tmp_path / "s.yaml")
    assert select(scenarios, []) == scenarios
    assert [s.id for s in select(scenarios, ["three", "A1", "area:sse"])] == ["one", "three"]
    assert [s.id for s in select(scenarios, ["text"])] == ["two", "three"]  # an area without `area:`
    with pytest.raises(ValueError, match=r"--only 'thre' matches no scenario; did you mean 'three'\?"):
        select(scenarios, ["A2", "thre"])


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


# --- --protocol anthropic -------------------------------------------------------------------------
# The adapter direction (our adapter by default, the SDK one on request, a broken one failing) and
# the server direction (`--server URL`: the AN checks pass on the mock's Anthropic surface).


def test_adapter_run_defaults_to_the_anthropic_adapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code = main(["conformance", "--protocol", "anthropic", "--only", "area:anthropic", "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(report.read_text())
    assert doc["adapter"] == "dshkit.harness.providers.anthropic:AnthropicAdapter"
    assert _table_totals(out) == {"pass": len(doc["scenarios"]), "fail": 0, "n/a": 0}
    assert {s["id"] for s in doc["scenarios"]} >= {"an-signature-passback", "an-neutral-text"}


def test_sdk_adapter_and_a_broken_one(capsys: pytest.CaptureFixture[str]) -> None:
    sdk = "dshkit.harness.providers.anthropic_sdk:AnthropicSDKAdapter"
    assert main(["conformance", "--protocol", "anthropic", "--adapter", sdk, "--only", "AN27"]) == 0
    capsys.readouterr()
    broken = "tests.conformance.broken_anthropic:BlanksSignaturesAdapter"
    assert main(["conformance", "--protocol", "anthropic", "--adapter", broken, "--only", "AN28"]) == 1
    assert "an-signature-passback" in capsys.readouterr().out


def test_chat_run_leaves_anthropic_only_scenarios_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    assert main(["conformance", "--only", "area:anthropic", "--json", str(report)]) == 0
    ids = {s["id"] for s in json.loads(report.read_text())["scenarios"]}
    assert ids == {"an-neutral-text", "an-neutral-tool-round-trip"}


def test_server_checks_pass_on_the_mock_anthropic_surface(capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(api_key="sk-an-server") as server:
        code = main(["conformance", "--server", server.base_url + "/anthropic", "--protocol", "anthropic",
                     "--api-key", "sk-an-server"])
    out = capsys.readouterr().out
    assert code == 0, out
    totals = _table_totals(out)
    assert totals["fail"] == 0 and totals["pass"] >= 14


def test_unknown_server_check_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--server", "http://127.0.0.1:9", "--protocol", "anthropic", "--only", "S7"]) == 2
    assert "names no Anthropic server check" in capsys.readouterr().err


