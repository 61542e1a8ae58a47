"""The page of a session log: escaped, self-contained, and rendered for every log, even one whose
requests cannot be rebuilt."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dshkit.view import render_paths

from .conftest import Walk

REPO = Path(__file__).resolve().parents[2]


def test_log_text_is_escaped_and_nothing_is_fetched(walk: Walk) -> None:
    html, _ = render_paths([walk.log])
    text = re.sub(r"<[^>]+>", "", html)  # the answer streams as several spans
    assert "It forges &lt;widgets&gt; &amp; tests them." in text and "<widgets>" not in html
    for fetching in ("<script", "<link", "src=", "@import", "url("):
        assert fetching not in html


def test_make_run_prints_the_view_of_its_walk() -> None:
    if not (REPO / ".venv" / "bin" / "dshkit").exists():
        pytest.skip("`make run` needs the project's .venv (made by `make test` or `make run`)")
    # -o: never reinstall from inside the suite, even when pyproject.toml is newer than the stamp
    result = subprocess.run(["make", "-s", "-o", ".venv/.installed-stamp", "run"], cwd=REPO,
                            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("view: .dshkit/views/make-run-")
    page = (REPO / last.removeprefix("view: ")).read_text()
    assert 'data-finish="tool-calls"' in page and 'data-finish="stop"' in page


def test_upstream_dsh_logs_render_even_when_requests_cannot_be_rebuilt(dsh_sessions: Path) -> None:
    # DSH's logs name their tools instead of carrying schemas: the timeline still renders and each
    # call says why its request was not rebuilt.
    logs = sorted(dsh_sessions.glob("*--session.jsonl"))
    assert logs
    for log in logs:
        html, kind = render_paths([log])
        assert kind == "session" and 'class="turn"' in html, log.name
    html, _ = render_paths([dsh_sessions / "empty-response-retry--session.jsonl"])
    assert "request not rebuilt: JsonShapeError" in html and 'class="retry"' in html
