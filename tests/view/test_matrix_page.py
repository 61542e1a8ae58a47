"""The conformance matrix: a scenario × report table with a linked failure per failed cell."""

from __future__ import annotations

import json
from pathlib import Path

from dshkit.view import render_paths


def test_conformance_reports_make_a_matrix(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps({"adapter": "deepseek", "scenarios": [{"id": "A1", "tags": [], "status": "pass"}],
                             "summary": {"pass": 1, "fail": 0, "n/a": 0}}))
    b.write_text(json.dumps({"adapter": "broken", "scenarios": [
        {"id": "A1", "tags": [], "status": "fail", "diff": "--- expected\n+++ actual\n-1\n+2\n"}],
        "summary": {"pass": 0, "fail": 1, "n/a": 0}}))
    html, kind = render_paths([a, b])
    assert kind == "conformance"
    assert '<td class="pass">pass</td><td class="fail"><a href="#d-1-0" title="">fail</a></td>' in html
    assert 'id="d-1-0"' in html and '<span class="add">+2</span>' in html


def test_reports_with_unknown_fields_still_make_a_matrix(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"client": "my-client", "driver": {"libraries": {"openai": "1.2"}}, "extra": [1],
                               "scenarios": [{"id": "x", "tags": ["area:sse"], "status": "pass", "more": {}},
                                             {"id": "y", "status": "n/a", "title": "why <not>"}],
                               "summary": {"pass": 1, "n/a": 1}}))
    html, kind = render_paths([odd])
    assert kind == "conformance" and "client my-client" in html and "openai 1.2" in html
    assert "why &lt;not&gt;" in html and "× 1 client" in html
