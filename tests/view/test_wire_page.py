"""The page of a cassette or a journal: each exchange's status, stream fragments and error body."""

from __future__ import annotations

import json
from pathlib import Path

from dshkit.view import render_paths

from .conftest import Walk, argument_fragments

REPO = Path(__file__).resolve().parents[2]


def test_cassette_page_shows_the_wire_fragments() -> None:
    html, kind = render_paths([REPO / "recordings" / "tool-call-split-args.cassette.jsonl"])
    assert kind == "cassette" and html.count('class="fragment"') > 2


def test_journal_page(walk: Walk) -> None:
    html, kind = render_paths([walk.journal])
    assert kind == "journal" and 'data-status="429"' in html and html.count('class="fragment"') == 1 + len(argument_fragments())


def test_an_http_error_answer_shows_its_error_body() -> None:
    html, _ = render_paths([REPO / "recordings" / "bad-request-400.cassette.jsonl"])
    assert 'data-status="400"' in html and 'class="failure"' in html and "invalid_request_error" in html


def test_odd_shapes_inside_a_journal_still_render(tmp_path: Path) -> None:
    # the wire is data: any SSE payload, status or field type shows without a crash
    events = ['data: {"choices": 5}', 'data: {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}',
              'data: {"choices": [{"delta": {"tool_calls": [{"index": "x", "function": {"arguments": 7}}]}}]}',
              "data: " + "[" * 5000, "data: [DONE]"]
    entry = {"seq": 1, "path": "/chat/completions", "status": 200, "outcome": "completed", "session": "s",
             "body": {"messages": "not a list"}, "writes": [{"t": 1.0, "text": "\n\n".join(events) + "\n\n"}]}
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps(entry) + "\n")
    html, kind = render_paths([journal])
    assert kind == "journal" and 'class="fragment"' in html and "1 exchange<" in html
