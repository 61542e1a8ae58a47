"""The API key through `dshkit run`, end to end: a short key rewrites no text, and no `bash`
tool call can read the key from the process tree.

Short keys (`k`, `the`, `test`) used to be scrubbed letter by letter from tool results, the
session log, the request to the model and the view (`un{{scrubbed:secret}}nown tool`); the
runs here go through the embedded mock server and through one the test can look into. The key
used to be readable from `/proc/$PPID/environ` and `/proc/$PPID/cmdline` (base64 defeats any
scrubbing of the output); the runs here are real subprocesses whose bash call dumps the
environment and command line of every ancestor to a file the test decodes.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.harness.tools.builtin import render_read
from dshkit.mock_server import MockServer
from dshkit.run import BUNDLED_SCRIPT

from .conftest import call, reply, script

NOTES = "# Notes\n\nthe test took too long; unknown tool k\nkeep the kit in the kitchen.\nthe data: data.csv, metadata\n"


@pytest.fixture
def notes_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text(NOTES)
    return ws


def _log_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _tool_texts(path: Path) -> list[str]:
    """The text of every tool result in a session log."""
    texts = []
    for line in _log_text(path).splitlines()[1:]:
        event = json.loads(line)
        if event.get("type") == "tool/result":
            for block in event["data"]["message"]["content"]:
                texts.append("".join(b.get("text", "") for b in block["content"]))
    return texts


def _key_args(key: str, via: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if via == "env":
        monkeypatch.setenv("DEEPSEEK_API_KEY", key)
        return []
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    return ["--api-key", key]


SHORT_KEYS = [("k", "--api-key"), ("k", "env"), ("the", "--api-key"), ("test", "env"), ("data", "--api-key"),
              ("data", "env")]


@pytest.mark.parametrize(("key", "via"), SHORT_KEYS)
def test_a_short_key_rewrites_nothing_through_the_embedded_mock(
    key: str, via: str, notes_workspace: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The seed walk reads README.md (a tool result full of k, the, test), then with only
    `bash` offered the same call ends `unknown tool "read"`: both stay as they were in the
    session log, the live view and `dshkit view`'s page."""
    extra = _key_args(key, via, monkeypatch)
    read_log, unknown_log = tmp_path / "read.jsonl", tmp_path / "unknown.jsonl"
    common = ["--workspace", str(notes_workspace), "--pace", "0", *extra]
    assert main(["run", "What is this?", "--session", str(read_log), *common]) == 0
    assert main(["run", "What is this?", "--session", str(unknown_log), "--tools", "bash", *common]) == 0
    view = capsys.readouterr().out
    assert _tool_texts(read_log) == [render_read(str((notes_workspace / "README.md").resolve()), NOTES)]
    assert _tool_texts(unknown_log) == ['Error: unknown tool "read"']
    page = tmp_path / "page.html"
    assert main(["view", str(unknown_log), "-o", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    for shown in (_log_text(read_log), _log_text(unknown_log), view, html):
        assert "scrubbed" not in shown
    assert "unknown tool" in view and "1: # Notes" in view and "unknown tool" in html


@pytest.mark.parametrize(("key", "via"), [*SHORT_KEYS[:2], *SHORT_KEYS[-2:]])
def test_a_short_key_rewrites_nothing_the_model_receives(
    key: str, via: str, notes_workspace: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same walk against a mock server the test holds: the tool message of the second
    request carries the file exactly, and the key reached the server whole."""
    extra = _key_args(key, via, monkeypatch)
    with MockServer(BUNDLED_SCRIPT, api_key=key) as server:
        code = main(["run", "What is this?", "--base-url", server.base_url, "--workspace", str(notes_workspace),
                     "--session", str(tmp_path / "s.jsonl"), *extra])
    capsys.readouterr()
    assert code == 0
    second = server.journal.chat()[1].body
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [render_read(str((notes_workspace / "README.md").resolve()), NOTES)]


def test_a_base_url_with_credentials_is_refused_without_echoing_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """httpx would send `user:password@` as Basic auth in place of the key (every request a
    401), and the adapter's failure messages, shown and logged, would quote the password."""
    session = tmp_path / "s.jsonl"
    code = main(["run", "hi", "--base-url", "http://user:TOPSECRET-PW-1@127.0.0.1:1", "--api-key", "sk-abcdefgh",
                 "--workspace", str(tmp_path), "--session", str(session)])
    err = capsys.readouterr().err
    assert code == 2 and "carries credentials" in err and "{{scrubbed:password}}" in err
    assert "TOPSECRET-PW-1" not in err and not session.exists()


# --- the key is not readable from the process tree ---------------------------------------------

DUMP = (
    "cat /proc/$PPID/environ | base64 -w0 > ppid.b64; "
    "p=$$; while [ \"$p\" -gt 1 ]; do "
    "printf '%s ' \"$p\" >> tree.txt; base64 -w0 /proc/$p/environ >> tree.txt; printf ' ' >> tree.txt; "
    "base64 -w0 /proc/$p/cmdline >> tree.txt; echo >> tree.txt; "
    "p=$(grep '^PPid:' /proc/$p/status | cut -f2); done; echo dumped"
)
"""Every ancestor's start-up environment and command line, base64 (as a tool would smuggle
them past a scrubber), into files of the workspace."""


def _decoded(line: str) -> tuple[int, bytes, bytes]:
    pid, env, cmdline = [*line.split(" "), "", ""][:3]
    return int(pid), base64.b64decode(env), base64.b64decode(cmdline)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("via", ["env", "--api-key"])
def test_no_ancestor_of_a_bash_call_holds_the_key(via: str, tmp_path: Path) -> None:
    key = "sk-live-proc-probe-0123456789"
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_API_KEY"}
    argv = [sys.executable, "-m", "dshkit", "run", "dump", "--yes", "--workspace", str(ws),
            "--session", str(tmp_path / "s.jsonl")]
    if via == "env":
        env["DEEPSEEK_API_KEY"] = key
    else:
        argv += ["--api-key", key]
    steps = script(reply(calls=[call("bash", {"command": DUMP}, "call_dump")]), reply("done"))
    with MockServer(steps, api_key=key) as server:
        done = subprocess.run([*argv, "--base-url", server.base_url], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr  # the adapter still had the key (the server checks it)
    assert "warning" not in done.stderr
    tree = [_decoded(line) for line in (ws / "tree.txt").read_text().splitlines()]
    assert len(tree) >= 2  # the shell, then dshkit, then whatever ran the test
    assert tree[1][2].split(b"\0")[1:3] == [b"-m", b"dshkit"]  # the dshkit process itself is in the dump
    assert [pid for pid, environ, cmdline in tree if key.encode() in environ + cmdline] == []
    assert key.encode() not in base64.b64decode((ws / "ppid.b64").read_text())
    assert key not in (tmp_path / "s.jsonl").read_text()
