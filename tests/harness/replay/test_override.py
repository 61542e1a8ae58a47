"""Override sidecars: exact keys, patches that swap or append, and a readyFile that stays home."""

import os
from pathlib import Path

import pytest

from dshkit.harness.replay.entries import ReplayError, derive_replay_script
from dshkit.harness.replay.override import parse_override, ready_path

from .test_entries import FINISH, chunk_log, text


def test_patches_replace_a_call_or_append_one() -> None:
    base = derive_replay_script(chunk_log([text("a"), FINISH]).events)
    hang = {"kind": "hang"}
    assert [e.kind for e in parse_override({"patches": [{"at": 0, "entry": hang}]}, base)] == ["hang"]
    assert [e.kind for e in parse_override({"patches": [{"at": 1, "entry": hang}]}, base)] == ["chunks", "hang"]
    with pytest.raises(ReplayError, match=r"out of range; the derived script has 1 call"):
        parse_override({"patches": [{"at": 2, "entry": hang}]}, base)
    with pytest.raises(ReplayError, match="patched twice"):
        parse_override({"patches": [{"at": 0, "entry": hang}, {"at": 0, "entry": hang}]}, base)


def test_a_throw_patch_keeps_its_message_and_code() -> None:
    derived = parse_override([{"kind": "chunks", "chunks": [FINISH]}], None)
    patched = parse_override({"patches": [{"at": 1, "entry": {"kind": "throw", "chunks": [], "message": "boom", "code": "SERVER"}}]}, derived)
    assert [(e.kind, e.message, e.code) for e in patched] == [("chunks", None, None), ("throw", "boom", "SERVER")]


@pytest.mark.parametrize("kind", [[], {}, None, "chunk"])
def test_a_bad_kind_is_a_replay_error(kind: object) -> None:
    with pytest.raises(ReplayError, match=r"side\.json\[0\]\.kind: expected chunks, throw or hang"):
        parse_override([{"kind": kind}], None, source="side.json")


def test_keys_are_checked_exactly() -> None:
    with pytest.raises(ReplayError, match=r"exactly the keys"):
        parse_override([{"kind": "hang", "chunks": []}], None)


@pytest.mark.parametrize(
    ("ready", "problem"),
    [("/tmp/owned", "absolute path"), ("../outside", "climbs out"), ("sub/../../x", "climbs out"),
     ("C:\\Windows\\x", "absolute path"), ("\\\\host\\share", "absolute path"), ("", "empty"),
     ("a\ud800", "lone surrogate")],
)
def test_a_ready_file_outside_the_workspace_is_refused_where_it_is_written(ready: str, problem: str) -> None:
    with pytest.raises(ReplayError, match=rf"side\.json\[1\]\.readyFile: .*{problem}.*inside the replay's workspace"):
        parse_override([{"kind": "chunks", "chunks": [FINISH]}, {"kind": "hang", "readyFile": ready}], None, source="side.json")


def test_a_ready_file_through_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, workspace / "link")
    assert ready_path("marker", workspace) == (workspace / "marker").resolve()
    assert ready_path("deep/marker", workspace) == (workspace / "deep" / "marker").resolve()
    with pytest.raises(ReplayError, match=r"outside .* \(through a symbolic link\)"):
        ready_path("link/marker", workspace)
    assert list(elsewhere.iterdir()) == []
