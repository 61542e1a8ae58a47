"""The journal: redaction, lookups, JSONL output, consumption checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mock_server import Journal, UnconsumedStepsError, Write
from mock_server.journal import REDACTED, redact_body, redact_headers


def test_redaction() -> None:
    h = redact_headers({"Authorization": "Bearer sk-1", "X-Api-Key": "k", "X-Session-Token": "t", "Accept": "*/*"})
    assert h == {"authorization": REDACTED, "x-api-key": REDACTED, "x-session-token": REDACTED, "accept": "*/*"}
    assert redact_body({"api_key": "k", "max_tokens": 5, "nested": [{"password": "p"}]}) == {
        "api_key": REDACTED, "max_tokens": 5, "nested": [{"password": REDACTED}]}


def test_entries_lookups_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "journal.jsonl"
    j = Journal(path)
    with pytest.raises(LookupError, match="no request"):
        j.last  # noqa: B018
    e = j.open_entry(t=1.0, method="POST", path="/chat/completions", headers={"Authorization": "Bearer sk-x"})
    e.session, e.body = "s1", {"model": "m"}
    e.writes += [Write(1.5, b"data: \xc3"), Write(1.6, b"\xa9\n\n")]
    j.close_entry(e)
    e2 = j.open_entry(t=2.0, method="GET", path="/models", headers={})
    e2.session = "s2"
    j.close_entry(e2)
    j.close()
    assert j.last is e2 and j.for_session("s1") == [e] and j.chat() == [e] and len(j) == 2
    assert e.data == "data: é\n\n".encode() and e.bytes_sent == 10
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["writes"][0]["b64"] and lines[0]["writes"][1]["size"] == 3
    assert "sk-x" not in path.read_text()


def test_assert_consumed_lists_unused_steps() -> None:
    Journal(pending=list).assert_consumed()
    with pytest.raises(UnconsumedStepsError, match=r"2 scripted step\(s\).*\n  a\n  b"):
        Journal(pending=lambda: ["a", "b"]).assert_consumed()
