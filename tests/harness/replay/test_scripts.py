"""Finding a logged session's files: subagent logs and the sidecar beside it, plain or `.zstd`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import zstandard

from dshkit.harness.replay.entries import ReplayError
from dshkit.harness.replay.scripts import load_session_scripts


def _folder(dsh_sessions: Path, scenario: str, into: Path, *, compress: bool) -> Path:
    """The corpus scenario laid out as DSH names a session folder (`session.jsonl[.zstd]`)."""
    into.mkdir()
    for src in dsh_sessions.glob(f"{scenario}--*"):
        name = src.name.removeprefix(f"{scenario}--")
        if compress and name.endswith(".jsonl"):
            (into / f"{name}.zstd").write_bytes(zstandard.ZstdCompressor().compress(src.read_bytes()))
        else:
            shutil.copyfile(src, into / name)
    return into / ("session.jsonl.zstd" if compress else "session.jsonl")


def test_parent_and_children_keyed_by_first_call(dsh_sessions: Path) -> None:
    scripts = load_session_scripts(dsh_sessions / "subagent-parallel--session.jsonl")
    assert [Path(s.source).name for s in scripts] == [
        "subagent-parallel--session.jsonl", "subagent-parallel--session.1.jsonl", "subagent-parallel--session.2.jsonl",
    ]
    assert [s.primary for s in scripts] == [True, False, False]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zstd"])
def test_a_dsh_session_folder_gives_the_same_scripts_compressed(dsh_sessions: Path, tmp_path: Path, compress: bool) -> None:
    want = load_session_scripts(dsh_sessions / "subagent-parallel--session.jsonl")
    got = load_session_scripts(_folder(dsh_sessions, "subagent-parallel", tmp_path / "s", compress=compress))
    assert [Path(s.source).name for s in got] == [
        f"session.jsonl{'.zstd' if compress else ''}", *(f"session.{n}.jsonl{'.zstd' if compress else ''}" for n in (1, 2))]
    assert [[e.chunks for e in s.entries] for s in got] == [[e.chunks for e in s.entries] for s in want]


def test_the_sidecar_beside_a_compressed_log_applies(dsh_sessions: Path, tmp_path: Path) -> None:
    (script,) = load_session_scripts(_folder(dsh_sessions, "cancel", tmp_path / "s", compress=True))
    assert [(e.kind, e.ready_file) for e in script.entries] == [("hang", ".dsh-snapshot-stream-ready")]


def test_a_child_log_there_twice_or_a_gap_is_refused(dsh_sessions: Path, tmp_path: Path) -> None:
    primary = _folder(dsh_sessions, "subagent-parallel", tmp_path / "s", compress=False)
    twice = primary.with_name("session.1.jsonl.zstd")
    twice.write_bytes(zstandard.ZstdCompressor().compress(primary.with_name("session.1.jsonl").read_bytes()))
    with pytest.raises(ReplayError, match=r"child log 1 is there twice \(session\.1\.jsonl and session\.1\.jsonl\.zstd\)"):
        load_session_scripts(primary)
    twice.unlink()
    primary.with_name("session.1.jsonl").unlink()
    with pytest.raises(ReplayError, match=r"without gaps; found \[2\]"):
        load_session_scripts(primary)
