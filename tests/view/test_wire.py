"""Reading journals back: every damaged field is an error that names the line and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main
from dshkit.view import ViewError, render_paths


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"seq": 1, "path": "/chat/completions", "t": "soon", "writes": []}, "journal.jsonl:1: t must be a number"),
        ({"seq": 1, "path": "/chat/completions", "t": 1.0, "writes": [{"t": None}, 3]},
         "writes[0] must be an object with t and exactly one of text or b64"),
        ({"seq": 1, "path": "/chat/completions", "writes": [{"t": "x", "text": "data: {}"}]}, "writes[0].t must be a number"),
        ({"seq": 1, "path": "/chat/completions", "writes": [{"b64": "!!"}]}, "writes[0]: b64 is not base64"),
        # the envelope the mock server writes: a hand-edited field is named (issue 18)
        ({"seq": "abc", "path": "/chat/completions", "writes": []}, "journal.jsonl:1: seq must be an integer >= 1"),
        ({"seq": 1, "path": "/chat/completions", "writes": 5}, "journal.jsonl:1: writes must be a list of writes"),
        ({"seq": 1, "path": 7, "writes": []}, "journal.jsonl:1: path must be a string"),
        ({"seq": 1, "path": "/", "status": "200", "writes": []}, "journal.jsonl:1: status must be an HTTP status"),
        ({"seq": 1, "path": "/", "session": ["s"], "writes": []}, "journal.jsonl:1: session must be a string or null"),
        ({"seq": 1, "path": "/", "headers": {"a": 1}, "writes": []}, "journal.jsonl:1: headers.a must be a string"),
        ({"seq": 1, "path": "/", "t": 1e308, "writes": []}, "journal.jsonl:1: t must be a number of seconds"),
        ({"seq": 1, "path": "/", "writes": [{"t": 1, "text": 5}]}, "journal.jsonl:1: writes[0].text must be a string"),
    ],
)
def test_a_damaged_journal_is_a_located_error(line: dict[str, Any], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps(line) + "\n")
    with pytest.raises(ViewError, match=re.escape(message)):
        render_paths([journal])
    assert main(["view", str(journal), "-o", str(tmp_path / "out.html")]) == 2
    assert message in capsys.readouterr().err
