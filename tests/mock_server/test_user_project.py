"""The README's pytest example is a user project: run it as written under strict mode.

The files come from the README's fenced blocks whose first line names the file (`# test_app.py`);
they are written to a fresh folder outside this repository and run with `pytest -W error`, so a
warning from pytest-asyncio's default (strict) mode or from our plugin fails the test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "### Testing your own app under pytest"


def readme_project_files() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start)]
    files: dict[str, str] = {}
    for body in re.findall(r"```(?:python|yaml|ini)\n(.*?)```", section, re.S):
        first = body.partition("\n")[0]
        if first.startswith("# ") and "." in first:
            files[first[2:].strip()] = body  # the name line stays: a comment in all three formats
    return files


def _run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", *args],
        capture_output=True, text=True, timeout=120, cwd=project, check=False,
    )


def test_readme_pytest_example_passes_in_strict_mode(tmp_path: Path) -> None:
    files = readme_project_files()
    assert set(files) == {"pytest.ini", "scripts/greeting.yaml", "test_app.py"}
    assert "asyncio_mode" not in files["pytest.ini"]  # strict, pytest-asyncio's default
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    result = _run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout and "warning" not in result.stdout.lower()


INLINE = '''
import httpx
import pytest

from dshkit.mock_server import Script


def post(server, text):
    return httpx.post(server.url, json={"model": "deepseek-chat", "messages": [{"role": "user", "content": text}]},
                      timeout=5).json()["choices"][0]["message"]["content"]


@pytest.mark.dshkit_script(Script.replies("a"), [{"reply": {"content": "b"}}], {"steps": [{"reply": {"content": "c"}}]},
                           "s.yaml")
def test_four_scripts_four_sessions(mock_deepseek_sync):
    got = [httpx.post(mock_deepseek_sync.url, headers={"X-Mock-Session": s},
                      json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "x"}]},
                      timeout=5).json()["choices"][0]["message"]["content"] for s in "1234"]
    assert got == ["a", "b", "c", "from file"]


@pytest.mark.dshkit_script([{"reply": {"content": "unused"}}])
def test_unused_inline_step_fails_at_teardown(mock_deepseek_sync):
    pass


@pytest.mark.dshkit_script([{"reply": {"contnet": "typo"}}])
def test_bad_inline_script(mock_deepseek_sync):
    pass


@pytest.mark.dshkit_script(42)
def test_not_a_script(mock_deepseek_sync):
    pass


def test_sync_factory_closes_at_teardown(dshkit_mock_server_sync):
    a = dshkit_mock_server_sync()
    b = dshkit_mock_server_sync(Script.replies("z"))
    assert a.port != b.port and post(b, "q") == "z"
'''


def test_inline_scripts_and_sync_fixtures_in_a_strict_mode_run(pytester: pytest.Pytester) -> None:
    # A pytest session of its own, in this process (pytester); the README project above is the
    # one run exactly as a user would, in a subprocess.
    (pytester.path / "s.yaml").write_text("steps:\n  - reply: {content: from file}\n")
    (pytester.path / "test_inline.py").write_text(INLINE)
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist", "-rE")
    out = "\n".join(result.outlines)
    assert "3 passed, 3 errors" in out, out + "\n".join(result.errlines)
    assert "ERROR test_inline.py::test_unused_inline_step_fails_at_teardown" in out
    assert "1 scripted step(s) were never used" in out
    # a bad inline script names the test, the argument and the bad field
    assert re.search(r"argument 1 of test_inline.py::test_bad_inline_script.*contnet", out)
    assert "42 (int) is not a script" in out
