"""`dshkit view PATH`: the page written where asked, its path printed, and `--open` handing it on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dshkit.cli import main

from .conftest import Walk


def test_cli_writes_the_page_and_prints_its_path(walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v" / "walk.html"
    code = main(["view", str(walk.log), "--journal", str(walk.journal), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert printed.out.strip() == str(out)
    assert "0 requests differ from what was sent" in out.read_text()


def test_open_hands_the_page_to_the_browser(walk: Walk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import webbrowser

    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    out = tmp_path / "page.html"
    monkeypatch.setenv("BROWSER", f"{sys.executable} {recorder} %s")
    # webbrowser reads $BROWSER on its first use in a process: here it starts over, as in a new one
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})
    assert main(["view", str(walk.log), "-o", str(out), "--open"]) == 0, capsys.readouterr().err
    assert opened.read_text() == out.resolve().as_uri()
