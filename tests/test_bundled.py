"""`dshkit.bundled`: the `recordings/` and `examples/` the package ships stand in for a path the
user names only when nothing is there; the user's own file of that name always wins, and a path
that names nothing the package ships comes back as typed, for the caller's error to name it."""

from __future__ import annotations

from pathlib import Path

import pytest

import dshkit
from dshkit.bundled import bundled_path, resolve

PACKAGE = Path(dshkit.__file__).resolve().parent


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with none of the repository's files in it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.usefixtures("elsewhere")
def test_the_packages_copies_stand_in_for_missing_paths() -> None:
    cassette = PACKAGE / "recordings" / "readme-walk.cassette.jsonl"
    assert resolve("recordings/readme-walk.cassette.jsonl") == cassette
    assert resolve("recordings/readme-walk") == PACKAGE / "recordings" / "readme-walk"  # NAME of NAME.cassette.jsonl
    assert resolve("examples/seed-walk.sse") == PACKAGE / "examples" / "seed-walk.sse"
    assert b"data: [DONE]" in resolve("examples/seed-walk.sse").read_bytes()


def test_the_users_own_file_wins(elsewhere: Path) -> None:
    (elsewhere / "recordings").mkdir()
    mine = elsewhere / "recordings" / "readme-walk.cassette.jsonl"
    mine.write_text("{}\n")
    assert resolve("recordings/readme-walk.cassette.jsonl") == Path("recordings/readme-walk.cassette.jsonl")
    assert resolve("recordings/readme-walk") == Path("recordings/readme-walk")


@pytest.mark.usefixtures("elsewhere")
@pytest.mark.parametrize("path", [
    "recordings/no-such-walk", "elsewhere/seed-walk.sse", "examples/../recordings/readme-walk",
    "seed-walk.sse", "",
])
def test_paths_the_package_does_not_ship_come_back_as_typed(path: str) -> None:
    assert bundled_path(path) is None
    assert resolve(path) == Path(path)
