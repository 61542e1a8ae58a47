"""`dshkit run` shows the wire as it flows: each request, its HTTP status line, step boundaries,
and per call the chunk, fragment and usage counts; the embedded server paces its writes when the
view goes to a terminal."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest

from dshkit.cli import build_parser, main
from dshkit.mock_server import MockServer, Script
from dshkit.run import DEFAULT_PACE_MS, _pace_ms, _paced

from .conftest import API_KEY

PROMPT = "Read README.md and tell me what the project does."


def build_args_for_tests(**overrides: object) -> argparse.Namespace:
    """`dshkit run hi` as parsed, with `overrides` applied."""
    args = build_parser().parse_args(["run", "hi"])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def test_the_wire_is_shown_between_the_flow(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", PROMPT, "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = [i for i, line in enumerate(lines) if line.startswith("── step ")]
    assert [lines[i].split()[2] for i in steps] == ["1", "2"]
    posts = [line for line in lines if line.startswith("  → POST /chat/completions (")]
    statuses = [line for line in lines if line.startswith("  ← HTTP ")]
    assert len(posts) == 2 and all(s.startswith("  ← HTTP 200 text/event-stream") for s in statuses) and len(statuses) == 2
    calls = [line.strip() for line in lines if line.startswith("  · finish ")]
    # the bundled walk cuts the read call's arguments in six fragments
    assert calls[0].startswith("· finish tool-calls · 9 reasoning + 0 text chunks · 6 argument fragments · usage in ")
    assert calls[1].startswith("· finish stop · ") and "· 0 argument fragments · usage in " in calls[1]
    # order: status before the streamed text it carries, summary after it
    first_status = lines.index(statuses[0])
    assert first_status < next(i for i, line in enumerate(lines) if line.startswith("thinking:")) < lines.index("  " + calls[0])


def test_an_http_error_status_is_shown(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(Script.of("auth_error")) as server:
        code = main(["run", "hi", "--base-url", server.base_url, "--api-key", API_KEY,
                     "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")])
    out = capsys.readouterr().out
    assert code == 1
    assert "  ← HTTP 401 application/json" in out and "· finish error" in out


def test_json_mode_has_no_wire_lines(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", PROMPT, "--json", "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "← HTTP" not in out and "── step" not in out


def test_pace_defaults_to_visible_on_a_terminal_only() -> None:
    leader, follower = os.openpty()
    try:
        with open(follower, "w", closefd=False) as tty:
            assert _pace_ms(build_args_for_tests(), tty) == DEFAULT_PACE_MS
            assert _pace_ms(build_args_for_tests(pace=0), tty) == 0
            assert _pace_ms(build_args_for_tests(json=True), tty) == 0
    finally:
        os.close(leader)
        os.close(follower)
    assert _pace_ms(build_args_for_tests(), io.StringIO()) == 0
    assert _pace_ms(build_args_for_tests(pace=40), io.StringIO()) == 40


def test_paced_script_sets_the_delay_between_writes() -> None:
    from dshkit.run import BUNDLED_SCRIPT

    (script,) = _paced([BUNDLED_SCRIPT], 30)
    assert [step.timing.chunk_delay_ms for step in script.steps] == [30, 30]
    kept = Script.of({"reply": {"content": "x"}, "timing": {"chunk_delay_ms": 5}})
    assert _paced([kept], 30)[0].steps[0].timing.chunk_delay_ms == 5
