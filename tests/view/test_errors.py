"""`ViewError`, the one error of the view: every file it cannot show ends in it, named and located.

Whatever the bytes (not UTF-8, nested past any limit, of no kind the view knows, a folder), reading
ends in a `ViewError` whose message starts with the file and says what is wrong, and `dshkit view`
prints it and exits 2, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.view import ViewError, render_paths

CASES = {
    "not-utf8.jsonl": (b'{"type": "session"\xff}\n', "cannot read it"),
    "deep.json": (b"[" * 100_000 + b"]" * 100_000, ":1: nested 100000 levels deep"),
    "notes.txt": (b"hello\n", "not a session log, cassette, journal or conformance report; pass"),
    "report.json": (b'{"scenarios": [{"id": "x", "status": "pass", "seconds": NaN}], "summary": {"pass": 1}}',
                    'scenarios[0].seconds must be a number of seconds >= 0, got "NaN"'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_file_it_cannot_show_is_a_view_error_that_names_it(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, says = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ViewError) as caught:
        render_paths([path])
    assert str(caught.value).startswith(str(path)) and says in str(caught.value)
    assert main(["view", str(path), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "out.html").exists()


def test_a_folder_is_a_view_error(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match=r"cannot read it \(\[Errno 21\] Is a directory") as caught:
        render_paths([tmp_path])
    assert str(caught.value).startswith(f"{tmp_path}: ")
