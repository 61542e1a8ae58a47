"""`replay_session` on DSH log shapes: a log whose only call failed, cancels, and sidecar hangs.

Every case runs straight into the loop and over the wire (the mock server serving the calls as
SSE to the real `DeepSeekAdapter`), and through `dshkit replay` for its exit status. The logs are
real DSH-written ones from the shared corpus, or built from them event by event.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import main
from dshkit.harness.replay.entries import ReplayError
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.jsonl import dump_session
from dshkit.harness.session.lossless import thaw_json
from dshkit.replay import replay_session

MODES = pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
EOF_FAILURE = {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def eof_mid_arguments_log(dsh_sessions: Path, into: Path) -> Path:
    """DSH's error-finish log with its one call ended by a clean EOF inside a tool call's
    arguments, as DSH logs it: the deltas that arrived, an error finish, no assistant message,
    and the turn ending in the same failure (no sidecar: the log holds everything)."""
    out: list[dict[str, Any]] = []
    for event in _lines(dsh_sessions / "error-finish--session.jsonl"):
        if event["type"] == "assistant/chunk":
            for chunk in (
                {"type": "block-start", "index": 0, "blockType": "tool-call"},
                {"type": "tool-call-delta", "index": 0, "id": "call_00_eof", "name": "bash", "argumentsDelta": ""},
                {"type": "tool-call-delta", "index": 0, "id": "call_00_eof", "name": "bash", "argumentsDelta": '{"command":"ec'},
                {"type": "finish", "reason": {"kind": "error", "failure": EOF_FAILURE}},
            ):
                out.append({"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": chunk}})
            continue
        if event["type"] == "turn/end":
            event["data"]["reason"] = {"kind": "error", "error": EOF_FAILURE}
        out.append(event)
    into.mkdir(parents=True, exist_ok=True)
    path = into / "session.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in out), encoding="utf-8")
    return path


def completed_then_aborted_log(dsh_sessions: Path, into: Path) -> Path:
    """Turn 1 of DSH's text-turn log (completed), then turn 2 of its cancel log (cut mid-stream
    by the user), in one session."""
    session = parse_session_log((dsh_sessions / "text-turn--session.jsonl").read_bytes(), lenient=True).session
    offset = len(session.events) - 1  # the cancel log's events follow, minus its session/title
    for event in _lines(dsh_sessions / "cancel--session.jsonl")[1:]:
        data = event.get("data", {})
        if event["type"] == "session/title":
            continue
        if "turn" in data:
            data["turn"] = 2
        for message in data.get("inserted", []):
            message["id"] += "-2"
        if event["type"] == "user/message":
            data["id"] += "-2"
        if event["type"] == "assistant/message":
            data["message"]["id"] += "-2"
        seqs = event.get("sourceEventSeqs")
        session.append(event["type"], data, surface_op=event.get("surfaceOp"),
                       source_event_seqs=[s + offset for s in seqs] if seqs else None)
    into.mkdir(parents=True, exist_ok=True)
    path = into / "session.jsonl"
    path.write_text(dump_session(session), encoding="utf-8")
    return path


@MODES
async def test_a_log_whose_only_call_failed_replays_to_the_same_failure(dsh_sessions: Path, tmp_path: Path, wire: bool) -> None:
    log = eof_mid_arguments_log(dsh_sessions, tmp_path / "eof")
    report, replayed = await replay_session(log, wire=wire, workspace=tmp_path)
    assert report.calls == 1 and report.logged_messages == report.replayed_messages == []
    assert report.logged_outcomes == report.replayed_outcomes == [{"kind": "error", "code": "STREAM_CLOSED"}]
    assert report.logged_failures == report.replayed_failures == ["STREAM_CLOSED"]
    assert report.equal
    chunks = [e.data["chunk"]["type"] for e in replayed.events if e.type == "assistant/chunk"]
    assert "tool-call-delta" in chunks and chunks[-1] == "finish"  # the partial arguments came back first


@MODES
def test_dshkit_replay_reproduces_a_failed_call_and_exits_0(
    dsh_sessions: Path, tmp_path: Path, wire: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    for log in (eof_mid_arguments_log(dsh_sessions, tmp_path / "eof"), dsh_sessions / "error-finish--session.jsonl"):
        assert main(["replay", str(log), "--workspace", str(tmp_path), *(["--wire"] if wire else [])]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["turns"] == ["error"] and result["outcomes_equal"] and result["assistant_messages"] == 0
        assert result["failed_calls"] == (["STREAM_CLOSED"] if log.parent.name == "eof" else ["AUTH"])


@MODES
async def test_a_sidecar_for_a_completed_then_aborted_log_replays_both_turns(
    dsh_sessions: Path, tmp_path: Path, wire: bool
) -> None:
    log = completed_then_aborted_log(dsh_sessions, tmp_path / "s")
    with pytest.raises(ReplayError, match="turn 2 step 1 has chunks but no finish"):
        await replay_session(log, wire=wire, workspace=tmp_path)  # the cut call needs its sidecar
    events = parse_session_log(log.read_bytes()).session.events
    turn_1 = [thaw_json(e.data)["chunk"] for e in events if e.type == "assistant/chunk" and e.data["turn"] == 1]
    log.with_name("replay.override.json").write_text(json.dumps([
        {"kind": "chunks", "chunks": turn_1}, {"kind": "hang", "readyFile": "ready/turn-2"}]))
    report, _ = await replay_session(log, wire=wire, workspace=tmp_path)
    assert report.turn_ends == ["completed", "aborted"] and report.equal, report.diff()
    assert (tmp_path / "ready" / "turn-2").exists()


@MODES
async def test_two_hang_entries_on_a_completed_then_aborted_log_end_and_report_the_difference(
    dsh_sessions: Path, tmp_path: Path, wire: bool
) -> None:
    """A second `hang` after a cancelled one is cancelled too (a cancelled call logs no finish,
    so calls are counted as they are requested): the replay ends, turn 1 aborted where the log
    completed it, and the report says so."""
    log = completed_then_aborted_log(dsh_sessions, tmp_path / "s")
    log.with_name("replay.override.json").write_text('[{"kind": "hang"}, {"kind": "hang"}]')
    report, _ = await replay_session(log, wire=wire, workspace=tmp_path)
    assert report.turn_ends == ["aborted", "aborted"]
    assert report.logged_outcomes == [{"kind": "completed"}, {"kind": "aborted"}] != report.replayed_outcomes
    assert not report.equal and "turn outcome 1 differs:" in report.diff()


def test_dshkit_replay_of_two_hangs_exits_1_with_the_diff(
    dsh_sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = completed_then_aborted_log(dsh_sessions, tmp_path / "s")
    log.with_name("replay.override.json").write_text('[{"kind": "hang"}, {"kind": "hang"}]')
    assert main(["replay", str(log), "--workspace", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["turns"] == ["aborted", "aborted"]
    assert "turn outcome 1 differs:" in out.err and '-  "kind": "completed"' in out.err


@pytest.mark.parametrize("ready", ["/tmp/dshkit-owned", "../../outside"])
def test_a_sidecar_ready_file_outside_the_workspace_is_refused_before_anything_runs(
    dsh_sessions: Path, tmp_path: Path, ready: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    log = folder / "session.jsonl"
    log.write_bytes((dsh_sessions / "cancel--session.jsonl").read_bytes())
    (folder / "replay.override.json").write_text(json.dumps([{"kind": "hang", "readyFile": ready}]))
    for wire in ([], ["--wire"]):
        assert main(["replay", str(log), "--workspace", str(tmp_path), *wire]) == 2
        err = capsys.readouterr().err
        assert f"{folder / 'replay.override.json'}[0].readyFile: {ready!r}" in err and "inside the replay's workspace" in err
    assert not Path("/tmp/dshkit-owned").exists() and not (tmp_path.parent / "outside").exists()
