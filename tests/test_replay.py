"""`dshkit replay` (`dshkit.replay`), in this process on a session log that `dshkit run` writes
against its embedded mock server: the log replays to the same messages and tool results, straight
and through the real adapter (`--wire`); `--out` writes the replayed log and never silently
replaces the one replayed; options it cannot use are refused before anything runs. Replays of
DSH's logs and of the committed cassettes are in `tests/e2e/`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.harness.session.jsonl import load_session


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session log of one seed walk (the bundled script: reasoning, a `read`, the answer)."""
    workspace = tmp_path_factory.mktemp("walk")
    (workspace / "README.md").write_text("# Widget Forge\n\nIt forges widgets.\n", encoding="utf-8")
    log = workspace / "session.jsonl"
    code = main(["run", "Read README.md and tell me what the project does.", "--workspace", str(workspace),
                 "--session", str(log), "--json"])
    assert code == 0 and log.is_file()
    return log


def _replay(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["replay", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
def test_a_log_replays_to_the_same_messages_and_results(logged: Path, wire: bool, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out_log = tmp_path / "replayed.jsonl"
    code, out, err = _replay([str(logged), "--out", str(out_log), *(["--wire"] if wire else [])], capsys)
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result["mode"] == ("wire" if wire else "chunks")
    assert result["model_calls"] == 2 and result["failed_calls"] == []
    assert result["messages_equal"] and result["tool_results_equal"] and result["outcomes_equal"]
    original, replayed = load_session(logged), load_session(out_log)
    assert [m.content for m in replayed.derive_messages()] == [m.content for m in original.derive_messages()]


def test_the_replayed_log_is_never_written_over_by_accident(logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = logged.read_bytes()
    code, out, err = _replay([str(logged), "--out", str(logged)], capsys)
    assert code == 2 and out == ""
    assert "is the session log being replayed" in err and "--overwrite" in err
    assert logged.read_bytes() == before


def test_what_it_cannot_replay_is_refused_with_a_reason(logged: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _replay([str(logged), "--workspace", str(tmp_path / "absent")], capsys)
    assert code == 2 and "is not a directory" in err
    code, _, err = _replay([str(tmp_path / "missing.jsonl")], capsys)
    assert code == 2 and err.startswith("dshkit replay: ")
    header_only = tmp_path / "header-only.jsonl"
    header_only.write_text(logged.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    code, _, err = _replay([str(header_only)], capsys)
    assert code == 2 and "records no model call to replay" in err


def test_a_tool_result_that_differs_on_replay_is_a_diff_and_exit_1(logged: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # The read tool's result names the file by its absolute path, so the replay runs in the
    # logged workspace itself; the README it changes there is put back for the other tests.
    workspace, readme = logged.parent, logged.parent / "README.md"
    argv = [str(logged), "--tools", "builtin", "--workspace", str(workspace)]
    # Replaying with the real tools in the same workspace gives the same results...
    code, out, err = _replay(argv, capsys)
    assert (code, err) == (0, "") and json.loads(out)["tool_results_equal"] is True
    # ...and after the README changed, the tool result differs: a diff, exit 1.
    before = readme.read_bytes()
    readme.write_text("# Gadget Works\n", encoding="utf-8")
    try:
        code, out, err = _replay(argv, capsys)
    finally:
        readme.write_bytes(before)
    assert code == 1 and json.loads(out)["tool_results_equal"] is False
    lines = err.splitlines()
    assert "tool result 1 differs:" in lines and "--- logged tool result 1" in lines
    assert any(line.startswith("-") and "Widget Forge" in line for line in lines)
    assert any(line.startswith("+") and "Gadget Works" in line for line in lines)
