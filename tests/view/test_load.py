"""Telling a file's kind from its content, checking a report's shape, and merging the journals of
several `dshkit serve` instances onto one page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.cli import main
from dshkit.mock_server import MockServer
from dshkit.view import ViewError, render_paths
from dshkit.view.load import detect_kind, merge_journals
from dshkit.view.wire import load_journal

REPO = Path(__file__).resolve().parents[2]


async def test_two_instances_journals_merge_in_arrival_order(tmp_path: Path) -> None:
    j1, j2 = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    body = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with MockServer(journal=j1) as a, MockServer(journal=j2) as b, httpx.AsyncClient(timeout=10) as c:
        for server, session in ((a, "one"), (b, "two"), (a, "one"), (b, "two"), (b, "three")):
            assert (await c.post(server.url, json=body, headers={"X-Mock-Session": session})).status_code == 200
    merged = merge_journals([(j1, load_journal(j1)), (j2, load_journal(j2))])
    assert [x.session for x in merged] == ["one", "two", "one", "two", "three"]
    assert [x.number for x in merged] == [1, 2, 3, 4, 5]
    assert [x.note.split(" · ")[0] for x in merged] == ["j1.jsonl #1", "j2.jsonl #1", "j1.jsonl #2",
                                                        "j2.jsonl #2", "j2.jsonl #3"]
    html, kind = render_paths([j1, j2])
    assert kind == "journal" and ">5 exchanges<" in html and "j2.jsonl #3" in html


@pytest.mark.parametrize(
    ("name", "kind"),
    [("tool-call-split-args.cassette.jsonl", "cassette"), ("plain-text.cassette.jsonl", "cassette")],
)
def test_cassettes_are_recognised(name: str, kind: str) -> None:
    assert detect_kind(REPO / "recordings" / name) == kind


def test_a_file_it_cannot_show_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(ViewError, match="not a session log, cassette, journal or conformance report"):
        render_paths([bad])
    assert main(["view", str(bad)]) == 2
    assert "notes.txt: not a session log" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize(("change", "message"), [
    ({"scenarios": "A1"}, "scenarios must be a list of scenario results, got \"A1\""),
    ({"scenarios": [3]}, "scenarios[0] must be an object with id and status, got 3"),
    ({"scenarios": [{"id": "x", "tags": "area:sse", "status": "pass"}]}, "scenarios[0].tags must be a list of strings"),
    ({"scenarios": [{"id": "x", "status": "weird"}]}, "scenarios[0].status must be one of pass, fail, n/a"),
    ({"scenarios": [{"id": 5, "status": "pass"}]}, "scenarios[0].id must be a non-empty string"),
    ({"scenarios": [{"id": "x", "status": "pass", "seconds": "slow"}]}, "scenarios[0].seconds must be a number"),
    ({"summary": {"pass": "many"}}, "summary.pass must be a count"),
    ({"summary": 5}, "summary must be an object of counts"),
    ({"driver": "node"}, "driver must be an object"),
])
def test_a_report_of_the_wrong_shape_names_the_field(change: dict[str, Any], message: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `scenarios` a string, a status that is a number, … made `dshkit view` trace back."""
    report = tmp_path / "odd.json"
    report.write_text(json.dumps({"adapter": "a:b", "scenarios": [{"id": "x", "status": "pass"}],
                                  "summary": {"pass": 1}, **change}))
    assert main(["view", str(report), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert f"{report}: {message}" in err and "Traceback" not in err
