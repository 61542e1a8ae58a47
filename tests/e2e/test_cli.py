"""`dshkit run`: the live view, `--json`, the session file and the exit codes.

In-process runs call `dshkit.cli.main([...])` (which runs its own event loop), so these tests
are sync and any mock server of ours runs on a background thread (`with MockServer(...)`).
One test goes through a real subprocess (`python -m dshkit.cli`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dshkit.run
from dshkit.cli import main
from dshkit.harness.loop import Agent
from dshkit.harness.loop.prestep import PreStep, PreStepDecision, Reject
from dshkit.harness.session.jsonl import load_session
from dshkit.mock_server import MockServer

from .conftest import API_KEY, check_one_rule, reply, script

PROMPT = "Read README.md and tell me what the project does."


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


def test_run_embedded_seed_walk_shows_the_flow(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_path = tmp_path / "s.jsonl"
    code, out = _run(["run", PROMPT, "--workspace", str(workspace), "--session", str(session_path)], capsys)
    assert code == 0, out
    assert f"› {PROMPT}" in out  # the user message
    assert "thinking: The user wants to know" in out  # streamed reasoning
    assert '⚙ read {"file_path":"README.md"}' in out  # the call with its raw arguments
    assert "↳ <path>" in out and "\n  1: # Widget Forge\n" in out  # the line-numbered tool result
    assert "answer: I read README.md." in out  # the answer
    assert "■ turn 1 completed" in out
    assert out.rstrip().endswith(f"session: {session_path}")
    order = [out.index(s) for s in (f"› {PROMPT}", "thinking:", "⚙ read", "↳ <path>", "answer:")]
    assert order == sorted(order)
    session = load_session(session_path)
    assert session.events[-1].data == {"turn": 1, "reason": {"kind": "completed"}}
    assert session.header.cwd == str(workspace.resolve())


def test_run_json_prints_one_object_per_line(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["run", PROMPT, "--json", "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")], capsys)
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(obj, dict) and "type" in obj for obj in lines)
    types = [obj["event"]["type"] for obj in lines if obj["type"] == "session/event"]
    assert types[:2] == ["agent/inbox/spliced", "turn/start"] and types[-1] == "turn/end"
    assert {"assistant/chunk", "tool/call", "tool/result"} <= set(types)
    assert lines[-1] == {"type": "done", "reason": {"kind": "completed"}, "session": str(tmp_path / "s.jsonl")}


def test_run_against_our_own_server_keeps_the_one_rule(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    walk = script(
        reply(reasoning="read it", calls=[{"name": "read", "arguments": {"file_path": "README.md"}, "id": "call_cli"}]),
        reply("It forges widgets.", match={"tool_result": "call_cli"}),
    )
    with MockServer(walk) as server:
        code, out = _run(["run", PROMPT, "--base-url", server.base_url, "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")], capsys)
        entries = server.journal.chat()
    assert code == 0, out
    assert "answer: It forges widgets." in out
    session = load_session(tmp_path / "s.jsonl")
    assert check_one_rule(session.events, session.id, entries) == 2


def test_run_exit_1_on_error(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(script("invalid_request")) as server:
        code, out = _run(["run", "hi", "--base-url", server.base_url, "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")], capsys)
    assert code == 1
    assert "! error INVALID_REQUEST" in out and "■ turn 1 error" in out


def test_run_exit_3_when_blocked(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    async def reject(payload: PreStep, nxt: Any) -> PreStepDecision:
        return Reject("policy says no")

    class RejectingAgent(Agent):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw, pre_step=[reject])

    monkeypatch.setattr(dshkit.run, "Agent", RejectingAgent)
    code, out = _run(["run", PROMPT, "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")], capsys)
    assert code == 3
    assert "■ turn 1 blocked" in out


def test_run_exit_4_at_max_steps(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = script(reply(calls=[{"name": "list", "arguments": "{}"}]), repeat_last=True)
    with MockServer(loop) as server:
        code, out = _run(["run", "list forever", "--max-steps", "2", "--base-url", server.base_url, "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")], capsys)
        assert len(server.journal.chat()) == 2
    assert code == 4
    assert "■ turn 1 max-steps (limit 2)" in out


def test_run_as_a_subprocess(workspace: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dshkit.cli", "run", PROMPT, "--json", "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["type"] == "done" and last["reason"] == {"kind": "completed"}
    assert (tmp_path / "s.jsonl").exists()


def test_run_ctrl_c_aborts_with_130_and_a_well_formed_log(workspace: Path, tmp_path: Path) -> None:
    """SIGINT mid-stream cancels the turn: exit 130, `turn/end` aborted, the log loads."""
    import signal

    session_path = tmp_path / "s.jsonl"
    stall = script({"fault": "stall_after", "after_events": 2, "text": "half an answer"})
    with MockServer(stall) as server, subprocess.Popen(
        [sys.executable, "-m", "dshkit.cli", "run", "hi", "--json", "--base-url", server.base_url,
         "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(session_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            # The live view is the synchronisation: interrupt once a chunk has been logged.
            for line in proc.stdout:
                event = json.loads(line).get("event", {})
                if event.get("type") == "assistant/chunk":
                    proc.send_signal(signal.SIGINT)
                    break
            rest = proc.stdout.read()
            errors = proc.stderr.read()
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code == 130, errors
    assert json.loads(rest.splitlines()[-1])["reason"]["kind"] == "aborted"
    session = load_session(session_path)
    assert session.events[-1].type == "turn/end"
    assert session.events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    session.derive_messages()  # still a valid history
