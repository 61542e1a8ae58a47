"""Nothing written is lost (issue 18): a lone surrogate from the model (`"a\\ud800b"` on the wire)
goes through `dshkit run` into the session log and the mock's journal whole, and every reader
(replay, replay --wire, decode, view, view --journal) reads it back; a session-log write that
fails (a real EFBIG, the file size limit of a subprocess) fails the run with a located message
and leaves the log a readable prefix, never a gap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.harness.session.jsonl import load_session
from dshkit.mock_server import MockServer, Script

from .conftest import API_KEY

SURROGATE_SSE = (
    'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"deepseek-v4-flash","choices":'
    '[{"index":0,"delta":{"role":"assistant","content":"a\\ud800b"},"finish_reason":null}]}\n\n'
    'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"deepseek-v4-flash","choices":'
    '[{"index":0,"delta":{"content":"c"},"finish_reason":"stop"}],'
    '"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\n\n'
    "data: [DONE]\n\n"
)


def _script() -> Script:
    return Script.of({"raw": {"writes": [{"text": SURROGATE_SSE}]}}, name="surrogate")


def test_a_lone_surrogate_from_the_model_reaches_the_log_and_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    log, journal = tmp_path / "s.jsonl", tmp_path / "journal.jsonl"
    with MockServer(_script(), journal=journal) as server:
        code = main(["run", "hi", "--base-url", server.base_url, "--api-key", API_KEY, "--session", str(log),
                     "--workspace", str(tmp_path), "--tools", "read"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Traceback" not in out.err + caplog.text and "UnicodeEncodeError" not in caplog.text
    assert "answer: a\ufffdbc" in out.out  # the terminal shows U+FFFD; the log keeps the string
    session = load_session(log, write_back=False)
    seqs = [e.seq for e in session.events]
    assert seqs == list(range(len(seqs))) and session.events[-1].type == "turn/end"
    texts = [e.data["chunk"]["text"] for e in session.events
             if e.type == "assistant/chunk" and e.data["chunk"]["type"] == "text-delta"]
    assert texts == ["a\ud800b", "c"]
    for line in log.read_bytes().splitlines():
        json.loads(line.decode("utf-8"))  # strict UTF-8 text, valid JSON on every line
    for line in journal.read_bytes().splitlines():
        json.loads(line.decode("utf-8"))

    for argv in (["replay", str(log)], ["replay", str(log), "--wire"], ["decode", str(log)],
                 ["decode", str(log), "--pretty"], ["view", str(log), "-o", str(tmp_path / "v.html")],
                 ["view", str(journal), "-o", str(tmp_path / "j.html")]):
        assert main(argv) == 0, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err + caplog.text, (argv, err)
    assert "a\ufffdb" in (tmp_path / "v.html").read_text(encoding="utf-8")


def test_json_live_events_escape_the_surrogate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(_script()) as server:
        code = main(["run", "hi", "--json", "--base-url", server.base_url, "--api-key", API_KEY,
                     "--session", str(tmp_path / "s.jsonl"), "--workspace", str(tmp_path), "--tools", "read"])
    out = capsys.readouterr().out
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert any(json.dumps(e).find("a\\ud800b") >= 0 for e in events)


LIMITED_RUN = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from dshkit.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_failed_session_log_write_fails_the_run_and_leaves_no_gap(tmp_path: Path) -> None:
    """Before: the writer's failure was logged with a traceback, later events were still appended
    (a gap the readers refuse) and the run exited 0."""
    log = tmp_path / "s.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", LIMITED_RUN, "3000", "run", "Read README.md", "--session", str(log),
         "--workspace", str(tmp_path), "--api-key", API_KEY, "--pace", "0"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"dshkit run: {log}: writing the session log failed from event seq" in result.stderr
    assert "File too large" in result.stderr
    assert "step 2" not in result.stdout  # the turn stopped at the failed write: nothing ran unlogged
    session = load_session(log, write_back=False)  # a readable prefix: contiguous seqs
    seqs = [e.seq for e in session.events]
    assert seqs == list(range(len(seqs))) and len(seqs) > 0


def test_view_reads_the_mocks_own_journal_after_a_lone_surrogate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Before: `dshkit view` traced back on the journal the mock wrote after one such request."""
    import httpx

    journal = tmp_path / "journal.jsonl"
    with MockServer(journal=journal) as server:
        for content in (b'"a\\ud800b"', b'"plain"'):
            r = httpx.post(server.base_url + "/chat/completions", timeout=30,
                           content=b'{"model":"deepseek-v4-flash","stream":true,"messages":[{"role":"user","content":'
                           + content + b"}]}",
                           headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json",
                                    "X-Note": b"caf\xe9"})
            assert r.status_code in (200, 400)
    out = tmp_path / "j.html"
    assert main(["view", str(journal), "-o", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err + caplog.text
    assert "2 exchanges" in out.read_text(encoding="utf-8")


def test_a_resumed_session_holding_a_lone_surrogate_sends_it_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the next turn's request failed to encode (`UNKNOWN: 'utf-8' codec can't encode`).
    Now the history goes out with the surrogate escaped, and the mock answers as DeepSeek does."""
    log = tmp_path / "s.jsonl"
    script = Script.of({"raw": {"writes": [{"text": SURROGATE_SSE}]}}, {"reply": {"content": "ok"}}, name="two")
    with MockServer(script) as server:
        argv = ["--base-url", server.base_url, "--api-key", API_KEY, "--session", str(log),
                "--workspace", str(tmp_path), "--tools", "read"]
        assert main(["run", "hi", *argv]) == 0
        assert main(["run", "again", *argv]) == 1
        sent = server.journal[-1]
    out = capsys.readouterr()
    assert "codec can't encode" not in out.out + out.err
    assert sent.status == 400 and "lone surrogate" in json.dumps(sent.error)
