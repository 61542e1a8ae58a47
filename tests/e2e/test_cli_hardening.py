"""Hostile or mistaken input to `dshkit run`, `serve` and `replay`: each ends with a defined exit
status and a clear message instead of a traceback, a hang, a loop without end, a leaked key or a
command run without approval.

Usage errors go through `dshkit.cli.main` (argparse exits 2 via `SystemExit`); Ctrl-C goes
through a real subprocess, since only a real SIGINT shows whether the event loop can still
react to it.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main
from dshkit.harness.session.jsonl import load_session, save_session
from dshkit.mock_server import MockServer

from .conftest import API_KEY, call, reply, script

CATASTROPHIC = "(a+)+$"


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run `argv`, expect exit status 2 from argparse before anything runs, return stderr.
    Tests name a missing `--workspace` too: an option that slipped through would then end the
    command at once with a different error instead of running it."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# --- usage: checked before anything runs -------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1"])
def test_run_rejects_a_step_budget_below_one(value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["run", "hi", "--max-steps", value, "--workspace", str(tmp_path / "missing")], capsys)
    assert f"argument --max-steps: must be at least 1, got {value}" in err


@pytest.mark.parametrize("option", ["--idle-timeout", "--tool-timeout"])
@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_run_rejects_non_positive_timeouts(option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["run", "hi", option, value, "--workspace", str(tmp_path / "missing")], capsys)
    assert f"argument {option}: must be a finite number of seconds above 0" in err


def test_run_rejects_a_base_url_without_scheme_at_once(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 16 s of connection retries, then a transport error. Now: a usage error at once."""
    err = _usage_error(["run", "hi", "--base-url", "localhost:1", "--api-key", "k", "--workspace", str(workspace)], capsys)
    assert "'localhost:1' is not an http(s) URL" in err and "http://localhost:1" in err


def test_run_rejects_a_base_url_with_a_bad_port(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["run", "hi", "--base-url", "http://127.0.0.1:99999", "--workspace", str(workspace)], capsys)
    assert "is not a valid URL: Port out of range" in err


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_rejects_a_port_out_of_range(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["serve", "--port", port], capsys)
    assert "argument --port:" in err


@pytest.mark.parametrize(("extra", "named"), [(["--speed", "2"], "--speed applies"), (["--resplit", "7"], "--resplit applies"),
                                              (["--speed", "0", "--resplit", "1"], "--speed and --resplit apply")])
def test_serve_rejects_replay_options_without_replay(
    extra: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # checked first: were it not, the missing script would end the command with another message
    assert main(["serve", "--script", str(tmp_path / "missing.yaml"), *extra]) == 2
    err = capsys.readouterr().err
    assert f"dshkit serve: {named} only with --replay" in err


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"dshkit {metadata.version('dshkit')}"


def test_run_with_a_too_deep_session_log_is_a_located_error(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "deep.jsonl"
    header = {"type": "session", "version": 0, "id": "deep", "createdAt": 0, "cwd": str(workspace), "delegationDepth": 0}
    log.write_text(json.dumps(header) + "\n" + '{"type":"turn/start","seq":0,"time":0,"data":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert main(["run", "hi", "--session", str(log), "--workspace", str(workspace)]) == 2
    err = capsys.readouterr().err
    assert f"{log}:2: a JSON value is nested too deeply to read" in err and "delete this line" in err


# --- Ctrl-C while a tool backtracks ------------------------------------------------------------


def test_ctrl_c_during_a_catastrophic_grep_exits_130_with_a_well_formed_log(workspace: Path, tmp_path: Path) -> None:
    """The grep's regex would backtrack for hours; with it matched in a killable child process the
    loop still handles SIGINT: the call ends ABORTED, the turn `aborted`, the process exits 130."""
    (workspace / "trap.txt").write_text("a" * 40 + "!\n")
    session_path = tmp_path / "s.jsonl"
    steps = script(reply(calls=[call("grep", {"pattern": CATASTROPHIC}, "call_grep")]), reply("never reached"))
    with MockServer(steps) as server, subprocess.Popen(
        [sys.executable, "-m", "dshkit.cli", "run", "find it", "--json", "--base-url", server.base_url,
         "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(session_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            for line in proc.stdout:  # the live view is the synchronisation
                event = json.loads(line).get("event", {})
                if event.get("type") == "tool/call":
                    break
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)  # what is left to print fits in the pipe
            rest = proc.stdout.read()
            errors = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    # 130 and ABORTED, not the 30 s tool deadline's TIMEOUT (which would let the turn complete)
    assert code == 130, errors
    assert json.loads(rest.splitlines()[-1])["reason"]["kind"] == "aborted"
    session = load_session(session_path)
    (result,) = [e for e in session.events if e.type == "tool/result"]
    assert result.data["error"] == {"name": "AbortError", "code": "ABORTED"}
    assert session.events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    session.derive_messages()


# --- the API key never reaches the log through a tool ------------------------------------------


def test_bash_yes_env_does_not_put_the_api_key_in_the_session_log(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-live-do-not-log-0123456789"
    monkeypatch.setenv("DEEPSEEK_API_KEY", key)
    monkeypatch.setenv("ANOTHER_COPY", key)  # the key under a name dshkit does not know
    (workspace / "key.txt").write_text(f"KEY={key}\n")
    steps = script(reply(calls=[call("bash", {"command": "env; echo $DEEPSEEK_API_KEY; cat key.txt"}, "call_env")]),
                   reply("done"))
    session_path = tmp_path / "s.jsonl"
    with MockServer(steps, api_key=key) as server:
        code = main(["run", "show env", "--yes", "--base-url", server.base_url, "--workspace", str(workspace),
                     "--session", str(session_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    logged = session_path.read_text()
    assert key not in logged and key not in out
    assert "KEY={{scrubbed:secret}}" in logged  # the key in a file is scrubbed by value
    # Neither variable is inherited by the command: ANOTHER_COPY holds the key under a name
    # dshkit does not know, and is taken out of the environment for its value.
    assert "DEEPSEEK_API_KEY=" not in logged and "ANOTHER_COPY" not in logged


# --- replay -------------------------------------------------------------------------------------


def _bash_log(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A real run's log in which the model ran `touch marker` with approval (`--yes`)."""
    steps = script(reply(calls=[call("bash", {"command": "touch marker"}, "call_touch")]), reply("touched"))
    path = tmp_path / "bash.jsonl"
    with MockServer(steps) as server:
        code = main(["run", "touch it", "--yes", "--base-url", server.base_url, "--api-key", API_KEY,
                     "--workspace", str(workspace), "--session", str(path)])
    assert code == 0
    capsys.readouterr()
    (workspace / "marker").unlink()
    return path


def test_replay_builtin_tools_asks_before_bash_like_run(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _bash_log(workspace, tmp_path, capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no TTY: no one can approve
    out = tmp_path / "replayed.jsonl"
    main(["replay", str(log), "--tools", "builtin", "--workspace", str(workspace), "--out", str(out)])
    assert not (workspace / "marker").exists()  # the logged command did not run
    (result,) = [e for e in load_session(out).events if e.type == "tool/result"]
    text = result.data["message"]["content"][0]["content"][0]["text"]
    assert "requires approval" in text and "re-run with --yes" in text
    capsys.readouterr()
    # --yes approves, as it does for `dshkit run`
    main(["replay", str(log), "--tools", "builtin", "--workspace", str(workspace), "--yes"])
    assert (workspace / "marker").exists()


EACH_MAIN = """
import contextlib, io, json, sys
from dshkit.cli import main
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    print(json.dumps([code, out.getvalue()]), flush=True)
"""
"""`dshkit.cli.main` (what the console script runs) on each argv of a JSON list, in one process:
a line `[exit code, stdout]` for each."""


def test_replay_of_a_log_aborted_before_any_chunk_ends_with_a_message(workspace: Path, tmp_path: Path) -> None:
    """Ctrl-C before the model's first chunk logs an aborted finish and no message; replaying
    that used to wait forever for a cancel that no chunk would ever trigger. It is cancelled
    again as soon as it is requested, and the turn ends aborted as the logged one did, replayed
    from the logged chunks and from the logged wire (one recorded run serves both)."""
    steps = script({"fault": "stall"})
    log = tmp_path / "aborted.jsonl"
    requested = threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event.get("type") == "request":
            requested.set()

    with MockServer(steps, on_event=on_event) as server, subprocess.Popen(
        [sys.executable, "-m", "dshkit.cli", "run", "hi", "--json", "--base-url", server.base_url,
         "--api-key", API_KEY, "--workspace", str(workspace), "--session", str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
    ) as proc:
        try:
            assert requested.wait(60)  # the call is in flight at the server, no chunk sent
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
    chunks = [e.data["chunk"] for e in load_session(log).events if e.type == "assistant/chunk"]
    assert [c["type"] for c in chunks] == ["finish"] and chunks[0]["reason"]["kind"] == "aborted"
    # both replays in one subprocess, so that a hang fails the test instead of stalling it
    argv = ["replay", str(log), "--workspace", str(workspace)]
    replays = subprocess.run([sys.executable, "-c", EACH_MAIN, json.dumps([argv, [*argv, "--wire"]])],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert replays.returncode == 0, replays.stderr
    for wire, line in zip(([], ["--wire"]), replays.stdout.splitlines(), strict=True):
        code, out = json.loads(line)
        assert code == 0, (wire, replays.stderr)
        result = json.loads(out)
        assert result["turns"] == ["aborted"] and result["outcomes_equal"] and result["model_calls"] == 1, (wire, result)


def test_replay_of_a_too_deep_log_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.harness.session import Session, SessionHeader

    log = tmp_path / "deep.jsonl"
    save_session(Session(SessionHeader.new(id="deep", cwd=str(tmp_path))), log)
    with log.open("a") as f:
        f.write('{"type":"turn/start","seq":0,"time":0,"data":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert main(["replay", str(log)]) == 2
    assert f"{log}:2: a JSON value is nested too deeply to read" in capsys.readouterr().err


@pytest.fixture
def replayable_log(workspace: Path, tmp_path: Path) -> Path:
    """A one-turn session log written by `dshkit run` against the embedded mock server."""
    log = tmp_path / "walk.jsonl"
    assert main(["run", "Read README.md", "--session", str(log), "--workspace", str(workspace),
                 "--api-key", API_KEY, "--pace", "0"]) == 0
    return log


@pytest.mark.parametrize("how", ["same path", "another path", "symlink", "hard link"])
def test_replay_refuses_to_overwrite_the_log_it_replays(
    how: str, replayable_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `replay LOG --out LOG` silently replaced the original log with the replay."""
    log = replayable_log
    out = {"same path": log, "another path": tmp_path / "." / ".." / tmp_path.name / log.name,
           "symlink": tmp_path / "link.jsonl", "hard link": tmp_path / "hard.jsonl"}[how]
    if how == "symlink":
        out.symlink_to(log)
    elif how == "hard link":
        os.link(log, out)
    original = log.read_bytes()
    capsys.readouterr()
    assert main(["replay", str(log), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"dshkit replay: --out {out} is the session log being replayed" in err and "--overwrite" in err
    assert log.read_bytes() == original
    assert main(["replay", str(log), "--out", str(out), "--overwrite"]) == 0
    load_session(log, write_back=False)  # replaced on purpose, by a readable log
