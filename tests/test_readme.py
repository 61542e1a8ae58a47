"""The README's examples run as written: the Python one (against a temporary workspace) and the
pytest one (a user project of its own) in this process, the admin API's curl commands against a
real `dshkit serve` process."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dshkit.mock_server import FAULTS, load_script

from .mock_server.cli_process import SHARES_PLAIN_SERVE, ServeProcess

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"```python\n(import asyncio.*?)```", text, re.S)
    assert match, "the README lost its Python example"
    (tmp_path / "README.md").write_text("# Example\n\nA toolkit.\n", encoding="utf-8")
    code = match.group(1).replace("/path/to/workspace", str(tmp_path))
    # as a script of its own: a fresh module namespace, run as __main__ (under this suite's
    # warnings-as-errors, which a plain `python -c` would not apply)
    exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.startswith("completed ")
    assert "'tool/result'" in out


def _block(lang: str, starts: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"```{lang}\n({re.escape(starts)}.*?)```", text, re.S)
    assert match, f"the README lost its {lang} block starting {starts!r}"
    return match.group(1)


def test_pytest_example_passes_under_warnings_as_errors(pytester: pytest.Pytester) -> None:
    """The README's pytest section, as a user project of its own, passes under `-W error` (a
    pytest session of its own with the project's ini, in this process: pytester)."""
    (pytester.path / "test_app.py").write_text(_block("python", "import openai\nimport pytest"), encoding="utf-8")
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_inprocess("-W", "error", "-q", "-p", "no:cacheprovider", "-p", "no:xdist")
    out = "\n".join(result.outlines)
    assert result.ret == 0, out + "\n".join(result.errlines)
    assert "2 passed" in out


def test_fault_script_and_sequence_are_valid(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(_block("yaml", "steps:"), encoding="utf-8")
    script = load_script(path)
    assert len(script.steps) == 3
    command = _block("sh", "dshkit serve --sequence").split()
    names = command[command.index("--sequence") + 1].split(",")
    assert names and all(n in FAULTS for n in names)


@SHARES_PLAIN_SERVE
def test_admin_api_commands_run_as_written(plain_serve: ServeProcess) -> None:
    """The "other language" section's curl commands against a real `dshkit serve` (its port)."""
    if shutil.which("curl") is None:
        pytest.skip("no curl on this machine")
    lines = [ln for ln in _block("sh", "dshkit serve --port 8080 &").splitlines() if ln.strip()]
    assert lines[0].startswith("dshkit serve --port 8080")
    port = str(plain_serve.ready["port"])
    script = "set -e\n" + "\n".join(lines[1:]).replace("8080", port)
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "hi from a script" in result.stdout
    assert '"entries"' in result.stdout
